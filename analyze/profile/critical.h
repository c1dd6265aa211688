/* SPDX-License-Identifier: MIT */
/* critical.h - `-pprof=critical`: the critical paths of tasks
 * (model/critpath.h) summed as a pprof profile (critical.c).
 *
 * Each part of a path is a sample at the stack responsible, on whichever
 * thread it was: a wait's stack under a leaf naming its call (as the delay
 * profiles do), a running stretch's (where it ended: the release that made
 * it a hop's end, or the next wait) under the leaf "running", a runnable
 * one under "runnable", time the trace does not cover under "unknown".
 * Labels say the thread ("ID name"), the task's type, the state and the
 * innermost region of that thread then (when in one: regionline.h). Values:
 * parts/count and delay/nanoseconds; the delays of a profile sum to the
 * latencies of its tasks (every nanosecond once).
 *
 * Paths are summed as they come (per leaf, stack, thread, state, task type
 * and region: sums.h), so a profile of every task of a long trace takes the
 * memory of its distinct stacks, not of its paths.
 */
#ifndef CTR_CRITICAL_H
#define CTR_CRITICAL_H

#include <stddef.h>
#include <stdio.h>

#include "model/critpath.h"
#include "read/trace.h"

struct ctr_critical;

/* ctr_critical_new() : an empty profile. @return NULL if out of memory. */
struct ctr_critical *ctr_critical_new(void);

/* ctr_critical_add() : sums path p of a task of `type` (a string that
 * outlives c) into c. @return 0 or -ENOMEM. */
int ctr_critical_add(struct ctr_critical *c, const char *type, const struct ctr_cp_path *p);

/* ctr_critical_write() : the profile of the paths summed in c, of trace t,
 * gzip'd to out; symbolization problems on warn (may be NULL). @return 0,
 * or a negative errno with a one-line reason in err. */
int ctr_critical_write(const struct ctr_critical *c, const struct ctr_trace *t, FILE *out,
                       FILE *warn, char *err, size_t errlen);

void ctr_critical_free(struct ctr_critical *c);

#endif
