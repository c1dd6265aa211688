/* bench_io.c - what libctrace's I/O wrappers cost a call that does not wait:
 * a read of 1 byte from a pipe whose writer end is filled beforehand (so the
 * read never blocks), by the real glibc read (through dlsym(RTLD_NEXT)), by
 * the wrapper with tracing off, with tracing on (the call is timed and, being
 * shorter than the 10 us threshold, not recorded), and with io_min_ns = 1
 * (every call recorded: stack walk, Block + Unblock).
 * The pipe is refilled between batches, outside the timed part. Variants are
 * interleaved over several rounds and the median is printed, with the ratio
 * to the real call. Prints a table; never passes or fails on timing.
 * usage: bench_io [ITERATIONS (default 500000)] [ROUNDS (default 7)]
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctrace/trace.h"
#include "internal.h"

#define MAX_ROUNDS 31

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static int pfd[2];
static size_t batch; /* bytes the pipe holds: reads per refill */
static char fill[1 << 20];

/* Fills the pipe with `n` bytes through the real write (not timed). */
static void refill(size_t n)
{
    while (n > 0) {
        ssize_t w = real_write(pfd[1], fill, n);
        if (w <= 0) {
            perror("bench: write");
            exit(1);
        }
        n -= (size_t)w;
    }
}

/* Runs `iters` reads through `rd` in batches that never empty the pipe;
 * returns ns per read, refills excluded. */
static double run_reads(ssize_t (*rd)(int, void *, size_t), uint64_t iters)
{
    uint64_t spent = 0;
    char c;
    while (iters > 0) {
        size_t n = iters < batch ? (size_t)iters : batch;
        refill(n);
        uint64_t t0 = now_ns();
        for (size_t i = 0; i < n; i++)
            if (rd(pfd[0], &c, 1) != 1) {
                perror("bench: read");
                exit(1);
            }
        spent += now_ns() - t0;
        iters -= n;
    }
    return (double)spent;
}

static double run_real(uint64_t iters)
{
    return run_reads(real_read, iters) / (double)iters;
}

static double run_wrapped(uint64_t iters)
{
    return run_reads(read, iters) / (double)iters; /* libctrace's read */
}

struct variant {
    const char *name;
    double (*run)(uint64_t);
    unsigned io_min_ns; /* run while a trace with this threshold is running; 0: not */
    double samples[MAX_ROUNDS];
};

static void *idle_thread(void *arg)
{
    (void)arg;
    pause(); /* makes the process multi-threaded, as real servers are */
    return NULL;
}

int main(int argc, char **argv)
{
    uint64_t iters = argc > 1 ? strtoull(argv[1], NULL, 10) : 500000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    if (iters == 0 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: bench_io [ITERATIONS] [ROUNDS <= %d]\n", MAX_ROUNDS);
        return 2;
    }
    char path[] = "/tmp/ctrace-bench-io-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    real_read = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (!real_read || !real_write || pipe(pfd) != 0)
        return 1;
    /* A big pipe means few refills; 64 KiB (the default) if that fails. */
    int sz = fcntl(pfd[1], F_SETPIPE_SZ, 1 << 20);
    if (sz < 0)
        sz = fcntl(pfd[1], F_GETPIPE_SZ);
    batch = sz > 0 ? (size_t)sz : 4096;
    if (batch > sizeof(fill))
        batch = sizeof(fill);
    memset(fill, 'b', sizeof(fill));
    pthread_t idle;
    pthread_create(&idle, NULL, idle_thread, NULL);
    ctr__clock_init();

    struct variant v[] = {
        {"real read (glibc)", run_real, 0, {0}},
        {"wrapped read, tracing off", run_wrapped, 0, {0}},
        {"wrapped read, tracing on", run_wrapped, 10000, {0}},
        {"wrapped read, on, io_min_ns=1", run_wrapped, 1, {0}},
    };
    int nv = (int)(sizeof(v) / sizeof(v[0]));
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < nv; i++) {
            if (v[i].io_min_ns) {
                /* A pool large enough that the recording run measures
                 * writing, not dropping. */
                struct trace_options o = {
                    .path = path, .pool_bytes = 1u << 30, .io_min_ns = v[i].io_min_ns};
                if (trace_start_opts(&o) != 0) {
                    fprintf(stderr, "bench: trace_start failed\n");
                    return 1;
                }
            }
            v[i].samples[r] = v[i].run(iters);
            if (v[i].io_min_ns)
                trace_stop();
        }
    double base = median(v[0].samples, rounds);
    printf("\n1-byte read from a filled pipe (%llu iterations x %d interleaved rounds, median)\n",
           (unsigned long long)iters, rounds);
    printf("  %-34s %10s %10s %12s\n", "variant", "ns/op", "vs first", "added ns/op");
    for (int i = 0; i < nv; i++) {
        double m = median(v[i].samples, rounds);
        printf("  %-34s %10.2f %9.2fx %12.2f\n", v[i].name, m, m / base, m - base);
    }
    printf("\nclock: %s; pipe batch: %zu bytes\n",
           ctr__clock_tsc ? "tsc" : "clock_gettime(CLOCK_MONOTONIC)", batch);
    unlink(path);
    return 0;
}
