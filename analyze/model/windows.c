/* SPDX-License-Identifier: MIT */
/* windows.c - per-thread time windows and their algebra (see windows.h).
 *
 * A window set is kept sorted by (thread, start) and merged, so that how
 * much of an interval it keeps is a binary search away; two finished sets
 * intersect in one merge-like pass per thread.
 */
#include "model/windows.h"

#include <errno.h>
#include <stdlib.h>

#include "ctrace_grow.h"

int ctr_windows_add(struct ctr_windows *ws, uint32_t thread, uint64_t start, uint64_t end)
{
    if (end <= start)
        return 0;
    if (ctr_grow(&ws->w, &ws->cap, ws->n + 1, sizeof(*ws->w)))
        return -ENOMEM;
    ws->w[ws->n++] = (struct ctr_window){thread, start, end};
    return 0;
}

static int window_order(const void *pa, const void *pb)
{
    const struct ctr_window *a = pa, *b = pb;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

int ctr_windows_finish(struct ctr_windows *ws, size_t nthreads)
{
    free(ws->first);
    ws->first = calloc(nthreads + 1, sizeof(*ws->first));
    if (!ws->first)
        return -ENOMEM;
    ws->nthreads = nthreads;
    if (ws->n > 1)
        qsort(ws->w, ws->n, sizeof(*ws->w), window_order);
    size_t n = 0;
    for (size_t i = 0; i < ws->n; i++) {
        const struct ctr_window *w = &ws->w[i];
        if (w->thread >= nthreads)
            continue;
        struct ctr_window *last = n ? &ws->w[n - 1] : NULL;
        if (last && last->thread == w->thread && w->start_ns <= last->end_ns) {
            if (w->end_ns > last->end_ns)
                last->end_ns = w->end_ns;
        } else {
            ws->w[n++] = *w;
        }
    }
    ws->n = n;
    for (size_t i = 0; i < n; i++)
        ws->first[ws->w[i].thread + 1]++;
    for (size_t i = 0; i < nthreads; i++)
        ws->first[i + 1] += ws->first[i];
    return 0;
}

int ctr_windows_intersect(const struct ctr_windows *a, const struct ctr_windows *b,
                          struct ctr_windows *out)
{
    *out = (struct ctr_windows){0};
    size_t nthreads = a->nthreads < b->nthreads ? a->nthreads : b->nthreads;
    for (size_t th = 0; th < nthreads; th++) {
        size_t i = a->first[th], j = b->first[th];
        while (i < a->first[th + 1] && j < b->first[th + 1]) {
            const struct ctr_window *x = &a->w[i], *y = &b->w[j];
            uint64_t s = x->start_ns > y->start_ns ? x->start_ns : y->start_ns;
            uint64_t e = x->end_ns < y->end_ns ? x->end_ns : y->end_ns;
            if (s < e && ctr_windows_add(out, (uint32_t)th, s, e)) {
                ctr_windows_free(out);
                return -ENOMEM;
            }
            if (x->end_ns < y->end_ns)
                i++;
            else
                j++;
        }
    }
    if (ctr_windows_finish(out, a->nthreads > b->nthreads ? a->nthreads : b->nthreads)) {
        ctr_windows_free(out);
        return -ENOMEM;
    }
    return 0;
}

uint64_t ctr_windows_overlap(const struct ctr_windows *ws, uint32_t thread, uint64_t start,
                             uint64_t end)
{
    if (!ws->first || thread >= ws->nthreads || end <= start)
        return 0;
    size_t lo = ws->first[thread], hi = ws->first[thread + 1];
    while (lo < hi) { /* the first window that ends after start */
        size_t mid = lo + (hi - lo) / 2;
        if (ws->w[mid].end_ns <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t sum = 0;
    for (size_t i = lo; i < ws->first[thread + 1] && ws->w[i].start_ns < end; i++) {
        uint64_t s = ws->w[i].start_ns > start ? ws->w[i].start_ns : start;
        uint64_t e = ws->w[i].end_ns < end ? ws->w[i].end_ns : end;
        sum += e - s;
    }
    return sum;
}

void ctr_windows_free(struct ctr_windows *ws)
{
    free(ws->w);
    free(ws->first);
    *ws = (struct ctr_windows){0};
}
