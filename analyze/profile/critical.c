/* SPDX-License-Identifier: MIT */
/* critical.c - critical paths as a pprof profile (critical.h). */
#include "profile/critical.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_format.h"
#include "ctrace_grow.h"
#include "profile/pprof.h"
#include "profile/profile.h"
#include "profile/sums.h"
#include "model/tasks.h"

/* The frames a stack can give a sample: the leaf, then its PCs. */
#define CRITICAL_FRAMES_MAX 256

/* Names met, each once: task types, region names. */
struct names {
    const char **v;
    size_t n, cap;
};

struct ctr_critical {
    /* leaf, stack, thread | state << 32, type index | (region index + 1) << 32 */
    struct ctr_sums sums;
    struct names types, regions;
};

struct ctr_critical *ctr_critical_new(void)
{
    return calloc(1, sizeof(struct ctr_critical));
}

void ctr_critical_free(struct ctr_critical *c)
{
    if (c) {
        ctr_sums_free(&c->sums);
        free(c->types.v);
        free(c->regions.v);
        free(c);
    }
}

/* Name's index in ns (added if new), or -1 if out of memory. Task types
 * and region names are few: a look along the list, by address first. */
static ptrdiff_t name_index(struct names *ns, const char *name)
{
    for (size_t i = 0; i < ns->n; i++)
        if (ns->v[i] == name || strcmp(ns->v[i], name) == 0)
            return (ptrdiff_t)i;
    if (ctr_grow(&ns->v, &ns->cap, ns->n + 1, sizeof(*ns->v)) != 0)
        return -1;
    ns->v[ns->n] = name;
    return (ptrdiff_t)ns->n++;
}

/* A segment's leaf: its wait's call when blocked, else its state. Static
 * strings, so their addresses tell them apart. */
static const char *leaf_of(const struct ctr_cp_segment *s)
{
    const char *call = s->reason < CTR_REASON_LIMIT ? ctr_reason_specs[s->reason].call : NULL;
    return s->state == CTR_CP_BLOCKED && call ? call : ctr_cp_state_name(s->state);
}

int ctr_critical_add(struct ctr_critical *c, const char *type, const struct ctr_cp_path *p)
{
    ptrdiff_t ti = name_index(&c->types, type);
    if (ti < 0)
        return -ENOMEM;
    for (size_t k = 0; k < p->nseg; k++) {
        const struct ctr_cp_segment *s = &p->seg[k];
        ptrdiff_t ri = s->region ? name_index(&c->regions, s->region->name) : -1;
        if (s->region && ri < 0)
            return -ENOMEM;
        struct ctr_sum_key key = {{(uint64_t)(uintptr_t)leaf_of(s), s->stack_id,
                                   (uint64_t)s->thread | (uint64_t)s->state << 32,
                                   (uint64_t)ti | (uint64_t)(ri + 1) << 32}};
        if (ctr_sums_add(&c->sums, &key, 1, (int64_t)(s->end_ns - s->start_ns)) != 0)
            return -ENOMEM;
    }
    return 0;
}

/* One sum into p. */
static int add_sum(struct ctr_pprof *p, const struct ctr_trace *t, const struct ctr_critical *c,
                   const struct ctr_sum *e, struct ctr_pprof_frame *frames)
{
    size_t n = 0;
    frames[n++] = (struct ctr_pprof_frame){0, (const char *)(uintptr_t)e->key.w[0]};
    const struct ctr_stack_info *st = e->key.w[1] ? ctr_trace_stack(t, e->key.w[1]) : NULL;
    for (uint32_t i = 0; st && i < st->n && n < CRITICAL_FRAMES_MAX; i++)
        frames[n++] = (struct ctr_pprof_frame){st->pcs[i] - 1, NULL}; /* the call, not the return */
    uint32_t thread_index = (uint32_t)e->key.w[2];
    uint8_t state = (uint8_t)(e->key.w[2] >> 32);
    const struct ctr_thread_info *th = &t->threads[thread_index];
    char thread[96];
    snprintf(thread, sizeof(thread), "%" PRIu64 "%s%.64s", th->id, th->name[0] ? " " : "",
             th->name);
    uint32_t type = (uint32_t)e->key.w[3], region = (uint32_t)(e->key.w[3] >> 32);
    struct ctr_pprof_label labels[] = {{"thread", thread},
                                       {"task", c->types.v[type]},
                                       {"state", ctr_cp_state_name(state)},
                                       {"region", region ? c->regions.v[region - 1] : NULL}};
    int64_t values[2] = {e->count, e->ns};
    return ctr_pprof_add_labeled(p, frames, n, values, labels, region ? 4 : 3);
}

/* Every sum into p. */
struct fill {
    const struct ctr_trace *t;
    const struct ctr_critical *c;
};

static int fill_sums(void *ctx, struct ctr_pprof *p)
{
    const struct fill *f = ctx;
    struct ctr_pprof_frame *frames = malloc(CRITICAL_FRAMES_MAX * sizeof(*frames));
    int rc = frames ? 0 : -ENOMEM;
    for (size_t i = 0; i < f->c->sums.n && rc == 0; i++)
        rc = add_sum(p, f->t, f->c, &f->c->sums.v[i], frames);
    free(frames);
    return rc;
}

int ctr_critical_write(const struct ctr_critical *c, const struct ctr_trace *t, FILE *out,
                       FILE *warn, char *err, size_t errlen)
{
    static const struct ctr_pprof_value_type types[] = {{"parts", "count"},
                                                        {"delay", "nanoseconds"}};
    static const struct ctr_pprof_value_type per_event = {"trace", "count"};
    struct fill f = {t, c};
    return ctr_profile_emit(t, types, &per_event, 1, fill_sums, &f, out, warn, err, errlen);
}
