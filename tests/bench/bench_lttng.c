/* SPDX-License-Identifier: MIT */
/* bench_lttng.c - what one event costs the thread that writes it, on the
 * native path (the thread's own buffer) and on the LTTng path (the `ctrace`
 * tracepoint, tp/), side by side in one process: the same Block events
 * (reason, object, stack id) written by the same loop, with tracing into a
 * file, into LTTng only, and into both. Variants are interleaved over
 * several rounds; the median is printed with its ratio to the native path.
 * An LTTng session must record `ctrace:*` for the LTTng variants to write
 * anything (bench_lttng.sh makes one); without one they measure the
 * tracepoint's disabled check. Prints a table; never passes or fails.
 * usage: bench_lttng [ITERATIONS (default 1000000)] [ROUNDS (default 7)]
 */
#include <stdio.h>
#include <unistd.h>

#include "bench.h"
#include "bench_events.h"
#include "core/clock.h"

int main(int argc, char **argv)
{
    uint64_t iters = 1000000;
    int rounds = 7;
    if (bench_args(argc, argv, "bench_lttng", &iters, &rounds))
        return 2;
    bench_go_multithreaded();
    char path[] = "/tmp/bench-lttng-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    struct bench_variant v[] = {
        {.name = "native: the thread's buffer", .run = run_emit_block, .traced = 1},
        {.name = "LTTng only (tracepoint)", .run = run_emit_block, .traced = 1, .lttng = 2},
        {.name = "native and LTTng", .run = run_emit_block, .traced = 1, .lttng = 1},
    };
    bench_table("One Block event (reason, object, stack) written by its thread", v, 3, iters,
                rounds, path);
    printf("\nclock: %s\n", ctr__clock_tsc ? "tsc" : "clock_gettime(CLOCK_MONOTONIC)");
    unlink(path);
    return 0;
}
