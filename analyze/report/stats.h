/* SPDX-License-Identifier: MIT */
/* stats.h - `ctrace stats`: what a trace holds and how healthy it is. */
#ifndef CTR_STATS_H
#define CTR_STATS_H

#include <stdio.h>

#include "model/threadtime.h"
#include "read/trace.h"

/* ctr_stats_empty() : whether t has nothing to analyze: no threads or no
 * events (a 16-byte trace is its header alone).
 * @return NULL if it has something; else a static line saying why it may be
 *         empty: a complete trace's program never waited; an incomplete
 *         one's ended, or forked into the background, before its first
 *         flush. */
const char *ctr_stats_empty(const struct ctr_trace *t);

/* ctr_stats_sampled() : whether t holds CPU samples or says it was
 * sampled (a SAMPLING record, FORMAT.md §4.1). */
int ctr_stats_sampled(const struct ctr_trace *t);

/* ctr_stats_cpu_source() : the name of t's sampling source ("perf_event",
 * "timer"), a static string. */
const char *ctr_stats_cpu_source(const struct ctr_trace *t);

/* Prints the summary of t (read from `name`) to out, with where the
 * threads' time went (`time`, from a walk of t's states; NULL: not
 * walked); an empty trace (ctr_stats_empty()) is said so on a line of its
 * own. */
void ctr_stats_print(const struct ctr_trace *t, const char *name,
                     const struct ctr_time_totals *time, FILE *out);

/* ctr_stats_warn_offcpu() : the invariant's warning (a blank line, then
 * one paragraph) when off-CPU time the trace cannot name is more than
 * CTR_OFFCPU_WARN_PCT of the time modelled as running; nothing otherwise. */
void ctr_stats_warn_offcpu(FILE *out, const struct ctr_time_totals *time);

#endif
