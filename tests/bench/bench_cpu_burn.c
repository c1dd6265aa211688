/* SPDX-License-Identifier: MIT */
/* bench_cpu_burn.c - a fixed amount of CPU work on N threads, for
 * bench_cpu.sh (the overhead of CPU sampling).
 *
 * Unlike tests/progs/prog-cpu.c, which burns a given amount of its threads' CPU
 * TIME (and so hides any slowdown), this does a fixed amount of WORK: each
 * thread runs ITERS rounds of integer hashing through a few noinline
 * functions (so that samples land in more than one frame of a real stack),
 * and the program prints the wall time from the first thread's start to the
 * last one's end, and the CPU time its threads used (their sum). Whatever a
 * tracer steals from the threads (signals, perf_event interrupts, unwinding,
 * its collector thread on the same cores) makes that time longer.
 *
 * usage: bench_cpu_burn [THREADS (default 2)] [MITERS (million rounds a
 *        thread, default 100)]
 * prints: burn: threads=T miters=M elapsed_ms=X cpu_ms=Y checksum=C
 *
 * usage: bench_cpu_burn churn [N (default 2000)]
 *        a thread per request: N threads, one after the other, each doing
 *        20 k rounds (about 0.1 ms) and joined before the next starts: what
 *        a sampler costs at each thread's start and end.
 * prints: churn: threads=N elapsed_ms=X cpu_ms=0
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 64

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

__attribute__((noinline)) static uint64_t fold(uint64_t acc, uint64_t v)
{
    for (int i = 0; i < 4; i++) {
        acc = (acc << 7 | acc >> 57) ^ v;
        v = v * 6364136223846793005u + 1442695040888963407u;
    }
    return acc;
}

__attribute__((noinline)) static uint64_t step(uint64_t acc, uint64_t i)
{
    return fold(acc, mix(acc + i));
}

struct arg {
    pthread_t tid;
    uint64_t iters, seed, out, cpu_ns;
};

static void *burn(void *p)
{
    struct arg *a = p;
    uint64_t acc = a->seed;
    for (uint64_t i = 0; i < a->iters; i++)
        acc = step(acc, i);
    a->out = acc;
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    a->cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return NULL;
}

/* A thread per request: see the top. */
static int churn(int n)
{
    uint64_t t0 = now_ns(), sum = 0;
    for (int i = 0; i < n; i++) {
        struct arg a = {.iters = 20000, .seed = (uint64_t)i + 1};
        if (pthread_create(&a.tid, NULL, burn, &a) != 0) {
            fprintf(stderr, "bench_cpu_burn: pthread_create failed\n");
            return 1;
        }
        pthread_join(a.tid, NULL);
        sum ^= a.out;
    }
    printf("churn: threads=%d elapsed_ms=%.1f cpu_ms=0 checksum=%016" PRIx64 "\n", n,
           (now_ns() - t0) / 1e6, sum);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "churn") == 0)
        return churn(argc > 2 ? atoi(argv[2]) : 2000);
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    double miters = argc > 2 ? atof(argv[2]) : 100;
    if (threads < 1 || threads > MAX_THREADS || miters <= 0) {
        fprintf(stderr, "usage: bench_cpu_burn [THREADS 1..%d] [MITERS > 0]\n", MAX_THREADS);
        return 2;
    }
    static struct arg args[MAX_THREADS];
    uint64_t t0 = now_ns();
    for (int t = 0; t < threads; t++) {
        args[t].iters = (uint64_t)(miters * 1e6);
        args[t].seed = (uint64_t)t + 1;
        if (pthread_create(&args[t].tid, NULL, burn, &args[t]) != 0) {
            fprintf(stderr, "bench_cpu_burn: pthread_create failed\n");
            return 1;
        }
    }
    uint64_t sum = 0, cpu_ns = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(args[t].tid, NULL);
        sum ^= args[t].out;
        cpu_ns += args[t].cpu_ns;
    }
    uint64_t t1 = now_ns();
    printf("burn: threads=%d miters=%g elapsed_ms=%.1f cpu_ms=%.1f checksum=%016" PRIx64 "\n",
           threads, miters, (t1 - t0) / 1e6, cpu_ns / 1e6, sum);
    return 0;
}
