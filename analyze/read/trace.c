/* SPDX-License-Identifier: MIT */
/* trace.c - the model's tables, built as the pipeline reads them (see
 * trace.h).
 *
 * Each table is an array in the order read with a hash index from id to
 * position (idmap.h), so an id is found in constant time while the tables
 * grow. A whole trace read into memory is load.c's.
 */
#include "read/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"

/* ---------------------------------------------------------------------------
 * Lookups
 * ------------------------------------------------------------------------- */

const struct ctr_stack_info *ctr_trace_stack(const struct ctr_trace *t, uint64_t id)
{
    const uint64_t *at = ctr_idmap_get(&t->stack_ix, id);
    return at ? &t->stacks[*at] : NULL;
}

const char *ctr_trace_string(const struct ctr_trace *t, uint64_t id)
{
    const uint64_t *at = ctr_idmap_get(&t->string_ix, id);
    return at ? t->strings[*at].s : NULL;
}

const char *ctr_trace_name(const struct ctr_trace *t, uint64_t id)
{
    const char *s = id ? ctr_trace_string(t, id) : NULL;
    return s ? s : "";
}

struct ctr_thread_info *ctr_trace_thread(const struct ctr_trace *t, uint64_t id)
{
    const uint64_t *at = ctr_idmap_get(&t->thread_ix, id);
    return at ? &t->threads[*at] : NULL;
}

const char *ctr_event_payload(const struct ctr_trace *t, const struct ctr_trace_event *e,
                              size_t *len)
{
    (void)t;
    *len = 0;
    if (e->type >= CTR_EV_LIMIT || !ctr_event_specs[e->type].name)
        return NULL;
    const struct ctr_event_spec *spec = &ctr_event_specs[e->type];
    if (spec->args[spec->nargs - 1] != CTR_ARG_LENGTH || !e->payload)
        return NULL;
    *len = e->args[spec->nargs - 2];
    return (const char *)(uintptr_t)e->payload;
}

/* ---------------------------------------------------------------------------
 * Building the tables
 * ------------------------------------------------------------------------- */

int ctr_trace_thread_index(struct ctr_trace *t, uint64_t id, uint32_t *index)
{
    const uint64_t *at = ctr_idmap_get(&t->thread_ix, id);
    if (at) {
        *index = (uint32_t)*at;
        return 0;
    }
    if (t->nthreads >= UINT32_MAX ||
        ctr_grow(&t->threads, &t->threads_cap, t->nthreads + 1, sizeof(*t->threads)) != 0 ||
        ctr_idmap_put(&t->thread_ix, id, t->nthreads) != 0)
        return -ENOMEM;
    /* Known from its events alone until a THREAD record says more. */
    t->threads[t->nthreads] = (struct ctr_thread_info){.id = id, .name = ""};
    *index = (uint32_t)t->nthreads++;
    return 0;
}

int ctr_trace_add_string(struct ctr_trace *t, uint64_t id, const void *s, size_t len)
{
    if (ctr_idmap_get(&t->string_ix, id))
        return 0;
    char *copy = malloc(len + 1);
    if (!copy ||
        ctr_grow(&t->strings, &t->strings_cap, t->nstrings + 1, sizeof(*t->strings)) != 0 ||
        ctr_idmap_put(&t->string_ix, id, t->nstrings) != 0) {
        free(copy);
        return -ENOMEM;
    }
    memcpy(copy, s, len);
    copy[len] = 0;
    t->strings[t->nstrings++] = (struct ctr_string_info){id, copy};
    return 0;
}

int ctr_trace_add_stack(struct ctr_trace *t, uint64_t id, const uint64_t *pcs, uint32_t n)
{
    if (ctr_idmap_get(&t->stack_ix, id))
        return 0;
    uint64_t *copy = malloc((n ? n : 1) * sizeof(*copy));
    if (!copy || ctr_grow(&t->stacks, &t->stacks_cap, t->nstacks + 1, sizeof(*t->stacks)) != 0 ||
        ctr_idmap_put(&t->stack_ix, id, t->nstacks) != 0) {
        free(copy);
        return -ENOMEM;
    }
    if (n)
        memcpy(copy, pcs, n * sizeof(*copy));
    t->stacks[t->nstacks++] = (struct ctr_stack_info){id, n, copy};
    return 0;
}

int ctr_trace_add_mapping(struct ctr_trace *t, const struct ctr_mapping_info *m, uint64_t path_id)
{
    if (ctr_idmap_get(&t->mapping_ix, m->id))
        return 0;
    if (ctr_grow(&t->mappings, &t->mappings_cap, t->nmappings + 1, sizeof(*t->mappings)) != 0 ||
        ctr_idmap_put(&t->mapping_ix, m->id, t->nmappings) != 0)
        return -ENOMEM;
    struct ctr_mapping_info *dst = &t->mappings[t->nmappings++];
    *dst = *m;
    dst->path = ctr_trace_name(t, path_id);
    return 0;
}

int ctr_trace_add_clock(struct ctr_trace *t, const struct ctr_clock_point *c)
{
    size_t n = t->nclocks;
    if (n && c->ticks <= t->clocks[n - 1].ticks) {
        /* A repeat (a generation begins at the instant the last one ended),
         * or out of order: the latter goes in its place, then the points
         * that are no longer later in both clocks than the one before go. */
        size_t at = n;
        while (at > 0 && t->clocks[at - 1].ticks > c->ticks)
            at--;
        if (at > 0 && t->clocks[at - 1].ticks == c->ticks)
            return 0;
        if (ctr_grow(&t->clocks, &t->clocks_cap, n + 1, sizeof(*t->clocks)) != 0)
            return -ENOMEM;
        memmove(&t->clocks[at + 1], &t->clocks[at], (n - at) * sizeof(*t->clocks));
        t->clocks[at] = *c;
        size_t w = 0;
        for (size_t i = 0; i <= n; i++)
            if (w == 0 || (t->clocks[i].ticks > t->clocks[w - 1].ticks &&
                           t->clocks[i].mono_ns > t->clocks[w - 1].mono_ns))
                t->clocks[w++] = t->clocks[i];
        t->nclocks = w;
        return 0;
    }
    if (n && c->mono_ns <= t->clocks[n - 1].mono_ns)
        return 0;
    if (ctr_grow(&t->clocks, &t->clocks_cap, n + 1, sizeof(*t->clocks)) != 0)
        return -ENOMEM;
    t->clocks[t->nclocks++] = *c;
    return 0;
}

uint64_t ctr_clock_seek(const struct ctr_trace *t, struct ctr_clock_cursor *c, uint64_t ticks)
{
    if (t->tick_source == CTR_TICKS_MONOTONIC_NS || t->nclocks < 2) {
        c->clocks = NULL; /* no segment: every call comes here */
        return t->nclocks == 1 && t->tick_source == CTR_TICKS_TSC
                   ? t->clocks[0].mono_ns + (ticks - t->clocks[0].ticks)
                   : ticks;
    }
    /* The segment [i-1, i] around ticks; the end segments extrapolate. */
    size_t lo = 1, hi = t->nclocks - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->clocks[mid].ticks < ticks)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct ctr_clock_point *a = &t->clocks[lo - 1], *b = &t->clocks[lo];
    c->clocks = t->clocks;
    c->nclocks = t->nclocks;
    c->from_first = lo == 1;
    c->above = a->ticks;
    c->upto = lo == t->nclocks - 1 ? UINT64_MAX : b->ticks;
    c->a_ticks = (double)a->ticks;
    c->a_ns = (double)a->mono_ns;
    c->rate = (double)(b->mono_ns - a->mono_ns) / (double)(b->ticks - a->ticks);
    return ctr_clock_convert(t, c, ticks);
}

uint64_t ctr_trace_ticks_to_ns(const struct ctr_trace *t, uint64_t ticks)
{
    struct ctr_clock_cursor c = {0};
    return ctr_clock_convert(t, &c, ticks);
}

void ctr_trace_free(struct ctr_trace *t)
{
    for (size_t i = 0; i < t->nthreads; i++) {
        free(t->threads[i].events);
        free(t->threads[i].cpu);
    }
    for (size_t i = 0; i < t->nstacks; i++)
        free(t->stacks[i].pcs);
    for (size_t i = 0; i < t->nstrings; i++)
        free((void *)t->strings[i].s);
    for (struct ctr_held_bytes *h = t->held; h;) {
        struct ctr_held_bytes *next = h->next;
        free(h);
        h = next;
    }
    free(t->threads);
    free(t->stacks);
    free(t->strings);
    free(t->mappings);
    free(t->clocks);
    ctr_idmap_free(&t->thread_ix);
    ctr_idmap_free(&t->stack_ix);
    ctr_idmap_free(&t->string_ix);
    ctr_idmap_free(&t->mapping_ix);
    memset(t, 0, sizeof(*t));
}
