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
#include "tasks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "ctrace_grow.h"

static const char *str(const struct ctr_trace *t, uint64_t id)
{
    const char *s = id ? ctr_trace_string(t, id) : NULL;
    return s ? s : "";
}

/* ================================================================ the model */

static int by_id(const void *pa, const void *pb)
{
    const struct ctr_task *a = pa, *b = pb;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return (a->begin_ns > b->begin_ns) - (a->begin_ns < b->begin_ns);
}

static int region_order(const void *pa, const void *pb)
{
    const struct ctr_region *a = pa, *b = pb;
    if (a->task != b->task)
        return a->task < b->task ? -1 : 1;
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
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
    return (a->thread > b->thread) - (a->thread < b->thread);
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

/* The regions open on one thread, innermost last. */
struct open_region {
    uint64_t task, name_id, start_ns;
};

struct builder {
    const struct ctr_trace *t;
    struct ctr_tasks *ts;
    size_t tasks_cap, regions_cap, logs_cap;
    struct open_region *open;
    size_t nopen, open_cap;
};

static int add_region(struct builder *b, uint32_t thread, size_t depth, uint64_t end_ns, int open)
{
    struct ctr_tasks *ts = b->ts;
    if (ctr_grow(&ts->regions, &b->regions_cap, ts->nregions + 1, sizeof(*ts->regions)))
        return -ENOMEM;
    const struct open_region *o = &b->open[depth];
    ts->regions[ts->nregions++] = (struct ctr_region){
        .task = o->task, .name = str(b->t, o->name_id), .thread = thread,
        .depth = (unsigned)depth, .start_ns = o->start_ns,
        .end_ns = end_ns > o->start_ns ? end_ns : o->start_ns, .open = open};
    ts->open_regions += open;
    return 0;
}

/* REGION_END: the innermost open region of the same task and name, else of
 * the same name. */
static int end_region(struct builder *b, uint32_t thread, const struct ctr_trace_event *e)
{
    const struct ctr_trace *t = b->t;
    const char *name = str(t, e->args[1]);
    size_t found = SIZE_MAX;
    for (size_t pass = 0; pass < 2 && found == SIZE_MAX; pass++)
        for (size_t k = b->nopen; k-- > 0;) {
            const struct open_region *o = &b->open[k];
            if ((pass == 1 || o->task == e->args[0]) &&
                (o->name_id == e->args[1] || strcmp(str(t, o->name_id), name) == 0)) {
                found = k;
                break;
            }
        }
    if (found == SIZE_MAX) {
        b->ts->region_ends_without_begin++;
        return 0;
    }
    if (add_region(b, thread, found, e->ns, 0))
        return -ENOMEM;
    memmove(&b->open[found], &b->open[found + 1], (b->nopen - found - 1) * sizeof(*b->open));
    b->nopen--;
    return 0;
}

static int close_open_regions(struct builder *b, uint32_t thread, uint64_t ns)
{
    for (size_t k = 0; k < b->nopen; k++)
        if (add_region(b, thread, k, ns, 1))
            return -ENOMEM;
    b->nopen = 0;
    return 0;
}

/* The second pass over one thread: ends, regions, logs. */
static int scan_thread(struct builder *b, uint32_t i)
{
    const struct ctr_trace *t = b->t;
    struct ctr_tasks *ts = b->ts;
    const struct ctr_thread_info *th = &t->threads[i];
    b->nopen = 0;
    for (size_t k = 0; k < th->nevents; k++) {
        const struct ctr_trace_event *e = &th->events[k];
        switch (e->type) {
        case CTR_EV_TASK_END: {
            struct ctr_task *task = (struct ctr_task *)ctr_tasks_find(ts, e->args[0]);
            if (!task) {
                ts->ends_without_begin++;
            } else if (task->ended) {
                ts->ends_without_begin++; /* ended twice: the earlier end wins */
                if (e->ns < task->end_ns) {
                    task->end_ns = e->ns;
                    task->end_thread = i;
                }
            } else {
                task->ended = 1;
                task->end_ns = e->ns;
                task->end_thread = i;
            }
            break;
        }
        case CTR_EV_REGION_BEGIN:
            if (ctr_grow(&b->open, &b->open_cap, b->nopen + 1, sizeof(*b->open)))
                return -ENOMEM;
            b->open[b->nopen++] = (struct open_region){e->args[0], e->args[1], e->ns};
            break;
        case CTR_EV_REGION_END:
            if (end_region(b, i, e))
                return -ENOMEM;
            break;
        case CTR_EV_THREAD_END:
            if (close_open_regions(b, i, e->ns))
                return -ENOMEM;
            break;
        case CTR_EV_LOG: {
            if (ctr_grow(&ts->logs, &b->logs_cap, ts->nlogs + 1, sizeof(*ts->logs)))
                return -ENOMEM;
            size_t len;
            const char *msg = ctr_event_payload(t, e, &len);
            ts->logs[ts->nlogs++] = (struct ctr_task_log){
                e->args[0], e->ns, i, str(t, e->args[1]), msg ? msg : "", msg ? len : 0};
            break;
        }
        default:
            break;
        }
    }
    return close_open_regions(b, i, t->end_ns);
}

int ctr_tasks_build(const struct ctr_trace *t, struct ctr_tasks *ts)
{
    *ts = (struct ctr_tasks){0};
    struct builder b = {.t = t, .ts = ts};
    int rc = -ENOMEM;
    for (size_t i = 0; i < t->nthreads; i++) {
        const struct ctr_thread_info *th = &t->threads[i];
        for (size_t k = 0; k < th->nevents; k++) {
            const struct ctr_trace_event *e = &th->events[k];
            if (e->type != CTR_EV_TASK_BEGIN)
                continue;
            if (ctr_grow(&ts->tasks, &b.tasks_cap, ts->ntasks + 1, sizeof(*ts->tasks)))
                goto fail;
            ts->tasks[ts->ntasks++] = (struct ctr_task){
                .id = e->args[0], .parent = e->args[1], .type = str(t, e->args[2]),
                .begin_ns = e->ns, .end_ns = t->end_ns, .begin_thread = (uint32_t)i,
                .end_thread = UINT32_MAX};
        }
    }
    if (ts->ntasks > 1) {
        qsort(ts->tasks, ts->ntasks, sizeof(*ts->tasks), by_id);
        size_t n = 1; /* ids are unique; a repeated one keeps its first begin */
        for (size_t i = 1; i < ts->ntasks; i++)
            if (ts->tasks[i].id != ts->tasks[n - 1].id)
                ts->tasks[n++] = ts->tasks[i];
        ts->ntasks = n;
    }
    for (size_t i = 0; i < t->nthreads; i++)
        if (scan_thread(&b, (uint32_t)i))
            goto fail;
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
    rc = 0;
fail:
    free(b.open);
    if (rc)
        ctr_tasks_free(ts);
    return rc;
}

void ctr_tasks_free(struct ctr_tasks *ts)
{
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

struct bd_walk {
    const struct ctr_trace *t;
    const struct ctr_windows *win;     /* one set per task */
    struct ctr_task_breakdown *out;
    size_t *by_thread, *by_thread0;    /* tasks with windows on thread th: */
                                       /* by_thread[by_thread0[th] .. by_thread0[th+1]-1] */
};

static void bd_interval(void *ctx, const struct ctr_interval *iv)
{
    struct bd_walk *w = ctx;
    uint32_t th = (uint32_t)(iv->thread - w->t->threads);
    for (size_t k = w->by_thread0[th]; k < w->by_thread0[th + 1]; k++) {
        size_t i = w->by_thread[k];
        uint64_t ns = ctr_windows_overlap(&w->win[i], th, iv->start_ns, iv->end_ns);
        if (!ns)
            continue;
        struct ctr_task_breakdown *b = &w->out[i];
        if (iv->state == CTR_STATE_RUNNING) {
            b->running += ns;
        } else if (iv->state == CTR_STATE_RUNNABLE) {
            b->runnable += ns;
        } else {
            uint8_t cls =
                iv->reason < CTR_REASON_LIMIT ? ctr_reason_specs[iv->reason].wait_class : 0;
            if (cls == CTR_CLASS_NET)
                b->net += ns;
            else if (cls == CTR_CLASS_SYSCALL)
                b->syscall += ns;
            else if (cls == CTR_CLASS_SLEEP)
                b->sleep += ns;
            else
                b->sync += ns;
        }
    }
}

int ctr_tasks_breakdown(const struct ctr_trace *t, const struct ctr_tasks *ts,
                        const struct ctr_task *const *tasks, size_t n,
                        struct ctr_task_breakdown *out)
{
    int rc = -ENOMEM;
    struct bd_walk w = {.t = t, .out = out};
    struct ctr_windows *win = calloc(n ? n : 1, sizeof(*win));
    w.by_thread0 = calloc(t->nthreads + 1, sizeof(*w.by_thread0));
    if (!win || !w.by_thread0)
        goto done;
    w.win = win;
    size_t pairs = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = (struct ctr_task_breakdown){0};
        if (ctr_task_windows(ts, tasks[i], &win[i]) || ctr_windows_finish(&win[i], t->nthreads))
            goto done;
        for (size_t th = 0; th < t->nthreads; th++)
            if (win[i].first[th] < win[i].first[th + 1]) {
                w.by_thread0[th + 1]++;
                out[i].nthreads++;
                pairs++;
            }
    }
    for (size_t th = 0; th < t->nthreads; th++)
        w.by_thread0[th + 1] += w.by_thread0[th];
    w.by_thread = calloc(pairs ? pairs : 1, sizeof(*w.by_thread));
    size_t *fill = calloc(t->nthreads + 1, sizeof(*fill));
    if (!w.by_thread || !fill) {
        free(fill);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t th = 0; th < t->nthreads; th++)
            if (win[i].first[th] < win[i].first[th + 1])
                w.by_thread[w.by_thread0[th] + fill[th]++] = i;
    free(fill);
    if (ctr_state_walk(t, bd_interval, &w) != UINT64_MAX)
        rc = 0;
done:
    if (win)
        for (size_t i = 0; i < n; i++)
            ctr_windows_free(&win[i]);
    free(win);
    free(w.by_thread);
    free(w.by_thread0);
    return rc;
}
