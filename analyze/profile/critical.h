/* SPDX-License-Identifier: MIT */
/* critical.h - `-pprof=critical`: the critical paths of tasks
 * (model/critpath.h) summed as a pprof profile (critical.c).
 *
 * Each part of a path is a sample at the stack responsible, on whichever
 * thread it was: a wait's stack under a leaf naming its call (as the delay
 * profiles do), a running stretch's (where it ended: the release that made
 * it a hop's end, or the next wait) under the leaf "running", a runnable
 * one under "runnable", time the trace does not cover under "unknown".
 * Labels say the thread ("ID name"), the task's type and the state. Values:
 * parts/count and delay/nanoseconds; the delays of a profile sum to the
 * latencies of its tasks (every nanosecond once).
 */
#ifndef CTR_CRITICAL_H
#define CTR_CRITICAL_H

#include <stddef.h>
#include <stdio.h>

#include "model/critpath.h"
#include "model/tasks.h"
#include "read/trace.h"

/* ctr_critical_write() : the profile of the paths of w[0..n-1], of trace t, gzip'd to out;
 * symbolization problems on warn (may be NULL). @return 0, or a negative errno with a one-line
 * reason in err. */
int ctr_critical_write(const struct ctr_trace *t, const struct ctr_cp_task *w, size_t n, FILE *out,
                       FILE *warn, char *err, size_t errlen);

#endif
