/* SPDX-License-Identifier: MIT */
/* flight.c - example: the flight recorder catching a slow request in the act.
 *
 * The workload is examples/cache's bug in small: 64 threads x 200 requests
 * share a cache behind ONE mutex; 30% of the requests miss and fetch for
 * 500 us WHILE HOLDING the lock (cache_get_slow), so every request queues
 * behind the fetches in progress.
 *
 * The flight recorder runs all the time (the last 2 s of trace kept in at
 * most 8 MiB of memory), and no trace file is written. Every request
 * measures its own latency and reports it with flightrec_latency(); the
 * first one slower than 30 ms makes the recorder's collector dump the window
 * into the directory. After the run the example waits for that dump, names
 * it, and prints the top of its sync profile with
 *     ctrace -pprof=sync -top -n 5 DUMP
 * which points at pthread_mutex_lock in cache_get_slow.
 *
 * usage: flight [DIR]   DIR for the dump (created if missing; default a new
 *                       /tmp/flight-XXXXXX, left for you to look at)
 * ctrace is $CTRACE_BIN, else ../ctrace from this binary (the build tree:
 * build/examples/flight, build/ctrace), else ctrace in PATH.
 * Exit status: 0 when the dump was made and ctrace read it; else 1, with a
 * one-line reason on stderr.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np, clock_nanosleep, mkdtemp under -std=c11 */
#endif

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ctrace/flightrec.h>

#include "../common/example.h"

extern char **environ;

#define NTHREADS 64
#define REQS_PER 200
#define NREQS (NTHREADS * REQS_PER)
#define MISS_PERCENT 30
#define FETCH_NS 500000L          /* 500 us per remote fetch */
#define NHOT 1024                 /* keys cached before the run */
#define NKEYS (NHOT + NREQS + 1)  /* hot keys 1..NHOT, then one fresh key per request */
#define SLOW_NS (30ull * 1000000) /* a request this slow dumps the window */
#define DUMP_WAIT_MS 5000

/* ================================================================ the cache */

/* Keys are dense (0 unused), so the cache is a direct-mapped array: the point
 * here is the lock, not the table. Guarded by cache_lock. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cache_vals[NKEYS];
static unsigned char cache_have[NKEYS];

/* A value per key that every answer is checked against. */
static uint64_t remote_value(uint64_t key)
{
    return ex_mix64(key ^ UINT64_C(0x5eed));
}

/* A network round trip (example.h). */
static uint64_t remote_fetch(uint64_t key)
{
    ex_sleep_ns(FETCH_NS);
    return remote_value(key);
}

/* The bug: a miss keeps cache_lock for the whole fetch. */
__attribute__((noinline)) static uint64_t cache_get_slow(uint64_t key)
{
    pthread_mutex_lock(&cache_lock);
    if (!cache_have[key]) {
        cache_vals[key] = remote_fetch(key);
        cache_have[key] = 1;
    }
    uint64_t v = cache_vals[key];
    pthread_mutex_unlock(&cache_lock);
    return v;
}

/* ================================================================ the workload */

struct worker {
    pthread_t tid; /* first: ex_run_workers writes it */
    unsigned index;
    pthread_barrier_t *start;
    uint64_t *lat_ns; /* this worker's REQS_PER slots */
};

/* The latency of the request that fired the trigger; 0 until one did. */
static _Atomic uint64_t trigger_ns;

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    char name[16];
    snprintf(name, sizeof name, "cache-%02u", w->index);
    pthread_setname_np(pthread_self(), name); /* best effort: labels the trace */

    uint64_t rng = remote_value(w->index + 1) | 1;             /* xorshift needs non-zero */
    uint64_t fresh = NHOT + 1 + (uint64_t)w->index * REQS_PER; /* never seen */

    pthread_barrier_wait(w->start);
    for (unsigned r = 0; r < REQS_PER; r++) {
        uint64_t key =
            ex_xorshift64(&rng) % 100 < MISS_PERCENT ? fresh++ : 1 + ex_xorshift64(&rng) % NHOT;
        uint64_t t0 = ex_now_ns();
        uint64_t v = cache_get_slow(key);
        uint64_t lat = ex_now_ns() - t0;
        w->lat_ns[r] = lat;
        if (flightrec_latency(lat) == 1) /* over 30 ms: the collector dumps */
            atomic_store(&trigger_ns, lat);
        if (v != remote_value(key)) {
            fprintf(stderr, "flight: wrong value for key %" PRIu64 "\n", key);
            abort();
        }
    }
    return NULL;
}

/* Runs the workers and prints their latencies. Exits when threads cannot
 * be created. */
static void run(void)
{
    static uint64_t lat_ns[NREQS];
    static struct worker workers[NTHREADS];
    pthread_barrier_t start;

    for (uint64_t k = 1; k <= NHOT; k++) {
        cache_vals[k] = remote_value(k);
        cache_have[k] = 1;
    }
    for (unsigned t = 0; t < NTHREADS; t++)
        workers[t] = (struct worker){.index = t, .start = &start, .lat_ns = &lat_ns[t * REQS_PER]};
    uint64_t total =
        ex_run_workers("flight", NTHREADS, worker_main, workers, sizeof(workers[0]), &start);

    ex_sort_u64(lat_ns, NREQS);
    unsigned slow = 0;
    for (unsigned i = 0; i < NREQS; i++)
        slow += lat_ns[i] >= SLOW_NS;
    /* Nearest-rank percentiles. */
    printf("flight: %d requests in %.1f ms: p50=%.1fus p99=%.1fms max=%.1fms, "
           "%u over %llu ms\n",
           NREQS, (double)total / 1e6, (double)ex_percentile(lat_ns, NREQS, 50) / 1e3,
           (double)ex_percentile(lat_ns, NREQS, 99) / 1e6, (double)lat_ns[NREQS - 1] / 1e6, slow,
           SLOW_NS / 1000000);
}

/* ================================================================ the dump */

/* Waits until the collector has written the trigger's dump.
 * @return 0, or -1 with a reason printed. */
static int wait_dump(void)
{
    struct flightrec_stats st;
    for (int ms = 0; ms <= DUMP_WAIT_MS; ms += 10) {
        flightrec_get_stats(&st);
        if (st.dumps_written > 0)
            return 0;
        if (st.dumps_failed > 0) {
            fprintf(stderr, "flight: the recorder could not write the dump\n");
            return -1;
        }
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&trigger_ns) == 0)
        fprintf(stderr, "flight: no dump: no request took %llu ms or more\n", SLOW_NS / 1000000);
    else
        fprintf(stderr, "flight: no dump within %d ms of the run's end\n", DUMP_WAIT_MS);
    return -1;
}

/* The newest dump of this process in dir (ctrace-PID-SECONDS-N.bin) into
 * out. @return 0, or -1 if there is none. */
static int find_dump(const char *dir, char *out, size_t len)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "ctrace-%d-", (int)getpid());
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    time_t newest = 0;
    int found = -1;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || n < 4 ||
            strcmp(e->d_name + n - 4, ".bin") != 0)
            continue;
        char path[PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path ||
            stat(path, &st) != 0 || (found == 0 && st.st_mtime < newest))
            continue;
        snprintf(out, len, "%s", path);
        newest = st.st_mtime;
        found = 0;
    }
    closedir(d);
    return found;
}

/* ================================================================ ctrace */

/* $CTRACE_BIN, else ../ctrace next to this executable, else "ctrace" for a
 * PATH search (*search set). */
static const char *find_ctrace(char *buf, size_t len, int *search)
{
    *search = 0;
    const char *env = getenv("CTRACE_BIN");
    if (env && *env)
        return env;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            char cand[PATH_MAX + 16];
            snprintf(cand, sizeof cand, "%s/../ctrace", self);
            if (len >= PATH_MAX && access(cand, X_OK) == 0 && realpath(cand, buf))
                return buf;
        }
    }
    *search = 1;
    return "ctrace";
}

/* Runs `ctrace -pprof=sync -top -n 5 dump`; its output is ours.
 * @return 0 when it exits 0, else -1 with a reason printed. */
static int print_top(const char *dump)
{
    char buf[PATH_MAX + 16];
    int search;
    const char *ctrace = find_ctrace(buf, sizeof buf, &search);
    char *argv[] = {(char *)ctrace, "-pprof=sync", "-top", "-n", "5", (char *)dump, NULL};
    printf("\n$ %s -pprof=sync -top -n 5 %s\n", ctrace, dump);
    fflush(stdout); /* before the child writes to the same stdout */

    pid_t pid;
    int rc = search ? posix_spawnp(&pid, ctrace, NULL, NULL, argv, environ)
                    : posix_spawn(&pid, ctrace, NULL, NULL, argv, environ);
    if (rc != 0) {
        fprintf(stderr, "flight: cannot run %s: %s%s\n", ctrace, strerror(rc),
                search ? " (set CTRACE_BIN to its path)" : "");
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "flight: waitpid: %s\n", strerror(errno));
            return -1;
        }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "flight: %s failed (%s %d)\n", ctrace,
                WIFEXITED(status) ? "exit status" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return -1;
    }
    return 0;
}

/* ================================================================ main */

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: flight [DIR]\n"
               "Runs the slow cache (%d threads x %d requests, %d%% misses fetched for\n"
               "%ld us under the lock) with the flight recorder on; the first request\n"
               "over %llu ms dumps the recorder's window into DIR (default: a new\n"
               "/tmp/flight-XXXXXX), whose sync profile is then printed by ctrace\n"
               "($CTRACE_BIN, ../ctrace from this binary, or ctrace in PATH).\n",
               NTHREADS, REQS_PER, MISS_PERCENT, FETCH_NS / 1000, SLOW_NS / 1000000);
        return 0;
    }
    if (argc > 2) {
        fprintf(stderr, "flight: unexpected argument '%s' (try flight --help)\n", argv[2]);
        return 1;
    }

    /* Always on, from the start: the last 2 s, in at most 8 MiB. */
    struct flightrec_config cfg = {.min_age_ns = 2000000000ull, .max_bytes = 8u << 20};
    int rc = flightrec_start(&cfg);
    if (rc < 0) {
        fprintf(stderr, "flight: flightrec_start: %s\n", strerror(-rc));
        return 1;
    }

    char tmpdir[] = "/tmp/flight-XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(tmpdir);
    if (!dir || (argc > 1 && mkdir(dir, 0755) != 0 && errno != EEXIST)) {
        fprintf(stderr, "flight: %s: %s\n", dir ? dir : tmpdir, strerror(errno));
        return 1;
    }
    struct flightrec_trigger trig = {.dir = dir, .latency_ns = SLOW_NS};
    if ((rc = flightrec_trigger_latency(&trig)) < 0) {
        fprintf(stderr, "flight: flightrec_trigger_latency(%s): %s\n", dir, strerror(-rc));
        return 1;
    }

    run();
    if (wait_dump() != 0)
        return 1;
    char dump[PATH_MAX];
    if (find_dump(dir, dump, sizeof dump) != 0) {
        fprintf(stderr, "flight: the recorder wrote a dump, but none is in %s\n", dir);
        return 1;
    }
    struct stat st;
    printf("flight: a %.1f ms request dumped the recorder's window (%lld KiB) to\n  %s\n",
           (double)atomic_load(&trigger_ns) / 1e6,
           stat(dump, &st) == 0 ? (long long)st.st_size >> 10 : -1LL, dump);
    flightrec_stop(); /* done recording: the window's memory is freed */

    return print_top(dump) == 0 ? 0 : 1;
}
