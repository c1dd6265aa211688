/* SPDX-License-Identifier: MIT */
/* example.h - the small helpers the example programs share: a clock, a
 * per-thread PRNG, a hash, a real blocking "remote" wait, nearest-rank
 * latency percentiles, workers started together, and Go-style flags.
 * Header-only: each example is its own files plus this. */
#ifndef CTRACE_EXAMPLE_H
#define CTRACE_EXAMPLE_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t ex_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64: a deterministic per-thread stream (seed it non-zero). */
static inline uint64_t ex_xorshift64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* splitmix64's finalizer: spreads sequential keys, derives checkable values. */
static inline uint64_t ex_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

/* Stands in for a network round trip: a real blocking sleep (the thread
 * sleeps, holding whatever it holds, rather than burning a CPU) to an
 * absolute deadline, so an EINTR restart waits only for what remains. */
static inline void ex_sleep_ns(long ns)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ns / 1000000000L;
    until.tv_nsec += ns % 1000000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec += 1;
        until.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
}

static int ex_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static inline void ex_sort_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), ex_cmp_u64);
}

/* Copies v[0..n) into all at index at, for gathering each worker's
 * latencies into one array. v is NULL for a worker that made no request
 * (n == 0), which memcpy may not be given. @return at + n. */
static inline size_t ex_append_u64(uint64_t *all, size_t at, const uint64_t *v, size_t n)
{
    if (n)
        memcpy(all + at, v, n * sizeof(*v));
    return at + n;
}

/* Nearest rank: the smallest value >= pm per mille of the n sorted values
 * (n > 0), for the ranks percentiles cannot name (p99.9 is 999). */
static inline uint64_t ex_permille(const uint64_t *sorted, size_t n, unsigned pm)
{
    return sorted[(n * pm + 999) / 1000 - 1];
}

/* Nearest rank: the smallest value >= p% of the n sorted values (n > 0). */
static inline uint64_t ex_percentile(const uint64_t *sorted, size_t n, unsigned p)
{
    return ex_permille(sorted, n, p * 10);
}

/* One flag at argv[*i], as ctrace's own flags are written: "-name",
 * "--name", "-name=v", "--name=v", "-name v" (the value then the next
 * argument, *i advanced past it). value NULL: a switch, which takes none.
 * @return 1 matched (*value set if wanted), 0 not this flag, -1 its value
 * is missing. */
static inline int ex_flag(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *a = argv[*i];
    if (a[0] != '-')
        return 0;
    a += a[1] == '-' ? 2 : 1;
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0 || (a[n] != 0 && a[n] != '='))
        return 0;
    if (!value)
        return a[n] == 0 ? 1 : 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

/* Runs n workers, fn(arg_i) with arg_i = args + i * stride, each of which
 * first waits on `start` (a barrier this initializes for n + 1), so that all
 * of them begin at the same moment. Writes each thread's id to the pthread_t
 * that begins its arg (the worker structs' first field). @return the time
 * from their start to the last one's end; exits with a message naming `who`
 * when a thread cannot be created (there is nothing to measure then). */
static inline uint64_t ex_run_workers(const char *who, unsigned n, void *(*fn)(void *), void *args,
                                      size_t stride, pthread_barrier_t *start)
{
    pthread_barrier_init(start, NULL, n + 1);
    for (unsigned i = 0; i < n; i++) {
        void *arg = (char *)args + (size_t)i * stride;
        pthread_t tid;
        int rc = pthread_create(&tid, NULL, fn, arg);
        memcpy(arg, &tid, sizeof(tid)); /* a field the worker does not read */
        if (rc != 0) {
            fprintf(stderr, "%s: pthread_create: %s\n", who, strerror(rc));
            exit(1); /* the workers created so far wait at the barrier for good */
        }
    }
    pthread_barrier_wait(start);
    uint64_t t0 = ex_now_ns();
    for (unsigned i = 0; i < n; i++) {
        pthread_t tid;
        memcpy(&tid, (char *)args + (size_t)i * stride, sizeof(tid));
        pthread_join(tid, NULL);
    }
    uint64_t total = ex_now_ns() - t0;
    pthread_barrier_destroy(start);
    return total;
}

/* A flag's whole number: decimal digits only, lo..hi. @return 0 with *out,
 * or -1. */
static inline int ex_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* A flag's decimal number (seconds, say: 0.5), lo..hi. @return 0 with
 * *out, or -1. */
static inline int ex_parse_double(const char *s, double lo, double hi, double *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

#endif
