/* SPDX-License-Identifier: MIT */
/* paths.c - critical paths walked during a reading (paths.h). */
#include "cli/paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A walked path, cut at regions, on to the taker. */
static int take_cut(void *ctx, size_t i, struct ctr_cp_path *p)
{
    struct ctr_paths *ps = ctx;
    ps->forgotten += p->forgotten != 0;
    int rc = ctr_region_line_split(ps->line, p);
    if (rc != 0) {
        ctr_cp_path_free(p);
        return rc;
    }
    return ps->take(ps->ctx, i, p);
}

int ctr_paths_begin(struct ctr_paths *ps, struct ctr_reading *rd, const struct ctr_tasks *ts,
                    const struct ctr_task *const *tasks, size_t n, ctr_cp_path_fn take, void *ctx)
{
    *ps = (struct ctr_paths){.take = take, .ctx = ctx};
    struct ctr_cp_want *want = calloc(n ? n : 1, sizeof(*want));
    for (size_t i = 0; want && i < n; i++) {
        const struct ctr_task *task = tasks[i];
        want[i] = (struct ctr_cp_want){task->id, task->begin_ns, task->end_ns,
                                       task->ended ? task->end_thread : task->begin_thread};
    }
    if (want && ctr_region_line_new(ts, &ps->line) == 0)
        ps->h = ctr_cp_history_new(ctr_reading_trace(rd), want, n, 0, take_cut, ps);
    if (ps->h)
        ctr_cp_history_use_phases(ps->h, ctr_region_line_phase, ps->line);
    free(want);
    if (!ps->h) {
        ctr_region_line_free(ps->line);
        fprintf(stderr, "ctrace: walking the critical paths: %s\n", strerror(ENOMEM));
        return 1;
    }
    return 0;
}

struct ctr_consumer ctr_paths_consumer(struct ctr_paths *ps)
{
    return ctr_cp_history_consumer(ps->h);
}

int ctr_paths_end(struct ctr_paths *ps, int status)
{
    int rc = ctr_cp_history_error(ps->h);
    if (status == 0 && rc != 0) {
        fprintf(stderr, "ctrace: walking the critical paths: %s\n", strerror(-rc));
        status = 1;
    } else if (status == 0 && ctr_cp_history_left(ps->h) != 0) {
        fprintf(stderr, "ctrace: %zu critical paths were never walked (the reading ended early)\n",
                ctr_cp_history_left(ps->h));
        status = 1;
    }
    if (status == 0 && ps->forgotten)
        fprintf(stderr,
                "ctrace: %zu task%s reached back past the history kept (%zu MiB): the "
                "parts before it are unknown\n",
                ps->forgotten, ps->forgotten == 1 ? "'s path" : "s' paths",
                CTR_CP_BUDGET_DEFAULT >> 20);
    ctr_cp_history_free(ps->h);
    ctr_region_line_free(ps->line);
    ps->h = NULL;
    ps->line = NULL;
    return status;
}
