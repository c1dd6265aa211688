/* SPDX-License-Identifier: MIT */
/* test-calls.c - calls that do not return normally, and what the trace says
 * of them (the open call marks of tracer/wrap/wait.c):
 *   - a read() cancelled by pthread_cancel is a wait from its start to the
 *     cancellation, not running time;
 *   - a pthread_cond_wait() cancelled ends its wait at the cancellation;
 *   - a read() left by siglongjmp from a signal handler (a timeout done the
 *     classic way) is a wait up to the jump, and not "blocked in read" for
 *     ever at the end of the trace;
 *   - a jump out of a handler that interrupted an event leaves the thread
 *     able to trace (its write section is closed), and a stop does not wait
 *     for it.
 * Times are checked against the test's own clock readings around the calls
 * (events are CLOCK_MONOTONIC nanoseconds), never against nominal sleeps. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "core/emit.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "read/trace.h"

static char path[64];

static int setup(void **state)
{
    (void)state;
    ctr_test_temp(path, sizeof(path), "calls");
    struct trace_options o = {.path = path, .io_min_ns = 1};
    return trace_start_opts(&o);
}

static int teardown(void **state)
{
    (void)state;
    return ctr_test_trace_end(path);
}

/* The first Block on `obj` (of `reason`) in thread id's events, and the
 * event after it, which must be its Unblock. */
struct wait {
    uint64_t from_ns, to_ns;
    int next_type; /* the event after the Block (-1: none) */
};

static struct wait wait_on(const struct ctr_trace *tr, uint64_t id, uint64_t reason, uint64_t obj)
{
    struct ctr_thread_info *th = ctr_trace_thread(tr, id);
    assert_non_null(th);
    for (size_t k = 0; k < th->nevents; k++) {
        const struct ctr_trace_event *e = &th->events[k];
        if (e->type == CTR_EV_BLOCK && e->args[0] == reason && e->args[1] == obj) {
            struct wait w = {e->ns, 0, -1};
            if (k + 1 < th->nevents) {
                w.next_type = th->events[k + 1].type;
                w.to_ns = th->events[k + 1].ns;
            }
            return w;
        }
    }
    fail_msg("no wait of reason %llu on %#llx", (unsigned long long)reason,
             (unsigned long long)obj);
    return (struct wait){0};
}

/* Asserts the wait began in [t0, t1] and ended by Unblock in [t1, t2]. */
static void assert_wait_between(struct wait w, uint64_t t0, uint64_t t1, uint64_t t2)
{
    assert_int_equal(w.next_type, CTR_EV_UNBLOCK);
    if (w.from_ns < t0 || w.from_ns > t1)
        fail_msg("began %lld ns after the call, which was %lld ns before the end",
                 (long long)(w.from_ns - t0), (long long)(t1 - t0));
    if (w.to_ns < t1 || w.to_ns > t2)
        fail_msg("ended %lld ns after the cancel or jump, expected within %lld ns",
                 (long long)(w.to_ns - t1), (long long)(t2 - t1));
}

struct blocked_thread {
    pthread_t th;
    int fd;
    _Atomic uint64_t id, t0; /* trace id; the time just before the call */
    _Atomic pid_t tid;
    _Atomic int jumped;
};

/* Notes, on b's own thread, that it is about to make its call. */
static void about_to_call(struct blocked_thread *b)
{
    atomic_store(&b->id, ctr__self_traced()->id);
    atomic_store(&b->tid, ctr_test_tid());
    atomic_store(&b->t0, ctr_test_now_ns());
}

/* Waits until b's thread is asleep in its call. */
static void until_in_call(struct blocked_thread *b)
{
    while (!atomic_load(&b->t0))
        sched_yield();
    ctr_test_until_asleep(atomic_load(&b->tid));
}

/* ---------------------------------------------------------------------------
 * Cancellation
 * ------------------------------------------------------------------------- */

static void *read_forever(void *arg)
{
    struct blocked_thread *b = arg;
    char c;
    about_to_call(b);
    for (;;)
        if (read(b->fd, &c, 1) < 0)
            break;
    return NULL;
}

static void test_cancelled_read_is_a_wait(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    struct blocked_thread b = {.fd = p[0]};
    assert_int_equal(pthread_create(&b.th, NULL, read_forever, &b), 0);
    until_in_call(&b);
    uint64_t t1 = ctr_test_now_ns();
    assert_int_equal(pthread_cancel(b.th), 0);
    void *ret;
    assert_int_equal(pthread_join(b.th, &ret), 0);
    uint64_t t2 = ctr_test_now_ns();
    assert_ptr_equal(ret, PTHREAD_CANCELED);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_wait_between(wait_on(&tr, b.id, CTR_REASON_READ, (uint64_t)p[0]), b.t0, t1, t2);
    ctr_trace_free(&tr);
    close(p[0]);
    close(p[1]);
}

static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void unlock_on_cancel(void *m)
{
    pthread_mutex_unlock(m);
}

static void *cond_wait_forever(void *arg)
{
    struct blocked_thread *b = arg;
    pthread_mutex_lock(&cv_lock);
    pthread_cleanup_push(unlock_on_cancel, &cv_lock);
    about_to_call(b);
    for (;;)
        pthread_cond_wait(&cv, &cv_lock);
    pthread_cleanup_pop(1);
    return NULL;
}

static void test_cancelled_cond_wait_ends_at_cancel(void **state)
{
    (void)state;
    struct blocked_thread b = {.fd = -1};
    assert_int_equal(pthread_create(&b.th, NULL, cond_wait_forever, &b), 0);
    until_in_call(&b);
    uint64_t t1 = ctr_test_now_ns();
    assert_int_equal(pthread_cancel(b.th), 0);
    assert_int_equal(pthread_join(b.th, NULL), 0);
    uint64_t t2 = ctr_test_now_ns();
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_wait_between(wait_on(&tr, b.id, CTR_REASON_COND_WAIT, (uintptr_t)&cv), b.t0, t1, t2);
    ctr_trace_free(&tr);
}

/* ---------------------------------------------------------------------------
 * siglongjmp out of a signal handler
 * ------------------------------------------------------------------------- */

static sigjmp_buf timeout_jump;

static void jump_out(int sig)
{
    (void)sig;
    siglongjmp(timeout_jump, 1);
}

static void *read_with_timeout(void *arg)
{
    struct blocked_thread *b = arg;
    char c;
    if (sigsetjmp(timeout_jump, 1) == 0) {
        about_to_call(b);
        if (read(b->fd, &c, 1) >= 0)
            return (void *)1; /* never: nobody writes */
    }
    atomic_store(&b->jumped, 1);
    /* Now computing, not blocked, until the trace ends. */
    while (atomic_load(&b->jumped) != 2)
        sched_yield();
    return NULL;
}

static void test_longjmp_out_of_read_ends_the_wait(void **state)
{
    (void)state;
    struct sigaction sa = {.sa_handler = jump_out}, old;
    sigaction(SIGUSR1, &sa, &old);
    int p[2];
    assert_int_equal(pipe(p), 0);
    struct blocked_thread b = {.fd = p[0]};
    assert_int_equal(pthread_create(&b.th, NULL, read_with_timeout, &b), 0);
    until_in_call(&b);
    uint64_t t1 = ctr_test_now_ns();
    assert_int_equal(pthread_kill(b.th, SIGUSR1), 0);
    while (!atomic_load(&b.jumped))
        sched_yield();
    uint64_t t2 = ctr_test_now_ns();
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr); /* the thread still runs */
    atomic_store(&b.jumped, 2);
    void *ret;
    pthread_join(b.th, &ret);
    assert_null(ret);
    struct wait w = wait_on(&tr, b.id, CTR_REASON_READ, (uint64_t)p[0]);
    assert_wait_between(w, b.t0, t1, t2);
    /* Nothing says the thread is still in read at the end. */
    struct ctr_thread_info *th = ctr_trace_thread(&tr, b.id);
    size_t blocks = 0;
    for (size_t k = 0; k < th->nevents; k++)
        blocks += th->events[k].type == CTR_EV_BLOCK;
    assert_int_equal(blocks, 1);
    ctr_trace_free(&tr);
    sigaction(SIGUSR1, &old, NULL);
    close(p[0]);
    close(p[1]);
}

/* A handler that jumps out of the middle of an event (a log being written):
 * the thread's section is closed by the jump, so it goes on tracing, and
 * stopping does not wait for it. */
static sigjmp_buf log_jump;
static _Atomic int jumped_from_section;

static void jump_out_of_log(int sig)
{
    (void)sig;
    struct ctr_thread *t = ctr__self;
    if (!t || !atomic_load_explicit(&t->writing, memory_order_relaxed))
        return; /* not inside an event this time */
    atomic_store(&jumped_from_section, 1);
    siglongjmp(log_jump, 1);
}

struct kicker {
    pthread_t target, th;
    _Atomic int stop;
};

static void *kick_until_stopped(void *arg)
{
    struct kicker *k = arg;
    struct timespec ts = {0, 50000};
    while (!atomic_load(&k->stop)) {
        pthread_kill(k->target, SIGUSR1);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void test_longjmp_out_of_an_event(void **state)
{
    (void)state;
    struct sigaction sa = {.sa_handler = jump_out_of_log}, old;
    sigaction(SIGUSR1, &sa, &old);
    static const char msg[] = "a log message long enough for a signal to land inside its copy, "
                              "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnop";
    struct kicker k = {.target = pthread_self()};
    assert_int_equal(pthread_create(&k.th, NULL, kick_until_stopped, &k), 0);
    uint64_t deadline = ctr_test_now_ns() + 20000000000ull;
    if (sigsetjmp(log_jump, 1) == 0)
        while (ctr_test_now_ns() < deadline)
            trace_log(0, "c", msg);
    atomic_store(&k.stop, 1);
    pthread_join(k.th, NULL);
    sigaction(SIGUSR1, &old, NULL);
    assert_true(atomic_load(&jumped_from_section));
    struct ctr_thread *t = ctr__self;
    assert_int_equal(atomic_load(&t->writing), 0);
    trace_task_t after = trace_task_begin("after-the-jump", 0);
    trace_task_end(after);
    uint64_t t0 = ctr_test_now_ns();
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_true(ctr_test_now_ns() - t0 < 1000000000ull); /* not the 2 s give-up */
    struct ctr_thread_info *th = ctr_trace_thread(&tr, t->id);
    assert_int_equal(th->events[th->nevents - 1].type, CTR_EV_TASK_END);
    assert_true(th->dropped >= 1); /* the event the jump cut, counted */
    ctr_trace_free(&tr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cancelled_read_is_a_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_cond_wait_ends_at_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_longjmp_out_of_read_ends_the_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_longjmp_out_of_an_event, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
