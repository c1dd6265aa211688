/* SPDX-License-Identifier: MIT */
/* bench_flightrec.c - what the flight recorder costs and gives, side by side
 * with trace_start in one process:
 *   1. events per second that 2 threads offer at full speed, and that get
 *      written (offered - dropped), recorder vs file (interleaved rounds,
 *      median);
 *   2. the time to dump a full window, its size, and how much history the
 *      compression buys (decompressed stream / window bytes).
 * Prints tables; never passes or fails on timing.
 * usage: bench_flightrec [MILLISECONDS per run (default 300)] [ROUNDS (default 5)] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"
#include "ctrace/flightrec.h"
#include "core/emit.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "read/load.h"

static _Atomic int stop;

static void *writer(void *arg)
{
    uint64_t *n = arg;
    struct ctr_thread *t = ctr__self_traced();
    uint64_t i = 0;
    while (t && !atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int k = 0; k < 256; k++, i++) {
            uint64_t args[3] = {CTR_REASON_MUTEX_LOCK, 0x7f0000001000ull + (i & 0xfff), 7};
            ctr__emit_one(t, CTR_EV_BLOCK, args);
        }
    }
    *n = i;
    return NULL;
}

/* Runs 2 writers for ms milliseconds; returns events per second. */
static double storm(unsigned ms)
{
    pthread_t th[2];
    uint64_t n[2] = {0, 0};
    atomic_store(&stop, 0);
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, writer, &n[i]);
    usleep(ms * 1000);
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    return (double)(n[0] + n[1]) / ((double)(bench_now_ns() - t0) / 1e9);
}

int main(int argc, char **argv)
{
    unsigned ms = argc > 1 ? (unsigned)atoi(argv[1]) : 300;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (ms == 0 || rounds < 1 || rounds > BENCH_MAX_ROUNDS) {
        fprintf(stderr, "usage: bench_flightrec [MILLISECONDS] [ROUNDS <= %d]\n", BENCH_MAX_ROUNDS);
        return 2;
    }
    bench_go_multithreaded();
    char file[] = "/tmp/ctrace-bench-fr-XXXXXX";
    int fd = mkstemp(file);
    if (fd < 0)
        return 1;
    close(fd);
    double rate[2][BENCH_MAX_ROUNDS], kept[2][BENCH_MAX_ROUNDS];
    const uint64_t window = 16u << 20;
    for (int r = 0; r < rounds; r++) {
        struct trace_counters c;
        if (trace_start(file) != 0)
            return 1;
        rate[0][r] = storm(ms);
        trace_stop();
        trace_get_counters(&c);
        kept[0][r] = rate[0][r] - (double)c.events_dropped / (ms / 1e3);
        struct flightrec_config fc = {.min_age_ns = 10ull * 1000 * 1000 * 1000,
                                      .max_bytes = window};
        if (flightrec_start(&fc) != 0)
            return 1;
        rate[1][r] = storm(ms);
        usleep(150 * 1000); /* one more round: counters settle */
        trace_get_counters(&c);
        kept[1][r] = rate[1][r] - (double)c.events_dropped / (ms / 1e3);
        flightrec_stop();
    }
    double file_rate = bench_median(rate[0], rounds), fr_rate = bench_median(rate[1], rounds);
    double file_kept = bench_median(kept[0], rounds), fr_kept = bench_median(kept[1], rounds);
    printf("\nEvents from 2 threads writing flat out (%u ms x %d interleaved rounds, median)\n", ms,
           rounds);
    printf("  %-32s %14s %14s %10s\n", "sink", "offered/s", "written/s", "vs file");
    printf("  %-32s %14.0f %14.0f %9.2fx\n", "trace_start (file)", file_rate, file_kept, 1.0);
    printf("  %-32s %14.0f %14.0f %9.2fx\n", "flightrec_start (16 MiB window)", fr_rate, fr_kept,
           fr_kept / file_kept);

    /* A full window, dumped. */
    struct flightrec_config fc = {.min_age_ns = 10ull * 1000 * 1000 * 1000, .max_bytes = window};
    flightrec_start(&fc);
    struct flightrec_stats st = {0};
    for (int i = 0; i < (ms >= 100 ? 20 : 1) && st.window_bytes < window * 9 / 10; i++) {
        storm(200);
        usleep(150 * 1000);
        flightrec_get_stats(&st);
    }
    uint64_t t0 = bench_now_ns();
    int rc = flightrec_dump(file);
    uint64_t dump_ns = bench_now_ns() - t0;
    flightrec_stop();
    struct ctr_trace tr;
    char err[256];
    if (rc != 0 || ctr_trace_read(file, &tr, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench: dump failed (%d)\n", rc);
        return 1;
    }
    printf("\nA full window dumped\n");
    printf("  window: %.1f MiB in %llu generations, spanning %.0f ms\n",
           st.window_bytes / 1048576.0, (unsigned long long)st.generations,
           st.window_span_ns / 1e6);
    printf("  dump:   %.1f ms for %.1f MiB (%.0f MiB/s), %llu events\n", dump_ns / 1e6,
           tr.file_bytes / 1048576.0, tr.file_bytes / 1048576.0 / (dump_ns / 1e9),
           (unsigned long long)tr.nevents);
    printf("  compression: %.1f MiB of records kept in %.1f MiB: %.1fx more history per byte\n",
           tr.stream_bytes / 1048576.0, tr.file_bytes / 1048576.0,
           (double)tr.stream_bytes / (double)tr.file_bytes);
    ctr_trace_free(&tr);
    unlink(file);
    return 0;
}
