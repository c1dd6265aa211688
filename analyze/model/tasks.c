/* SPDX-License-Identifier: MIT */
/* tasks.c - tasks, regions and logs: the model, the windows of time they
 * give each thread, and where that time went (the breakdowns); the rules
 * are in tasks.h. The window algebra is windows.c's, `ctrace tasks` is
 * tasks_report.c.
 *
 * Building is two passes over every thread's events: TASK_BEGINs first (the
 * tasks, sorted by id), then ENDs, regions and logs, which find their task
 * by a binary search. Regions are matched per thread with a stack of the
 * open ones. A breakdown is one walk of the state machine for all the
 * tasks asked about, each interval measured against the windows of the
 * tasks that worked on its thread.
 */
#include "model/tasks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"
#include "model/cpucheck.h"
#include "read/state.h"

/* ================================================================ the model */

static int by_id(const void *pa, const void *pb)
{
    const struct ctr_task *a = pa, *b = pb;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return (a->begin_ns > b->begin_ns) - (a->begin_ns < b->begin_ns);
}

/* Threads compare by id, not by index: indexes follow the order a trace
 * names them in, ids are what the report shows. */
static int region_order(const void *pa, const void *pb)
{
    const struct ctr_region *a = pa, *b = pb;
    if (a->task != b->task)
        return a->task < b->task ? -1 : 1;
    if (a->thread_id != b->thread_id)
        return a->thread_id < b->thread_id ? -1 : 1;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    return (a->depth > b->depth) - (a->depth < b->depth);
}

static int log_order(const void *pa, const void *pb)
{
    const struct ctr_task_log *a = pa, *b = pb;
    if (a->task != b->task)
        return a->task < b->task ? -1 : 1;
    if (a->ns != b->ns)
        return a->ns < b->ns ? -1 : 1;
    return (a->thread_id > b->thread_id) - (a->thread_id < b->thread_id);
}

const struct ctr_task *ctr_tasks_find(const struct ctr_tasks *ts, uint64_t id)
{
    size_t lo = 0, hi = ts->ntasks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts->tasks[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ts->ntasks && ts->tasks[lo].id == id ? &ts->tasks[lo] : NULL;
}

uint64_t ctr_task_latency(const struct ctr_task *task)
{
    return task->end_ns > task->begin_ns ? task->end_ns - task->begin_ns : 0;
}

int ctr_task_by_slowest(const void *pa, const void *pb)
{
    const struct ctr_task *a = *(const struct ctr_task *const *)pa;
    const struct ctr_task *b = *(const struct ctr_task *const *)pb;
    uint64_t la = ctr_task_latency(a), lb = ctr_task_latency(b);
    if (la != lb)
        return la > lb ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* A region open on a thread. */
/* The regions open on one thread, innermost last. */
struct open_regions {
    struct ctr_open_region *r;
    size_t n, cap;
};

/* A TASK_END, applied once every TASK_BEGIN is in. */
struct task_end {
    uint64_t task, ns, thread_id, seq;
    uint32_t thread;
};

struct ctr_tasks_builder {
    const struct ctr_trace *t; /* the trace being read (its tables so far) */
    struct ctr_tasks *ts;
    size_t tasks_cap, regions_cap, logs_cap;
    struct open_regions *open; /* per thread index */
    size_t nopen;
    struct task_end *ends;
    size_t nends, ends_cap;
    int oom;
};

static int add_region(struct ctr_tasks_builder *b, uint32_t thread, const struct open_regions *o,
                      size_t depth, uint64_t end_ns, int open)
{
    struct ctr_tasks *ts = b->ts;
    if (ctr_grow(&ts->regions, &b->regions_cap, ts->nregions + 1, sizeof(*ts->regions)))
        return -ENOMEM;
    const struct ctr_open_region *r = &o->r[depth];
    ts->regions[ts->nregions++] =
        (struct ctr_region){.task = r->task,
                            .name = r->name,
                            .thread = thread,
                            .thread_id = b->t->threads[thread].id,
                            .depth = (unsigned)depth,
                            .start_ns = r->start_ns,
                            .end_ns = end_ns > r->start_ns ? end_ns : r->start_ns,
                            .open = open};
    ts->open_regions += open;
    return 0;
}

size_t ctr_region_ending(const struct ctr_open_region *r, size_t n, uint64_t task, uint64_t name_id,
                         const char *name)
{
    for (int any_task = 0; any_task < 2; any_task++)
        for (size_t k = n; k-- > 0;)
            if ((any_task || r[k].task == task) &&
                (r[k].name_id == name_id || strcmp(r[k].name, name) == 0))
                return k;
    return n;
}

static int end_region(struct ctr_tasks_builder *b, uint32_t thread, const struct ctr_trace_event *e)
{
    struct open_regions *o = &b->open[thread];
    size_t found =
        ctr_region_ending(o->r, o->n, e->args[0], e->args[1], ctr_trace_name(b->t, e->args[1]));
    if (found == o->n) {
        b->ts->region_ends_without_begin++;
        return 0;
    }
    if (add_region(b, thread, o, found, e->ns, 0))
        return -ENOMEM;
    memmove(&o->r[found], &o->r[found + 1], (o->n - found - 1) * sizeof(*o->r));
    o->n--;
    return 0;
}

static int close_open_regions(struct ctr_tasks_builder *b, uint32_t thread, uint64_t ns)
{
    struct open_regions *o = &b->open[thread];
    for (size_t k = 0; k < o->n; k++)
        if (add_region(b, thread, o, k, ns, 1))
            return -ENOMEM;
    o->n = 0;
    return 0;
}

static int on_task_event(struct ctr_tasks_builder *b, const struct ctr_trace *t, uint32_t i,
                         const struct ctr_trace_event *e)
{
    struct ctr_tasks *ts = b->ts;
    if (ctr_grow_zeroed(&b->open, &b->nopen, (size_t)i + 1, sizeof(*b->open)) != 0)
        return -ENOMEM;
    switch (e->type) {
    case CTR_EV_TASK_BEGIN:
        if (ctr_grow(&ts->tasks, &b->tasks_cap, ts->ntasks + 1, sizeof(*ts->tasks)))
            return -ENOMEM;
        ts->tasks[ts->ntasks++] = (struct ctr_task){.id = e->args[0],
                                                    .parent = e->args[1],
                                                    .type = ctr_trace_name(t, e->args[2]),
                                                    .begin_ns = e->ns,
                                                    .begin_thread = i,
                                                    .end_thread = UINT32_MAX};
        break;
    case CTR_EV_TASK_END:
        if (ctr_grow(&b->ends, &b->ends_cap, b->nends + 1, sizeof(*b->ends)))
            return -ENOMEM;
        b->ends[b->nends] = (struct task_end){e->args[0], e->ns, t->threads[i].id, b->nends, i};
        b->nends++;
        break;
    case CTR_EV_REGION_BEGIN: {
        struct open_regions *o = &b->open[i];
        if (ctr_grow(&o->r, &o->cap, o->n + 1, sizeof(*o->r)))
            return -ENOMEM;
        o->r[o->n++] =
            (struct ctr_open_region){e->args[0], e->args[1], e->ns, ctr_trace_name(t, e->args[1])};
        break;
    }
    case CTR_EV_REGION_END:
        return end_region(b, i, e);
    case CTR_EV_THREAD_END:
        return close_open_regions(b, i, e->ns);
    case CTR_EV_LOG: {
        size_t len;
        const char *msg = ctr_event_payload(t, e, &len);
        char *copy = malloc(msg && len ? len : 1); /* the frame it is in will go */
        if (!copy || ctr_grow(&ts->logs, &b->logs_cap, ts->nlogs + 1, sizeof(*ts->logs))) {
            free(copy);
            return -ENOMEM;
        }
        if (msg && len)
            memcpy(copy, msg, len);
        ts->logs[ts->nlogs++] = (struct ctr_task_log){
            e->args[0], e->ns,        i, t->threads[i].id, ctr_trace_name(t, e->args[1]),
            copy,       msg ? len : 0};
        break;
    }
    default:
        break;
    }
    return 0;
}

static void builder_event(void *ctx, const struct ctr_trace *t, uint32_t thread,
                          const struct ctr_trace_event *e)
{
    struct ctr_tasks_builder *b = ctx;
    b->t = t;
    if (!b->oom && e->type >= CTR_EV_THREAD_END && on_task_event(b, t, thread, e) != 0)
        b->oom = 1;
}

struct ctr_tasks_builder *ctr_tasks_builder_new(struct ctr_tasks *ts)
{
    *ts = (struct ctr_tasks){0};
    struct ctr_tasks_builder *b = calloc(1, sizeof(*b));
    if (b)
        b->ts = ts;
    return b;
}

struct ctr_consumer ctr_tasks_consumer(struct ctr_tasks_builder *b)
{
    return (struct ctr_consumer){.ctx = b, .event = builder_event};
}

static int by_thread_then_order(const void *pa, const void *pb)
{
    const struct task_end *a = pa, *b = pb;
    if (a->thread_id != b->thread_id)
        return a->thread_id < b->thread_id ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* TASK_ENDs, in the order of the threads' ids and of their events. */
static void apply_ends(struct ctr_tasks_builder *b)
{
    struct ctr_tasks *ts = b->ts;
    if (b->nends > 1)
        qsort(b->ends, b->nends, sizeof(*b->ends), by_thread_then_order);
    for (size_t k = 0; k < b->nends; k++) {
        const struct task_end *e = &b->ends[k];
        struct ctr_task *task = (struct ctr_task *)ctr_tasks_find(ts, e->task);
        if (!task) {
            ts->ends_without_begin++;
        } else if (task->ended) {
            ts->ends_without_begin++; /* ended twice: the earlier end wins */
            if (e->ns < task->end_ns) {
                task->end_ns = e->ns;
                task->end_thread = e->thread;
            }
        } else {
            task->ended = 1;
            task->end_ns = e->ns;
            task->end_thread = e->thread;
        }
    }
}

int ctr_tasks_builder_end(struct ctr_tasks_builder *b, const struct ctr_trace *t)
{
    struct ctr_tasks *ts = b->ts;
    int rc = b->oom ? -ENOMEM : 0;
    b->t = t;
    for (size_t i = 0; rc == 0 && i < b->nopen; i++)
        rc = close_open_regions(b, (uint32_t)i, t->end_ns);
    if (rc == 0) {
        if (ts->ntasks > 1) {
            qsort(ts->tasks, ts->ntasks, sizeof(*ts->tasks), by_id);
            size_t n = 1; /* ids are unique; a repeated one keeps its first begin */
            for (size_t i = 1; i < ts->ntasks; i++)
                if (ts->tasks[i].id != ts->tasks[n - 1].id)
                    ts->tasks[n++] = ts->tasks[i];
            ts->ntasks = n;
        }
        for (size_t i = 0; i < ts->ntasks; i++)
            ts->tasks[i].end_ns = t->end_ns; /* open until an end says otherwise */
        apply_ends(b);
        if (ts->nregions > 1)
            qsort(ts->regions, ts->nregions, sizeof(*ts->regions), region_order);
        if (ts->nlogs > 1)
            qsort(ts->logs, ts->nlogs, sizeof(*ts->logs), log_order);
        /* Each task's slice of the regions and logs (all three sorted by task). */
        size_t r = 0, l = 0;
        for (size_t i = 0; i < ts->ntasks; i++) {
            struct ctr_task *task = &ts->tasks[i];
            while (r < ts->nregions && ts->regions[r].task < task->id)
                r++;
            task->region0 = r;
            while (r < ts->nregions && ts->regions[r].task == task->id)
                r++;
            task->nregions = r - task->region0;
            while (l < ts->nlogs && ts->logs[l].task < task->id)
                l++;
            task->log0 = l;
            while (l < ts->nlogs && ts->logs[l].task == task->id)
                l++;
            task->nlogs = l - task->log0;
        }
    }
    for (size_t i = 0; i < b->nopen; i++)
        free(b->open[i].r);
    free(b->open);
    free(b->ends);
    free(b);
    if (rc)
        ctr_tasks_free(ts);
    return rc;
}

int ctr_tasks_build(const struct ctr_trace *t, struct ctr_tasks *ts)
{
    struct ctr_tasks_builder *b = ctr_tasks_builder_new(ts);
    if (!b)
        return -ENOMEM;
    struct ctr_consumer c = ctr_tasks_consumer(b);
    int rc = ctr_trace_replay(t, &c, 1, NULL);
    int end = ctr_tasks_builder_end(b, t);
    if (rc) {
        if (end == 0)
            ctr_tasks_free(ts);
        return rc;
    }
    return end;
}

void ctr_tasks_free(struct ctr_tasks *ts)
{
    for (size_t i = 0; i < ts->nlogs; i++)
        free((void *)ts->logs[i].msg);
    free(ts->tasks);
    free(ts->regions);
    free(ts->logs);
    *ts = (struct ctr_tasks){0};
}

/* ================================================================ task windows */

int ctr_task_windows(const struct ctr_tasks *ts, const struct ctr_task *task,
                     struct ctr_windows *ws)
{
    if (task->nregions == 0)
        return ctr_windows_add(ws, task->begin_thread, task->begin_ns, task->end_ns);
    for (size_t r = task->region0; r < task->region0 + task->nregions; r++) {
        const struct ctr_region *rg = &ts->regions[r];
        if (ctr_windows_add(ws, rg->thread, rg->start_ns, rg->end_ns))
            return -ENOMEM;
    }
    return 0;
}

int ctr_tasks_windows(const struct ctr_trace *t, const struct ctr_tasks *ts, const char *type,
                      uint64_t latmin_ns, struct ctr_windows *ws, size_t *matched)
{
    *ws = (struct ctr_windows){0};
    size_t m = 0;
    for (size_t i = 0; i < ts->ntasks; i++) {
        const struct ctr_task *task = &ts->tasks[i];
        if ((type && strcmp(task->type, type) != 0) || ctr_task_latency(task) < latmin_ns)
            continue;
        m++;
        if (ctr_task_windows(ts, task, ws))
            goto fail;
    }
    if (ctr_windows_finish(ws, t->nthreads))
        goto fail;
    if (matched)
        *matched = m;
    return 0;
fail:
    ctr_windows_free(ws);
    return -ENOMEM;
}

int ctr_region_windows(const struct ctr_trace *t, const struct ctr_tasks *ts, const char *name,
                       struct ctr_windows *ws, size_t *matched)
{
    *ws = (struct ctr_windows){0};
    size_t m = 0;
    for (size_t r = 0; r < ts->nregions; r++) {
        const struct ctr_region *rg = &ts->regions[r];
        if (strcmp(rg->name, name) != 0)
            continue;
        m++;
        if (ctr_windows_add(ws, rg->thread, rg->start_ns, rg->end_ns))
            goto fail;
    }
    if (ctr_windows_finish(ws, t->nthreads))
        goto fail;
    if (matched)
        *matched = m;
    return 0;
fail:
    ctr_windows_free(ws);
    return -ENOMEM;
}

/* ================================================================ breakdowns */

/* ns of running interval [from_ns, to_ns) on thread th counted for task
 * out[task]. */
struct running_piece {
    size_t task;
    uint32_t th;
    uint64_t from_ns, to_ns, ns;
};

struct ctr_tasks_breakdown_walk {
    const struct ctr_trace *t; /* the trace walked */
    struct ctr_windows *win;   /* one set per task */
    struct ctr_task_breakdown *out;
    size_t n, nthreads;
    size_t *by_thread, *by_thread0; /* tasks with windows on thread th: */
                                    /* by_thread[by_thread0[th] .. by_thread0[th+1]-1] */
    struct ctr_cpucheck *cpu;       /* running time against CPU time */
    struct ctr_consumer check;      /* its consumer, fed by the walk's */
    struct running_piece *pieces;   /* running time for a task, until the */
    size_t npieces, cap;            /* check has judged its windows */
    int oom;
};

/* A CPU sample counts for every task whose windows keep it. */
static void bd_event(void *ctx, const struct ctr_trace *t, uint32_t th,
                     const struct ctr_trace_event *e)
{
    struct ctr_tasks_breakdown_walk *w = ctx;
    if (e->type != CTR_EV_CPU_SAMPLE || th >= w->nthreads)
        return;
    for (size_t k = w->by_thread0[th]; k < w->by_thread0[th + 1]; k++) {
        size_t i = w->by_thread[k];
        if (ctr_windows_keep_sample(&w->win[i], th, e->ns) &&
            ctr_cpu_leaves_add(&w->out[i].cpu, t, e->args[0], e->args[1]) != 0)
            w->oom = 1;
    }
}

void ctr_task_breakdowns_free(struct ctr_task_breakdown *b, size_t n)
{
    for (size_t i = 0; b && i < n; i++)
        ctr_cpu_leaves_free(&b[i].cpu);
}

static void bd_interval(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_tasks_breakdown_walk *w = ctx;
    if (w->cpu)
        w->check.interval(w->check.ctx, iv);
    uint32_t th = (uint32_t)(iv->thread - w->t->threads);
    if (th >= w->nthreads)
        return; /* a thread the model never saw works for none of its tasks */
    for (size_t k = w->by_thread0[th]; k < w->by_thread0[th + 1]; k++) {
        size_t i = w->by_thread[k];
        uint64_t ns = ctr_windows_overlap(&w->win[i], th, iv->start_ns, iv->end_ns);
        if (!ns)
            continue;
        enum ctr_time_kind kind = ctr_time_kind_of(iv);
        w->out[i].times[kind] += ns;
        if (kind != CTR_TIME_RUNNING)
            continue;
        if (ctr_grow(&w->pieces, &w->cap, w->npieces + 1, sizeof(*w->pieces)) != 0) {
            w->oom = 1;
            return;
        }
        w->pieces[w->npieces++] = (struct running_piece){i, th, iv->start_ns, iv->end_ns, ns};
    }
}

static void bd_cputime(void *ctx, const struct ctr_trace *t, uint32_t th,
                       const struct ctr_cpu_reading *r)
{
    struct ctr_tasks_breakdown_walk *w = ctx;
    w->check.cputime(w->check.ctx, t, th, r);
}

static void bd_settle(void *ctx, uint64_t ns)
{
    struct ctr_tasks_breakdown_walk *w = ctx;
    w->check.settle(w->check.ctx, ns);
}

int ctr_tasks_breakdown_finish(struct ctr_tasks_breakdown_walk *w)
{
    if (w->oom || ctr_cpucheck_finish(w->cpu) != 0)
        return -ENOMEM;
    /* A piece's share of its interval's moved time is its share of the
     * interval (the task's windows cover part of it). */
    for (size_t k = 0; k < w->npieces; k++) {
        const struct running_piece *p = &w->pieces[k];
        uint64_t runnable, off, span = p->to_ns - p->from_ns;
        ctr_cpucheck_split(w->cpu, p->th, p->from_ns, p->to_ns, &runnable, &off);
        if (p->ns < span) {
            runnable = (uint64_t)((unsigned __int128)runnable * p->ns / span);
            off = (uint64_t)((unsigned __int128)off * p->ns / span);
        }
        ctr_time_move(w->out[p->task].times, runnable, off);
    }
    w->npieces = 0;
    return 0;
}

void ctr_tasks_breakdown_free(struct ctr_tasks_breakdown_walk *w)
{
    if (!w)
        return;
    for (size_t i = 0; w->win && i < w->n; i++)
        ctr_windows_free(&w->win[i]);
    free(w->win);
    free(w->by_thread);
    free(w->by_thread0);
    free(w->pieces);
    ctr_cpucheck_free(w->cpu);
    free(w);
}

struct ctr_tasks_breakdown_walk *ctr_tasks_breakdown_new(const struct ctr_trace *t,
                                                         const struct ctr_tasks *ts,
                                                         const struct ctr_task *const *tasks,
                                                         size_t n, struct ctr_task_breakdown *out)
{
    struct ctr_tasks_breakdown_walk *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    *w = (struct ctr_tasks_breakdown_walk){.out = out, .n = n, .nthreads = t->nthreads};
    w->win = calloc(n ? n : 1, sizeof(*w->win));
    w->by_thread0 = calloc(t->nthreads + 1, sizeof(*w->by_thread0));
    if (!w->win || !w->by_thread0)
        goto fail;
    size_t pairs = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = (struct ctr_task_breakdown){0};
        if (ctr_task_windows(ts, tasks[i], &w->win[i]) ||
            ctr_windows_finish(&w->win[i], t->nthreads))
            goto fail;
        for (size_t th = 0; th < t->nthreads; th++)
            if (w->win[i].first[th] < w->win[i].first[th + 1]) {
                w->by_thread0[th + 1]++;
                out[i].nthreads++;
                pairs++;
            }
    }
    for (size_t th = 0; th < t->nthreads; th++)
        w->by_thread0[th + 1] += w->by_thread0[th];
    w->by_thread = calloc(pairs ? pairs : 1, sizeof(*w->by_thread));
    size_t *fill = calloc(t->nthreads + 1, sizeof(*fill));
    if (!w->by_thread || !fill) {
        free(fill);
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t th = 0; th < t->nthreads; th++)
            if (w->win[i].first[th] < w->win[i].first[th + 1])
                w->by_thread[w->by_thread0[th] + fill[th]++] = i;
    free(fill);
    return w;
fail:
    ctr_tasks_breakdown_free(w);
    return NULL;
}

struct ctr_consumer ctr_tasks_breakdown_consumer(struct ctr_tasks_breakdown_walk *w,
                                                 const struct ctr_trace *walked)
{
    w->t = walked;
    /* The check counts threads of the trace walked. */
    ctr_cpucheck_free(w->cpu);
    if (!(w->cpu = ctr_cpucheck_new(walked)))
        w->oom = 1;
    else
        ctr_cpucheck_keep(w->cpu);
    w->check = w->cpu ? ctr_cpucheck_consumer(w->cpu) : (struct ctr_consumer){0};
    return (struct ctr_consumer){.ctx = w,
                                 .interval = bd_interval,
                                 .event = bd_event,
                                 .cputime = w->cpu ? bd_cputime : NULL,
                                 .settle = w->cpu ? bd_settle : NULL};
}

int ctr_tasks_breakdown(const struct ctr_trace *t, const struct ctr_tasks *ts,
                        const struct ctr_task *const *tasks, size_t n,
                        struct ctr_task_breakdown *out)
{
    struct ctr_tasks_breakdown_walk *w = ctr_tasks_breakdown_new(t, ts, tasks, n, out);
    if (!w)
        return -ENOMEM;
    struct ctr_consumer c = ctr_tasks_breakdown_consumer(w, t);
    int rc = ctr_trace_replay(t, &c, 1, NULL);
    if (rc == 0)
        rc = ctr_tasks_breakdown_finish(w);
    ctr_tasks_breakdown_free(w);
    return rc;
}
