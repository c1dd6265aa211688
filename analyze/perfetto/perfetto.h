/* SPDX-License-Identifier: MIT */
/* perfetto.h - `ctrace -perfetto`: a trace as a timeline for Perfetto's UI,
 * written in Perfetto's protobuf trace format while the pipeline streams
 * the trace (memory does not grow with its length).
 *
 * The timeline: one process track; per thread a track of its states (each
 * wait as a slice named after its call, with its object and stack, and its
 * runnable part nested in it; preempted and, with context switches,
 * running), its releases as instants with a flow to each wait they ended,
 * and a track of its regions and logs; per task a slice on a track of its
 * type, with a flow from each of its regions; counters of the threads
 * blocked and runnable; on a "ctrace" track the missing parts of a damaged
 * trace and the start of a flight recorder's window; events lost, where
 * they were lost. perfetto_out.h says how it is written.
 *
 * Not thread-safe: the pipeline's main thread only.
 */
#ifndef CTR_PERFETTO_H
#define CTR_PERFETTO_H

#include <stdint.h>
#include <stdio.h>

#include "perfetto/item.h"
#include "read/engine.h"

struct ctr_perfetto;

/* ctr_perfetto_new() : an export to out of `walked`, the trace the
 * pipeline fills as it reads (o->model's second reading; it must outlive
 * p). @return NULL if out of memory. */
struct ctr_perfetto *ctr_perfetto_new(const struct ctr_perfetto_opts *o,
                                      const struct ctr_trace *walked, FILE *out);

/* The consumer that feeds p. */
struct ctr_consumer ctr_perfetto_consumer(struct ctr_perfetto *p);

/* ctr_perfetto_paths() : the critical paths of w[0..n-1] (kept, not
 * copied: they must outlive p's end) are to be written after the timeline
 * (perfetto_paths.h). */
struct ctr_cp_task;
void ctr_perfetto_paths(struct ctr_perfetto *p, const struct ctr_cp_task *w, size_t n);

/* ctr_perfetto_end() : once the pipeline is done with `walked` (t), writes the
 * rest and flushes out; *st (may be NULL) gets the figures.
 * @return 0, or a negative errno with a one-line reason in err (out of
 *         memory, or the output's error such as -ENOSPC). */
int ctr_perfetto_end(struct ctr_perfetto *p, const struct ctr_trace *t,
                     struct ctr_perfetto_stats *st, char *err, size_t errlen);

void ctr_perfetto_free(struct ctr_perfetto *p);

#endif
