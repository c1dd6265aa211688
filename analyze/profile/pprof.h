/* SPDX-License-Identifier: MIT */
/* pprof.h - writes pprof profiles (profile.proto, gzip'd), the format that
 * `go tool pprof` and `pprof -http` read.
 *
 * A builder collects samples keyed by their call stack; stacks are lists of
 * locations given innermost first. A location is either a code address (which
 * the builder symbolizes through a ctr_symbolizer and attaches to its mapping)
 * or a synthetic frame naming a function with no address (the blocking call,
 * e.g. "pthread_mutex_lock", that ctrace puts at the leaf of delay samples).
 * Samples with identical stacks are merged by adding their values.
 */
#ifndef CTR_PPROF_H
#define CTR_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "symbols/symbolize.h"

struct ctr_pprof;

/* One value column: the pair (type, unit), e.g. ("delay", "nanoseconds"). */
struct ctr_pprof_value_type {
    const char *type;
    const char *unit;
};

/* One frame of a sample's stack: synthetic when `function` is non-NULL
 * (then pc is ignored), else the code address pc (already adjusted: the
 * caller passes return addresses minus one). */
struct ctr_pprof_frame {
    uint64_t pc;
    const char *function;
};

/* ctr_pprof_new() : a profile with `ntypes` value columns (copied), the
 * period type/period as pprof defines them, and the mappings of `sym`
 * (which must outlive the builder; may be NULL: then addresses are not
 * symbolized and no mappings are written).
 * @return the builder or NULL if out of memory. */
struct ctr_pprof *ctr_pprof_new(const struct ctr_pprof_value_type *types, size_t ntypes,
                                struct ctr_pprof_value_type period_type, int64_t period,
                                struct ctr_symbolizer *sym, const struct ctr_sym_mapping *maps,
                                size_t nmaps);

/* ctr_pprof_set_time() : time_nanos (wall clock, ns since the epoch, of the
 * start of the profile) and duration_nanos. */
void ctr_pprof_set_time(struct ctr_pprof *p, int64_t time_nanos, int64_t duration_nanos);

/* ctr_pprof_add() : adds `values` (ntypes of them) to the sample whose stack
 * is frames[0..n-1], innermost first. @return 0 or -ENOMEM. */
int ctr_pprof_add(struct ctr_pprof *p, const struct ctr_pprof_frame *frames, size_t n,
                  const int64_t *values);

/* A sample's label: key and value, both strings (copied). */
struct ctr_pprof_label {
    const char *key, *str;
};

/* ctr_pprof_add_labeled() : ctr_pprof_add() for a sample with labels[0..
 * nlabels-1]: samples merge only when their stacks and labels are the same
 * (in the same order). @return 0 or -ENOMEM. */
int ctr_pprof_add_labeled(struct ctr_pprof *p, const struct ctr_pprof_frame *frames, size_t n,
                          const int64_t *values, const struct ctr_pprof_label *labels,
                          size_t nlabels);

/* ctr_pprof_write() : encodes the profile, gzips it and writes it to f.
 * @return 0, or a negative errno: the stream's own (e.g. -ENOSPC), -EIO
 *         when it gives none, -ENOMEM. */
int ctr_pprof_write(struct ctr_pprof *p, FILE *f);

void ctr_pprof_free(struct ctr_pprof *p);

#endif
