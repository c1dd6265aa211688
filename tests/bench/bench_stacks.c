/* SPDX-License-Identifier: MIT */
/* bench_stacks.c - what one stack costs a wrapper (ctr__stack_here: the walk
 * or libunwind, and interning), about 17 frames deep (11 calls of its own
 * below main), side by side in one process:
 *   - code built with frame pointers: by frame pointers only (checked against
 *     the code ranges), the default (frame pointers as far as the verdicts
 *     vouch for them), and libunwind only;
 *   - code built without (bench_stacks_nofp.c): the default, which hands
 *     such stacks to libunwind, and frame pointers only (a short stack).
 * Variants are interleaved over several rounds; the median is printed. Prints
 * a table; never passes or fails on timing.
 * usage: bench_stacks [ITERATIONS (default 200000)] [ROUNDS (default 7)]
 */
#include <stdio.h>

#include "bench.h"
#include "core/emit.h"
#include "core/stack.h"
#include "core/thread.h"

#define DEPTH 10 /* calls below the variant's own, above the leaf */

double bench_nofp_descend(int depth, double (*leaf)(uint64_t), uint64_t iters);

static volatile uint64_t sink;

#define BENCH_DESCEND fp_descend
double fp_descend(int depth, double (*leaf)(uint64_t), uint64_t iters);
#include "bench_descend.h"

__attribute__((noinline)) static uint32_t no_stack(struct ctr_thread *t)
{
    __asm__ volatile("" ::: "memory");
    return (uint32_t)(uintptr_t)t;
}

static double leaf_of(uint64_t iters, uint32_t (*take)(struct ctr_thread *))
{
    struct ctr_thread *t = ctr__self_traced();
    uint64_t t0 = bench_now_ns(), acc = 0;
    for (uint64_t i = 0; i < iters; i++)
        acc += take(t);
    sink = acc;
    return (double)(bench_now_ns() - t0) / (double)iters;
}

static double leaf_empty(uint64_t iters)
{
    return leaf_of(iters, no_stack);
}
static double leaf_stack(uint64_t iters)
{
    return leaf_of(iters, ctr__stack_here);
}

static double fp_empty(uint64_t iters)
{
    return fp_descend(DEPTH, leaf_empty, iters);
}
static double fp_stack(uint64_t iters)
{
    return fp_descend(DEPTH, leaf_stack, iters);
}
static double nofp_stack(uint64_t iters)
{
    return bench_nofp_descend(DEPTH, leaf_stack, iters);
}

int main(int argc, char **argv)
{
    uint64_t iters = 200000;
    int rounds = 7;
    if (bench_args(argc, argv, "bench_stacks", &iters, &rounds))
        return 2;
    bench_go_multithreaded();
    char path[] = "/tmp/ctrace-bench-stacks-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    struct bench_variant v[] = {
        {"no stack (the loop)", fp_empty, 0, 0, {0}, NULL, 0},
        {"frame pointers: fp only", fp_stack, 1, 0, {0}, "fp", 0},
        {"frame pointers: default (auto)", fp_stack, 1, 0, {0}, NULL, 0},
        {"frame pointers: dwarf only", fp_stack, 1, 0, {0}, "dwarf", 0},
        {"no frame pointers: default (auto)", nofp_stack, 1, 0, {0}, NULL, 0},
        {"no frame pointers: fp only (short)", nofp_stack, 1, 0, {0}, "fp", 0},
    };
    bench_table("One stack of about 17 frames, added to the loop", v,
                (int)(sizeof(v) / sizeof(v[0])), iters, rounds, path);
    unlink(path);
    return 0;
}
