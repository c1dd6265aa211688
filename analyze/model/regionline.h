/* SPDX-License-Identifier: MIT */
/* regionline.h - the innermost region open on each thread over time, from
 * the task model's regions (tasks.h): what names a critical path's time in
 * the user's terms ("running in redact"), on whichever thread it was spent
 * and for whichever task that thread worked (regionline.c).
 *
 * Regions nest per thread, but the task model's REGION_END rule can end a
 * region that is not the innermost; the line takes, at each time, the open
 * region that began last. A region of no length is not on the line.
 */
#ifndef CTR_REGIONLINE_H
#define CTR_REGIONLINE_H

#include <stddef.h>
#include <stdint.h>

#include "model/critpath.h"
#include "model/tasks.h"

struct ctr_region_line;

/* ctr_region_line_new() : the line of every thread of ts's regions (thread
 * indexes as in the regions). ts must outlive it.
 * @return 0 and *out, or -ENOMEM. */
int ctr_region_line_new(const struct ctr_tasks *ts, struct ctr_region_line **out);
void ctr_region_line_free(struct ctr_region_line *rl);

/* ctr_region_line_at() : the innermost region open on thread at ns (NULL if
 * none); *until gets the time the answer changes next (UINT64_MAX: never). */
const struct ctr_region *ctr_region_line_at(const struct ctr_region_line *rl, uint32_t thread,
                                            uint64_t ns, uint64_t *until);

/* ctr_region_line_outer() : the outermost region open on thread at ns (the
 * one that began first among those open), or NULL. */
const struct ctr_region *ctr_region_line_outer(const struct ctr_region_line *rl, uint32_t thread,
                                               uint64_t ns);

/* ctr_region_line_phase() : where the outermost region open on thread at ns
 * began, 0 if none: a ctr_cp_phase_fn (critpath.h) over the line ctx. */
uint64_t ctr_region_line_phase(void *ctx, uint32_t thread, uint64_t ns);

/* ctr_region_line_split() : cuts p's segments where the innermost region of
 * their thread changes, and names each piece's region (its `region`). A
 * running segment's stack (where the running ended) stays on its last
 * piece only; the others end where a region began or ended.
 * @return 0 or -ENOMEM (then p is unchanged). */
int ctr_region_line_split(const struct ctr_region_line *rl, struct ctr_cp_path *p);

#endif
