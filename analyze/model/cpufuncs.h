/* SPDX-License-Identifier: MIT */
/* cpufuncs.h - the functions that ran most, from CPU samples (FORMAT.md
 * §4.1): samples summed per innermost PC as they go by (cheap, no
 * symbolization in the event loop), then, for a report, symbolized once per
 * distinct PC and merged by function: "cpu_regcomp 58% (cputrace.c:29)"
 * (report/cpuleaves.h).
 * `ctrace tasks` uses it for the slowest tasks. */
#ifndef CTR_CPUFUNCS_H
#define CTR_CPUFUNCS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "read/trace.h"

/* The samples of one innermost PC (the interrupted instruction), with the
 * stack of the first of them (its callers, for a function without source). */
struct ctr_cpu_leaf {
    uint64_t pc, stack_id, samples, ns;
};

struct ctr_cpu_leaves {
    uint64_t samples, ns; /* in all */
    struct ctr_cpu_leaf *leaf;
    size_t n, cap;
};

/* ctr_cpu_leaves_add() : adds a sample of `ns` CPU at stack stack_id of t.
 * @return 0 or -ENOMEM. Memory: one entry per distinct innermost PC. */
int ctr_cpu_leaves_add(struct ctr_cpu_leaves *l, const struct ctr_trace *t, uint64_t stack_id,
                       uint64_t ns);

void ctr_cpu_leaves_free(struct ctr_cpu_leaves *l);

#endif
