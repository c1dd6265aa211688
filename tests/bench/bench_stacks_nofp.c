/* SPDX-License-Identifier: MIT */
/* bench_stacks_nofp.c - the call chain of bench_stacks.c, built without
 * frame pointers (as Debian's packages are). */
#define BENCH_DESCEND bench_nofp_descend
#include <stdint.h>
double BENCH_DESCEND(int depth, double (*leaf)(uint64_t), uint64_t iters);
#include "bench_descend.h"
