/* SPDX-License-Identifier: MIT */
/* top.h - `ctrace -pprof=TYPE -top`: a delay profile's heaviest stacks as
 * text, for reading a profile without `go tool pprof`. */
#ifndef CTR_TOP_H
#define CTR_TOP_H

#include <stddef.h>
#include <stdio.h>

#include "profile/profile.h"
#include "read/trace.h"

/* ctr_top_write() : writes the `n` (>= 1) heaviest stacks of profile `type`
 * of t, restricted by filter (NULL: none; see profile.h), to out as text: a summary line, then per
 * stack its total delay (ns, us, ms or s), its count, its share of all the profile's delay, and its
 * frames innermost first, symbolized as "function (file:line)" (inlined
 * calls each on a line of their own; synthetic leaves such as
 * "pthread_mutex_lock" as they are). Samples with identical frames are one
 * stack; stacks rank by delay, then count. Symbolization problems, and a
 * filter that matches nothing, go to `warn` (may be NULL).
 * @return 0, or a negative errno with a one-line reason in err: -ENOMEM;
 *         write errors are left in out's error flag for the caller. */
int ctr_top_write(const struct ctr_trace *t, enum ctr_profile_type type,
                  const struct ctr_profile_filter *filter, size_t n, FILE *out, FILE *warn,
                  char *err, size_t errlen);

/* ctr_top_write_collected() : the same from what collector c summed over
 * trace t (ctr_profile_collect_new() without `each`). */
int ctr_top_write_collected(const struct ctr_trace *t, struct ctr_profile_collect *c,
                            enum ctr_profile_type type, const struct ctr_profile_filter *filter,
                            size_t n, FILE *out, FILE *warn, char *err, size_t errlen);

#endif
