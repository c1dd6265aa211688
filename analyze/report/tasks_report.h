/* SPDX-License-Identifier: MIT */
/* tasks_report.h - `ctrace tasks`: the user's tasks as a report, their
 * latencies by type and the slowest ones in detail (the model it reads is
 * tasks.h's).
 *
 * Percentiles are nearest-rank over the ended tasks of a type: p is the
 * smallest latency that at least p% of them do not exceed. An open task
 * has no latency yet: it is counted apart, and ranks among the slowest by
 * its age.
 */
#ifndef CTR_TASKS_REPORT_H
#define CTR_TASKS_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "read/trace.h"
#include "model/tasks.h"

struct ctr_tasks_opts {
    const char *type;   /* only tasks of this type; NULL: all */
    uint64_t latmin_ns; /* instances listed: at least this slow; 0: all */
    size_t n;           /* the slowest n instances are listed in full */
    int tsv;            /* the per-type table only, tab-separated */
};

/* ctr_tasks_write() : `ctrace tasks`: per task type the count of ended
 * tasks and their latency p50/p90/p99/max, the tasks still open, then the
 * o->n slowest tasks (of o->type, at least o->latmin_ns), each with its
 * breakdown, its time per region name and its logs. With o->tsv, only the
 * lines "type\tcount\tp50_ns\tp90_ns\tp99_ns\tmax_ns" after one header
 * line starting with '#' (types in name order; count and percentiles of
 * ended tasks; a type with open tasks only has count 0 and zeros).
 * @return 0, or a negative errno with a one-line reason in err (-ENOMEM);
 *         write errors are left in out's error flag for the caller. */
int ctr_tasks_write(const struct ctr_trace *t, const struct ctr_tasks_opts *o, FILE *out, char *err,
                    size_t errlen);

/* Fills out[i] with the breakdown of tasks[i], i < n. @return 0 or -ENOMEM. */
typedef int (*ctr_breakdown_fn)(void *ctx, const struct ctr_task *const *tasks, size_t n,
                                struct ctr_task_breakdown *out);

/* ctr_tasks_report() : the same report from the model ts of trace t, with
 * the breakdowns of the slowest tasks from breakdown(bd_ctx, ...) (the
 * streaming CLI reads the trace a second time for them). */
int ctr_tasks_report(const struct ctr_trace *t, const struct ctr_tasks *ts,
                     const struct ctr_tasks_opts *o, ctr_breakdown_fn breakdown, void *bd_ctx,
                     FILE *out, char *err, size_t errlen);

#endif
