/* SPDX-License-Identifier: MIT */
/* critpath.c - the critical path of a task (the rules are in critpath.h):
 * the intervals of the second reading kept where a task's window needs
 * them, then walked back from the task's end, hopping to releasers. */
#include "model/critpath.h"

#include "ctrace_grow.h"
#include "read/state.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* How many releases deep a walk follows a chain; deeper, the rest of the
 * span is the last releaser's, and the path says it was cut. */
#define CP_MAX_HOPS 512

struct cp_iv {
    uint64_t start_ns, end_ns;
    uint64_t object, stack_id;
    uint64_t release_ns, release_stack;
    uint32_t releaser; /* thread index; UINT32_MAX: no release */
    uint8_t state, reason;
};

struct cp_thread {
    struct cp_iv *iv; /* in time order */
    size_t n, cap;
};

/* A RELEASE event: who let an object go, when, from where. */
struct cp_release {
    uint64_t ns, object, stack_id;
    uint32_t thread;
};

struct ctr_cp_history {
    const struct ctr_trace *t;
    struct ctr_cp_window *w; /* sorted, disjoint */
    size_t nw;
    struct cp_thread *th;
    size_t nth;
    struct cp_release *rel; /* in time order */
    size_t nrel, rel_cap;
    int oom;
};

static int by_begin(const void *a, const void *b)
{
    const struct ctr_cp_window *x = a, *y = b;
    return x->begin_ns < y->begin_ns ? -1 : x->begin_ns > y->begin_ns;
}

struct ctr_cp_history *ctr_cp_history_new(const struct ctr_trace *t, const struct ctr_cp_window *w,
                                          size_t n)
{
    struct ctr_cp_history *h = calloc(1, sizeof(*h));
    if (!h || (n && !(h->w = malloc(n * sizeof(*w))))) {
        free(h);
        return NULL;
    }
    h->t = t;
    if (n)
        memcpy(h->w, w, n * sizeof(*w));
    if (n) /* qsort wants an array, even of none */
        qsort(h->w, n, sizeof(*h->w), by_begin);
    /* Merged where they overlap: the test of an interval is then one
     * binary search. */
    for (size_t i = 0; i < n; i++) {
        if (h->nw && h->w[i].begin_ns <= h->w[h->nw - 1].end_ns) {
            if (h->w[i].end_ns > h->w[h->nw - 1].end_ns)
                h->w[h->nw - 1].end_ns = h->w[i].end_ns;
        } else {
            h->w[h->nw++] = h->w[i];
        }
    }
    return h;
}

void ctr_cp_history_free(struct ctr_cp_history *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->nth; i++)
        free(h->th[i].iv);
    free(h->th);
    free(h->rel);
    free(h->w);
    free(h);
}

int ctr_cp_history_oom(const struct ctr_cp_history *h)
{
    return h->oom;
}

/* The first of n elements (stride bytes apart, sorted by the uint64_t key
 * at key_offset in each) whose key is at least ns; n if none: the one
 * binary search of the windows, intervals and releases below. */
static size_t first_from(const void *elems, size_t n, size_t stride, size_t key_offset, uint64_t ns)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t key;
        memcpy(&key, (const uint8_t *)elems + mid * stride + key_offset, sizeof(key));
        if (key < ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether [start, end] overlaps a window. */
static int wanted(const struct ctr_cp_history *h, uint64_t start, uint64_t end)
{
    /* The first window ending at or after start. */
    size_t i =
        first_from(h->w, h->nw, sizeof(*h->w), offsetof(struct ctr_cp_window, end_ns), start);
    return i < h->nw && h->w[i].begin_ns <= end;
}

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_cp_history *h = ctx;
    if (h->oom || !wanted(h, iv->start_ns, iv->end_ns))
        return;
    size_t ti = (size_t)(iv->thread - h->t->threads);
    if (ti >= h->nth) {
        size_t cap = h->nth;
        if (ctr_grow_zeroed(&h->th, &cap, ti + 1, sizeof(*h->th)) != 0) {
            h->oom = 1;
            return;
        }
        h->nth = cap;
    }
    struct cp_thread *th = &h->th[ti];
    if (ctr_grow(&th->iv, &th->cap, th->n + 1, sizeof(*th->iv)) != 0) {
        h->oom = 1;
        return;
    }
    struct cp_iv *s = &th->iv[th->n++];
    *s = (struct cp_iv){.start_ns = iv->start_ns,
                        .end_ns = iv->end_ns,
                        .object = iv->object,
                        .stack_id = iv->stack_id,
                        .releaser = UINT32_MAX,
                        .state = (uint8_t)iv->state,
                        .reason = iv->reason};
    if (iv->state != CTR_STATE_RUNNING && iv->release && iv->release->thread) {
        s->releaser = (uint32_t)(iv->release->thread - h->t->threads);
        s->release_ns = iv->release->ns;
        s->release_stack = iv->release->stack_id;
    }
}

/* Releases are kept too: the holders of a lock in turn during one wait. */
static void on_event(void *ctx, const struct ctr_trace *t, uint32_t thread,
                     const struct ctr_trace_event *e)
{
    (void)t;
    struct ctr_cp_history *h = ctx;
    if (h->oom || e->type != CTR_EV_RELEASE || !wanted(h, e->ns, e->ns))
        return;
    if (ctr_grow(&h->rel, &h->rel_cap, h->nrel + 1, sizeof(*h->rel)) != 0) {
        h->oom = 1;
        return;
    }
    h->rel[h->nrel++] = (struct cp_release){e->ns, e->args[0], e->args[1], thread};
}

struct ctr_consumer ctr_cp_history_consumer(struct ctr_cp_history *h)
{
    return (struct ctr_consumer){.ctx = h, .event = on_event, .interval = on_interval};
}

/* ---------------------------------------------------------------------------
 * The walk
 * ------------------------------------------------------------------------- */

struct walk {
    const struct ctr_cp_history *h;
    struct ctr_cp_path *p;
    int oom;
};

static void emit(struct walk *w, struct ctr_cp_segment s)
{
    if (s.end_ns <= s.start_ns || w->oom)
        return;
    struct ctr_cp_path *p = w->p;
    if (ctr_grow(&p->seg, &p->seg_cap, p->nseg + 1, sizeof(*p->seg)) != 0) {
        w->oom = 1;
        return;
    }
    p->seg[p->nseg++] = s;
    if (s.state == CTR_CP_UNKNOWN)
        p->unknown_ns += s.end_ns - s.start_ns;
}

/* Part [from, to) of wait iv as a blocked segment of s's thread. */
static void emit_blocked(struct walk *w, struct ctr_cp_segment s, const struct cp_iv *iv,
                         uint64_t from, uint64_t to)
{
    s.state = CTR_CP_BLOCKED;
    s.reason = iv->reason;
    s.object = iv->object;
    s.stack_id = iv->stack_id;
    s.start_ns = from;
    s.end_ns = to;
    emit(w, s);
}

/* The last interval of th that starts before ns, or -1. */
static ptrdiff_t last_before(const struct cp_thread *th, uint64_t ns)
{
    size_t i = first_from(th->iv, th->n, sizeof(*th->iv), offsetof(struct cp_iv, start_ns), ns);
    return (ptrdiff_t)i - 1;
}

/* Where running interval i of th ended: end_stack for the one the walk
 * entered at a release, else the wait that followed it. */
static uint64_t running_end_stack(const struct cp_thread *th, ptrdiff_t i, int first,
                                  uint64_t end_stack)
{
    if (first) /* the release's site, or unknown (the task's own end) */
        return end_stack;
    if ((size_t)i + 1 < th->n && th->iv[i + 1].state != CTR_STATE_RUNNING &&
        th->iv[i + 1].start_ns == th->iv[i].end_ns)
        return th->iv[i + 1].stack_id;
    return 0;
}

static void explain(struct walk *w, uint32_t ti, uint64_t from, uint64_t to, unsigned hops,
                    uint32_t via, uint64_t end_stack);

/* Whether a wait's object is held by one thread at a time, so that its
 * releases during the wait name its holders in turn. */
static int one_holder(uint8_t reason)
{
    return reason == CTR_REASON_MUTEX_LOCK || reason == CTR_REASON_MUTEX_TIMEDLOCK ||
           reason == CTR_REASON_MUTEX_CLOCKLOCK;
}

/* The first release at or after ns. */
static size_t release_from(const struct ctr_cp_history *h, uint64_t ns)
{
    return first_from(h->rel, h->nrel, sizeof(*h->rel), offsetof(struct cp_release, ns), ns);
}

/* Explains the part [lo, until) of a wait of thread ti that `last` (a
 * thread, its release's stack) ended, by the releasers' histories: a lock's
 * holders in turn, each over the span from the release before its own (or
 * lo) to its release; for other waits, the last releaser over all of it. */
static void explain_wait(struct walk *w, uint32_t ti, const struct cp_iv *iv, uint64_t lo,
                         uint64_t until, unsigned hops, uint32_t via)
{
    uint32_t releaser = iv->releaser;
    uint64_t stack = iv->release_stack, end = until;
    if (one_holder(iv->reason)) {
        const struct ctr_cp_history *h = w->h;
        size_t first = release_from(h, lo + 1), k = release_from(h, until);
        /* Latest first: [previous release, this one) is this releaser's. */
        while (k-- > first && !w->oom) {
            const struct cp_release *r = &h->rel[k];
            if (r->object != iv->object || r->thread == ti || r->ns >= end)
                continue;
            explain(w, releaser, r->ns, end, hops + 1, via, stack);
            releaser = r->thread;
            stack = r->stack_id;
            end = r->ns;
        }
    }
    explain(w, releaser, lo, end, hops + 1, via, stack);
}

/* Explains [from, to) on thread ti, latest first; `hops` releases deep,
 * reached through the task thread's hop `via`. */
static void explain(struct walk *w, uint32_t ti, uint64_t from, uint64_t to, unsigned hops,
                    uint32_t via, uint64_t end_stack)
{
    const struct cp_thread *th = ti < w->h->nth ? &w->h->th[ti] : NULL;
    static const struct cp_thread none;
    if (!th)
        th = &none;
    uint64_t t = to;
    ptrdiff_t i = last_before(th, t);
    int first = 1;
    while (t > from && !w->oom) {
        struct ctr_cp_segment s = {
            .thread = ti, .hops = (uint16_t)(hops > UINT16_MAX ? UINT16_MAX : hops), .via = via};
        if (i < 0 || th->iv[i].end_ns < t) {
            /* Nothing of this thread from the interval before (if any)
             * up to t: not in the trace, or not kept. */
            uint64_t lo = i >= 0 && th->iv[i].end_ns > from ? th->iv[i].end_ns : from;
            s.state = CTR_CP_UNKNOWN;
            s.start_ns = lo;
            s.end_ns = t;
            emit(w, s);
            t = lo;
            if (i < 0)
                break;
            continue;
        }
        const struct cp_iv *iv = &th->iv[i];
        uint64_t lo = iv->start_ns > from ? iv->start_ns : from;
        if (iv->state == CTR_STATE_BLOCKED && iv->releaser != UINT32_MAX && iv->releaser != ti &&
            iv->release_ns > lo) {
            uint64_t until = iv->release_ns < t ? iv->release_ns : t;
            /* The blocked part ends at the release; t is at or past it
             * (the runnable part came after). Anything between is this
             * thread's, blocked. */
            emit_blocked(w, s, iv, until, t);
            if (hops + 1 > CP_MAX_HOPS) {
                w->p->cut = 1;
                emit_blocked(w, s, iv, lo, until);
            } else {
                uint32_t next_via = via;
                if (hops == 0) {
                    struct ctr_cp_path *p = w->p;
                    if (ctr_grow(&p->hop, &p->hop_cap, p->nhop + 1, sizeof(*p->hop)) != 0) {
                        w->oom = 1;
                        return;
                    }
                    p->hop[p->nhop] = (struct ctr_cp_hop){.reason = iv->reason,
                                                          .object = iv->object,
                                                          .stack_id = iv->stack_id,
                                                          .releaser = iv->releaser,
                                                          .release_stack = iv->release_stack,
                                                          .start_ns = lo,
                                                          .end_ns = until};
                    next_via = (uint32_t)p->nhop++;
                }
                explain_wait(w, ti, iv, lo, until, hops, next_via);
            }
        } else {
            s.state = iv->state == CTR_STATE_RUNNING    ? CTR_CP_RUNNING
                      : iv->state == CTR_STATE_RUNNABLE ? CTR_CP_RUNNABLE
                                                        : CTR_CP_BLOCKED;
            s.reason = iv->reason;
            s.object = iv->object;
            s.stack_id = iv->state == CTR_STATE_RUNNING ? running_end_stack(th, i, first, end_stack)
                                                        : iv->stack_id;
            s.start_ns = lo;
            s.end_ns = t;
            emit(w, s);
        }
        t = lo;
        i--;
        first = 0;
    }
}

int ctr_cp_walk(const struct ctr_cp_history *h, uint64_t task, uint32_t end_thread,
                uint64_t begin_ns, uint64_t end_ns, struct ctr_cp_path *p)
{
    memset(p, 0, sizeof(*p));
    p->task = task;
    p->begin_ns = begin_ns;
    p->end_ns = end_ns;
    struct walk w = {h, p, 0};
    explain(&w, end_thread, begin_ns, end_ns, 0, UINT32_MAX, 0);
    if (w.oom) {
        ctr_cp_path_free(p);
        return -ENOMEM;
    }
    return 0;
}

void ctr_cp_path_free(struct ctr_cp_path *p)
{
    free(p->seg);
    free(p->hop);
    memset(p, 0, sizeof(*p));
}

const char *ctr_cp_state_name(uint8_t state)
{
    switch (state) {
    case CTR_CP_RUNNING:
        return "running";
    case CTR_CP_RUNNABLE:
        return "runnable";
    case CTR_CP_BLOCKED:
        return "blocked";
    default:
        return "unknown";
    }
}
