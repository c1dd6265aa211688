/* SPDX-License-Identifier: MIT */
/* perfetto.c - the Perfetto export's front (see perfetto.h): a consumer of
 * the pipeline that turns the merged trace into timeline items
 * (perfetto_out.h) as it streams by.
 *
 *  - A wait is one slice from its Block to the moment its thread ran again,
 *    begun when the state machine enters it (its begin callback) and ended
 *    when its intervals come: the blocked part, then the runnable part from
 *    its release (a nested slice), then, with context switches, the running
 *    part from its switch-in; the three come in one burst, so the wait is
 *    held (`pending`) until the thread's next callback says which came.
 *  - A release is an instant on its thread; each wait that ends with it adds
 *    a flow from it into the wait's slice. It stays in the back's buffer
 *    until no wait can take it any more (the settled time), so it goes out
 *    with all its flows.
 *  - Regions nest per thread as tasks.h says; one ended out of order ends
 *    the regions inside it and begins them again, since Perfetto's slices
 *    must nest. A region of a task open in the export has a flow into the
 *    task's slice.
 *  - Counters change by one at a wait's or a preemption's boundaries: the
 *    items there carry the change, and the back sums them in time order.
 */
#include "perfetto/perfetto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"
#include "read/idmap.h"
#include "perfetto/perfetto_out.h"
#include "read/state.h"
#include "model/tasks.h"

struct thread_state {
    uint8_t in_wait;  /* a PF_WAIT slice is begun */
    uint8_t in_state; /* PF_PREEMPTED or PF_RUNNING begun, or 0 */
    /* A wait whose blocked part came and whose slice is not ended yet. */
    uint8_t pending;
    uint8_t pend_reason;
    uint64_t pend_end;               /* the blocked part's end */
    struct ctr_release pend_rel;     /* its release (object, ns), if any */
    uint32_t pend_releaser;          /* the releasing thread's index, UINT32_MAX: none */
    struct ctr_open_region *regions; /* open, outermost first */
    size_t nregions, cap;
};

struct ctr_perfetto {
    struct ctr_perfetto_opts o;
    struct pf_out *out;
    const struct ctr_trace *t; /* the trace the pipeline fills */
    int err;
    int sched; /* the trace has context switches */
    struct thread_state *th;
    size_t nth, thcap;
    uint64_t release_seq, task_seq;
    struct ctr_idmap tasks; /* task id -> its pf_task (a pointer), 0 once ended */
    size_t tasks_ended;
    int gap_open; /* a gap's END not yet queued: at gap_end */
    uint64_t gap_end;
    uint64_t events, unlinked;
    const struct ctr_cp_task *paths; /* written after the timeline */
    size_t npaths;
};

static void fail(struct ctr_perfetto *p, int rc)
{
    if (rc && !p->err)
        p->err = rc;
}

static void add(struct ctr_perfetto *p, const struct pf_item *it)
{
    if (!p->err)
        fail(p, pf_out_add(p->out, it));
}

static struct thread_state *state_of(struct ctr_perfetto *p, uint32_t thread)
{
    if (thread >= p->nth) {
        if (ctr_grow(&p->th, &p->thcap, (size_t)thread + 1, sizeof(*p->th)) != 0) {
            fail(p, -ENOMEM);
            return NULL;
        }
        memset(&p->th[p->nth], 0, ((size_t)thread + 1 - p->nth) * sizeof(*p->th));
        p->nth = (size_t)thread + 1;
    }
    return &p->th[thread];
}

/* ---------------------------------------------------------------------------
 * Waits and releases
 * ------------------------------------------------------------------------- */

/* Ends thread's pending wait at `end` (its resume), with a flow from its
 * release when both ends are in the export; `blocked`: its blocked part
 * ends there too (it had no runnable part). */
static void end_wait(struct ctr_perfetto *p, uint32_t thread, uint64_t end, int blocked)
{
    struct thread_state *s = &p->th[thread];
    struct pf_item e = {.ts = end,
                        .track = PF_TRACK(PF_TR_THREAD, thread),
                        .kind = PF_END,
                        .what = PF_WAIT,
                        .thread = UINT32_MAX,
                        .blocked = (int8_t)-blocked};
    if (s->pend_releaser != UINT32_MAX) {
        e.thread = s->pend_releaser;
        if (pf_out_kept(p->out, e.track, end) &&
            pf_out_kept(p->out, PF_TRACK(PF_TR_THREAD, s->pend_releaser), s->pend_rel.ns)) {
            struct pf_item *r =
                pf_out_release(p->out, s->pend_releaser, s->pend_rel.ns, s->pend_rel.object);
            if (r && r->nflows < PF_RELEASE_FLOWS_MAX) {
                if (!r->nflows)
                    r->reason = s->pend_reason;
                e.flow = r->flow + r->nflows++;
                e.nflows = 1;
            } else {
                p->unlinked++;
            }
        }
    }
    add(p, &e);
    s->pending = 0;
    s->in_wait = 0;
}

/* The pending wait of thread, if any, had no runnable part. */
static void settle_wait(struct ctr_perfetto *p, uint32_t thread)
{
    if (thread < p->nth && p->th[thread].pending)
        end_wait(p, thread, p->th[thread].pend_end, 1);
}

static void on_begin(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_perfetto *p = ctx;
    uint32_t thread = (uint32_t)(iv->thread - p->t->threads);
    struct thread_state *s = state_of(p, thread);
    if (!s)
        return;
    settle_wait(p, thread);
    struct pf_item b = {.ts = iv->start_ns,
                        .track = PF_TRACK(PF_TR_THREAD, thread),
                        .kind = PF_BEGIN,
                        .thread = thread};
    switch (iv->state) {
    case CTR_STATE_BLOCKED:
        b.what = PF_WAIT, b.reason = iv->reason, b.a = iv->object, b.b = iv->stack_id;
        b.blocked = 1;
        s->in_wait = 1;
        break;
    case CTR_STATE_RUNNABLE:
        b.what = PF_PREEMPTED;
        b.runnable = 1;
        break;
    case CTR_STATE_RUNNING:
        if (!p->sched)
            return; /* running or not, nothing says: no slice */
        b.what = PF_RUNNING;
        break;
    }
    s->in_state = b.what == PF_WAIT ? 0 : b.what;
    add(p, &b);
}

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_perfetto *p = ctx;
    uint32_t thread = (uint32_t)(iv->thread - p->t->threads);
    struct thread_state *s = state_of(p, thread);
    if (!s)
        return;
    uint64_t track = PF_TRACK(PF_TR_THREAD, thread);
    if (iv->state == CTR_STATE_BLOCKED) {
        settle_wait(p, thread);
        if (!s->in_wait)
            return; /* begun before the export saw it: cannot happen */
        s->pending = 1;
        s->pend_reason = iv->reason;
        s->pend_end = iv->end_ns;
        s->pend_rel = iv->release ? *iv->release : (struct ctr_release){0};
        s->pend_releaser =
            iv->release ? (uint32_t)(iv->release->thread - p->t->threads) : UINT32_MAX;
        return;
    }
    if (iv->state == CTR_STATE_RUNNABLE && s->pending) {
        /* The runnable part of the pending wait, nested in its slice. */
        add(p, &(struct pf_item){.ts = iv->start_ns,
                                 .track = track,
                                 .kind = PF_BEGIN,
                                 .what = PF_WAIT_RUNNABLE,
                                 .thread = thread,
                                 .blocked = -1,
                                 .runnable = 1});
        add(p, &(struct pf_item){.ts = iv->end_ns,
                                 .track = track,
                                 .kind = PF_END,
                                 .what = PF_WAIT_RUNNABLE,
                                 .thread = thread,
                                 .runnable = -1});
        end_wait(p, thread, iv->end_ns, 0);
        return;
    }
    settle_wait(p, thread);
    int8_t runnable = 0;
    if (iv->state == CTR_STATE_RUNNABLE) {
        runnable = -1;
    } else if (!p->sched) {
        return;
    } else if (s->in_state != PF_RUNNING) {
        /* Running from a wait's switch-in to its Unblock: decided as the
         * wait ended, so never begun. */
        add(p, &(struct pf_item){.ts = iv->start_ns,
                                 .track = track,
                                 .kind = PF_BEGIN,
                                 .what = PF_RUNNING,
                                 .thread = thread});
    }
    add(p, &(struct pf_item){.ts = iv->end_ns,
                             .track = track,
                             .kind = PF_END,
                             .what = s->in_state ? s->in_state : PF_RUNNING,
                             .thread = thread,
                             .runnable = runnable});
    s->in_state = 0;
}

/* A release on `object` at e: an instant its waiters' flows start from. */
static void release(struct ctr_perfetto *p, uint32_t thread, const struct ctr_trace_event *e,
                    uint64_t object, uint64_t stack)
{
    uint64_t track = PF_TRACK(PF_TR_THREAD, thread);
    if (!pf_out_kept(p->out, track, e->ns))
        return;
    add(p, &(struct pf_item){.ts = e->ns,
                             .track = track,
                             .kind = PF_INSTANT,
                             .what = PF_RELEASE,
                             .thread = thread,
                             .a = object,
                             .b = stack,
                             .flow = PF_FLOW_RELEASE(++p->release_seq)});
}

/* ---------------------------------------------------------------------------
 * Regions and tasks
 * ------------------------------------------------------------------------- */

static struct pf_task *open_task(struct ctr_perfetto *p, uint64_t id)
{
    const uint64_t *v = ctr_idmap_get(&p->tasks, id);
    return v && *v ? (struct pf_task *)(uintptr_t)*v : NULL;
}

static void region_item(struct ctr_perfetto *p, uint32_t thread, uint64_t ts, int kind,
                        const struct ctr_open_region *r, int link)
{
    struct pf_item it = {.ts = ts,
                         .track = PF_TRACK(PF_TR_NOTES, thread),
                         .kind = (uint8_t)kind,
                         .what = PF_REGION,
                         .thread = thread,
                         .a = r->name_id,
                         .b = r->task};
    struct pf_task *task = link && r->task ? open_task(p, r->task) : NULL;
    if (task && task->nflows < PF_TASK_FLOWS_MAX && pf_out_kept(p->out, it.track, ts)) {
        it.flow = PF_FLOW_TASK(task->seq) + task->nflows++;
        it.nflows = 1;
    }
    add(p, &it);
}

static void region_begin(struct ctr_perfetto *p, uint32_t thread, uint64_t ts, uint64_t task,
                         uint64_t name)
{
    struct thread_state *s = &p->th[thread];
    if (ctr_grow(&s->regions, &s->cap, s->nregions + 1, sizeof(*s->regions)) != 0) {
        fail(p, -ENOMEM);
        return;
    }
    s->regions[s->nregions] = (struct ctr_open_region){task, name, ts, ctr_trace_name(p->t, name)};
    region_item(p, thread, ts, PF_BEGIN, &s->regions[s->nregions++], 1);
}

/* The region tasks.h's rule says a REGION_END ends; those inside it end
 * and begin again. */
static void region_end(struct ctr_perfetto *p, uint32_t thread, uint64_t ts, uint64_t task,
                       uint64_t name)
{
    struct thread_state *s = &p->th[thread];
    size_t at = ctr_region_ending(s->regions, s->nregions, task, name, ctr_trace_name(p->t, name));
    if (at == s->nregions)
        return; /* no such region open: ignored, as the task model does */
    for (size_t i = s->nregions; i > at; i--)
        region_item(p, thread, ts, PF_END, &s->regions[i - 1], 0);
    memmove(&s->regions[at], &s->regions[at + 1], (s->nregions - at - 1) * sizeof(*s->regions));
    s->nregions--;
    for (size_t i = at; i < s->nregions; i++)
        region_item(p, thread, ts, PF_BEGIN, &s->regions[i], 0);
}

static void regions_close(struct ctr_perfetto *p, uint32_t thread, uint64_t ts)
{
    struct thread_state *s = &p->th[thread];
    while (s->nregions)
        region_item(p, thread, ts, PF_END, &s->regions[--s->nregions], 0);
}

static int task_shown(const struct ctr_perfetto *p, uint64_t id)
{
    if (!p->o.tasks)
        return 1;
    size_t lo = 0, hi = p->o.ntasks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->o.tasks[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->o.ntasks && p->o.tasks[lo] == id;
}

static int keep_open_task(void *ctx, uint64_t id, uint64_t v)
{
    (void)ctx, (void)id;
    return v != 0;
}

static void task_begin(struct ctr_perfetto *p, uint32_t thread, const struct ctr_trace_event *e)
{
    uint64_t id = e->args[0];
    if (open_task(p, id) || !task_shown(p, id))
        return;
    struct pf_task *task = pf_out_task(p->out, ++p->task_seq);
    if (!task || ctr_idmap_put(&p->tasks, id, (uint64_t)(uintptr_t)task) != 0) {
        fail(p, -ENOMEM);
        return;
    }
    add(p, &(struct pf_item){.ts = e->ns,
                             .track = PF_TRACK(PF_TR_TASK, task->seq),
                             .kind = PF_BEGIN,
                             .what = PF_TASK,
                             .thread = thread,
                             .a = e->args[2],
                             .b = id,
                             .c = e->args[1],
                             .ext = task});
}

static void task_end(struct ctr_perfetto *p, uint64_t id, uint64_t ts)
{
    uint64_t *v = ctr_idmap_get(&p->tasks, id);
    struct pf_task *task = v && *v ? (struct pf_task *)(uintptr_t)*v : NULL;
    if (!task)
        return; /* begun before the trace, ended twice, or not shown */
    *v = 0;
    add(p, &(struct pf_item){.ts = ts,
                             .track = PF_TRACK(PF_TR_TASK, task->seq),
                             .kind = PF_END,
                             .what = PF_TASK,
                             .ext = task});
    /* Ended tasks leave the map now and then, so it holds the open ones. */
    if (++p->tasks_ended > 4096 && p->tasks_ended > p->tasks.n / 2) {
        fail(p, ctr_idmap_filter(&p->tasks, keep_open_task, NULL));
        p->tasks_ended = 0;
    }
}

/* At the end: a task still open ends with the trace (and leaves the map). */
static int close_task(void *ctx, uint64_t id, uint64_t v)
{
    struct ctr_perfetto *p = ctx;
    struct pf_task *task = (struct pf_task *)(uintptr_t)v;
    (void)id;
    if (task)
        add(p, &(struct pf_item){.ts = p->t->end_ns,
                                 .track = PF_TRACK(PF_TR_TASK, task->seq),
                                 .kind = PF_END,
                                 .what = PF_TASK,
                                 .ext = task});
    return 0;
}

/* ---------------------------------------------------------------------------
 * The consumer
 * ------------------------------------------------------------------------- */

static void on_event(void *ctx, const struct ctr_trace *t, uint32_t thread,
                     const struct ctr_trace_event *e)
{
    struct ctr_perfetto *p = ctx;
    struct thread_state *s = state_of(p, thread);
    if (!s || p->err)
        return;
    p->events++;
    settle_wait(p, thread);
    if (p->gap_open && e->ns >= p->gap_end) {
        add(p, &(struct pf_item){.ts = p->gap_end,
                                 .track = PF_TRACK(PF_TR_CTRACE, 0),
                                 .kind = PF_END,
                                 .what = PF_GAP});
        p->gap_open = 0;
    }
    const struct ctr_thread_info *th = &t->threads[thread];
    switch (e->type) {
    case CTR_EV_RELEASE:
        release(p, thread, e, e->args[0], e->args[1]);
        break;
    case CTR_EV_BLOCK:
        if (e->args[0] == CTR_REASON_BARRIER_WAIT) /* the last to arrive lets the others go */
            release(p, thread, e, e->args[1], e->args[2]);
        break;
    case CTR_EV_THREAD_END:
        if (th->handle)
            release(p, thread, e, th->handle, 0); /* its joiners go */
        regions_close(p, thread, e->ns);
        break;
    case CTR_EV_LOST:
        add(p, &(struct pf_item){.ts = e->ns,
                                 .track = PF_TRACK(PF_TR_THREAD, thread),
                                 .kind = PF_INSTANT,
                                 .what = PF_LOST,
                                 .thread = thread,
                                 .a = e->args[0]});
        break;
    case CTR_EV_CPU_SAMPLE: /* what the thread ran (FORMAT.md §4.1) */
        add(p, &(struct pf_item){.ts = e->ns,
                                 .track = PF_TRACK(PF_TR_THREAD, thread),
                                 .kind = PF_INSTANT,
                                 .what = PF_SAMPLE,
                                 .thread = thread,
                                 .a = e->args[1],
                                 .b = e->args[0]});
        break;
    case CTR_EV_REGION_BEGIN:
        region_begin(p, thread, e->ns, e->args[0], e->args[1]);
        break;
    case CTR_EV_REGION_END:
        region_end(p, thread, e->ns, e->args[0], e->args[1]);
        break;
    case CTR_EV_TASK_BEGIN:
        task_begin(p, thread, e);
        break;
    case CTR_EV_TASK_END:
        task_end(p, e->args[0], e->ns);
        break;
    case CTR_EV_LOG: {
        size_t len;
        const char *msg = ctr_event_payload(t, e, &len);
        char *copy = malloc(len ? len : 1);
        if (!copy) {
            fail(p, -ENOMEM);
            break;
        }
        if (len)
            memcpy(copy, msg, len);
        add(p, &(struct pf_item){.ts = e->ns,
                                 .track = PF_TRACK(PF_TR_NOTES, thread),
                                 .kind = PF_INSTANT,
                                 .what = PF_LOG,
                                 .thread = thread,
                                 .a = e->args[1],
                                 .b = e->args[0],
                                 .c = len,
                                 .ext = copy});
        if (p->err)
            free(copy);
        break;
    }
    default:
        break;
    }
}

static void on_gap(void *ctx, const struct ctr_trace *t, uint64_t from_ns, uint64_t to_ns)
{
    struct ctr_perfetto *p = ctx;
    (void)t;
    for (uint32_t i = 0; i < p->nth; i++)
        settle_wait(p, i);
    uint64_t from = from_ns;
    if (p->gap_open) { /* one still to end: it ends where this one begins */
        from = from > p->gap_end ? from : p->gap_end;
        add(p, &(struct pf_item){
                   .ts = from, .track = PF_TRACK(PF_TR_CTRACE, 0), .kind = PF_END, .what = PF_GAP});
    }
    add(p, &(struct pf_item){
               .ts = from, .track = PF_TRACK(PF_TR_CTRACE, 0), .kind = PF_BEGIN, .what = PF_GAP});
    p->gap_open = 1;
    p->gap_end = to_ns > from ? to_ns : from;
}

static void on_settle(void *ctx, uint64_t ns)
{
    struct ctr_perfetto *p = ctx;
    if (ns == UINT64_MAX)
        return; /* the end: ctr_perfetto_end() writes the rest */
    if (!p->err)
        fail(p, pf_out_settle(p->out, ns));
}

struct ctr_consumer ctr_perfetto_consumer(struct ctr_perfetto *p)
{
    return (struct ctr_consumer){.ctx = p,
                                 .event = on_event,
                                 .interval = on_interval,
                                 .begin = on_begin,
                                 .gap = on_gap,
                                 .settle = on_settle};
}

struct ctr_perfetto *ctr_perfetto_new(const struct ctr_perfetto_opts *o,
                                      const struct ctr_trace *walked, FILE *out)
{
    struct ctr_perfetto *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->o = *o;
    p->t = walked;
    p->sched = (o->model->flags & CTR_INFO_SCHED_SWITCHES) != 0;
    p->out = pf_out_new(&p->o, out);
    if (!p->out) {
        free(p);
        return NULL;
    }
    if (o->window_gens)
        add(p, &(struct pf_item){.ts = o->model->start_ns,
                                 .track = PF_TRACK(PF_TR_CTRACE, 0),
                                 .kind = PF_INSTANT,
                                 .what = PF_WINDOW,
                                 .a = o->window_gens});
    return p;
}

void ctr_perfetto_paths(struct ctr_perfetto *p, const struct ctr_cp_task *w, size_t n)
{
    p->paths = w;
    p->npaths = n;
}

int ctr_perfetto_end(struct ctr_perfetto *p, const struct ctr_trace *t,
                     struct ctr_perfetto_stats *st, char *err, size_t errlen)
{
    struct ctr_perfetto_stats none;
    st = st ? st : &none;
    memset(st, 0, sizeof(*st));
    (void)t; /* the trace walked, now complete */
    for (uint32_t i = 0; i < p->nth; i++) {
        settle_wait(p, i);
        regions_close(p, i, t->end_ns);
    }
    if (p->gap_open)
        add(p, &(struct pf_item){.ts = p->gap_end,
                                 .track = PF_TRACK(PF_TR_CTRACE, 0),
                                 .kind = PF_END,
                                 .what = PF_GAP});
    if (!p->err)
        fail(p, ctr_idmap_filter(&p->tasks, close_task, p));
    if (!p->err)
        fail(p, pf_out_paths(p->out, p->paths, p->npaths));
    int rc = p->err ? p->err : pf_out_end(p->out, st);
    st->events = p->events;
    st->unlinked = p->unlinked;
    if (rc)
        snprintf(err, errlen, "writing the timeline: %s", strerror(-rc));
    return rc;
}

void ctr_perfetto_free(struct ctr_perfetto *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nth; i++)
        free(p->th[i].regions);
    free(p->th);
    ctr_idmap_free(&p->tasks);
    pf_out_free(p->out);
    free(p);
}
