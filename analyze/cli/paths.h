/* SPDX-License-Identifier: MIT */
/* paths.h - the critical paths of tasks picked in a first reading, walked
 * during the second (critpath.h) and cut at their threads' regions
 * (regionline.h) before they are handed on: what `why`, -pprof=critical
 * and -perfetto -critical share (paths.c). */
#ifndef CTR_PATHS_H
#define CTR_PATHS_H

#include <stddef.h>

#include "cli/reading.h"
#include "model/critpath.h"
#include "model/regionline.h"
#include "model/tasks.h"

struct ctr_paths {
    struct ctr_cp_history *h;
    struct ctr_region_line *line;
    ctr_cp_path_fn take;
    void *ctx;
    size_t forgotten; /* paths that reached back past the history kept */
};

/* ctr_paths_begin() : ready to walk, in rd's next reading, the paths of
 * tasks[0..n-1] (n > 0) of the model ts; each path goes, walked and cut at
 * regions, to take(ctx, i, p), which then owns it.
 * @return 0, or 1 after saying why on stderr (nothing to free). */
int ctr_paths_begin(struct ctr_paths *ps, struct ctr_reading *rd, const struct ctr_tasks *ts,
                    const struct ctr_task *const *tasks, size_t n, ctr_cp_path_fn take, void *ctx);

/* The consumer for that reading (engine.h). */
struct ctr_consumer ctr_paths_consumer(struct ctr_paths *ps);

/* ctr_paths_end() : after the reading, which ended with `status` (0 or 1):
 * says on stderr what stopped the walks, or how many paths reached back
 * past the history kept; frees what ps holds.
 * @return status, or 1 if a walk failed or a path was never walked. */
int ctr_paths_end(struct ctr_paths *ps, int status);

#endif
