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

/* A thread's intervals in time order: iv[head..n) are kept (those before
 * head were let go), then the one it is in now (`open`, from the engine's
 * begin callback), which ends at UINT64_MAX as far as a walk can tell: a
 * walk only looks before the settled time, before which it does not
 * change. */
struct cp_thread {
    struct cp_iv *iv;
    size_t head, n, cap;
    struct cp_iv open;
    int has_open;
    /* Where its last interval and its last release met the windows
     * (wanted()): a thread's come in time order, so the next test starts
     * there. */
    struct cp_cursor {
        size_t w;
        uint64_t ns;
    } iv_at, rel_at;
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
    struct cp_release *rel; /* in time order; rel[rel_head..nrel) kept */
    size_t rel_head, nrel, rel_cap;
    /* The tasks to walk, as each becomes final (NULL fn: none; the caller
     * walks with ctr_cp_walk()). */
    const struct ctr_cp_want *want;
    size_t nwant;
    size_t *order;       /* wants by end time */
    uint64_t *keep_from; /* keep_from[k]: earliest begin of order[k..] */
    size_t next;         /* order[next] is the next to walk */
    ctr_cp_path_fn fn;
    void *fn_ctx;
    size_t budget, kept;      /* bytes of intervals and releases kept */
    size_t prune_at;          /* kept's size that triggers the next prune */
    uint64_t forgot_before;   /* let go for the budget before this time */
    ctr_cp_phase_fn phase_of; /* NULL: not used */
    void *phase_ctx;
    int err; /* 0, -ENOMEM, or what fn returned */
};

static int by_begin(const void *a, const void *b)
{
    const struct ctr_cp_window *x = a, *y = b;
    return x->begin_ns < y->begin_ns ? -1 : x->begin_ns > y->begin_ns;
}

/* A want's place in the walking order. */
struct by_end_key {
    uint64_t end_ns;
    size_t index;
};

static int by_end(const void *a, const void *b)
{
    const struct by_end_key *x = a, *y = b;
    if (x->end_ns != y->end_ns)
        return x->end_ns < y->end_ns ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Windows merged where they overlap: the test of an interval is then one
 * binary search. */
static int set_windows(struct ctr_cp_history *h, const struct ctr_cp_want *w, size_t n)
{
    if (n && !(h->w = malloc(n * sizeof(*h->w))))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        h->w[i] = (struct ctr_cp_window){w[i].begin_ns, w[i].end_ns};
    if (n) /* qsort wants an array, even of none */
        qsort(h->w, n, sizeof(*h->w), by_begin);
    for (size_t i = 0; i < n; i++) {
        if (h->nw && h->w[i].begin_ns <= h->w[h->nw - 1].end_ns) {
            if (h->w[i].end_ns > h->w[h->nw - 1].end_ns)
                h->w[h->nw - 1].end_ns = h->w[i].end_ns;
        } else {
            h->w[h->nw++] = h->w[i];
        }
    }
    return 0;
}

/* The walking order, and how far back each point of it needs history. */
static int set_order(struct ctr_cp_history *h)
{
    size_t n = h->nwant;
    if (!(h->order = malloc((n ? n : 1) * sizeof(*h->order))) ||
        !(h->keep_from = malloc((n + 1) * sizeof(*h->keep_from))))
        return -ENOMEM;
    struct by_end_key *key = malloc((n ? n : 1) * sizeof(*key));
    if (!key)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        key[i] = (struct by_end_key){h->want[i].end_ns, i};
    if (n)
        qsort(key, n, sizeof(*key), by_end);
    for (size_t i = 0; i < n; i++)
        h->order[i] = key[i].index;
    free(key);
    h->keep_from[n] = UINT64_MAX;
    for (size_t k = n; k-- > 0;) {
        uint64_t b = h->want[h->order[k]].begin_ns;
        h->keep_from[k] = b < h->keep_from[k + 1] ? b : h->keep_from[k + 1];
    }
    return 0;
}

struct ctr_cp_history *ctr_cp_history_new(const struct ctr_trace *t, const struct ctr_cp_want *w,
                                          size_t n, size_t budget, ctr_cp_path_fn fn, void *ctx)
{
    struct ctr_cp_history *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->t = t;
    h->fn = fn;
    h->fn_ctx = ctx;
    h->budget = budget ? budget : CTR_CP_BUDGET_DEFAULT;
    h->prune_at = 4096 * sizeof(struct cp_iv);
    if (n && !(h->want = malloc(n * sizeof(*w)))) {
        free(h);
        return NULL;
    }
    if (n)
        memcpy((void *)h->want, w, n * sizeof(*w));
    h->nwant = n;
    if (set_windows(h, w, n) != 0 || (fn && set_order(h) != 0)) {
        ctr_cp_history_free(h);
        return NULL;
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
    free((void *)h->want);
    free(h->order);
    free(h->keep_from);
    free(h);
}

int ctr_cp_history_error(const struct ctr_cp_history *h)
{
    return h->err;
}

size_t ctr_cp_history_kept(const struct ctr_cp_history *h)
{
    return h->kept;
}

size_t ctr_cp_history_left(const struct ctr_cp_history *h)
{
    return h->fn ? h->nwant - h->next : 0;
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

/* Whether [start, end] overlaps a window; c is where the thread's last
 * test of this kind left off (a step or two forward from there, since a
 * thread's intervals and events come in time order; a search if not). */
static int wanted(const struct ctr_cp_history *h, struct cp_cursor *c, uint64_t start, uint64_t end)
{
    /* The first window ending at or after start. */
    size_t i = c->w;
    if (start < c->ns)
        i = first_from(h->w, h->nw, sizeof(*h->w), offsetof(struct ctr_cp_window, end_ns), start);
    while (i < h->nw && h->w[i].end_ns < start)
        i++;
    c->w = i;
    c->ns = start;
    return i < h->nw && h->w[i].begin_ns <= end;
}

/* Thread index ti's store, made if new; NULL if out of memory. */
static struct cp_thread *thread_of(struct ctr_cp_history *h, size_t ti)
{
    if (ti >= h->nth) {
        size_t cap = h->nth;
        if (ctr_grow_zeroed(&h->th, &cap, ti + 1, sizeof(*h->th)) != 0) {
            h->err = -ENOMEM;
            return NULL;
        }
        h->nth = cap;
    }
    return &h->th[ti];
}

static struct cp_iv kept_interval(const struct ctr_cp_history *h, const struct ctr_interval *iv)
{
    struct cp_iv s = {.start_ns = iv->start_ns,
                      .end_ns = iv->end_ns,
                      .object = iv->object,
                      .stack_id = iv->stack_id,
                      .releaser = UINT32_MAX,
                      .state = (uint8_t)iv->state,
                      .reason = iv->reason};
    if (iv->state != CTR_STATE_RUNNING && iv->release && iv->release->thread) {
        s.releaser = (uint32_t)(iv->release->thread - h->t->threads);
        s.release_ns = iv->release->ns;
        s.release_stack = iv->release->stack_id;
    }
    return s;
}

static void on_begin(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_cp_history *h = ctx;
    struct cp_thread *th = h->err ? NULL : thread_of(h, (size_t)(iv->thread - h->t->threads));
    if (!th)
        return;
    th->open = kept_interval(h, iv);
    th->open.end_ns = UINT64_MAX;
    th->has_open = 1;
}

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_cp_history *h = ctx;
    if (h->err)
        return;
    struct cp_thread *th = thread_of(h, (size_t)(iv->thread - h->t->threads));
    if (!th)
        return;
    if (th->has_open && iv->start_ns >= th->open.start_ns)
        th->has_open = 0; /* what it was in has ended */
    if (!wanted(h, &th->iv_at, iv->start_ns, iv->end_ns))
        return;
    if (ctr_grow(&th->iv, &th->cap, th->n + 1, sizeof(*th->iv)) != 0) {
        h->err = -ENOMEM;
        return;
    }
    th->iv[th->n++] = kept_interval(h, iv);
    h->kept += sizeof(struct cp_iv);
}

/* Releases are kept too: the holders of a lock in turn during one wait. */
static void on_event(void *ctx, const struct ctr_trace *t, uint32_t thread,
                     const struct ctr_trace_event *e)
{
    (void)t;
    struct ctr_cp_history *h = ctx;
    if (h->err || e->type != CTR_EV_RELEASE)
        return;
    struct cp_thread *th = thread_of(h, thread);
    if (!th || !wanted(h, &th->rel_at, e->ns, e->ns))
        return;
    if (ctr_grow(&h->rel, &h->rel_cap, h->nrel + 1, sizeof(*h->rel)) != 0) {
        h->err = -ENOMEM;
        return;
    }
    h->rel[h->nrel++] = (struct cp_release){e->ns, e->args[0], e->args[1], thread};
    h->kept += sizeof(struct cp_release);
}

/* Lets go of v[*head..k), the front of a store v[*head..*n) of elements of
 * `size` bytes; the store shrinks once half of it is let go. */
static void let_go_front(struct ctr_cp_history *h, void *v, size_t *head, size_t *n, size_t k,
                         size_t size)
{
    h->kept -= (k - *head) * size;
    *head = k;
    if (*head == *n) {
        *head = *n = 0;
    } else if (*head > 64 && *head > *n / 2) {
        memmove(v, (uint8_t *)v + *head * size, (*n - *head) * size);
        *n -= *head;
        *head = 0;
    }
}

/* Lets go of the intervals that end at or before ns, and the releases
 * before it. */
static void let_go(struct ctr_cp_history *h, uint64_t ns)
{
    for (size_t i = 0; i < h->nth; i++) {
        struct cp_thread *th = &h->th[i];
        size_t k = th->head;
        while (k < th->n && th->iv[k].end_ns <= ns)
            k++;
        let_go_front(h, th->iv, &th->head, &th->n, k, sizeof(*th->iv));
    }
    size_t k = h->rel_head;
    while (k < h->nrel && h->rel[k].ns < ns)
        k++;
    let_go_front(h, h->rel, &h->rel_head, &h->nrel, k, sizeof(*h->rel));
}

/* The start of the oldest interval or release kept; UINT64_MAX if none. */
static uint64_t oldest_kept(const struct ctr_cp_history *h)
{
    uint64_t oldest = h->rel_head < h->nrel ? h->rel[h->rel_head].ns : UINT64_MAX;
    for (size_t i = 0; i < h->nth; i++)
        if (h->th[i].head < h->th[i].n && h->th[i].iv[h->th[i].head].start_ns < oldest)
            oldest = h->th[i].iv[h->th[i].head].start_ns;
    return oldest;
}

/* After the walks up to `settled`: history no task left needs goes, and,
 * over the budget, the oldest half of what is kept (the tasks that needed
 * it will say so: ctr_cp_path.forgotten). */
static void prune(struct ctr_cp_history *h, uint64_t settled)
{
    if (h->kept < h->prune_at)
        return;
    let_go(h, h->keep_from[h->next]);
    while (h->kept > h->budget) {
        uint64_t oldest = oldest_kept(h);
        if (oldest >= settled)
            break;
        uint64_t cut = oldest + (settled - oldest) / 2 + 1;
        let_go(h, cut);
        if (cut > h->forgot_before)
            h->forgot_before = cut;
    }
    /* Pruned again once it has doubled: linear in what is kept, so
     * amortized over what was added. */
    h->prune_at =
        2 * h->kept > 4096 * sizeof(struct cp_iv) ? 2 * h->kept : 4096 * sizeof(struct cp_iv);
}

static void on_settle(void *ctx, uint64_t ns)
{
    struct ctr_cp_history *h = ctx;
    while (!h->err && h->next < h->nwant &&
           (ns == UINT64_MAX || h->want[h->order[h->next]].end_ns < ns)) {
        size_t i = h->order[h->next++];
        const struct ctr_cp_want *w = &h->want[i];
        struct ctr_cp_path p;
        int rc = ctr_cp_walk(h, w->task, w->end_thread, w->begin_ns, w->end_ns, &p);
        if (rc == 0)
            rc = h->fn(h->fn_ctx, i, &p);
        if (rc != 0)
            h->err = rc;
    }
    if (!h->err && h->fn)
        prune(h, ns);
}

void ctr_cp_history_use_phases(struct ctr_cp_history *h, ctr_cp_phase_fn fn, void *ctx)
{
    h->phase_of = fn;
    h->phase_ctx = ctx;
}

struct ctr_consumer ctr_cp_history_consumer(struct ctr_cp_history *h)
{
    return (struct ctr_consumer){.ctx = h,
                                 .event = on_event,
                                 .interval = on_interval,
                                 .begin = on_begin,
                                 .settle = h->fn ? on_settle : NULL};
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

/* How many intervals of th a walk sees: those kept, then the open one. */
static size_t count(const struct cp_thread *th)
{
    return th->n - th->head + (th->has_open ? 1 : 0);
}

/* The i-th of them. */
static const struct cp_iv *at(const struct cp_thread *th, ptrdiff_t i)
{
    size_t k = th->head + (size_t)i;
    return k < th->n ? &th->iv[k] : &th->open;
}

/* The last interval of th that starts before ns, or -1. */
static ptrdiff_t last_before(const struct cp_thread *th, uint64_t ns)
{
    if (th->has_open && th->open.start_ns < ns)
        return (ptrdiff_t)count(th) - 1;
    size_t i = first_from(th->iv + th->head, th->n - th->head, sizeof(*th->iv),
                          offsetof(struct cp_iv, start_ns), ns);
    return (ptrdiff_t)i - 1;
}

/* Where running interval i of th ended: end_stack for the one the walk
 * entered at a release, else the wait that followed it. */
static uint64_t running_end_stack(const struct cp_thread *th, ptrdiff_t i, int first,
                                  uint64_t end_stack)
{
    if (first) /* the release's site, or unknown (the task's own end) */
        return end_stack;
    if ((size_t)i + 1 < count(th) && at(th, i + 1)->state != CTR_STATE_RUNNING &&
        at(th, i + 1)->start_ns == at(th, i)->end_ns)
        return at(th, i + 1)->stack_id;
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
    return h->rel_head + first_from(h->rel + h->rel_head, h->nrel - h->rel_head, sizeof(*h->rel),
                                    offsetof(struct cp_release, ns), ns);
}

/* When holder, which released a lock at `end` after another thread had
 * released it at `from`, can have taken it: not before it ran again after
 * `from`. A thread takes a lock while running; one that was waiting (or
 * preempted) from before `from` took it once that ended. A wakee of the
 * release at `from` (runnable from then on) is the lock's next holder
 * waiting for a CPU: its runnable time is on the path. With regions, not
 * before the outermost region of its release began. @return that time
 * (`from` if nothing tells otherwise). */
static uint64_t taken_after(const struct ctr_cp_history *h, uint32_t holder, uint64_t from,
                            uint64_t end)
{
    if (holder >= h->nth)
        return from;
    const struct cp_thread *th = &h->th[holder];
    uint64_t taken = from;
    for (ptrdiff_t i = last_before(th, from + 1); i >= 0 && (size_t)i < count(th); i++) {
        const struct cp_iv *iv = at(th, i);
        if (iv->state == CTR_STATE_RUNNING || iv->start_ns > taken || iv->end_ns <= taken)
            break;
        if (taken == from && iv->start_ns == from && iv->state == CTR_STATE_RUNNABLE)
            break; /* woken by that release */
        taken = iv->end_ns;
    }
    /* A phase entered since: the lock was taken in it (the assumption
     * ctr_cp_history_use_phases() states). */
    uint64_t phase = h->phase_of ? h->phase_of(h->phase_ctx, holder, end) : 0;
    if (phase > taken)
        taken = phase;
    return taken < end ? taken : end;
}

/* Explains the part [lo, until) of a wait of thread ti that `last` (a
 * thread, its release's stack) ended, by the releasers' histories: a lock's
 * holders in turn, each over the span from the release before its own (or
 * lo) to its release; for other waits, the last releaser over all of it.
 * A holder's span starts when it can have taken the lock (taken_after());
 * before, the lock was between holders, and the time is the waiter's. */
static void explain_wait(struct walk *w, uint32_t ti, const struct cp_iv *iv, uint64_t lo,
                         uint64_t until, unsigned hops, uint32_t via)
{
    uint32_t releaser = iv->releaser;
    uint64_t stack = iv->release_stack, end = until;
    if (one_holder(iv->reason)) {
        const struct ctr_cp_history *h = w->h;
        size_t first = release_from(h, lo + 1), k = release_from(h, until);
        struct ctr_cp_segment own = {.thread = ti, .hops = (uint16_t)hops, .via = via};
        /* Latest first: [previous release, this one) is this releaser's. */
        while (k-- > first && !w->oom) {
            const struct cp_release *r = &h->rel[k];
            if (r->object != iv->object || r->thread == ti || r->ns >= end)
                continue;
            uint64_t taken = taken_after(h, releaser, r->ns, end);
            explain(w, releaser, taken, end, hops + 1, via, stack);
            emit_blocked(w, own, iv, r->ns, taken);
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
        if (i < 0 || at(th, i)->end_ns < t) {
            /* Nothing of this thread from the interval before (if any)
             * up to t: not in the trace, or not kept. */
            uint64_t lo = i >= 0 && at(th, i)->end_ns > from ? at(th, i)->end_ns : from;
            s.state = CTR_CP_UNKNOWN;
            s.start_ns = lo;
            s.end_ns = t;
            emit(w, s);
            t = lo;
            if (i < 0)
                break;
            continue;
        }
        const struct cp_iv *iv = at(th, i);
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
    p->forgotten = begin_ns < h->forgot_before;
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
