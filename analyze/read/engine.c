/* SPDX-License-Identifier: MIT */
/* engine.c - the merge, the state machine's feed and the consumers' dispatch
 * (see engine.h).
 *
 * A stream (one per thread and kind) is a queue of segments; the heap holds
 * the streams that have an event queued, ordered by their head event. Each
 * pop consumes the least head and re-sifts only that stream, so a run of
 * one thread's events costs a comparison or two each. Tags are counted in
 * a queue of (tag, events left), oldest first, which is what drain waits on.
 */
#include "read/engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"

struct segment {
    const struct ctr_trace_event *ev;
    size_t n, pos;
    size_t tag_slot; /* index of its tag in tags[] (absolute, see tag_base) */
};

struct stream {
    struct segment *seg; /* a ring of queued segments */
    size_t head, count, cap;
    uint32_t thread;
    uint8_t switches;
    uint64_t tie; /* the key's second word but for its top bit: the
                     thread id, then batches before switches */
    int queued;   /* in the heap */
};

/* A heap entry: a stream and its head event's key, kept here so that
 * comparing touches the heap alone. */
struct heap_entry {
    uint64_t ns;
    uint64_t tie; /* top bit: 0 the head is a release, 1 anything else */
    size_t stream;
};

struct tag_count {
    uint64_t tag, left;
};

struct ctr_engine {
    const struct ctr_trace *t;
    struct ctr_consumer *cons;
    size_t ncons;
    struct ctr_states *states;
    struct stream *streams; /* thread * 2 + switches */
    size_t nstreams, streams_cap;
    struct heap_entry *heap;
    size_t nheap, heap_cap;
    struct tag_count *tags; /* tags[tag_first .. ntags-1] live */
    size_t tag_first, ntags, tags_cap, tag_base;
    uint64_t *thread_last; /* per thread: the time of its last event out */
    int want_settle;       /* a consumer has a settle callback */
    uint64_t hold;         /* settle stays before it (ctr_engine_hold) */
    unsigned since_settle; /* events out since the last one */
};

/* The state machine's intervals go to every consumer that wants them. */
static void fan_out_interval(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_engine *e = ctx;
    for (size_t i = 0; i < e->ncons; i++)
        if (e->cons[i].interval)
            e->cons[i].interval(e->cons[i].ctx, iv);
}

static void fan_out_begin(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_engine *e = ctx;
    for (size_t i = 0; i < e->ncons; i++)
        if (e->cons[i].begin)
            e->cons[i].begin(e->cons[i].ctx, iv);
}

void ctr_engine_cputime(struct ctr_engine *e, uint32_t thread, const struct ctr_cpu_reading *r)
{
    for (size_t i = 0; i < e->ncons; i++)
        if (e->cons[i].cputime)
            e->cons[i].cputime(e->cons[i].ctx, e->t, thread, r);
}

static void settle(struct ctr_engine *e, uint64_t ns)
{
    e->since_settle = 0;
    if (ns > e->hold)
        ns = e->hold;
    for (size_t i = 0; i < e->ncons; i++)
        if (e->cons[i].settle)
            e->cons[i].settle(e->cons[i].ctx, ns);
}

struct ctr_engine *ctr_engine_new(const struct ctr_trace *t, const struct ctr_consumer *c, size_t n)
{
    struct ctr_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->t = t;
    e->hold = UINT64_MAX;
    e->cons = calloc(n ? n : 1, sizeof(*c));
    int want_intervals = 0, want_begins = 0;
    for (size_t i = 0; i < n; i++) {
        want_intervals |= c[i].interval != NULL || c[i].begin != NULL;
        want_begins |= c[i].begin != NULL;
        e->want_settle |= c[i].settle != NULL;
    }
    e->states = ctr_states_new(t, want_intervals ? fan_out_interval : NULL,
                               want_begins ? fan_out_begin : NULL, e);
    if (!e->cons || !e->states) {
        ctr_engine_free(e);
        return NULL;
    }
    if (n)
        memcpy(e->cons, c, n * sizeof(*c));
    e->ncons = n;
    return e;
}

void ctr_engine_free(struct ctr_engine *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nstreams; i++)
        free(e->streams[i].seg);
    free(e->streams);
    free(e->thread_last);
    free(e->heap);
    free(e->tags);
    free(e->cons);
    ctr_states_free(e->states);
    free(e);
}

/* ---------------------------------------------------------------------------
 * The heap
 * ------------------------------------------------------------------------- */

static int before(const struct heap_entry *a, const struct heap_entry *b)
{
    return a->ns != b->ns ? a->ns < b->ns : a->tie < b->tie;
}

static void sift_up(struct ctr_engine *e, size_t at)
{
    struct heap_entry x = e->heap[at];
    while (at > 0) {
        size_t parent = (at - 1) / 2;
        if (!before(&x, &e->heap[parent]))
            break;
        e->heap[at] = e->heap[parent];
        at = parent;
    }
    e->heap[at] = x;
}

static void sift_down(struct ctr_engine *e, size_t at)
{
    struct heap_entry x = e->heap[at];
    for (;;) {
        size_t kid = 2 * at + 1;
        if (kid >= e->nheap)
            break;
        if (kid + 1 < e->nheap && before(&e->heap[kid + 1], &e->heap[kid]))
            kid++;
        if (!before(&e->heap[kid], &x))
            break;
        e->heap[at] = e->heap[kid];
        at = kid;
    }
    e->heap[at] = x;
}

/* The key of a stream's head event, into h. */
static void key_from_head(const struct stream *st, struct heap_entry *h)
{
    const struct segment *g = &st->seg[st->head];
    const struct ctr_trace_event *ev = &g->ev[g->pos];
    h->ns = ev->ns;
    h->tie = st->tie | (uint64_t)!ctr_event_is_release(ev) << 63;
}

/* ---------------------------------------------------------------------------
 * Adding
 * ------------------------------------------------------------------------- */

static struct stream *stream_of(struct ctr_engine *e, uint32_t thread, int switches)
{
    size_t need = ((size_t)thread + 1) * 2;
    if (need > e->nstreams) {
        if (ctr_grow(&e->streams, &e->streams_cap, need, sizeof(*e->streams)) != 0)
            return NULL;
        uint64_t *last = realloc(e->thread_last, need / 2 * sizeof(*last));
        if (!last)
            return NULL;
        e->thread_last = last;
        for (size_t i = e->nstreams; i < need; i++)
            e->streams[i] = (struct stream){.thread = (uint32_t)(i / 2), .switches = i % 2};
        for (size_t i = e->nstreams / 2; i < need / 2; i++)
            last[i] = 0;
        e->nstreams = need;
    }
    return &e->streams[(size_t)thread * 2 + (switches != 0)];
}

/* The slot of `tag` in tags[], appending it if it is new. */
static int tag_slot(struct ctr_engine *e, uint64_t tag, size_t *slot)
{
    if (e->ntags > e->tag_first && e->tags[e->ntags - 1].tag == tag) {
        *slot = e->tag_base + e->ntags - 1;
        return 0;
    }
    if (e->tag_first > 0 && e->tag_first * 2 >= e->ntags) {
        /* Drop the consumed tags; slots are absolute, so the base moves. */
        memmove(e->tags, e->tags + e->tag_first, (e->ntags - e->tag_first) * sizeof(*e->tags));
        e->tag_base += e->tag_first;
        e->ntags -= e->tag_first;
        e->tag_first = 0;
    }
    if (ctr_grow(&e->tags, &e->tags_cap, e->ntags + 1, sizeof(*e->tags)) != 0)
        return -1;
    e->tags[e->ntags++] = (struct tag_count){tag, 0};
    *slot = e->tag_base + e->ntags - 1;
    return 0;
}

int ctr_engine_add(struct ctr_engine *e, uint32_t thread, int switches,
                   const struct ctr_trace_event *ev, size_t n, uint64_t tag)
{
    if (n == 0)
        return 0;
    struct stream *st = stream_of(e, thread, switches);
    size_t slot;
    if (!st || tag_slot(e, tag, &slot) != 0)
        return -1;
    if (st->count == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 4;
        struct segment *seg = malloc(cap * sizeof(*seg));
        if (!seg)
            return -1;
        for (size_t i = 0; i < st->count; i++)
            seg[i] = st->seg[(st->head + i) % st->cap];
        free(st->seg);
        st->seg = seg;
        st->cap = cap;
        st->head = 0;
    }
    st->seg[(st->head + st->count) % st->cap] = (struct segment){ev, n, 0, slot};
    st->count++;
    e->tags[slot - e->tag_base].left += n;
    if (!st->queued) {
        if (ctr_grow(&e->heap, &e->heap_cap, e->nheap + 1, sizeof(*e->heap)) != 0)
            return -1;
        /* Thread ids are counters far below 2^62. */
        st->tie = (e->t->threads[thread].id << 1 | st->switches) & ~((uint64_t)1 << 63);
        struct heap_entry *h = &e->heap[e->nheap];
        h->stream = (size_t)(st - e->streams);
        key_from_head(st, h);
        st->queued = 1;
        sift_up(e, e->nheap++);
    }
    return 0;
}

void ctr_engine_hold(struct ctr_engine *e, uint64_t ns)
{
    e->hold = ns;
}

uint64_t ctr_engine_first_ns(const struct ctr_engine *e)
{
    return e->nheap ? e->heap[0].ns : UINT64_MAX;
}

/* ---------------------------------------------------------------------------
 * Consuming
 * ------------------------------------------------------------------------- */

/* Consumes the least head event. @return 0 or -1 (out of memory). */
static int pop(struct ctr_engine *e)
{
    struct stream *st = &e->streams[e->heap[0].stream];
    struct segment *g = &st->seg[st->head];
    const struct ctr_trace_event *ev = &g->ev[g->pos++];
    e->tags[g->tag_slot - e->tag_base].left--;
    if (g->pos == g->n) {
        st->head = (st->head + 1) % st->cap;
        st->count--;
    }
    if (st->count) {
        struct heap_entry *top = &e->heap[0];
        key_from_head(st, top);
        /* Most often the same stream is still first: no need to sift. */
        if ((e->nheap > 1 && !before(top, &e->heap[1])) ||
            (e->nheap > 2 && !before(top, &e->heap[2])))
            sift_down(e, 0);
    } else {
        st->queued = 0;
        if (--e->nheap) {
            e->heap[0] = e->heap[e->nheap];
            sift_down(e, 0);
        }
    }
    /* A thread's events go out in time order even when a segment came in
     * behind what its other stream already gave (switches a writer
     * recorded late): such an event takes the time of the one before. */
    struct ctr_trace_event late;
    if (ev->ns < e->thread_last[st->thread]) {
        late = *ev;
        late.ns = e->thread_last[st->thread];
        ev = &late;
    }
    e->thread_last[st->thread] = ev->ns;
    if (ctr_states_event(e->states, st->thread, ev) != 0)
        return -1;
    for (size_t i = 0; i < e->ncons; i++)
        if (e->cons[i].event)
            e->cons[i].event(e->cons[i].ctx, e->t, st->thread, ev);
    /* The bound costs a look at every thread: not at every event; often
     * enough that what a consumer holds stays in the cache. */
    if (e->want_settle && ++e->since_settle == 512)
        settle(e, ctr_states_settled(e->states));
    return 0;
}

int ctr_engine_drain(struct ctr_engine *e, uint64_t tag)
{
    for (;;) {
        while (e->tag_first < e->ntags && e->tags[e->tag_first].left == 0)
            e->tag_first++;
        if (e->tag_first == e->ntags || e->tags[e->tag_first].tag > tag) {
            if (e->want_settle)
                settle(e, ctr_states_settled(e->states));
            return 0;
        }
        if (pop(e) != 0)
            return -1;
    }
}

void ctr_engine_gap(struct ctr_engine *e, uint64_t from_ns, uint64_t to_ns)
{
    ctr_states_gap(e->states, from_ns, to_ns);
    for (size_t i = 0; i < e->ncons; i++)
        if (e->cons[i].gap)
            e->cons[i].gap(e->cons[i].ctx, e->t, from_ns, to_ns);
    if (e->want_settle)
        settle(e, ctr_states_settled(e->states));
}

uint64_t ctr_engine_finish(struct ctr_engine *e)
{
    if (ctr_engine_drain(e, UINT64_MAX) != 0)
        return UINT64_MAX;
    uint64_t odd = ctr_states_finish(e->states);
    e->hold = UINT64_MAX;
    if (e->want_settle)
        settle(e, UINT64_MAX);
    return odd;
}

/* ---------------------------------------------------------------------------
 * A trace read whole
 * ------------------------------------------------------------------------- */

int ctr_trace_replay(const struct ctr_trace *t, const struct ctr_consumer *c, size_t n,
                     uint64_t *odd)
{
    struct ctr_engine *e = ctr_engine_new(t, c, n);
    if (!e)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < t->nthreads; i++)
        for (size_t k = 0; k < t->threads[i].ncpu; k++)
            ctr_engine_cputime(e, (uint32_t)i, &t->threads[i].cpu[k]);
    for (size_t i = 0; rc == 0 && i < t->nthreads; i++)
        rc = ctr_engine_add(e, (uint32_t)i, 0, t->threads[i].events, t->threads[i].nevents, 0);
    uint64_t o = rc == 0 ? ctr_engine_finish(e) : UINT64_MAX;
    ctr_engine_free(e);
    if (o == UINT64_MAX)
        return -ENOMEM;
    if (odd)
        *odd = o;
    return 0;
}

uint64_t ctr_state_walk(const struct ctr_trace *t, ctr_interval_fn fn, void *ctx)
{
    struct ctr_consumer c = {.ctx = ctx, .interval = fn};
    uint64_t odd;
    return ctr_trace_replay(t, &c, fn ? 1 : 0, &odd) == 0 ? odd : UINT64_MAX;
}
