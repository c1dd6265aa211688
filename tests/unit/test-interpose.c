/* SPDX-License-Identifier: MIT */
/* test-interpose.c - the pthread wrappers: they keep the real functions'
 * semantics, record nothing when uncontended, and record a contended wait
 * with its true duration and the caller's stack. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "ctrace_format.h"
#include "read/trace.h"

static char path[64];

static int setup(void **state)
{
    (void)state;
    return ctr_test_trace_begin(path, sizeof(path), "interpose");
}

static int teardown(void **state)
{
    (void)state;
    return ctr_test_trace_end(path);
}

static size_t count_blocks_on(const struct ctr_trace *tr, const void *obj, uint64_t *wait_ns,
                              uint64_t *stack)
{
    size_t n = 0;
    for (size_t i = 0; i < tr->nthreads; i++) {
        const struct ctr_thread_info *th = &tr->threads[i];
        for (size_t k = 0; k < th->nevents; k++) {
            const struct ctr_trace_event *e = &th->events[k];
            if (e->type != CTR_EV_BLOCK || e->args[1] != (uintptr_t)obj)
                continue;
            n++;
            if (stack)
                *stack = e->args[2];
            if (wait_ns && k + 1 < th->nevents && th->events[k + 1].type == CTR_EV_UNBLOCK)
                *wait_ns = th->events[k + 1].ns - e->ns;
        }
    }
    return n;
}

static void test_uncontended_records_nothing(void **state)
{
    (void)state;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    for (int i = 0; i < 10000; i++) {
        assert_int_equal(pthread_mutex_lock(&m), 0);
        assert_int_equal(pthread_mutex_unlock(&m), 0);
    }
    assert_int_equal(pthread_mutex_trylock(&m), 0);
    assert_int_equal(pthread_mutex_trylock(&m), EBUSY); /* a failed trylock is no wait */
    pthread_mutex_unlock(&m);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_int_equal(count_blocks_on(&tr, &m, NULL, NULL), 0);
    ctr_trace_free(&tr);
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static uint64_t waiter_line_pc; /* an address inside the waiting function */
static uint64_t lock_took_ns;   /* the waiter's lock call, as it timed it */

static __attribute__((noinline)) void wait_for_held(void)
{
    waiter_line_pc = (uintptr_t)__builtin_return_address(0);
    uint64_t t0 = ctr_test_now_ns();
    pthread_mutex_lock(&held);
    lock_took_ns = ctr_test_now_ns() - t0;
    pthread_mutex_unlock(&held);
}

static void *waiter(void *arg)
{
    (void)arg;
    wait_for_held();
    return NULL;
}

static void test_contended_wait_timed_with_stack(void **state)
{
    (void)state;
    pthread_mutex_lock(&held);
    pthread_t th;
    pthread_create(&th, NULL, waiter, NULL);
    struct timespec hold = {0, 50 * 1000 * 1000};
    nanosleep(&hold, NULL); /* the waiter blocks for ~50 ms */
    pthread_mutex_unlock(&held);
    pthread_join(th, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    uint64_t wait_ns = 0, stack = 0;
    assert_int_equal(count_blocks_on(&tr, &held, &wait_ns, &stack), 1);
    /* The wait is the lock call the waiter timed, within 10%. */
    if (wait_ns < lock_took_ns * 9 / 10 || wait_ns > lock_took_ns * 11 / 10)
        fail_msg("wait %.3f ms, the call took %.3f ms", wait_ns / 1e6, lock_took_ns / 1e6);
    const struct ctr_stack_info *s = ctr_trace_stack(&tr, stack);
    assert_non_null(s);
    assert_true(s->n >= 2);
    /* Innermost frame: the call in wait_for_held; next: its caller, waiter. */
    assert_true(s->pcs[0] > (uintptr_t)wait_for_held && s->pcs[0] < (uintptr_t)wait_for_held + 256);
    assert_true(s->pcs[1] == waiter_line_pc);
    ctr_trace_free(&tr);
}

static void *hold_then_release(void *arg)
{
    pthread_mutex_t *m = arg;
    pthread_mutex_lock(m);
    struct timespec hold = {0, 100 * 1000 * 1000};
    nanosleep(&hold, NULL);
    pthread_mutex_unlock(m);
    return NULL;
}

static void test_semantics_kept(void **state)
{
    (void)state;
    /* An error-checking mutex re-locked by its owner: EDEADLK, not a wait. */
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_t ec;
    pthread_mutex_init(&ec, &a);
    assert_int_equal(pthread_mutex_lock(&ec), 0);
    assert_int_equal(pthread_mutex_lock(&ec), EDEADLK);
    assert_int_equal(pthread_mutex_unlock(&ec), 0);
#if !CTR_TEST_TSAN /* a misuse on purpose, which ThreadSanitizer reports */
    assert_int_equal(pthread_mutex_unlock(&ec), EPERM);
#endif
    /* Recursive: the owner's relock succeeds. */
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_t rec;
    pthread_mutex_init(&rec, &a);
    assert_int_equal(pthread_mutex_lock(&rec), 0);
    assert_int_equal(pthread_mutex_lock(&rec), 0);
    pthread_mutex_unlock(&rec);
    pthread_mutex_unlock(&rec);
    /* A timed lock that times out still waited: ETIMEDOUT and one Block. */
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_t th;
    pthread_create(&th, NULL, hold_then_release, &m);
    usleep(20000);
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_nsec += 10 * 1000 * 1000;
    if (at.tv_nsec >= 1000000000) {
        at.tv_sec++;
        at.tv_nsec -= 1000000000;
    }
    assert_int_equal(pthread_mutex_timedlock(&m, &at), ETIMEDOUT);
#if CTR_TEST_TSAN
    /* GCC 12's ThreadSanitizer does not intercept pthread_mutex_clocklock:
     * the unlock after it would look to it like a misuse. */
    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_sec += 5;
    assert_int_equal(pthread_mutex_timedlock(&m, &at), 0);
#else
    clock_gettime(CLOCK_MONOTONIC, &at);
    at.tv_sec += 5;
    assert_int_equal(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &at), 0);
#endif
    pthread_mutex_unlock(&m);
    pthread_join(th, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_int_equal(count_blocks_on(&tr, &ec, NULL, NULL), 0);
    assert_int_equal(count_blocks_on(&tr, &rec, NULL, NULL), 0);
    assert_int_equal(count_blocks_on(&tr, &m, NULL, NULL), 2);
    ctr_trace_free(&tr);
    pthread_mutexattr_destroy(&a);
}

static void *named(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "renamed-self");
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    usleep(50000);
    return NULL;
}

static void test_threads_and_names(void **state)
{
    (void)state;
    pthread_t a, b;
    pthread_create(&a, NULL, named, NULL);
    pthread_create(&b, NULL, sleeper, NULL);
    assert_int_equal(pthread_setname_np(b, "renamed-other"), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    int self_named = 0, other_named = 0, started = 0, ended = 0;
    for (size_t i = 0; i < tr.nthreads; i++) {
        const struct ctr_thread_info *th = &tr.threads[i];
        self_named += strcmp(th->name, "renamed-self") == 0;
        other_named += strcmp(th->name, "renamed-other") == 0;
        for (size_t k = 0; k < th->nevents; k++) {
            if (th->events[k].type == CTR_EV_THREAD_START) {
                started++;
                uint64_t fn = th->events[k].args[1];
                assert_true(fn == (uintptr_t)named || fn == (uintptr_t)sleeper);
                assert_non_null(ctr_trace_thread(&tr, th->events[k].args[0])); /* parent */
            }
            ended += th->events[k].type == CTR_EV_THREAD_END;
        }
    }
    assert_int_equal(self_named, 1);
    assert_int_equal(other_named, 1);
    assert_int_equal(started, 2);
    assert_int_equal(ended, 2);
    assert_int_equal(tr.events_by_type[CTR_EV_THREAD_CREATE], 2);
    ctr_trace_free(&tr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_uncontended_records_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_contended_wait_timed_with_stack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_semantics_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_and_names, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
