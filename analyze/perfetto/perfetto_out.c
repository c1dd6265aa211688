/* SPDX-License-Identifier: MIT */
/* perfetto_out.c - the Perfetto export's back half (see perfetto_out.h): the
 * time-order buffer and the cut to the time kept. The packets themselves
 * are encoded in perfetto_enc.c.
 *
 * The buffer is two queues: a FIFO for items that come in time order (most:
 * they happen at the event at hand) and a heap for those that come late (a
 * wait's end at its release); settling pops the least of their heads while
 * it is before the settled time. Ties keep the order items came in, so a
 * slice's END and the next BEGIN at the same time stay in that order.
 *
 * The cut: each track has windows (the time kept, and on a thread's tracks
 * the filter's windows within it). A slice open when its track leaves a
 * window is ended there and begun again where the next window starts;
 * items outside are dropped. Flows are only made (perfetto.c) between
 * items pf_out_kept() says are written, so both ends always are.
 */
#include "perfetto/perfetto_out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"
#include "perfetto/perfetto_enc.h"
#include "perfetto/perfetto_paths.h"

struct qitem {
    struct pf_item it;
    uint64_t seq; /* order of arrival: the tie-break */
};

/* A thread's releases still queued: FIFO positions, oldest first. */
struct pending {
    uint64_t *pos;
    size_t head, n, cap;
};

struct pf_out {
    struct ctr_perfetto_opts o;
    struct pf_enc *enc;
    /* The FIFO: a ring of power-of-two size, positions counted from 0. */
    struct qitem *fifo;
    size_t fcap;
    uint64_t fhead, ftail; /* live: positions [fhead, ftail) */
    uint64_t flast_ts;     /* the time of the FIFO's last item */
    struct qitem *heap;
    size_t nheap, hcap;
    uint64_t seq;
    size_t ext_bytes;    /* held by queued items' ext */
    uint64_t written_ts; /* the time of the last item out */
    /* Per thread index: its two tracks, and its queued releases. */
    struct pf_track *tracks; /* [2 * thread + (notes track)] */
    struct pending *rel;
    size_t nthreads;
    struct pf_track fixed[3]; /* ctrace, threads blocked, threads runnable */
    int64_t counter[2];       /* threads blocked, runnable */
    struct pf_task tasks;     /* the list head of the live tasks */
    struct ctr_window range;  /* the time kept, for every track */
    uint64_t late;
};

static int is_thread_track(uint64_t track)
{
    return PF_TRACK_KIND(track) == PF_TR_THREAD || PF_TRACK_KIND(track) == PF_TR_NOTES;
}

static void task_free(struct pf_task *task);

struct pf_out *pf_out_new(const struct ctr_perfetto_opts *o, FILE *out)
{
    struct pf_out *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->o = *o;
    if (!p->o.budget)
        p->o.budget = (size_t)32 << 20;
    p->range = (struct ctr_window){0, o->from_ns, o->to_ns};
    p->tasks.next = p->tasks.prev = &p->tasks;
    p->nthreads = o->model->nthreads;
    p->fcap = 1024;
    p->fifo = malloc(p->fcap * sizeof(*p->fifo));
    p->tracks = calloc(2 * p->nthreads + 1, sizeof(*p->tracks));
    p->rel = calloc(p->nthreads + 1, sizeof(*p->rel));
    p->enc = p->fifo && p->tracks && p->rel ? pf_enc_new(o, out) : NULL;
    if (!p->enc) {
        pf_out_free(p);
        return NULL;
    }
    return p;
}

void pf_out_free(struct pf_out *p)
{
    if (!p)
        return;
    for (uint64_t i = p->fhead; i < p->ftail; i++) {
        struct pf_item *it = &p->fifo[i & (p->fcap - 1)].it;
        if (it->what == PF_LOG)
            free(it->ext);
    }
    for (size_t i = 0; i < p->nheap; i++)
        if (p->heap[i].it.what == PF_LOG)
            free(p->heap[i].it.ext);
    for (size_t i = 0; p->tracks && i < 2 * p->nthreads; i++)
        free(p->tracks[i].open);
    for (size_t i = 0; p->rel && i < p->nthreads; i++)
        free(p->rel[i].pos);
    for (int i = 0; i < 3; i++)
        free(p->fixed[i].open);
    while (p->tasks.next && p->tasks.next != &p->tasks)
        task_free(p->tasks.next);
    pf_enc_free(p->enc);
    free(p->fifo);
    free(p->heap);
    free(p->tracks);
    free(p->rel);
    free(p);
}

static void task_free(struct pf_task *task)
{
    task->prev->next = task->next;
    task->next->prev = task->prev;
    free(task->track.open);
    free(task);
}

struct pf_task *pf_out_task(struct pf_out *p, uint64_t seq)
{
    struct pf_task *task = calloc(1, sizeof(*task));
    if (task) {
        task->seq = seq;
        task->next = &p->tasks;
        task->prev = p->tasks.prev;
        task->prev->next = task;
        p->tasks.prev = task;
    }
    return task;
}

/* ---------------------------------------------------------------------------
 * Tracks and their windows
 * ------------------------------------------------------------------------- */

static struct pf_track *track_of(struct pf_out *p, const struct pf_item *it)
{
    uint64_t kind = PF_TRACK_KIND(it->track), index = PF_TRACK_INDEX(it->track);
    switch (kind) {
    case PF_TR_THREAD:
    case PF_TR_NOTES:
        return index < p->nthreads ? &p->tracks[2 * index + (kind == PF_TR_NOTES)] : NULL;
    case PF_TR_TASK: {
        struct pf_task *task = it->what == PF_TASK ? it->ext : NULL;
        return task ? &task->track : NULL;
    }
    default:
        return kind >= PF_TR_CTRACE && kind <= PF_TR_RUNNABLE ? &p->fixed[kind - PF_TR_CTRACE]
                                                              : NULL;
    }
}

/* The windows of a track: on a thread's tracks under a filter, the
 * filter's windows of that thread (each cut to the time kept); else one,
 * the time kept. */
static void windows_of(const struct pf_out *p, uint64_t track, const struct ctr_window **w,
                       size_t *n)
{
    const struct ctr_windows *ws = p->o.keep;
    uint64_t index = PF_TRACK_INDEX(track);
    if (ws && is_thread_track(track)) {
        if (index >= ws->nthreads) {
            *w = NULL, *n = 0;
        } else {
            *w = ws->w + ws->first[index];
            *n = ws->first[index + 1] - ws->first[index];
        }
    } else {
        *w = &p->range, *n = 1;
    }
}

static uint64_t win_start(const struct pf_out *p, const struct ctr_window *w)
{
    return w->start_ns > p->range.start_ns ? w->start_ns : p->range.start_ns;
}

static uint64_t win_end(const struct pf_out *p, const struct ctr_window *w)
{
    return w->end_ns < p->range.end_ns ? w->end_ns : p->range.end_ns;
}

int pf_out_kept(const struct pf_out *p, uint64_t track, uint64_t ns)
{
    if (ns < p->range.start_ns || ns >= p->range.end_ns)
        return 0; /* so ns + 1 does not wrap */
    return !p->o.keep || !is_thread_track(track) ||
           ctr_windows_overlap(p->o.keep, (uint32_t)PF_TRACK_INDEX(track), ns, ns + 1) != 0;
}

/* Writes an item: its task track, if it has one, is declared with its
 * first item written. */
static int emit(struct pf_out *p, const struct pf_item *it, struct pf_track *tr,
                const struct pf_counters *c)
{
    int new_task = PF_TRACK_KIND(it->track) == PF_TR_TASK && !tr->declared;
    if (new_task)
        tr->declared = 1;
    return pf_enc_item(p->enc, it, new_task, c);
}

static int advance_slow(struct pf_out *p, struct pf_track *tr, const struct pf_item *it,
                        uint64_t ts);

/* Moves the track to time ts: ends its open slices where it leaves a
 * window, begins them again where it enters one. */
static inline int advance(struct pf_out *p, struct pf_track *tr, const struct pf_item *it,
                          uint64_t ts)
{
    if (tr->inside && ts < tr->until)
        return 0; /* still in the window it is in: most items */
    return advance_slow(p, tr, it, ts);
}

static int advance_slow(struct pf_out *p, struct pf_track *tr, const struct pf_item *it,
                        uint64_t ts)
{
    const struct ctr_window *w;
    size_t n;
    windows_of(p, it->track, &w, &n);
    for (;;) {
        if (tr->wi >= n)
            return 0;
        uint64_t start = win_start(p, &w[tr->wi]), end = win_end(p, &w[tr->wi]);
        tr->until = end;
        if (tr->inside) {
            if (ts < end)
                return 0;
            for (uint32_t k = tr->nopen; k-- > 0;) {
                struct pf_item e = tr->open[k];
                e.kind = PF_END, e.ts = end, e.thread = UINT32_MAX, e.nflows = 0;
                if (e.what == PF_TASK) { /* the task's last END written: its flows */
                    struct pf_task *task = e.ext;
                    e.flow = PF_FLOW_TASK(task->seq), e.nflows = task->nflows;
                    task->flows_written = 1;
                }
                int rc = emit(p, &e, tr, NULL);
                if (rc)
                    return rc;
            }
            tr->inside = 0;
            tr->wi++;
        } else {
            if (ts < start || start >= end) {
                if (start >= end)
                    tr->wi++; /* empty once cut to the time kept */
                else
                    return 0;
                continue;
            }
            tr->inside = 1;
            for (uint32_t k = 0; k < tr->nopen; k++) {
                struct pf_item b = tr->open[k];
                b.ts = start, b.nflows = 0; /* its flows went with the first part */
                int rc = emit(p, &b, tr, NULL);
                if (rc)
                    return rc;
            }
        }
    }
}

/* The counters an item changes: summed in time order, cut like any track
 * (their value is written where a window starts), and carried by the item
 * when it is written, else written on their own. */
static int count(struct pf_out *p, const struct pf_item *it, struct pf_counters *c)
{
    const int8_t delta[2] = {it->blocked, it->runnable};
    c->n = 0;
    for (int k = 0; k < 2; k++) {
        if (!delta[k])
            continue;
        struct pf_track *tr = &p->fixed[1 + k];
        uint64_t track = PF_TRACK(PF_TR_BLOCKED + k, 0);
        int was = tr->inside;
        struct pf_item probe = {.track = track};
        int rc = advance(p, tr, &probe, it->ts);
        if (rc == 0 && !was && tr->inside)
            rc = pf_enc_counter(p->enc, track, win_start(p, &p->range), p->counter[k]);
        if (rc)
            return rc;
        p->counter[k] += delta[k];
        if (tr->inside) {
            c->track[c->n] = track;
            c->value[c->n++] = p->counter[k];
        }
    }
    return 0;
}

/* Writes one item through its track's cut. */
static int write_item(struct pf_out *p, struct pf_item *it)
{
    struct pf_track *tr = track_of(p, it);
    struct pf_counters c = {0};
    int rc = 0, written = 0; /* the item carried its counters */
    if (!tr)
        goto done;
    if ((rc = advance(p, tr, it, it->ts)) != 0 || (rc = count(p, it, &c)) != 0)
        goto done;
    switch (it->kind) {
    case PF_BEGIN:
        if (ctr_grow(&tr->open, &tr->capopen, tr->nopen + 1, sizeof(*tr->open)) != 0) {
            rc = -ENOMEM;
            goto done;
        }
        tr->open[tr->nopen] = *it;
        tr->open[tr->nopen].blocked = tr->open[tr->nopen].runnable = 0; /* counted once */
        tr->nopen++;
        break;
    case PF_END: {
        if (!tr->nopen)
            goto counters; /* the front never ends what it did not begin */
        struct pf_item *b = &tr->open[--tr->nopen];
        if (b->what == PF_TASK) {
            struct pf_task *task = b->ext;
            it->flow = PF_FLOW_TASK(task->seq);
            it->nflows = task->flows_written ? 0 : task->nflows;
            if (tr->inside)
                rc = emit(p, it, tr, &c);
            task_free(task); /* its track with it */
            return rc;
        }
        it->what = b->what;
        break;
    }
    default:
        break;
    }
    if (tr->inside) {
        rc = emit(p, it, tr, &c);
        written = 1;
    }
counters:
    for (int k = 0; rc == 0 && !written && k < c.n; k++)
        rc = pf_enc_counter(p->enc, c.track[k], it->ts, c.value[k]);
done:
    if (it->what == PF_LOG)
        free(it->ext);
    return rc;
}

/* ---------------------------------------------------------------------------
 * The time-order buffer
 * ------------------------------------------------------------------------- */

static int before(const struct qitem *a, const struct qitem *b)
{
    return a->it.ts != b->it.ts ? a->it.ts < b->it.ts : a->seq < b->seq;
}

static void heap_up(struct qitem *h, size_t i)
{
    struct qitem x = h[i];
    while (i > 0 && before(&x, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static void heap_down(struct qitem *h, size_t n, size_t i)
{
    struct qitem x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(&h[c + 1], &h[c]))
            c++;
        if (!before(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* Room for one more item at the FIFO's tail. @return it, or NULL. */
static struct qitem *fifo_slot(struct pf_out *p)
{
    if (p->ftail - p->fhead == p->fcap) {
        struct qitem *f = malloc(2 * p->fcap * sizeof(*f));
        if (!f)
            return NULL;
        for (uint64_t i = p->fhead; i < p->ftail; i++)
            f[i & (2 * p->fcap - 1)] = p->fifo[i & (p->fcap - 1)];
        free(p->fifo);
        p->fifo = f;
        p->fcap *= 2;
    }
    return &p->fifo[p->ftail & (p->fcap - 1)];
}

static size_t held_bytes(const struct pf_out *p)
{
    return (size_t)(p->ftail - p->fhead + p->nheap) * sizeof(struct qitem) + p->ext_bytes;
}

/* Pops the least queued item, if it is before `below`. @return it (in the
 * FIFO's slot, valid until the next push, or copied to *spare), or NULL. */
static struct pf_item *pop_least(struct pf_out *p, uint64_t below, struct qitem *spare)
{
    struct qitem *f = p->fhead < p->ftail ? &p->fifo[p->fhead & (p->fcap - 1)] : NULL;
    struct qitem *h = p->nheap ? &p->heap[0] : NULL;
    struct qitem *least = f && (!h || before(f, h)) ? f : h;
    if (!least || least->it.ts >= below)
        return NULL;
    if (least == f) {
        p->fhead++;
        if (f->it.what == PF_RELEASE && f->it.kind == PF_INSTANT) {
            struct pending *r = &p->rel[f->it.thread];
            if (r->n) /* its thread's oldest queued release is this one */
                r->head++, r->n--;
        }
    } else {
        *spare = *h;
        least = spare;
        p->heap[0] = p->heap[--p->nheap];
        if (p->nheap)
            heap_down(p->heap, p->nheap, 0);
    }
    if (least->it.what == PF_LOG)
        p->ext_bytes -= least->it.c;
    return &least->it;
}

static int flush_below(struct pf_out *p, uint64_t below, size_t down_to)
{
    struct qitem spare;
    struct pf_item *it;
    while (held_bytes(p) > down_to && (it = pop_least(p, below, &spare)) != NULL) {
        p->written_ts = it->ts;
        int rc = write_item(p, it);
        if (rc)
            return rc;
    }
    return 0;
}

int pf_out_add(struct pf_out *p, const struct pf_item *it)
{
    uint64_t ts = it->ts;
    if (ts < p->written_ts) { /* the budget let it pass: as late as it may be */
        ts = p->written_ts;
        p->late++;
    }
    struct qitem *q;
    int in_order = ts >= p->flast_ts || p->fhead == p->ftail;
    if (in_order) {
        if (it->what == PF_RELEASE && it->kind == PF_INSTANT && it->thread < p->nthreads) {
            struct pending *r = &p->rel[it->thread];
            if (r->head && r->head + r->n == r->cap) {
                memmove(r->pos, r->pos + r->head, r->n * sizeof(*r->pos));
                r->head = 0;
            }
            if (ctr_grow(&r->pos, &r->cap, r->head + r->n + 1, sizeof(*r->pos)) != 0)
                return -ENOMEM;
            r->pos[r->head + r->n++] = p->ftail;
        }
        if (!(q = fifo_slot(p)))
            return -ENOMEM;
        p->ftail++;
        p->flast_ts = ts;
    } else {
        if (ctr_grow(&p->heap, &p->hcap, p->nheap + 1, sizeof(*p->heap)) != 0)
            return -ENOMEM;
        q = &p->heap[p->nheap];
    }
    /* Copied once, where it goes. */
    q->it = *it;
    q->it.ts = ts;
    q->seq = p->seq++;
    if (!in_order)
        heap_up(p->heap, p->nheap++);
    if (it->what == PF_LOG)
        p->ext_bytes += it->c;
    if (held_bytes(p) > p->o.budget) /* the oldest go out, settled or not */
        return flush_below(p, UINT64_MAX, p->o.budget / 4 * 3);
    return 0;
}

struct pf_item *pf_out_release(struct pf_out *p, uint32_t thread, uint64_t ns, uint64_t object)
{
    if (thread >= p->nthreads)
        return NULL;
    const struct pending *r = &p->rel[thread];
    for (size_t k = r->n; k-- > 0;) {
        struct pf_item *it = &p->fifo[r->pos[r->head + k] & (p->fcap - 1)].it;
        if (it->ts < ns)
            break;
        if (it->ts == ns && it->a == object)
            return it;
    }
    return NULL;
}

int pf_out_settle(struct pf_out *p, uint64_t ns)
{
    return flush_below(p, ns, 0);
}

int pf_out_paths(struct pf_out *p, const struct ctr_cp_task *w, size_t n)
{
    int rc = flush_below(p, UINT64_MAX, 0);
    if (rc == 0 && n)
        rc = pf_paths_write(p->enc, p->o.model, w, n, p->o.from_ns, p->o.to_ns);
    return rc;
}

int pf_out_end(struct pf_out *p, struct ctr_perfetto_stats *st)
{
    int rc = flush_below(p, UINT64_MAX, 0); /* the front has ended all it began */
    st->late = p->late;
    int rc2 = pf_enc_finish(p->enc, st);
    return rc ? rc : rc2;
}
