/* SPDX-License-Identifier: MIT */
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

#include "bench.h"
#include "core/clock.h"

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
        uint64_t t0 = bench_now_ns();
        for (size_t i = 0; i < n; i++)
            if (rd(pfd[0], &c, 1) != 1) {
                perror("bench: read");
                exit(1);
            }
        spent += bench_now_ns() - t0;
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

int main(int argc, char **argv)
{
    uint64_t iters = 500000;
    int rounds = 7;
    if (bench_args(argc, argv, "bench_io", &iters, &rounds))
        return 2;
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
    bench_go_multithreaded();
    ctr__clock_init();

    struct bench_variant v[] = {
        {"real read (glibc)", run_real, 0, 0, {0}, NULL, 0},
        {"wrapped read, tracing off", run_wrapped, 0, 0, {0}, NULL, 0},
        {"wrapped read, tracing on", run_wrapped, 1, 10000, {0}, NULL, 0},
        {"wrapped read, on, io_min_ns=1", run_wrapped, 1, 1, {0}, NULL, 0},
    };
    bench_table("1-byte read from a filled pipe", v, 4, iters, rounds, path);
    printf("\nclock: %s; pipe batch: %zu bytes\n",
           ctr__clock_tsc ? "tsc" : "clock_gettime(CLOCK_MONOTONIC)", batch);
    unlink(path);
    return 0;
}
