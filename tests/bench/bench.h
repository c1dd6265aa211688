/* SPDX-License-Identifier: MIT */
/* bench.h - the harness the benchmarks share: variants of one operation run
 * side by side in one process, interleaved over several rounds, and printed
 * as a table of medians with each one's ratio to the first (the baseline).
 * Timing never passes or fails anything: machines are shared and noisy. */
#ifndef CTR_BENCH_H
#define CTR_BENCH_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/pool.h"
#include "core/session.h"
#include "ctrace/trace.h"

#define BENCH_MAX_ROUNDS 31

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct bench_variant {
    const char *name;
    double (*run)(uint64_t iters); /* ns per operation */
    int traced;                    /* run while a trace is running */
    unsigned io_min_ns;            /* the trace's threshold, 0 = default */
    double samples[BENCH_MAX_ROUNDS];
    const char *unwind; /* the trace's CTRACE_UNWIND, NULL = default */
    int lttng;          /* 1: to LTTng as well (trace_options.lttng); 2: to
                           LTTng only, no file */
};

static void *bench_idle(void *arg)
{
    (void)arg;
    pause();
    return NULL;
}

/* Makes the process multi-threaded, as real servers are (glibc takes
 * shortcuts in single-threaded processes). */
static inline void bench_go_multithreaded(void)
{
    pthread_t idle;
    pthread_create(&idle, NULL, bench_idle, NULL);
}

/* Pool bytes an operation may use: a Block with a long object address and
 * a chunk's share of headers, with room to spare. */
#define BENCH_POOL_BYTES_PER_OP 24

/* Maps in the first `bytes` of the running session's chunk pool, as a
 * trace that has run a while has them: its threads then write into chunks
 * the collector recycled, not into pages that fault on first touch (a
 * one-time cost, which would otherwise dominate a run's figure: a page
 * fault costs microseconds in a VM). Populating writes nothing. */
static inline void bench_warm_pool(size_t bytes)
{
    /* relaxed: published before trace_start returned. */
    struct ctr_pool *p = atomic_load_explicit(&ctr__session.pool, memory_order_relaxed);
    if (!p)
        return;
    int rc = ctr_segarr_populate(&p->chunk_array, 0, bytes / p->chunk_bytes + 1);
    if (rc != 0) {
        static int said;
        if (!said++)
            fprintf(stderr, "bench: MADV_POPULATE_WRITE: %s (chunks fault on first touch)\n",
                    strerror(-rc));
    }
}

/* Runs every variant `rounds` times, interleaved, tracing into trace_path
 * around the traced ones, and prints the table. */
static inline void bench_table(const char *title, struct bench_variant *v, int nv, uint64_t iters,
                               int rounds, const char *trace_path)
{
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < nv; i++) {
            if (v[i].traced) {
                /* A pool large enough that the run measures writing, not
                 * dropping (the collector shares the machine's cores). */
                struct trace_options o = {.path = v[i].lttng == 2 ? NULL : trace_path,
                                          .pool_bytes = 1u << 30,
                                          .io_min_ns = v[i].io_min_ns,
                                          .lttng = v[i].lttng != 0};
                if (v[i].unwind)
                    setenv("CTRACE_UNWIND", v[i].unwind, 1);
                int rc = trace_start_opts(&o);
                unsetenv("CTRACE_UNWIND");
                if (rc != 0) {
                    fprintf(stderr, "bench: trace_start failed: %s\n", strerror(-rc));
                    exit(1);
                }
            }
            if (v[i].traced)
                bench_warm_pool(iters * BENCH_POOL_BYTES_PER_OP);
            v[i].samples[r] = v[i].run(iters);
            if (v[i].traced)
                trace_stop();
        }
    double base = bench_median(v[0].samples, rounds);
    printf("\n%s (%llu iterations x %d interleaved rounds, median)\n", title,
           (unsigned long long)iters, rounds);
    printf("  %-40s %10s %10s %12s\n", "variant", "ns/op", "vs first", "added ns/op");
    for (int i = 0; i < nv; i++) {
        double m = bench_median(v[i].samples, rounds);
        printf("  %-40s %10.2f %9.2fx %12.2f\n", v[i].name, m, m / base, m - base);
    }
}

/* Parses [ITERATIONS] [ROUNDS] into *iters and *rounds; returns 0, or 2 after
 * printing the usage. */
static inline int bench_args(int argc, char **argv, const char *name, uint64_t *iters, int *rounds)
{
    if (argc > 1)
        *iters = strtoull(argv[1], NULL, 10);
    if (argc > 2)
        *rounds = atoi(argv[2]);
    if (*iters == 0 || *rounds < 1 || *rounds > BENCH_MAX_ROUNDS) {
        fprintf(stderr, "usage: %s [ITERATIONS] [ROUNDS <= %d]\n", name, BENCH_MAX_ROUNDS);
        return 2;
    }
    return 0;
}

#endif
