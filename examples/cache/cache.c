/* SPDX-License-Identifier: MIT */
/* cache.c - example workload: a cache whose one mutex is held across a slow fetch.
 *
 * This is one of the ctrace example scenarios: a small program with a known
 * concurrency bug, used to show (and to test) that a ctrace trace points at the
 * cause. A hash table of keys -> values is shared by 64 threads and protected by
 * ONE pthread mutex. Each thread makes 200 requests; 70% ask for keys that are
 * already cached, 30% for never-seen keys that need a 500 us "remote fetch"
 * (a real blocking clock_nanosleep, standing in for network I/O).
 *
 *   cache_get_slow()  the bug: lock; lookup; on a miss fetch WHILE HOLDING the
 *                     lock; insert; unlock. Every request, hits included, queues
 *                     behind whichever thread is fetching, so the whole program
 *                     runs at one fetch at a time (~3840 fetches * 500 us ~ 2 s).
 *   cache_get_fast()  the fix: lock; lookup; unlock; on a miss fetch unlocked;
 *                     lock; insert unless another thread got there first; unlock.
 *                     Fetches overlap and the lock is held only for table work.
 *
 * Both are noinline so they appear by name in recorded stacks, and the
 * pthread_mutex_lock() in cache_get_slow() sits on its own line so the trace of
 * `cache trace` can attribute the contended waits to that exact line.
 *
 * Usage:  cache              run slow, then fast, and print both
 *         cache slow|fast    run one version
 *         cache trace [FILE] run the slow version under trace_start(FILE, default
 *                            "trace.bin") / trace_stop()
 *         cache flight [FILE] run the slow version with the flight recorder on,
 *                            then flightrec_dump(FILE, default "flight.bin")
 *         -cpu HZ before trace or flight: CPU samples too (the always-on cost
 *                            table of tests/bench/run.sh runs all four ways)
 *         -fixed before trace or flight: record the fast version instead
 * Each request is a ctrace task "request" (`ctrace why` explains the slowest).
 * Each run prints one line: request count, p50/p99/max request latency (us) and
 * total wall time (ms). Runs are reproducible: every thread draws its requests
 * from its own xorshift PRNG seeded by its index, and each run starts from the
 * same pre-populated table.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np, clock_nanosleep under -std=c11 */
#endif

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ctrace/flightrec.h>
#include <ctrace/trace.h>

#include "../common/example.h"

#define NTHREADS 64
#define REQS_PER 200
#define NREQS (NTHREADS * REQS_PER)
#define MISS_PERCENT 30
#define FETCH_NS 500000L               /* 500 us per remote fetch */
#define NHOT 1024                      /* keys cached before the run starts */
#define TABLE_SLOTS 32768              /* power of two; > NHOT + NREQS, so it never fills */
#define FRESH_BASE (UINT64_C(1) << 32) /* fresh keys live above every hot key */

/* ================================================================ the cache */

/* Open addressing with linear probing; key 0 marks an empty slot, so keys are
 * never 0. Entries are never removed, which keeps probing trivially correct.
 * Everything here is guarded by cache_lock. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cache_keys[TABLE_SLOTS];
static uint64_t cache_vals[TABLE_SLOTS];

/* Returns the slot holding key, or the empty slot where it would go. */
static size_t table_slot(uint64_t key)
{
    size_t i = (size_t)ex_mix64(key) & (TABLE_SLOTS - 1);
    while (cache_keys[i] != 0 && cache_keys[i] != key)
        i = (i + 1) & (TABLE_SLOTS - 1);
    return i;
}

/* The value the "remote" side holds for a key: derived from the key so that
 * every answer the cache gives can be checked. */
static uint64_t remote_value(uint64_t key)
{
    return ex_mix64(key ^ UINT64_C(0x5eed));
}

/* Stands in for a network round trip (example.h). noinline, so that
 * recorded stacks name it in every build. */
__attribute__((noinline)) static uint64_t remote_fetch(uint64_t key)
{
    ex_sleep_ns(FETCH_NS);
    return remote_value(key);
}

/* Empties the table and caches keys 1..NHOT; called with no worker running. */
static void cache_reset(void)
{
    memset(cache_keys, 0, sizeof cache_keys);
    memset(cache_vals, 0, sizeof cache_vals);
    for (uint64_t k = 1; k <= NHOT; k++) {
        size_t i = table_slot(k);
        cache_keys[i] = k;
        cache_vals[i] = remote_value(k);
    }
}

/* The bug: a miss keeps cache_lock for the whole fetch. */
__attribute__((noinline)) static uint64_t cache_get_slow(uint64_t key)
{
    pthread_mutex_lock(&cache_lock);
    size_t i = table_slot(key);
    if (cache_keys[i] == 0) {
        uint64_t v = remote_fetch(key);
        cache_keys[i] = key;
        cache_vals[i] = v;
    }
    uint64_t v = cache_vals[i];
    pthread_mutex_unlock(&cache_lock);
    return v;
}

/* The fix: fetch unlocked. Another thread may have stored the key meanwhile;
 * the slot is looked up again under the lock and the first value stored wins,
 * so every caller sees the same value for a key. */
__attribute__((noinline)) static uint64_t cache_get_fast(uint64_t key)
{
    pthread_mutex_lock(&cache_lock);
    size_t i = table_slot(key);
    int hit = cache_keys[i] != 0;
    uint64_t v = cache_vals[i];
    pthread_mutex_unlock(&cache_lock);
    if (hit)
        return v;

    uint64_t fetched = remote_fetch(key);

    pthread_mutex_lock(&cache_lock);
    i = table_slot(key); /* the table may have changed while unlocked */
    if (cache_keys[i] == 0) {
        cache_keys[i] = key;
        cache_vals[i] = fetched;
    }
    v = cache_vals[i];
    pthread_mutex_unlock(&cache_lock);
    return v;
}

/* ================================================================ the workload */

typedef uint64_t (*cache_get_fn)(uint64_t key);

struct worker {
    pthread_t tid; /* first: ex_run_workers writes it */
    unsigned index;
    cache_get_fn get;
    pthread_barrier_t *start;
    uint64_t *lat_ns; /* this worker's REQS_PER slots of the shared array */
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    char name[16];
    snprintf(name, sizeof name, "cache-%02u", w->index);
    pthread_setname_np(pthread_self(), name); /* best effort: only labels the trace */

    /* mix64 of index+1 is never 0, which xorshift needs, and decorrelates the
     * streams of neighbouring threads. */
    uint64_t rng = ex_mix64(w->index + 1);
    /* Fresh keys are unique per (thread, request), so none was ever seen. */
    uint64_t fresh = FRESH_BASE + (uint64_t)w->index * REQS_PER;

    pthread_barrier_wait(w->start); /* all threads contend from the same moment */
    for (unsigned r = 0; r < REQS_PER; r++) {
        uint64_t key;
        if (ex_xorshift64(&rng) % 100 < MISS_PERCENT)
            key = fresh++;
        else
            key = 1 + ex_xorshift64(&rng) % NHOT;

        uint64_t t0 = ex_now_ns();
        trace_task_t task = trace_task_begin("request", 0); /* ctrace why explains the slowest */
        uint64_t v = w->get(key);
        trace_task_end(task);
        w->lat_ns[r] = ex_now_ns() - t0;

        if (v != remote_value(key)) {
            fprintf(stderr, "cache: wrong value for key %" PRIu64 "\n", key);
            abort();
        }
    }
    return NULL;
}

/* Runs NTHREADS workers through one version and prints its figures. Exits on
 * a failure to create threads: there is nothing useful to measure then. */
static void run(const char *label, cache_get_fn get)
{
    static uint64_t lat_ns[NREQS];
    static struct worker workers[NTHREADS];
    pthread_barrier_t start;

    cache_reset();
    for (unsigned t = 0; t < NTHREADS; t++)
        workers[t] = (struct worker){
            .index = t, .get = get, .start = &start, .lat_ns = &lat_ns[t * REQS_PER]};
    uint64_t total =
        ex_run_workers("cache", NTHREADS, worker_main, workers, sizeof(workers[0]), &start);

    ex_sort_u64(lat_ns, NREQS);
    uint64_t p50 = ex_percentile(lat_ns, NREQS, 50);
    uint64_t p99 = ex_percentile(lat_ns, NREQS, 99);
    uint64_t max = lat_ns[NREQS - 1];
    printf("%s: requests=%d p50=%.1fus p99=%.1fus max=%.1fus total=%.1fms\n", label, NREQS,
           (double)p50 / 1e3, (double)p99 / 1e3, (double)max / 1e3, (double)total / 1e6);
    fflush(stdout);
}

/* ================================================================ main */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: cache              run the slow version, then the fast one\n"
            "       cache slow|fast    run one version\n"
            "       cache [-cpu HZ] [-fixed] trace [FILE]\n"
            "                          run the slow version under ctrace, writing\n"
            "                          FILE (default trace.bin)\n"
            "       cache [-cpu HZ] [-fixed] flight [FILE]\n"
            "                          run the slow version with the flight recorder\n"
            "                          on (its defaults), then dump its window into\n"
            "                          FILE (default flight.bin)\n"
            "-cpu HZ also samples each thread's CPU HZ times a second.\n"
            "-fixed records the fast version instead.\n"
            "%d threads x %d requests; %d%% miss and wait %ld us for a fetch.\n"
            "slow holds the cache mutex during the fetch, fast releases it.\n",
            NTHREADS, REQS_PER, MISS_PERCENT, FETCH_NS / 1000);
}

/* Runs the slow version (fixed: the fast one) traced into path (flight:
 * with the flight recorder, dumped into path at the end), sampling CPU
 * cpu_hz times a second. */
static int run_recorded(int flight, int fixed, const char *path, unsigned cpu_hz)
{
    struct trace_options o = {.path = path, .cpu_hz = cpu_hz};
    struct flightrec_config fc = {.trace = &o};
    const char *what = flight ? "flightrec_start" : "trace_start";
    int rc = flight ? flightrec_start(&fc) : trace_start_opts(&o);
    if (rc == 0) {
        if (fixed)
            run("fast", cache_get_fast);
        else
            run("slow", cache_get_slow);
        what = flight ? "flightrec_dump" : "trace_stop";
        rc = flight ? flightrec_dump(path) : trace_stop();
        if (flight && (flightrec_stop() != 0 || rc != 0) && rc == 0)
            what = "flightrec_stop", rc = -EIO;
    }
    if (rc < 0) {
        fprintf(stderr, "cache: %s(%s): %s\n", what, path, strerror(-rc));
        return 1;
    }
    printf("%s written to %s\n", flight ? "window" : "trace", path);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned cpu_hz = 0;
    int first = 1, fixed = 0;
    for (;;) { /* the flags that go before trace or flight */
        if (argc > first + 1 && !strcmp(argv[first], "-cpu")) {
            char *end;
            unsigned long hz = strtoul(argv[first + 1], &end, 10);
            if (*end || hz < 1 || hz > 10000) {
                fprintf(stderr, "cache: -cpu wants a rate from 1 to 10000, not '%s'\n",
                        argv[first + 1]);
                return 2;
            }
            cpu_hz = (unsigned)hz;
            first += 2;
        } else if (argc > first && !strcmp(argv[first], "-fixed")) {
            fixed = 1;
            first++;
        } else {
            break;
        }
    }
    const char *mode = argc > first ? argv[first] : "";
    int is_trace = !strcmp(mode, "trace"), is_flight = !strcmp(mode, "flight");
    int recorded = is_trace || is_flight;
    int known = (!*mode && first == 1) || recorded ||
                (first == 1 && (!strcmp(mode, "slow") || !strcmp(mode, "fast")));
    int max_args = first + (recorded ? 2 : 1); /* only trace and flight take an operand */

    if (!strcmp(mode, "-h") || !strcmp(mode, "--help")) {
        usage(stdout);
        return 0;
    }
    if (!known || argc > max_args) {
        fprintf(stderr, "cache: unknown argument '%s' (try cache --help)\n",
                argv[known          ? max_args
                     : argc > first ? first
                                    : 1]);
        return 2;
    }
    if (recorded)
        return run_recorded(is_flight, fixed,
                            argc == max_args ? argv[first + 1]
                            : is_flight      ? "flight.bin"
                                             : "trace.bin",
                            cpu_hz);
    if (!*mode || !strcmp(mode, "slow"))
        run("slow", cache_get_slow);
    if (!*mode || !strcmp(mode, "fast"))
        run("fast", cache_get_fast);
    return 0;
}
