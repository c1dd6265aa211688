/* SPDX-License-Identifier: MIT */
/* tracesym.h - a trace's code addresses made symbolizable: a symbolizer
 * (symbolize.h) over the trace's mapping table, which every output that
 * names functions (profiles, -top, threads, tasks, Perfetto) opens once.
 */
#ifndef CTR_TRACESYM_H
#define CTR_TRACESYM_H

#include <stddef.h>
#include <stdio.h>

#include "read/trace.h"
#include "symbols/symbolize.h"

/* A symbolizer over a trace's mapping table, with the table in the form
 * that ctr_symbolizer_new() and ctr_pprof_new() take (maps[0..nmaps-1]). */
struct ctr_profile_sym {
    struct ctr_symbolizer *sym;
    struct ctr_sym_mapping *maps; /* points into the trace's strings */
    size_t nmaps;
};

/* ctr_profile_sym_open() : sets up ps for t's code addresses; t must outlive
 * it. @return 0, or -ENOMEM (then ps holds nothing to close). */
int ctr_profile_sym_open(const struct ctr_trace *t, struct ctr_profile_sym *ps);

/* ctr_profile_sym_close() : prints the symbolizer's warnings (missing
 * files, build-id mismatches) to `warn` (may be NULL) and frees ps. */
void ctr_profile_sym_close(struct ctr_profile_sym *ps, FILE *warn);

#endif
