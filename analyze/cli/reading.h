/* SPDX-License-Identifier: MIT */
/* reading.h - a verb's reading of a trace (main.c): the source opened once
 * and read by the pipeline once, or twice when the first reading decides
 * what the second looks for (a filter's windows come from the tasks; the
 * breakdowns are of the slowest tasks). Standard input ("-") is spooled for
 * a second reading. What every verb says of a trace (damage, missing
 * spans, an empty trace) is said here, on stderr.
 */
#ifndef CTR_PASSES_H
#define CTR_PASSES_H

#include "read/pipeline.h"

struct ctr_reading {
    const char *path;
    struct ctr_source *src;
    struct ctr_pipeline_opts opts;
    /* The trace of each pass: the first stays, since a model built from it
     * points into its strings and indexes its threads, which the second
     * gives the same indexes (it reads the same frames in the same order). */
    struct ctr_trace pass[2];
    int npasses;
};

/* ctr_reading_open() : opens path for up to `passes` (1 or 2) readings.
 * @return 0, or 1 after saying why on stderr. */
int ctr_reading_open(struct ctr_reading *r, const char *path, int passes,
                     const struct ctr_pipeline_opts *opts);

/* ctr_reading_trace() : the trace the next pass fills (for consumers that
 * must know it before). */
struct ctr_trace *ctr_reading_trace(struct ctr_reading *r);

/* ctr_reading_pass() : reads the whole trace again through the n consumers
 * c[] (which see the trace this pass fills: *t).
 * @return 0, or 1 after saying why on stderr. */
int ctr_reading_pass(struct ctr_reading *r, const struct ctr_consumer *c, size_t n,
                     struct ctr_trace **t);

/* ctr_reading_tasks() : a pass that builds the task model of the trace
 * into *ts (tasks.h), which points into the pass's trace *t, and feeds the
 * nalso consumers also[] (may be NULL) as well.
 * @return 0 (free ts with ctr_tasks_free()), or 1 after saying why on
 *         stderr (then ts holds nothing to free). */
struct ctr_tasks;
int ctr_reading_tasks(struct ctr_reading *r, struct ctr_tasks *ts, const struct ctr_consumer *also,
                      size_t nalso, struct ctr_trace **t);

/* ctr_reading_say() : says on stderr what is wrong with the trace as the
 * last pass read it: its damage and missing spans, or that it is empty. */
void ctr_reading_say(const struct ctr_reading *r);

/* The exit status the trace calls for: 3 when damaged, else 0. */
int ctr_reading_status(const struct ctr_reading *r);

void ctr_reading_close(struct ctr_reading *r);

#endif
