/* bench_stacks_nofp.c - the call chain of bench_stacks.c, built without
 * frame pointers (as Debian's packages are). */
#include <stdint.h>

/* Descends `depth` calls, then returns leaf(iters). */
__attribute__((noinline)) double bench_nofp_descend(int depth, double (*leaf)(uint64_t),
                                                    uint64_t iters)
{
    if (depth == 0)
        return leaf(iters);
    double r = bench_nofp_descend(depth - 1, leaf, iters);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return r;
}
