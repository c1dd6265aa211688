/* SPDX-License-Identifier: MIT */
/* why.h - `ctrace why`: the critical paths of the slowest tasks (critpath.h)
 * as text people read, or as tab-separated lines scripts read (why.c). */
#ifndef CTR_WHY_H
#define CTR_WHY_H

#include <stddef.h>
#include <stdio.h>

#include "model/critpath.h"
#include "model/tasks.h"
#include "read/trace.h"

/* ctr_why_write() : for each of w[0..n-1] (slowest first), its latency along
 * its critical path: the part on its own thread by state, the waits through
 * which it went to other threads, the path's largest parts (thread, state,
 * call, frame, region) and the one line of what dominates; then what the
 * data cannot tell. With tsv, only lines "task\tthread\tstate\tcall\thops\t
 * ns\tfunction\tfile:line\tregion" (the path's parts summed by thread,
 * state, call, stack and region, largest first; region "-" when none),
 * after a '#' header line. Thread names and frames come
 * from t (the trace whose indexes the paths use). With cpu (a CPU check
 * with keep, finished, over the same reading: model/cpucheck.h; may be
 * NULL), a running part says how much of it was runnable or off-cpu by
 * the kernel's CPU time (not in tsv).
 * @return 0, or -ENOMEM with a one-line reason in err; write errors are left
 *         in out's error flag. */
struct ctr_cpucheck;
int ctr_why_write(const struct ctr_trace *t, const struct ctr_cp_task *w, size_t n,
                  const struct ctr_cpucheck *cpu, int tsv, FILE *out, char *err, size_t errlen);

#endif
