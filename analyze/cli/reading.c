/* SPDX-License-Identifier: MIT */
/* reading.c - a verb's reading of a trace (see reading.h). */
#include "cli/reading.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/stats.h"
#include "model/tasks.h"

int ctr_reading_open(struct ctr_reading *r, const char *path, int passes,
                     const struct ctr_pipeline_opts *opts)
{
    char err[512];
    memset(r, 0, sizeof(*r));
    r->path = path;
    r->opts = *opts;
    if (ctr_source_open_pid(path, passes > 1, opts->pid, &r->src, err, sizeof(err)) != 0) {
        fprintf(stderr, "ctrace: %s\n", err);
        return 1;
    }
    return 0;
}

struct ctr_trace *ctr_reading_trace(struct ctr_reading *r)
{
    return &r->pass[r->npasses < 2 ? r->npasses : 1];
}

int ctr_reading_pass(struct ctr_reading *r, const struct ctr_consumer *c, size_t n,
                     struct ctr_trace **t)
{
    char err[256];
    if (r->npasses >= 2) {
        fprintf(stderr, "ctrace: %s: read more than twice\n", r->path);
        return 1;
    }
    if (r->npasses > 0 && ctr_source_rewind(r->src) != 0) {
        fprintf(stderr, "ctrace: %s: cannot read it a second time\n", r->path);
        return 1;
    }
    struct ctr_trace *pt = &r->pass[r->npasses++];
    if (ctr_analyze(r->src, pt, c, n, &r->opts, err, sizeof(err)) != 0) {
        fprintf(stderr, "ctrace: %s: %s\n", r->path, err);
        return 1;
    }
    *t = pt;
    return 0;
}

int ctr_reading_tasks(struct ctr_reading *r, struct ctr_tasks *ts, const struct ctr_consumer *also,
                      size_t nalso, struct ctr_trace **t)
{
    struct ctr_tasks_builder *b = ctr_tasks_builder_new(ts);
    struct ctr_consumer *c = calloc(nalso + 1, sizeof(*c));
    if (!b || !c) {
        free(c);
        if (b && ctr_tasks_builder_end(b, ctr_reading_trace(r)) == 0) /* frees b */
            ctr_tasks_free(ts);
        fprintf(stderr, "ctrace: out of memory\n");
        return 1;
    }
    struct ctr_trace *filled = ctr_reading_trace(r);
    c[0] = ctr_tasks_consumer(b);
    for (size_t i = 0; i < nalso; i++)
        c[i + 1] = also[i];
    int failed = ctr_reading_pass(r, c, nalso + 1, t);
    free(c);
    int rc = ctr_tasks_builder_end(b, filled); /* frees b, and ts on failure */
    if (failed || rc != 0) {
        if (rc == 0)
            ctr_tasks_free(ts);
        else if (!failed)
            fprintf(stderr, "ctrace: reading the tasks: %s\n", strerror(-rc));
        return 1;
    }
    return 0;
}

void ctr_reading_say(const struct ctr_reading *r)
{
    if (!r->npasses)
        return;
    const struct ctr_trace *t = &r->pass[r->npasses - 1];
    if (t->damage[0]) {
        fprintf(stderr, "ctrace: %s: %s\n", r->path, t->damage);
        for (size_t i = 0; i < t->gaps && i < CTR_GAPS_LISTED; i++) {
            const struct ctr_gap *g = &t->gap_list[i];
            if (i == 0 && t->starts_damaged) {
                fprintf(stderr,
                        "ctrace: %s: missing: what came before +%.6f s, for a time not known, "
                        "skipped for the damage at file offset %llu; the rest of the trace is "
                        "read\n",
                        r->path, (double)(g->to_ns - t->start_ns) / 1e9,
                        (unsigned long long)g->file_off);
                continue;
            }
            fprintf(stderr,
                    "ctrace: %s: missing: +%.6f s to +%.6f s (%.6f s), skipped for the "
                    "damage at file offset %llu; the rest of the trace is read\n",
                    r->path, (double)(g->from_ns - t->start_ns) / 1e9,
                    (double)(g->to_ns - t->start_ns) / 1e9, (double)(g->to_ns - g->from_ns) / 1e9,
                    (unsigned long long)g->file_off);
        }
        if (t->gaps > CTR_GAPS_LISTED)
            fprintf(stderr, "ctrace: %s: ... and %llu more missing spans (%.6f s in all)\n",
                    r->path, (unsigned long long)(t->gaps - CTR_GAPS_LISTED),
                    (double)t->missing_ns / 1e9);
    } else if (ctr_stats_empty(t)) {
        fprintf(stderr, "ctrace: %s: warning: %s\n", r->path, ctr_stats_empty(t));
    }
    if (t->lttng_discarded)
        fprintf(stderr,
                "ctrace: %s: warning: LTTng discarded %llu events (its sub-buffers were "
                "full): what they held is missing; give the channel more, or bigger, "
                "sub-buffers\n",
                r->path, (unsigned long long)t->lttng_discarded);
}

int ctr_reading_status(const struct ctr_reading *r)
{
    return r->npasses && r->pass[r->npasses - 1].damage[0] ? 3 : 0;
}

void ctr_reading_close(struct ctr_reading *r)
{
    for (int i = 0; i < r->npasses; i++)
        ctr_trace_free(&r->pass[i]);
    ctr_source_close(r->src);
    memset(r, 0, sizeof(*r));
}
