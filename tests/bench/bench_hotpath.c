/* SPDX-License-Identifier: MIT */
/* bench_hotpath.c - what tracing costs a thread on the hot path, measured side
 * by side in one process:
 *   1. one event written to the thread's buffer (Unblock: type + time delta;
 *      Block: three arguments more), against an empty loop and a bare rdtsc;
 *   2. an uncontended pthread_mutex_lock + unlock: the real glibc functions
 *      (through dlsym(RTLD_NEXT)), libctrace's wrappers with tracing off, and
 *      with tracing on;
 *   3. the same for an uncontended C11 mtx_lock + mtx_unlock pair and an
 *      uncontended sem_post + sem_wait pair;
 *   4. annotations, per call (a task's begin or end, a region's, a log) with
 *      tracing off and on.
 * Variants are interleaved over several rounds and the median is printed, with
 * the ratio to the baseline. Prints tables; never passes or fails on timing.
 * usage: bench_hotpath [ITERATIONS (default 20000000)] [ROUNDS (default 7)]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <threads.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_events.h"
#include "core/clock.h"
#include "ctrace/trace.h"

/* ---------------------------------------------------------------------------
 * Variants: each runs `iters` operations and returns ns per operation.
 * ------------------------------------------------------------------------- */

static volatile uint64_t sink;

static double run_empty(uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++)
        __asm__ volatile("" ::: "memory");
    return (double)(bench_now_ns() - t0) / (double)iters;
}

static double run_ticks(uint64_t iters)
{
    uint64_t t0 = bench_now_ns(), acc = 0;
    for (uint64_t i = 0; i < iters; i++)
        acc += ctr__ticks();
    sink = acc;
    return (double)(bench_now_ns() - t0) / (double)iters;
}

static int (*real_lock)(pthread_mutex_t *);
static int (*real_unlock)(pthread_mutex_t *);
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static double run_lock_real(uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        real_lock(&mu);
        real_unlock(&mu);
    }
    return (double)(bench_now_ns() - t0) / (double)iters;
}

static double run_lock_wrapped(uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        pthread_mutex_lock(&mu);
        pthread_mutex_unlock(&mu);
    }
    return (double)(bench_now_ns() - t0) / (double)iters;
}

/* C11's, which the wrappers make of the real pthread functions. */
static int (*real_mtx_lock)(mtx_t *);
static int (*real_mtx_unlock)(mtx_t *);
static mtx_t mtx;

static double run_mtx_real(uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        real_mtx_lock(&mtx);
        real_mtx_unlock(&mtx);
    }
    return (double)(bench_now_ns() - t0) / (double)iters;
}

static double run_mtx_wrapped(uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        mtx_lock(&mtx);
        mtx_unlock(&mtx);
    }
    return (double)(bench_now_ns() - t0) / (double)iters;
}

static int (*real_post)(sem_t *);
static int (*real_wait)(sem_t *);
static sem_t sem;

static double run_sem_real(uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        real_post(&sem);
        real_wait(&sem);
    }
    return (double)(bench_now_ns() - t0) / (double)iters;
}

static double run_sem_wrapped(uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        sem_post(&sem);
        sem_wait(&sem);
    }
    return (double)(bench_now_ns() - t0) / (double)iters;
}

/* Annotations, per call: a task's begin and end (two calls), a region's
 * begin and end (two calls), a log (one call). */
static double run_task(uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++)
        trace_task_end(trace_task_begin("request", 0));
    return (double)(bench_now_ns() - t0) / (double)iters / 2;
}

static double run_region(uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        trace_region_begin(1, "phase");
        trace_region_end(1, "phase");
    }
    return (double)(bench_now_ns() - t0) / (double)iters / 2;
}

static double run_log(uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++)
        trace_log(1, "bench", "message");
    return (double)(bench_now_ns() - t0) / (double)iters;
}

int main(int argc, char **argv)
{
    uint64_t iters = 20000000;
    int rounds = 7;
    if (bench_args(argc, argv, "bench_hotpath", &iters, &rounds))
        return 2;
    char path[] = "/tmp/ctrace-bench-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    real_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
    real_unlock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
    real_mtx_lock = (int (*)(mtx_t *))dlsym(RTLD_NEXT, "mtx_lock");
    real_mtx_unlock = (int (*)(mtx_t *))dlsym(RTLD_NEXT, "mtx_unlock");
    mtx_init(&mtx, mtx_plain);
    real_post = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_post");
    real_wait = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_wait");
    sem_init(&sem, 0, 0);
    bench_go_multithreaded();
    ctr__clock_init();

    struct bench_variant events[] = {
        {"empty loop", run_empty, 0, 0, {0}, NULL, 0},
        {"tick read (rdtsc)", run_ticks, 0, 0, {0}, NULL, 0},
        {"event: Unblock (time only)", run_emit_unblock, 1, 0, {0}, NULL, 0},
        {"event: Block (3 args)", run_emit_block, 1, 0, {0}, NULL, 0},
    };
    bench_table("Cost of writing one event, per event", events, 4, iters, rounds, path);

    struct bench_variant locks[] = {
        {"real lock+unlock (glibc)", run_lock_real, 0, 0, {0}, NULL, 0},
        {"wrapped lock+unlock, tracing off", run_lock_wrapped, 0, 0, {0}, NULL, 0},
        {"wrapped lock+unlock, tracing on", run_lock_wrapped, 1, 0, {0}, NULL, 0},
    };
    bench_table("Uncontended pthread_mutex_lock + unlock", locks, 3, iters, rounds, path);

    if (real_mtx_lock && real_mtx_unlock) {
        struct bench_variant mtxs[] = {
            {"real mtx_lock+mtx_unlock (glibc)", run_mtx_real, 0, 0, {0}, NULL, 0},
            {"wrapped, tracing off", run_mtx_wrapped, 0, 0, {0}, NULL, 0},
            {"wrapped, tracing on", run_mtx_wrapped, 1, 0, {0}, NULL, 0},
        };
        bench_table("Uncontended C11 mtx_lock + mtx_unlock", mtxs, 3, iters, rounds, path);
    }

    struct bench_variant sems[] = {
        {"real sem_post+sem_wait (glibc)", run_sem_real, 0, 0, {0}, NULL, 0},
        {"wrapped, tracing off", run_sem_wrapped, 0, 0, {0}, NULL, 0},
        {"wrapped, tracing on", run_sem_wrapped, 1, 0, {0}, NULL, 0},
    };
    bench_table("Uncontended sem_post + sem_wait", sems, 3, iters, rounds, path);

    struct bench_variant notes[] = {
        {"empty loop", run_empty, 0, 0, {0}, NULL, 0},
        {"task begin or end, tracing off", run_task, 0, 0, {0}, NULL, 0},
        {"task begin or end, tracing on", run_task, 1, 0, {0}, NULL, 0},
        {"region begin or end, tracing off", run_region, 0, 0, {0}, NULL, 0},
        {"region begin or end, tracing on", run_region, 1, 0, {0}, NULL, 0},
        {"log, tracing off", run_log, 0, 0, {0}, NULL, 0},
        {"log, tracing on", run_log, 1, 0, {0}, NULL, 0},
    };
    bench_table("Annotations, per call", notes, 7, iters / 4, rounds, path);
    printf("\nclock: %s\n", ctr__clock_tsc ? "tsc" : "clock_gettime(CLOCK_MONOTONIC)");
    unlink(path);
    return 0;
}
