/* SPDX-License-Identifier: MIT */
/* test-sync.c - ground truth for the sync and blame profiles: for each kind of
 * wait, one thread waits in a known function for about 50 ms and the
 * profile must show that delay, within 10%, under the right leaf at that
 * function, and nothing half as large anywhere else. Sleeps must not appear
 * at all. The delay is measured by the test, never taken as the nominal
 * 50 ms (a loaded machine oversleeps). The wait holds at least the time from
 * when the test saw the waiter asleep to the other thread's release call,
 * since a sync wait ends at its release (the time a woken thread then waits
 * for a CPU is the sched profile's); it holds at most the time from the
 * waiter's call to the release's return. The waiter's call is no lower
 * bound: a loaded machine may preempt it before it blocks, and that time
 * is not a wait (CI saw 6 ms of it under ASan).
 *
 * Each case is a pair of threads: the waiter says it is about to wait, the
 * other thread then sleeps 50 ms before releasing it. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static const char *const syncpair_stem = "sync";
#include "syncpair.h"
/* ---------------------------------------------------------------------------
 * Mutex: sync at the lock, blame at the holder's unlock
 * ------------------------------------------------------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static __attribute__((noinline)) void wait_mutex(void)
{
    announce();
    MEASURED(pthread_mutex_lock(&mu));
    pthread_mutex_unlock(&mu);
}

static void *mutex_waiter(void *arg)
{
    (void)arg;
    wait_mutex();
    return NULL;
}

/* Holds the mutex 50 ms after the waiter arrived, then unlocks: the unlock
 * is the release the blame profile must point at. */
static __attribute__((noinline)) void hold_mutex_50ms(void)
{
    pthread_t th;
    pthread_mutex_lock(&mu);
    assert_int_equal(pthread_create(&th, NULL, mutex_waiter, NULL), 0);
    await_waiter_then_sleep();
    RELEASE(pthread_mutex_unlock(&mu));
    join_waiter(th);
}

static void test_mutex(void **state)
{
    (void)state;
    hold_mutex_50ms();
    expect_profile(CTR_PROFILE_SYNC, "pthread_mutex_lock", wait_mutex);
}

static void test_mutex_blame(void **state)
{
    (void)state;
    hold_mutex_50ms();
    expect_profile(CTR_PROFILE_BLAME, "pthread_mutex_unlock", hold_mutex_50ms);
}

/* ---------------------------------------------------------------------------
 * Condition variable, semaphore, rwlock, barrier, join
 * ------------------------------------------------------------------------- */

static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go;

static __attribute__((noinline)) void wait_cond(void)
{
    pthread_mutex_lock(&mu);
    announce(); /* under the mutex: the signaler sees us waiting */
    MEASURED(while (!go) pthread_cond_wait(&cv, &mu));
    pthread_mutex_unlock(&mu);
}

static void *cond_waiter(void *arg)
{
    (void)arg;
    wait_cond();
    return NULL;
}

static void signal_after_50ms(void)
{
    await_waiter_then_sleep();
    pthread_mutex_lock(&mu);
    go = 1;
    RELEASE(pthread_cond_signal(&cv));
    pthread_mutex_unlock(&mu);
}

static void test_cond(void **state)
{
    (void)state;
    go = 0;
    run_pair(cond_waiter, signal_after_50ms);
    expect_profile(CTR_PROFILE_SYNC, "pthread_cond_wait", wait_cond);
}

static sem_t sem;

static __attribute__((noinline)) void wait_sem(void)
{
    announce();
    MEASURED(sem_wait(&sem));
    STAY(); /* not a tail call: this function must be on the stack */
}

static void *sem_waiter(void *arg)
{
    (void)arg;
    wait_sem();
    return NULL;
}

static void post_after_50ms(void)
{
    await_waiter_then_sleep();
    RELEASE(sem_post(&sem));
}

static void test_sem(void **state)
{
    (void)state;
    sem_init(&sem, 0, 0);
    run_pair(sem_waiter, post_after_50ms);
    expect_profile(CTR_PROFILE_SYNC, "sem_wait", wait_sem);
    sem_destroy(&sem);
}

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static __attribute__((noinline)) void wait_rdlock(void)
{
    announce();
    MEASURED(pthread_rwlock_rdlock(&rw));
    pthread_rwlock_unlock(&rw);
}

static void *rw_waiter(void *arg)
{
    (void)arg;
    wait_rdlock();
    return NULL;
}

static void write_hold_50ms(void)
{
    await_waiter_then_sleep();
    RELEASE(pthread_rwlock_unlock(&rw));
}

static void test_rwlock(void **state)
{
    (void)state;
    pthread_rwlock_wrlock(&rw);
    run_pair(rw_waiter, write_hold_50ms);
    expect_profile(CTR_PROFILE_SYNC, "pthread_rwlock_rdlock", wait_rdlock);
}

static pthread_barrier_t bar;

static __attribute__((noinline)) void wait_barrier(void)
{
    announce();
    MEASURED(pthread_barrier_wait(&bar));
    STAY();
}

static void *barrier_waiter(void *arg)
{
    (void)arg;
    wait_barrier();
    return NULL;
}

static void arrive_after_50ms(void)
{
    await_waiter_then_sleep();
    RELEASE(pthread_barrier_wait(&bar));
}

static void test_barrier(void **state)
{
    (void)state;
    pthread_barrier_init(&bar, NULL, 2);
    run_pair(barrier_waiter, arrive_after_50ms);
    expect_profile(CTR_PROFILE_SYNC, "pthread_barrier_wait", wait_barrier);
    pthread_barrier_destroy(&bar);
}

static void *run_50ms(void *arg)
{
    (void)arg;
    await_waiter_then_sleep(); /* the joiner is the waiter */
    /* Released by this thread's end, after it returns: from here until
     * the join returns (wait_join). */
    atomic_store(&release_begun, ctr_test_now_ns());
    return NULL;
}

static __attribute__((noinline)) void wait_join(void)
{
    pthread_t th;
    announce();
    assert_int_equal(pthread_create(&th, NULL, run_50ms, NULL), 0);
    MEASURED(pthread_join(th, NULL));
    atomic_store(&release_done, ctr_test_now_ns());
    STAY();
}

static void test_join(void **state)
{
    (void)state;
    wait_join();
    expect_profile(CTR_PROFILE_SYNC, "pthread_join", wait_join);
}

/* ---------------------------------------------------------------------------
 * Sleeps are waits, but in no profile
 * ------------------------------------------------------------------------- */

static int count_sample(void *ctx, const struct ctr_pprof_frame *frames, size_t n, int64_t count,
                        int64_t delay_ns)
{
    (void)frames, (void)n, (void)count;
    *(int64_t *)ctx += delay_ns;
    return 0;
}

static void test_sleeps_in_no_profile(void **state)
{
    (void)state;
    usleep(20000);
    sleep_ms(20);
    struct timespec ts = {0, 20000000};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    for (int p = 1; p < CTR_PROFILE_LIMIT; p++) {
        int64_t total = 0;
        assert_int_equal(
            ctr_profile_samples(&tr, (enum ctr_profile_type)p, NULL, count_sample, &total), 0);
        assert_true(total < 1000000); /* < 1 ms in any profile */
    }
    /* ...but the trace has them, as Block events of the sleep reasons. */
    int sleeps = 0;
    for (size_t i = 0; i < tr.nthreads; i++)
        for (size_t k = 0; k < tr.threads[i].nevents; k++) {
            const struct ctr_trace_event *e = &tr.threads[i].events[k];
            sleeps += e->type == CTR_EV_BLOCK &&
                      ctr_reason_specs[e->args[0]].wait_class == CTR_CLASS_SLEEP;
        }
    assert_int_equal(sleeps, 3);
    ctr_trace_free(&tr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mutex, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutex_blame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cond, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sem, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rwlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_barrier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_join, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sleeps_in_no_profile, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
