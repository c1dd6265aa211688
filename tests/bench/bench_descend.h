/* SPDX-License-Identifier: MIT */
/* bench_descend.h - the call chain bench_stacks.c takes stacks through,
 * included once by each file that builds it: bench_stacks.c with frame
 * pointers, bench_stacks_nofp.c without. Define BENCH_DESCEND to its name. */
#include <stdint.h>

/* Descends `depth` calls, then returns leaf(iters). */
__attribute__((noinline)) double BENCH_DESCEND(int depth, double (*leaf)(uint64_t), uint64_t iters)
{
    if (depth == 0)
        return leaf(iters);
    double r = BENCH_DESCEND(depth - 1, leaf, iters);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return r;
}
