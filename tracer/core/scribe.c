/* SPDX-License-Identifier: MIT */
/* scribe.c - the tracer's side of a scribe (scribe.h): making one, handing
 * it pieces with a bounded wait, ending it, and reaping the abandoned ones
 * once their files thaw.
 *
 * A scribe is a child process of the program's with exit signal 0: no
 * SIGCHLD reaches the program, and its wait()s and waitpid()s (without
 * __WALL) neither see nor reap it. The tracer reaps it (wait4 with
 * __WCLONE). One that outlives the program is reparented, and its new
 * parent reaps it as any orphan.
 */
#include "core/scribe.h"

#include "core/lock.h"
#include "core/real.h"
#include "core/scribe_child.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCRIBE_STACK (64u << 10)

/* ThreadSanitizer's clone() interceptor runs its runtime in the child,
 * which has no TSan thread of its own: no scribes under TSan (its runs
 * write directly, as where no process can be made). */
#if defined(__SANITIZE_THREAD__)
#define CTR_SCRIBE_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CTR_SCRIBE_UNDER_TSAN 1
#endif
#endif
#ifndef CTR_SCRIBE_UNDER_TSAN
#define CTR_SCRIBE_UNDER_TSAN 0
#endif

/* Abandoned scribes, until reaped. */
static struct ctr_lock stuck_lock;
static struct ctr_scribe *stuck;
static unsigned stuck_count;

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void futex_wake(_Atomic uint32_t *word)
{
    ctr__real.syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Sleeps while *word == val, at most ns. op: FUTEX_WAIT_PRIVATE, or
 * FUTEX_WAIT for tid (the kernel's wake at a CLONE_CHILD_CLEARTID exit is
 * not a private one, and reaches only a shared wait). */
static void futex_wait_ns(void *word, int op, uint32_t val, uint64_t ns)
{
    struct timespec t = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    ctr__real.syscall(SYS_futex, word, op, val, &t, NULL, 0);
}

static int alive(struct ctr_scribe *s)
{
    /* acquire: the kernel's clear at the scribe's exit (CLONE_CHILD_CLEARTID);
     * nothing of it is read after, but its memory is then free to unmap. */
    return atomic_load_explicit(&s->tid, memory_order_acquire) != 0;
}

/* Reaps an exited scribe (its zombie comes a moment after the kernel
 * cleared tid) and frees its memory. */
static void reap(struct ctr_scribe *s)
{
    while (ctr__real.syscall(SYS_wait4, s->pid, NULL, __WCLONE, NULL) < 0 && errno == EINTR)
        ;
    munmap(s, s->map_bytes);
}

/* Reaps the abandoned scribes whose files let them finish. Lock held. */
static void reap_stuck(void)
{
    for (struct ctr_scribe **p = &stuck; *p;) {
        struct ctr_scribe *s = *p;
        /* In a forked child the list is the parent's: its scribes are not
         * this process's children (wait4 says so at once). */
        if (s->parent != getpid() || !alive(s)) {
            *p = s->next_stuck;
            stuck_count--;
            if (s->parent != getpid())
                munmap(s, s->map_bytes);
            else
                reap(s);
        } else {
            p = &s->next_stuck;
        }
    }
}

const char *ctr__scribe_strerror(int err)
{
    return err == ETIMEDOUT ? CTR_SCRIBE_STALL_TEXT : strerror(err);
}

unsigned ctr__scribe_stuck(void)
{
    ctr_lock_acquire(&stuck_lock);
    reap_stuck();
    unsigned n = stuck_count;
    ctr_lock_release(&stuck_lock);
    return n;
}

void ctr__scribe_forked(void)
{
    /* relaxed: the child's only thread; the forker's hold, if any, ends. */
    atomic_store_explicit(&stuck_lock.word, 0, memory_order_relaxed);
}

static void abandon(struct ctr_scribe *s)
{
    ctr_lock_acquire(&stuck_lock);
    s->next_stuck = stuck;
    stuck = s;
    stuck_count++;
    ctr_lock_release(&stuck_lock);
}

int ctr__scribe_start(int fd, struct ctr_scribe **out)
{
    *out = NULL;
#if !defined(__x86_64__) || CTR_SCRIBE_UNDER_TSAN
    (void)fd;
    return -ENOSYS;
#else
    int saved = errno;
    ctr_lock_acquire(&stuck_lock);
    reap_stuck();
    int too_many = stuck_count >= CTR_SCRIBE_STUCK_MAX;
    ctr_lock_release(&stuck_lock);
    if (too_many)
        return -EAGAIN;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t head = (sizeof(struct ctr_scribe) + page - 1) / page * page;
    size_t bytes = head + SCRIBE_STACK + CTR_SCRIBE_PIECE;
    uint8_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        errno = saved;
        return -ENOMEM;
    }
    struct ctr_scribe *s = (struct ctr_scribe *)(void *)m; /* a page: aligned */
    struct rlimit lim;
    s->fd = fd;
    s->parent = getpid();
    s->fd_limit = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < 65536
                      ? (unsigned)lim.rlim_cur
                      : 65536;
    s->buf = m + head + SCRIBE_STACK;
    s->map_bytes = bytes;
    /* Every signal blocked in the scribe (it inherits this thread's mask):
     * the program's handlers must never run on its stack. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* Exit signal 0 (the low byte): no SIGCHLD for the program. */
    int pid =
        clone(ctr__scribe_main, m + head + SCRIBE_STACK,
              CLONE_VM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID, s, &s->tid, NULL, &s->tid);
    int err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    if (pid < 0) {
        munmap(m, bytes);
        return -err;
    }
    s->pid = pid;
    *out = s;
    return 0;
#endif
}

/* Waits for s's piece: DONE, the scribe gone, or the stall bound waited.
 * The bound is counted in time this thread spent waiting, each slice
 * counted at most once: a process stopped or frozen as a whole (SIGSTOP
 * to its group, a cgroup freezer) does not find its scribe stalled when
 * it wakes, before the scribe had its turn to run.
 * @return the piece's result; -EPIPE; -ETIMEDOUT (s abandoned). */
static int await_piece(struct ctr_scribe *s)
{
    const uint64_t slice_ns = 100 * 1000 * 1000;
    uint64_t waited = 0;
    for (;;) {
        /* acquire: pairs with the scribe's release CAS to DONE (result). */
        uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == CTR_SCRIBE_DONE) {
            int rc = (int)s->result;
            /* relaxed: the scribe waits for WRITE or QUIT, which are
             * published with release. */
            atomic_store_explicit(&s->state, CTR_SCRIBE_IDLE, memory_order_relaxed);
            return rc;
        }
        if (!alive(s))
            return -EPIPE; /* killed: its file ends here */
        if (waited >= CTR_SCRIBE_STALL_NS) {
            uint32_t expected = CTR_SCRIBE_WRITE;
            /* acquire (on failure): the scribe finished meanwhile (DONE,
             * its release CAS): its result is taken above. */
            if (atomic_compare_exchange_strong_explicit(&s->state, &expected, CTR_SCRIBE_QUIT,
                                                        memory_order_acquire,
                                                        memory_order_acquire)) {
                abandon(s);
                return -ETIMEDOUT;
            }
            continue;
        }
        /* A slice at a time: a scribe that died wakes nobody here. */
        uint64_t t0 = mono_ns();
        futex_wait_ns(&s->state, FUTEX_WAIT_PRIVATE, CTR_SCRIBE_WRITE, slice_ns);
        uint64_t took = mono_ns() - t0;
        waited += took < slice_ns ? took : slice_ns;
    }
}

int ctr__scribe_write(struct ctr_scribe *s, const void *buf, size_t len)
{
    int saved = errno, rc = 0;
    const uint8_t *p = buf;
    while (len > 0 && rc == 0) {
        size_t n = len < CTR_SCRIBE_PIECE ? len : CTR_SCRIBE_PIECE;
        memcpy(s->buf, p, n);
        s->len = n;
        /* release: buf and len before WRITE (the scribe's acquire load). */
        atomic_store_explicit(&s->state, CTR_SCRIBE_WRITE, memory_order_release);
        futex_wake(&s->state);
        rc = await_piece(s);
        p += n;
        len -= n;
    }
    errno = saved;
    return rc;
}

void ctr__scribe_end(struct ctr_scribe *s)
{
    int saved = errno;
    if (s->parent != getpid()) { /* the parent's, copied by a fork */
        munmap(s, s->map_bytes);
        errno = saved;
        return;
    }
    /* release: pairs with the scribe's acquire load. */
    atomic_store_explicit(&s->state, CTR_SCRIBE_QUIT, memory_order_release);
    futex_wake(&s->state);
    uint64_t deadline = mono_ns() + CTR_SCRIBE_STALL_NS;
    int32_t tid;
    /* The kernel wakes tid's waiters when it clears it. */
    while ((tid = atomic_load_explicit(&s->tid, memory_order_acquire)) != 0 && mono_ns() < deadline)
        futex_wait_ns(&s->tid, FUTEX_WAIT, (uint32_t)tid, 100000000ull);
    if (tid != 0)
        abandon(s); /* cannot happen but for a scribe stopped by a debugger */
    else
        reap(s);
    errno = saved;
}
