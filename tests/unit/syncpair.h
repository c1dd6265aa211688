/* SPDX-License-Identifier: MIT */
/* syncpair.h - the pair of threads the sync tests share (test-sync.c,
 * test-sync-c11.c): a waiter that says it is about to wait and measures its
 * call, a releaser that lets it go 50 ms after seeing it asleep and
 * brackets its release, and the check of a profile against those
 * measurements (expect_profile). Include once, after <cmocka.h>; the test
 * defines `static const char *const syncpair_stem` first (its trace's name). */
#ifndef CTR_SYNCPAIR_H
#define CTR_SYNCPAIR_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testtime.h"
#include "testutil.h"

#include "ctrace/trace.h"
#include "profile/profile.h"
#include "read/trace.h"

/* When the waiter called its blocking function, when the test saw it
 * asleep there, and when the other thread began and ended the call that
 * released it. */
static _Atomic uint64_t called_at, seen_asleep_at, release_begun, release_done;

/* MEASURED(call) : the waiter's blocking call, its start noted. */
#define MEASURED(call)                               \
    do {                                             \
        atomic_store(&called_at, ctr_test_now_ns()); \
        call;                                        \
    } while (0)

/* How long the releaser's own join of the waiter took (the pair's
 * scaffolding: on a loaded machine, as long as the woken waiter waits for a
 * CPU); a sample elsewhere may be that long. */
static _Atomic uint64_t scaffold_join_ns;

static void join_waiter(pthread_t th)
{
    uint64_t t0 = ctr_test_now_ns();
    pthread_join(th, NULL);
    atomic_store(&scaffold_join_ns, ctr_test_now_ns() - t0);
}

/* RELEASE(call) : the call that lets the waiter go, bracketed. */
#define RELEASE(call)                                    \
    do {                                                 \
        atomic_store(&release_begun, ctr_test_now_ns()); \
        call;                                            \
        atomic_store(&release_done, ctr_test_now_ns());  \
    } while (0)

/* After a wait that ends its function: keeps the compiler from making the
 * wait a tail call, which would take the function off the stack (clang
 * does), so the stack could not name it. */
#define STAY() __asm__ volatile("" ::: "memory")

static char path[64];
static _Atomic int ready;
static _Atomic pid_t waiter_tid;

/* Says the calling thread (the waiter) is about to wait. */
static void announce(void)
{
    atomic_store(&waiter_tid, ctr_test_tid());
    atomic_store(&ready, 1);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Waits until the waiter announced itself and is asleep in its wait, then
 * 50 ms more. */
static void await_waiter_then_sleep(void)
{
    while (!atomic_load(&ready))
        sched_yield();
    ctr_test_until_asleep(atomic_load(&waiter_tid));
    atomic_store(&seen_asleep_at, ctr_test_now_ns());
    sleep_ms(50);
}

/* ---------------------------------------------------------------------------
 * Reading profiles
 * ------------------------------------------------------------------------- */

struct tally {
    const char *leaf;
    uintptr_t fn; /* the function whose call site we look for */
    int64_t at_site, elsewhere, elsewhere_max;
};

/* A frame's pc is inside fn if it is within fn's first bytes: the waiting
 * functions below are small. */
static int in_function(uint64_t pc, uintptr_t fn)
{
    return pc >= fn && pc < fn + 512;
}

static int tally_sample(void *ctx, const struct ctr_pprof_frame *frames, size_t n, int64_t count,
                        int64_t delay_ns)
{
    (void)count;
    struct tally *t = ctx;
    if (n >= 2 && strcmp(frames[0].function, t->leaf) == 0 && in_function(frames[1].pc, t->fn))
        t->at_site += delay_ns;
    else {
        t->elsewhere += delay_ns;
        if (delay_ns > t->elsewhere_max)
            t->elsewhere_max = delay_ns;
    }
    return 0;
}

/* Stops tracing, reads the trace and checks that profile `type` has the
 * measured wait (within 10%) under `leaf` called from `fn`, and no other
 * sample half as large, but for the pair's own join of the waiter; and
 * that each thread's running time is its CPU time (testtime.h). */
static void expect_profile(enum ctr_profile_type type, const char *leaf, void (*fn)(void))
{
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct tally t = {leaf, (uintptr_t)fn, 0, 0, 0};
    assert_int_equal(ctr_profile_samples(&tr, type, NULL, tally_sample, &t), 0);
    int64_t lo = (int64_t)(atomic_load(&release_begun) - atomic_load(&seen_asleep_at));
    int64_t hi = (int64_t)(atomic_load(&release_done) - atomic_load(&called_at));
    int64_t join = (int64_t)atomic_load(&scaffold_join_ns) * 11 / 10 + 1000000;
    int64_t elsewhere_ok = lo / 2 > join ? lo / 2 : join;
    if (t.at_site < lo * 9 / 10 || t.at_site > hi * 11 / 10 || t.elsewhere_max > elsewhere_ok)
        fail_msg("%s profile, %s: %.2f ms at the call site (want %.2f to %.2f ms, +- 10%%), "
                 "largest elsewhere %.2f ms (want < half, or the pair's join)",
                 ctr_profile_name(type), leaf, t.at_site / 1e6, lo / 1e6, hi / 1e6,
                 t.elsewhere_max / 1e6);
    ctr_test_assert_running_is_cpu(&tr);
    ctr_trace_free(&tr);
}

static int setup(void **state)
{
    (void)state;
    atomic_store(&ready, 0);
    atomic_store(&scaffold_join_ns, 0);
    return ctr_test_trace_begin(path, sizeof(path), syncpair_stem);
}

static int teardown(void **state)
{
    (void)state;
    return ctr_test_trace_end(path);
}

static void run_pair(void *(*waiter)(void *), void (*releaser)(void))
{
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waiter, NULL), 0);
    releaser();
    join_waiter(th);
}

#endif
