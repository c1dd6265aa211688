/* SPDX-License-Identifier: MIT */
/* test-sync-c11.c - ground truth for the waits that libc makes where no
 * pthread wrapper sees them (tracer/wrap/interpose_c11.c,
 * interpose_futex.c): C11 threads (mtx_lock, cnd_wait, thrd_join,
 * thrd_sleep), one-time initialisations (call_once), a hand-written futex
 * lock, and a blocking call made by number (syscall(SYS_read)). Each wait
 * lands in its profile within 10% of what the test measured, under the name
 * the program called, at the calling function; each release in the blame
 * profile at the releasing function. A futex lock under contention gets the
 * same profile as a pthread mutex under the same load. As test-sync.c, whose
 * pair of threads (syncpair.h) this shares. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static const char *const syncpair_stem = "sync-c11";
#include "syncpair.h"

#include "ctrace_format.h"

/* ---------------------------------------------------------------------------
 * C11 mutex and condition variable
 * ------------------------------------------------------------------------- */

static mtx_t mtx;
static cnd_t cnd;
static int go;

static __attribute__((noinline)) void wait_mtx(void)
{
    announce();
    MEASURED(mtx_lock(&mtx));
    mtx_unlock(&mtx);
}

static int mtx_waiter(void *arg)
{
    (void)arg;
    wait_mtx();
    return 0;
}

/* Holds the C11 mutex until the C11 waiter has slept in mtx_lock 50 ms. */
static __attribute__((noinline)) void hold_mtx_50ms(void)
{
    thrd_t th;
    mtx_lock(&mtx);
    assert_int_equal(thrd_create(&th, mtx_waiter, NULL), thrd_success);
    await_waiter_then_sleep();
    RELEASE(mtx_unlock(&mtx));
    uint64_t t0 = ctr_test_now_ns();
    assert_int_equal(thrd_join(th, NULL), thrd_success);
    atomic_store(&scaffold_join_ns, ctr_test_now_ns() - t0);
}

static void test_mtx_lock(void **state)
{
    (void)state;
    hold_mtx_50ms();
    expect_profile(CTR_PROFILE_SYNC, "mtx_lock", wait_mtx);
}

static void test_mtx_blame(void **state)
{
    (void)state;
    hold_mtx_50ms();
    expect_profile(CTR_PROFILE_BLAME, "mtx_unlock", hold_mtx_50ms);
}

static __attribute__((noinline)) void wait_cnd(void)
{
    mtx_lock(&mtx);
    announce();
    MEASURED(while (!go) cnd_wait(&cnd, &mtx));
    mtx_unlock(&mtx);
}

static int cnd_waiter(void *arg)
{
    (void)arg;
    wait_cnd();
    return 0;
}

static __attribute__((noinline)) void signal_cnd_50ms(void)
{
    thrd_t th;
    assert_int_equal(thrd_create(&th, cnd_waiter, NULL), thrd_success);
    await_waiter_then_sleep();
    mtx_lock(&mtx);
    go = 1;
    RELEASE(cnd_signal(&cnd));
    mtx_unlock(&mtx);
    assert_int_equal(thrd_join(th, NULL), thrd_success);
}

static void test_cnd_wait(void **state)
{
    (void)state;
    go = 0;
    signal_cnd_50ms();
    expect_profile(CTR_PROFILE_SYNC, "cnd_wait", wait_cnd);
}

static void test_cnd_blame(void **state)
{
    (void)state;
    go = 0;
    signal_cnd_50ms();
    expect_profile(CTR_PROFILE_BLAME, "cnd_signal", signal_cnd_50ms);
}

/* ---------------------------------------------------------------------------
 * C11 threads: a join, released by the thread's end; its start function
 * named in ThreadStart
 * ------------------------------------------------------------------------- */

static int run_50ms_c11(void *arg)
{
    (void)arg;
    await_waiter_then_sleep(); /* the joiner is the waiter */
    atomic_store(&release_begun, ctr_test_now_ns());
    return 42;
}

static __attribute__((noinline)) void wait_thrd_join(void)
{
    thrd_t th;
    int res = 0;
    announce();
    assert_int_equal(thrd_create(&th, run_50ms_c11, NULL), thrd_success);
    MEASURED(assert_int_equal(thrd_join(th, &res), thrd_success));
    atomic_store(&release_done, ctr_test_now_ns());
    assert_int_equal(res, 42); /* the thread's int, through the tracer's trampoline */
}

static void test_thrd_join(void **state)
{
    (void)state;
    wait_thrd_join();
    expect_profile(CTR_PROFILE_SYNC, "thrd_join", wait_thrd_join);
}

/* A C11 thread is a traced thread: created by its creator, started in its
 * own start function. */
static void test_thrd_create_recorded(void **state)
{
    (void)state;
    wait_thrd_join();
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    int creates = 0, starts = 0;
    for (size_t i = 0; i < tr.nthreads; i++)
        for (size_t k = 0; k < tr.threads[i].nevents; k++) {
            const struct ctr_trace_event *e = &tr.threads[i].events[k];
            creates += e->type == CTR_EV_THREAD_CREATE;
            starts += e->type == CTR_EV_THREAD_START && e->args[1] == (uintptr_t)run_50ms_c11;
        }
    assert_int_equal(creates, 1);
    assert_int_equal(starts, 1);
    ctr_trace_free(&tr);
}

/* thrd_sleep is a sleep: a wait in no profile, of at least what was asked. */
static void test_thrd_sleep(void **state)
{
    (void)state;
    struct timespec d = {0, 30 * 1000 * 1000};
    uint64_t t0 = ctr_test_now_ns();
    assert_int_equal(thrd_sleep(&d, NULL), 0);
    uint64_t took = ctr_test_now_ns() - t0;
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    int sleeps = 0;
    for (size_t i = 0; i < tr.nthreads; i++)
        for (size_t k = 0; k + 1 < tr.threads[i].nevents; k++) {
            const struct ctr_trace_event *e = &tr.threads[i].events[k];
            if (e->type != CTR_EV_BLOCK || e->args[0] != CTR_REASON_THRD_SLEEP)
                continue;
            sleeps++;
            uint64_t ns = tr.threads[i].events[k + 1].ns - e->ns;
            assert_true(ns >= 30 * 1000 * 1000 - 100 * 1000 && ns <= took + 100 * 1000);
        }
    assert_int_equal(sleeps, 1);
    ctr_trace_free(&tr);
}

/* ---------------------------------------------------------------------------
 * call_once: a thread that finds another running the init function waits
 * for it
 * ------------------------------------------------------------------------- */

static once_flag once = ONCE_FLAG_INIT;
static _Atomic int init_running;

static void slow_init(void)
{
    atomic_store(&init_running, 1);
    await_waiter_then_sleep();
    atomic_store(&release_begun, ctr_test_now_ns());
}

static int init_runner(void *arg)
{
    (void)arg;
    call_once(&once, slow_init);
    return 0;
}

static __attribute__((noinline)) void wait_once(void)
{
    while (!atomic_load(&init_running))
        sched_yield();
    announce();
    MEASURED(call_once(&once, slow_init));
    atomic_store(&release_done, ctr_test_now_ns());
}

static void test_call_once(void **state)
{
    (void)state;
    once = (once_flag)ONCE_FLAG_INIT;
    atomic_store(&init_running, 0);
    thrd_t th;
    assert_int_equal(thrd_create(&th, init_runner, NULL), thrd_success);
    wait_once();
    assert_int_equal(thrd_join(th, NULL), thrd_success);
    expect_profile(CTR_PROFILE_SYNC, "call_once", wait_once);
}

/* ---------------------------------------------------------------------------
 * A hand-written futex lock (0 free, 1 taken, 2 taken with waiters), and a
 * call by number
 * ------------------------------------------------------------------------- */

static _Atomic int fword;

static __attribute__((noinline)) void futex_lock(_Atomic int *w)
{
    int c = 0;
    if (atomic_compare_exchange_strong(w, &c, 1))
        return;
    if (c != 2)
        c = atomic_exchange(w, 2);
    while (c != 0) {
        syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = atomic_exchange(w, 2);
    }
}

static __attribute__((noinline)) void futex_unlock(_Atomic int *w)
{
    if (atomic_exchange(w, 0) == 2)
        syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static __attribute__((noinline)) void wait_futex(void)
{
    announce();
    MEASURED(futex_lock(&fword));
    futex_unlock(&fword);
}

static void *futex_waiter(void *arg)
{
    (void)arg;
    wait_futex();
    return NULL;
}

static __attribute__((noinline)) void hold_futex_50ms(void)
{
    pthread_t th;
    futex_lock(&fword);
    assert_int_equal(pthread_create(&th, NULL, futex_waiter, NULL), 0);
    await_waiter_then_sleep();
    RELEASE(futex_unlock(&fword));
    join_waiter(th);
}

static void test_futex_wait(void **state)
{
    (void)state;
    hold_futex_50ms();
    expect_profile(CTR_PROFILE_SYNC, "futex_wait", (void (*)(void))(uintptr_t)futex_lock);
}

static void test_futex_blame(void **state)
{
    (void)state;
    hold_futex_50ms();
    expect_profile(CTR_PROFILE_BLAME, "futex_wake", (void (*)(void))(uintptr_t)futex_unlock);
}

static int pipefd[2];

static __attribute__((noinline)) void wait_raw_read(void)
{
    char c;
    announce();
    MEASURED(assert_int_equal(syscall(SYS_read, pipefd[0], &c, 1), 1));
    STAY();
}

static void *raw_reader(void *arg)
{
    (void)arg;
    wait_raw_read();
    return NULL;
}

static void write_after_50ms(void)
{
    await_waiter_then_sleep();
    RELEASE(assert_int_equal(write(pipefd[1], "x", 1), 1));
}

static void test_read_by_number(void **state)
{
    (void)state;
    assert_int_equal(pipe(pipefd), 0);
    run_pair(raw_reader, write_after_50ms);
    expect_profile(CTR_PROFILE_SYSCALL, "read", wait_raw_read);
    close(pipefd[0]);
    close(pipefd[1]);
}

/* ---------------------------------------------------------------------------
 * The futex lock and a pthread mutex under the same contention: the same
 * sync profile (every wait under its lock call) and the same blame profile
 * (every wait under its unlock), each about as large as the other
 * ------------------------------------------------------------------------- */

enum { CONTENDERS = 4, ROUNDS = 20 };
static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER;
static int use_futex;

static void *contender(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (use_futex)
            futex_lock(&fword);
        else
            pthread_mutex_lock(&pmu);
        sleep_ms(1); /* held: the others wait */
        if (use_futex)
            futex_unlock(&fword);
        else
            pthread_mutex_unlock(&pmu);
    }
    return NULL;
}

static int sum_delay(void *ctx, const struct ctr_pprof_frame *frames, size_t n, int64_t count,
                     int64_t delay_ns)
{
    (void)frames, (void)n, (void)count;
    *(int64_t *)ctx += delay_ns;
    return 0;
}

/* Runs the contention with one kind of lock; the profiles' totals. */
static void contend(int futex, int64_t *sync_ns, int64_t *blame_ns)
{
    use_futex = futex;
    pthread_t th[CONTENDERS];
    for (int i = 0; i < CONTENDERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, contender, NULL), 0);
    for (int i = 0; i < CONTENDERS; i++)
        pthread_join(th[i], NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    *sync_ns = *blame_ns = 0;
    assert_int_equal(ctr_profile_samples(&tr, CTR_PROFILE_SYNC, NULL, sum_delay, sync_ns), 0);
    assert_int_equal(ctr_profile_samples(&tr, CTR_PROFILE_BLAME, NULL, sum_delay, blame_ns), 0);
    ctr_trace_free(&tr);
}

static void test_futex_lock_like_mutex(void **state)
{
    (void)state;
    int64_t fsync_ns, fblame_ns, psync_ns, pblame_ns;
    contend(1, &fsync_ns, &fblame_ns);
    assert_int_equal(ctr_test_trace_begin(path, sizeof(path), syncpair_stem), 0);
    contend(0, &psync_ns, &pblame_ns);
    /* Each lock's waits are blamed on its releases (the blame profile holds
     * the sync delay, but for the short span between a wait's start and a
     * release seen); and the two locks' delays are alike: 3 waiters on a
     * lock held 1 ms at a time, 80 times. */
    printf("# futex: sync %.1f ms, blame %.1f ms; pthread: sync %.1f ms, blame %.1f ms\n",
           fsync_ns / 1e6, fblame_ns / 1e6, psync_ns / 1e6, pblame_ns / 1e6);
    assert_true(fsync_ns > 20 * 1000 * 1000 && psync_ns > 20 * 1000 * 1000);
    assert_true(fblame_ns >= fsync_ns * 8 / 10 && fblame_ns <= fsync_ns);
    assert_true(pblame_ns >= psync_ns * 8 / 10 && pblame_ns <= psync_ns);
    assert_true(fsync_ns < psync_ns * 2 && psync_ns < fsync_ns * 2);
}

/* The C11 results of the mutex wrappers, which jump to glibc for a plain
 * mutex and map its errors for the others, tracing and not. */
#if !CTR_TEST_TSAN /* (testutil.h) */
static int unlock_not_owned(void *arg)
{
    return mtx_unlock(arg);
}
#endif

static void check_mtx_results(void)
{
    mtx_t plain, rec;
    assert_int_equal(mtx_init(&plain, mtx_plain), thrd_success);
    assert_int_equal(mtx_init(&rec, mtx_plain | mtx_recursive), thrd_success);
    assert_int_equal(mtx_lock(&plain), thrd_success);
    assert_int_equal(mtx_trylock(&plain), thrd_busy);
    assert_int_equal(mtx_unlock(&plain), thrd_success);
    assert_int_equal(mtx_lock(&rec), thrd_success);
    assert_int_equal(mtx_lock(&rec), thrd_success);
#if !CTR_TEST_TSAN /* TSan reports these misuses, as it should */
    thrd_t th;
    int res = -1;
    assert_int_equal(thrd_create(&th, unlock_not_owned, &rec), thrd_success);
    assert_int_equal(thrd_join(th, &res), thrd_success);
    assert_int_equal(res, thrd_error); /* EPERM: not the owner */
#endif
    assert_int_equal(mtx_unlock(&rec), thrd_success);
    assert_int_equal(mtx_unlock(&rec), thrd_success);
#if !CTR_TEST_TSAN
    assert_int_equal(mtx_unlock(&rec), thrd_error); /* not locked */
#endif
    mtx_destroy(&plain);
    mtx_destroy(&rec);
}

static void test_mtx_results(void **state)
{
    (void)state;
    check_mtx_results();
    assert_int_equal(trace_stop(), 0);
    check_mtx_results();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mtx_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mtx_blame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mtx_results, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cnd_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cnd_blame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thrd_join, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thrd_create_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thrd_sleep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_futex_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_futex_blame, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_by_number, setup, teardown),
        cmocka_unit_test_setup_teardown(test_futex_lock_like_mutex, setup, teardown),
    };
    mtx_init(&mtx, mtx_plain);
    cnd_init(&cnd);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
