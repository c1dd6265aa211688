/* SPDX-License-Identifier: MIT */
/* collector.c - the collector thread's life: created with the first session
 * (or the control channel), it sleeps until a kick, a client of the channel
 * or the end of the session's period, runs a round (round.c) under the
 * round lock, serves the channel, and ends with the last session unless the
 * channel keeps it; and the requests other threads make of it (sync, stop,
 * fork), which it answers round by round.
 *
 * The collector itself is never traced: its ctr__self is the "off" slot.
 */
#include "collect/collector.h"

#include "collect/face.h"
#include "collect/round.h"
#include "core/hooks.h"
#include "core/lock.h"
#include "core/real.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "wrap/wait.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Held by the collector for each round, by a session's start while it
 * sets the collector up (its thread may be up already: the control channel
 * keeps it), and by a thread that forks from just before to just after the
 * fork (ctr__collector_fork_prepare, _parent):
 * so a child never inherits a lock the collector held in the middle of a
 * round, above all its allocator's (GCC 12's AddressSanitizer allocator is
 * not fork-safe: a daemon's child hung in its first calloc). A fork may
 * wait for one round. */
static struct ctr_lock round_lock;

void ctr__collector_fork_prepare(void)
{
    ctr_lock_acquire(&round_lock);
}

void ctr__collector_fork_parent(void)
{
    ctr_lock_release(&round_lock);
}

/* The collector's thread: up from the first session until the last ends,
 * or, while the control channel is open (keep), for the process's life.
 * It ends only when told to by a thread that then joins it, under the API
 * lock (ctr__collector_stop, ctr__collector_release); so a session that
 * begins always finds it either up for good or joined. */
static struct {
    _Atomic int up;   /* created and not yet joined (stored under the API lock) */
    _Atomic int keep; /* stay up between sessions (stored under the API lock) */
} T;

/* Ends the session whose final round just ran: the thread that asked for
 * the stop is waiting for done_seq (ctr__collector_stop). */
static void session_over(void)
{
    ctr__round_stop();
    /* relaxed: ordered before the release bump below. */
    atomic_store_explicit(&ctr__session.stopping, 0, memory_order_relaxed);
    /* release: the final round's work before the stopper goes on (pairs
     * with the acquire load in ctr__collector_stop). */
    atomic_fetch_add_explicit(&ctr__session.done_seq, 1, memory_order_release);
    ctr__real.syscall(SYS_futex, &ctr__session.done_seq, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL,
                      0);
}

/* A round of the session, the final one once a stop is asked for. @return
 * the session's period, for the sleep until the next round; 0 when no
 * session runs on. */
static uint64_t session_round(void)
{
    ctr_lock_acquire(&round_lock);
    if (ctr__round_epoch()) {
        /* acquire: pairs with the release store in ctr__collector_stop. */
        int final = atomic_load_explicit(&ctr__session.stopping, memory_order_acquire);
        ctr__round_run(final);
        if (final)
            session_over();
    } else {
        /* No session (the channel alone keeps the thread): nothing to do
         * for a request but to say it is seen. acquire: as in ctr__round_run. */
        ctr__round_ack(atomic_load_explicit(&ctr__session.req_seq, memory_order_acquire));
    }
    uint64_t period = ctr__round_period();
    ctr_lock_release(&round_lock);
    return period;
}

/* Sleeps until a kick, a client of the control channel, or the end of a
 * round's period (0: none, no session runs). */
static void collector_wait(uint64_t period_ns)
{
    uint64_t timeout_ns = period_ns ? period_ns : UINT64_MAX;
    /* acquire: pairs with the release store in ctr__collector_kick. */
    if (atomic_load_explicit(&ctr__session.wake, memory_order_acquire) != 0)
        return;
    if (ctr__control_wait(timeout_ns) == 0)
        return; /* the channel is open: it polled, its eventfd taking the kicks */
    struct timespec ts = {(time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u)};
    /* Sleeps until the timeout or a kick (wake != 0). */
    ctr__real.syscall(SYS_futex, &ctr__session.wake, FUTEX_WAIT_PRIVATE, 0,
                      timeout_ns == UINT64_MAX ? NULL : &ts, NULL, 0);
}

static void *collector_main(void *arg)
{
    (void)arg;
    ctr__self = &ctr__thread_off;
    /* release: the starter may go on (pairs with the acquire load in
     * ctr__collector_start). */
    atomic_store_explicit(&ctr__session.collector_up, 1, memory_order_release);
    ctr__real.syscall(SYS_futex, &ctr__session.collector_up, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    /* Its creator holds the API lock, so the session (if any) is as it was
     * created with: the first chunks, before the threads want them. */
    ctr_lock_acquire(&round_lock);
    uint64_t period = ctr__round_period();
    if (ctr__round_epoch())
        ctr__round_prefault();
    ctr_lock_release(&round_lock);
    for (;;) {
        collector_wait(period);
        /* relaxed: the round that follows takes what it needs through its
         * own acquires (req_seq, the queue, stopping). */
        atomic_store_explicit(&ctr__session.wake, 0, memory_order_relaxed);
        period = session_round();
        ctr__control_serve();
        /* acquire: pairs with the release store in ctr__collector_release
         * (and keep's stores precede the joins that end this thread). */
        if (!period && !atomic_load_explicit(&T.keep, memory_order_acquire))
            break;
    }
    return NULL;
}

int ctr__collector_is_self(void)
{
    /* acquire: the thread's handle, stored by pthread_create before `up`
     * (pairs with the release store in thread_create). */
    return atomic_load_explicit(&T.up, memory_order_acquire) &&
           pthread_equal(pthread_self(), ctr__session.collector);
}

int ctr__collector_sync_for(uint64_t timeout_ns)
{
    if (ctr__collector_is_self()) { /* a command of the control channel's */
        session_round();
        return 0;
    }
    /* release: what the caller set up before, for the round that sees it. */
    uint32_t want = atomic_fetch_add_explicit(&ctr__session.req_seq, 1, memory_order_release) + 1;
    ctr__collector_kick();
    struct timespec now, end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += (time_t)(timeout_ns / 1000000000u);
    end.tv_nsec += (long)(timeout_ns % 1000000000u);
    if (end.tv_nsec >= 1000000000L)
        end.tv_sec++, end.tv_nsec -= 1000000000L;
    for (;;) {
        /* acquire: pairs with the round's release store of ack_seq. */
        uint32_t ack = atomic_load_explicit(&ctr__session.ack_seq, memory_order_acquire);
        if ((int32_t)(ack - want) >= 0)
            return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        struct timespec left = {end.tv_sec - now.tv_sec, end.tv_nsec - now.tv_nsec};
        if (left.tv_nsec < 0)
            left.tv_sec--, left.tv_nsec += 1000000000L;
        if (left.tv_sec < 0)
            return -ETIMEDOUT;
        ctr__real.syscall(SYS_futex, &ctr__session.ack_seq, FUTEX_WAIT_PRIVATE, ack, &left, NULL,
                          0);
    }
}

void ctr__collector_sync(void)
{
    ctr__collector_sync_for(UINT64_MAX / 2);
}

void ctr__collector_kick(void)
{
    /* release: pairs with the acquire load of wake in collector_wait. */
    atomic_store_explicit(&ctr__session.wake, 1, memory_order_release);
    /* Both: the collector sleeps on one or the other, and may be between
     * the two as the channel opens or closes (a rare kick costs two). */
    ctr__control_kick();
    ctr__real.syscall(SYS_futex, &ctr__session.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void ctr__collector_forked(void)
{
    /* The collector thread is not in the child; a round it was running
     * left buffered records and chunks to recycle that are the parent's. */
    ctr__round_forked();
    /* relaxed: the child's only thread; nothing to order. */
    atomic_store_explicit(&round_lock.word, 0, memory_order_relaxed); /* the forker's */
    atomic_store_explicit(&ctr__session.stopping, 0, memory_order_relaxed);
    atomic_store_explicit(&ctr__session.wake, 0, memory_order_relaxed);
    atomic_store_explicit(&T.up, 0, memory_order_relaxed);
    atomic_store_explicit(&T.keep, 0, memory_order_relaxed);
}

/* pthread_create and pthread_join as the program would reach them: through
 * whatever interposes them before libctrace (ThreadSanitizer's and
 * AddressSanitizer's interceptors must see the collector thread, or they
 * crash on it), then through our wrappers, which pass the calls of a thread
 * marked internal straight to libc. */
typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*join_fn)(pthread_t, void **);

/* The collector's stack: its deepest calls (zstd's compressor, libunwind
 * for a CPU sample, a sanitizer's reports) take tens of KiB. */
#define COLLECTOR_STACK (1u << 20)

/* Creates the collector's thread. Under the API lock. @return 0 or -errno. */
static int thread_create(void)
{
    /* relaxed: the thread, created below, sees these (thread creation
     * synchronizes). */
    atomic_store_explicit(&ctr__session.stopping, 0, memory_order_relaxed);
    atomic_store_explicit(&ctr__session.wake, 0, memory_order_relaxed);
    atomic_store_explicit(&ctr__session.collector_up, 0, memory_order_relaxed);
    create_fn create;
    *(void **)&create = ctr__dlsym_real(RTLD_DEFAULT, "pthread_create");
    if (!create)
        create = ctr__real.pthread_create;
    /* Every signal blocked in the new thread (it inherits this mask): the
     * program's signals are for the program's threads (a sigwait thread,
     * a handler that must run where it expects). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* A stack of COLLECTOR_STACK, not the default (RLIMIT_STACK, 8 MiB
     * mostly): address space the program's RLIMIT_AS pays for. */
    pthread_attr_t attr;
    int have_attr = pthread_attr_init(&attr) == 0;
    if (have_attr && pthread_attr_setstacksize(&attr, COLLECTOR_STACK) != 0) {
        pthread_attr_destroy(&attr);
        have_attr = 0;
    }
    struct ctr_thread *saved = ctr__internal_begin();
    int rc = create(&ctr__session.collector, have_attr ? &attr : NULL, collector_main, NULL);
    ctr__internal_end(saved);
    if (have_attr)
        pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* The collector's start (its thread's set-up in libc and in a
     * sanitizer's runtime, which allocate) is over before the program goes
     * on: a program that forks at once (a daemon) must not catch it there
     * holding its allocator's lock, which the child would wait on for ever.
     * At most a second: a trace_start in a constructor that dlopen runs
     * holds the loader's lock, which the new thread's first access to our
     * thread-local data may want. acquire: pairs with the collector's
     * release store. */
    int saved_errno = errno;
    for (int i = 0; rc == 0 && i < 100; i++) {
        if (atomic_load_explicit(&ctr__session.collector_up, memory_order_acquire))
            break;
        struct timespec tick = {0, 10 * 1000 * 1000};
        ctr__real.syscall(SYS_futex, &ctr__session.collector_up, FUTEX_WAIT_PRIVATE, 0, &tick, NULL,
                          0);
    }
    errno = saved_errno;
    /* release: the handle before `up` (pairs with the acquire load in
     * ctr__collector_is_self; the API lock orders the other readers). */
    if (rc == 0)
        atomic_store_explicit(&T.up, 1, memory_order_release);
    return -rc;
}

/* Joins the collector's thread once it has ended. Under the API lock. */
static void thread_join(void)
{
    join_fn join;
    *(void **)&join = ctr__dlsym_real(RTLD_DEFAULT, "pthread_join");
    if (!join)
        join = ctr__real.pthread_join;
    struct ctr_thread *saved = ctr__internal_begin();
    join(ctr__session.collector, NULL);
    ctr__internal_end(saved);
    /* relaxed: as in thread_create. */
    atomic_store_explicit(&T.up, 0, memory_order_relaxed);
}

int ctr__collector_start(uint32_t epoch)
{
    ctr__stack_init(); /* libunwind's costly first call, before any wait */
    ctr__unwrap_init();
    if (ctr__round_open(ctr__session.level) != 0)
        return -ENOMEM;
    /* The thread may be up (the control channel keeps it): it reads C in
     * its rounds, which the lock keeps apart from this. */
    ctr_lock_acquire(&round_lock);
    ctr__round_session(epoch);
    ctr_lock_release(&round_lock);
    /* relaxed: see thread_create. */
    if (atomic_load_explicit(&T.up, memory_order_relaxed)) {
        /* The first chunks, before the threads want them (a new thread
         * does it itself, first thing). */
        ctr__round_prefault();
        ctr__collector_kick(); /* its sleep has no end without a session */
        return 0;
    }
    int rc = thread_create();
    if (rc != 0) {
        ctr_lock_acquire(&round_lock);
        ctr__round_stop();
        ctr_lock_release(&round_lock);
    }
    return rc;
}

void ctr__collector_stop(void)
{
    if (ctr__collector_is_self()) { /* a command of the control channel's */
        /* relaxed: this thread reads it back in the round it runs now. */
        atomic_store_explicit(&ctr__session.stopping, 1, memory_order_relaxed);
        session_round(); /* the final round, and the session over */
        return;
    }
    /* acquire: pairs with session_over's release bump. */
    uint32_t done = atomic_load_explicit(&ctr__session.done_seq, memory_order_acquire);
    /* release: pairs with the acquire load of stopping in session_round. */
    atomic_store_explicit(&ctr__session.stopping, 1, memory_order_release);
    ctr__collector_kick();
    /* relaxed: keep is stored under the API lock, which this thread holds. */
    if (!atomic_load_explicit(&T.keep, memory_order_relaxed)) {
        thread_join(); /* its final round was its last */
        return;
    }
    /* acquire: as above. */
    uint32_t now;
    while ((now = atomic_load_explicit(&ctr__session.done_seq, memory_order_acquire)) == done)
        ctr__real.syscall(SYS_futex, &ctr__session.done_seq, FUTEX_WAIT_PRIVATE, now, NULL, NULL,
                          0);
}

int ctr__collector_keep(void)
{
    /* relaxed: the thread reads keep only when no session runs, after its
     * creation (which synchronizes) or the release store below. */
    atomic_store_explicit(&T.keep, 1, memory_order_relaxed);
    if (atomic_load_explicit(&T.up, memory_order_relaxed))
        return 0;
    int rc = thread_create(); /* no session runs without it: up for the channel alone */
    if (rc != 0)
        atomic_store_explicit(&T.keep, 0, memory_order_relaxed);
    return rc;
}

void ctr__collector_release(void)
{
    /* Not from the collector itself: it could not join itself. */
    /* release: pairs with the acquire load in collector_main. */
    atomic_store_explicit(&T.keep, 0, memory_order_release);
    /* relaxed: as in ctr__collector_keep. */
    if (!atomic_load_explicit(&T.up, memory_order_relaxed))
        return;
    ctr_lock_acquire(&round_lock);
    int session = ctr__round_epoch() != 0;
    ctr_lock_release(&round_lock);
    if (session)
        return; /* it ends with the session (ctr__collector_stop joins it) */
    ctr__collector_kick();
    thread_join();
}
