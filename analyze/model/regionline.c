/* SPDX-License-Identifier: MIT */
/* regionline.c - the innermost region of each thread over time
 * (regionline.h): a sweep over the regions' starts and ends, thread by
 * thread, leaves the points where the answer changes; a lookup is a binary
 * search among them. */
#include "model/regionline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* From ns on (to the next point of its thread), the innermost region is r
 * and the outermost `outer` (NULL: none). */
struct rl_point {
    uint64_t ns;
    const struct ctr_region *r, *outer;
};

struct ctr_region_line {
    struct rl_point *pt; /* by thread, then time */
    size_t npt;
    size_t *first; /* thread i's points: pt[first[i] .. first[i+1]) */
    size_t nthreads;
};

/* A region's start or end, as the sweep meets them. */
struct edge {
    uint32_t thread;
    uint64_t ns;
    int is_start; /* ends sort first at a time: [a, b) then [b, c) */
    const struct ctr_region *r;
};

static int edge_order(const void *pa, const void *pb)
{
    const struct edge *a = pa, *b = pb;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    if (a->ns != b->ns)
        return a->ns < b->ns ? -1 : 1;
    if (a->is_start != b->is_start)
        return a->is_start - b->is_start;
    /* Starts at one time: the outer first, so that the inner is on top. */
    if (a->r->depth != b->r->depth)
        return a->r->depth < b->r->depth ? -1 : 1;
    return a->r < b->r ? -1 : a->r > b->r;
}

/* Sweeps one thread's sorted edges e[0..n-1] into rl's points, after
 * those there are; open[] has room for every region. */
static void sweep(struct ctr_region_line *rl, const struct edge *e, size_t n,
                  const struct ctr_region **open)
{
    size_t nopen = 0, first = rl->npt;
    for (size_t i = 0; i < n;) {
        uint64_t ns = e[i].ns;
        for (; i < n && e[i].ns == ns; i++) {
            if (e[i].is_start) {
                open[nopen++] = e[i].r;
                continue;
            }
            size_t k = nopen;
            while (k > 0 && open[k - 1] != e[i].r)
                k--;
            if (k > 0) {
                memmove(&open[k - 1], &open[k], (nopen - k) * sizeof(*open));
                nopen--;
            }
        }
        const struct ctr_region *top = nopen ? open[nopen - 1] : NULL;
        const struct ctr_region *outer = nopen ? open[0] : NULL;
        if (rl->npt > first && rl->pt[rl->npt - 1].r == top && rl->pt[rl->npt - 1].outer == outer)
            continue;
        if (rl->npt == first && !top)
            continue;
        rl->pt[rl->npt++] = (struct rl_point){ns, top, outer};
    }
}

int ctr_region_line_new(const struct ctr_tasks *ts, struct ctr_region_line **out)
{
    *out = NULL;
    struct ctr_region_line *rl = calloc(1, sizeof(*rl));
    if (!rl)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < ts->nregions; i++) {
        const struct ctr_region *r = &ts->regions[i];
        if (r->end_ns > r->start_ns) {
            n += 2;
            if ((size_t)r->thread + 1 > rl->nthreads)
                rl->nthreads = (size_t)r->thread + 1;
        }
    }
    struct edge *e = malloc((n ? n : 1) * sizeof(*e));
    const struct ctr_region **open = malloc((n ? n : 1) * sizeof(*open));
    rl->pt = malloc((n ? n : 1) * sizeof(*rl->pt));
    rl->first = calloc(rl->nthreads + 1, sizeof(*rl->first));
    if (!e || !open || !rl->pt || !rl->first) {
        free(e);
        free(open);
        ctr_region_line_free(rl);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < ts->nregions; i++) {
        const struct ctr_region *r = &ts->regions[i];
        if (r->end_ns > r->start_ns) {
            e[k++] = (struct edge){r->thread, r->start_ns, 1, r};
            e[k++] = (struct edge){r->thread, r->end_ns, 0, r};
        }
    }
    if (n)
        qsort(e, n, sizeof(*e), edge_order);
    /* A thread's points follow the one's before. */
    size_t i = 0;
    for (uint32_t th = 0; th < rl->nthreads; th++) {
        rl->first[th] = rl->npt;
        size_t j = i;
        while (j < n && e[j].thread == th)
            j++;
        sweep(rl, e + i, j - i, open);
        i = j;
    }
    rl->first[rl->nthreads] = rl->npt;
    free(e);
    free(open);
    *out = rl;
    return 0;
}

void ctr_region_line_free(struct ctr_region_line *rl)
{
    if (rl) {
        free(rl->pt);
        free(rl->first);
        free(rl);
    }
}

/* The point of thread's line in force at ns, or NULL; the span [*from,
 * *until) around ns over which it is. */
static const struct rl_point *line_point(const struct ctr_region_line *rl, uint32_t thread,
                                         uint64_t ns, uint64_t *from, uint64_t *until)
{
    *from = 0;
    *until = UINT64_MAX;
    if (thread >= rl->nthreads)
        return NULL;
    const struct rl_point *p = rl->pt + rl->first[thread];
    size_t n = rl->first[thread + 1] - rl->first[thread];
    size_t lo = 0, hi = n; /* the first point after ns */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].ns <= ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < n)
        *until = p[lo].ns;
    if (lo == 0)
        return NULL;
    *from = p[lo - 1].ns;
    return &p[lo - 1];
}

/* The innermost region of thread at ns, over [*from, *until). */
static const struct ctr_region *line_span(const struct ctr_region_line *rl, uint32_t thread,
                                          uint64_t ns, uint64_t *from, uint64_t *until)
{
    const struct rl_point *p = line_point(rl, thread, ns, from, until);
    return p ? p->r : NULL;
}

const struct ctr_region *ctr_region_line_outer(const struct ctr_region_line *rl, uint32_t thread,
                                               uint64_t ns)
{
    uint64_t from, until;
    const struct rl_point *p = line_point(rl, thread, ns, &from, &until);
    return p ? p->outer : NULL;
}

const struct ctr_region *ctr_region_line_at(const struct ctr_region_line *rl, uint32_t thread,
                                            uint64_t ns, uint64_t *until)
{
    uint64_t from;
    return line_span(rl, thread, ns, &from, until);
}

uint64_t ctr_region_line_phase(void *ctx, uint32_t thread, uint64_t ns)
{
    const struct ctr_region *r = ctr_region_line_outer(ctx, thread, ns);
    return r ? r->start_ns : 0;
}

int ctr_region_line_split(const struct ctr_region_line *rl, struct ctr_cp_path *p)
{
    /* Counted first, so that a failure leaves p as it was. */
    size_t n = 0;
    for (size_t i = 0; i < p->nseg; i++) {
        const struct ctr_cp_segment *s = &p->seg[i];
        for (uint64_t t = s->end_ns, from, until; t > s->start_ns; n++) {
            line_span(rl, s->thread, t - 1, &from, &until);
            t = from > s->start_ns ? from : s->start_ns;
        }
    }
    struct ctr_cp_segment *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t k = 0;
    /* Latest first, as the path keeps them. */
    for (size_t i = 0; i < p->nseg; i++) {
        const struct ctr_cp_segment *s = &p->seg[i];
        for (uint64_t t = s->end_ns, from, until; t > s->start_ns;) {
            struct ctr_cp_segment piece = *s;
            piece.region = line_span(rl, s->thread, t - 1, &from, &until);
            piece.start_ns = from > s->start_ns ? from : s->start_ns;
            piece.end_ns = t;
            if (s->state == CTR_CP_RUNNING && t != s->end_ns)
                piece.stack_id = 0;
            v[k++] = piece;
            t = piece.start_ns;
        }
    }
    free(p->seg);
    p->seg = v;
    p->nseg = p->seg_cap = n;
    return 0;
}
