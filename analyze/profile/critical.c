/* SPDX-License-Identifier: MIT */
/* critical.c - critical paths as a pprof profile (critical.h). */
#include "profile/critical.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_format.h"
#include "profile/pprof.h"
#include "symbols/tracesym.h"

/* The frames a stack can give a sample: the leaf, then its PCs. */
#define CRITICAL_FRAMES_MAX 256

/* One part of a path into p. */
static int add_segment(struct ctr_pprof *p, const struct ctr_trace *t, const struct ctr_task *task,
                       const struct ctr_cp_segment *s, struct ctr_pprof_frame *frames)
{
    size_t n = 0;
    const char *call = s->reason < CTR_REASON_LIMIT ? ctr_reason_specs[s->reason].call : NULL;
    frames[n++] = (struct ctr_pprof_frame){
        0, s->state == CTR_CP_BLOCKED && call ? call : ctr_cp_state_name(s->state)};
    const struct ctr_stack_info *st = s->stack_id ? ctr_trace_stack(t, s->stack_id) : NULL;
    for (uint32_t i = 0; st && i < st->n && n < CRITICAL_FRAMES_MAX; i++)
        frames[n++] = (struct ctr_pprof_frame){st->pcs[i] - 1, NULL}; /* the call, not the return */
    const struct ctr_thread_info *th = &t->threads[s->thread];
    char thread[96];
    snprintf(thread, sizeof(thread), "%" PRIu64 "%s%.64s", th->id, th->name[0] ? " " : "",
             th->name);
    struct ctr_pprof_label labels[] = {
        {"thread", thread}, {"task", task->type}, {"state", ctr_cp_state_name(s->state)}};
    int64_t values[2] = {1, (int64_t)(s->end_ns - s->start_ns)};
    return ctr_pprof_add_labeled(p, frames, n, values, labels, 3);
}

int ctr_critical_write(const struct ctr_trace *t, const struct ctr_cp_task *w, size_t n, FILE *out,
                       FILE *warn, char *err, size_t errlen)
{
    struct ctr_profile_sym ps;
    if (ctr_profile_sym_open(t, &ps) != 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    static const struct ctr_pprof_value_type types[] = {{"parts", "count"},
                                                        {"delay", "nanoseconds"}};
    static const struct ctr_pprof_value_type per_event = {"trace", "count"};
    struct ctr_pprof *p = ctr_pprof_new(types, 2, per_event, 1, ps.sym, ps.maps, ps.nmaps);
    struct ctr_pprof_frame *frames = malloc(CRITICAL_FRAMES_MAX * sizeof(*frames));
    int rc = p && frames ? 0 : -ENOMEM;
    if (rc == 0)
        ctr_pprof_set_time(p, (int64_t)t->start_real_ns, (int64_t)(t->end_ns - t->start_ns));
    for (size_t i = 0; i < n && rc == 0; i++)
        for (size_t k = 0; k < w[i].path.nseg && rc == 0; k++)
            rc = add_segment(p, t, w[i].task, &w[i].path.seg[k], frames);
    if (rc == 0)
        rc = ctr_pprof_write(p, out);
    free(frames);
    ctr_pprof_free(p);
    ctr_profile_sym_close(&ps, warn);
    if (rc != 0)
        snprintf(err, errlen, "writing the profile: %s", strerror(-rc));
    return rc;
}
