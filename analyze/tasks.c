/* tasks.c - tasks, regions and logs (the model, the windows they give each
 * thread, and `ctrace tasks`); the rules are in tasks.h.
 *
 * Building is two passes over every thread's events: TASK_BEGINs first (the
 * tasks, sorted by id), then ENDs, regions and logs, which find their task
 * by a binary search. Regions are matched per thread with a stack of the
 * open ones. A window set is kept sorted by (thread, start) and merged, so
 * that how much of an interval it keeps is a binary search away.
 */
#include "tasks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "ctrace_grow.h"
#include "text.h"

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

/* ================================================================ windows */

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

/* ================================================================ writing */

/* s (len bytes) with control characters escaped; UTF-8 passes as it is. */
static void put_clean(FILE *out, const char *s, size_t len, int tsv)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != 0x7f)
            fputc(c, out);
        else if (tsv)
            fputc(' ', out);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else
            fprintf(out, "\\x%02x", c);
    }
}

static void put_str(FILE *out, const char *s, int tsv)
{
    put_clean(out, s, strlen(s), tsv);
}

/* Tasks grouped by type, each type's ended ones by latency. */
static int by_type_latency(const void *pa, const void *pb)
{
    const struct ctr_task *a = *(const struct ctr_task *const *)pa;
    const struct ctr_task *b = *(const struct ctr_task *const *)pb;
    int c = strcmp(a->type, b->type);
    if (c)
        return c;
    if (a->ended != b->ended)
        return a->ended ? -1 : 1;
    uint64_t la = ctr_task_latency(a), lb = ctr_task_latency(b);
    if (la != lb)
        return la < lb ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Slowest first (an open task by its age), then by id. */
static int by_slowest(const void *pa, const void *pb)
{
    const struct ctr_task *a = *(const struct ctr_task *const *)pa;
    const struct ctr_task *b = *(const struct ctr_task *const *)pb;
    uint64_t la = ctr_task_latency(a), lb = ctr_task_latency(b);
    if (la != lb)
        return la > lb ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Nearest rank: the smallest of the n sorted values that at least p% of
 * them do not exceed. */
static uint64_t percentile(const struct ctr_task *const *sorted, size_t n, unsigned p)
{
    size_t rank = (p * n + 99) / 100;
    return ctr_task_latency(sorted[rank ? rank - 1 : 0]);
}

struct type_row {
    const char *type;
    size_t first, nended, nopen;  /* in the sorted task list */
};

static void put_thread(FILE *out, const struct ctr_trace *t, uint32_t i)
{
    const struct ctr_thread_info *th = &t->threads[i];
    fprintf(out, "thread %" PRIu64, th->id);
    if (th->name && th->name[0]) {
        fputs(" (", out);
        put_str(out, th->name, 0);
        fputc(')', out);
    }
}

struct region_sum {
    const char *name;
    uint64_t ns;
    size_t count;
    int open;
};

static int by_region_time(const void *pa, const void *pb)
{
    const struct region_sum *a = pa, *b = pb;
    if (a->ns != b->ns)
        return a->ns > b->ns ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int put_instance(FILE *out, const struct ctr_trace *t, const struct ctr_tasks *ts,
                        const struct ctr_task *task, const struct ctr_task_breakdown *b)
{
    char d[7][32];
    fprintf(out, "task %" PRIu64 " ", task->id);
    put_str(out, task->type, 0);
    if (task->ended)
        fprintf(out, ": %s", ctr_text_ns((int64_t)ctr_task_latency(task), d[0], sizeof(d[0])));
    else
        fprintf(out, ": open, %s at the end of the trace",
                ctr_text_ns((int64_t)ctr_task_latency(task), d[0], sizeof(d[0])));
    if (task->parent) {
        const struct ctr_task *p = ctr_tasks_find(ts, task->parent);
        fprintf(out, ", parent %" PRIu64, task->parent);
        if (p) {
            fputs(" (", out);
            put_str(out, p->type, 0);
            fputc(')', out);
        }
    }
    fputc('\n', out);
    fprintf(out, "    began    +%s on ",
            ctr_text_ns((int64_t)(task->begin_ns - t->start_ns), d[0], sizeof(d[0])));
    put_thread(out, t, task->begin_thread);
    if (task->ended) {
        fprintf(out, ", ended +%s on ",
                ctr_text_ns((int64_t)(task->end_ns - t->start_ns), d[0], sizeof(d[0])));
        put_thread(out, t, task->end_thread);
    }
    fputc('\n', out);
    uint64_t total = b->running + b->runnable + b->sync + b->net + b->syscall + b->sleep;
    fprintf(out, "    time     %s on %zu thread%s: running %s, runnable %s, sync %s, net %s, "
                 "syscall %s, sleep %s\n",
            ctr_text_ns((int64_t)total, d[0], sizeof(d[0])), b->nthreads,
            b->nthreads == 1 ? "" : "s", ctr_text_ns((int64_t)b->running, d[1], sizeof(d[1])),
            ctr_text_ns((int64_t)b->runnable, d[2], sizeof(d[2])),
            ctr_text_ns((int64_t)b->sync, d[3], sizeof(d[3])),
            ctr_text_ns((int64_t)b->net, d[4], sizeof(d[4])),
            ctr_text_ns((int64_t)b->syscall, d[5], sizeof(d[5])),
            ctr_text_ns((int64_t)b->sleep, d[6], sizeof(d[6])));
    /* Time per region name: merge the task's regions by name. */
    struct region_sum *sums = calloc(task->nregions ? task->nregions : 1, sizeof(*sums));
    if (!sums)
        return -ENOMEM;
    size_t nsums = 0, width = 0;
    for (size_t r = task->region0; r < task->region0 + task->nregions; r++) {
        const struct ctr_region *rg = &ts->regions[r];
        const char *name = rg->name[0] ? rg->name : "(unnamed)";
        size_t k = 0;
        while (k < nsums && strcmp(sums[k].name, name) != 0)
            k++;
        if (k == nsums) {
            sums[nsums++] = (struct region_sum){name, 0, 0, 0};
            if (strlen(name) > width)
                width = strlen(name);
        }
        sums[k].ns += rg->end_ns - rg->start_ns;
        sums[k].count++;
        sums[k].open |= rg->open;
    }
    if (nsums > 1)
        qsort(sums, nsums, sizeof(*sums), by_region_time);
    for (size_t k = 0; k < nsums; k++) {
        fputs("    region   ", out);
        put_str(out, sums[k].name, 0);
        fprintf(out, "%*s  %9s", (int)(width - strlen(sums[k].name)), "",
                ctr_text_ns((int64_t)sums[k].ns, d[0], sizeof(d[0])));
        if (sums[k].count > 1)
            fprintf(out, "  %zux", sums[k].count);
        if (sums[k].open)
            fputs("  (left open)", out);
        fputc('\n', out);
    }
    free(sums);
    for (size_t l = task->log0; l < task->log0 + task->nlogs; l++) {
        const struct ctr_task_log *lg = &ts->logs[l];
        int64_t at = lg->ns >= task->begin_ns ? (int64_t)(lg->ns - task->begin_ns)
                                              : -(int64_t)(task->begin_ns - lg->ns);
        fprintf(out, "    log      %s%-9s  ", at < 0 ? "-" : "+",
                ctr_text_ns(at < 0 ? -at : at, d[0], sizeof(d[0])));
        put_str(out, lg->category, 0);
        fputs(": ", out);
        put_clean(out, lg->msg, lg->len, 0);
        fputc('\n', out);
    }
    return 0;
}

int ctr_tasks_write(const struct ctr_trace *t, const struct ctr_tasks_opts *o, FILE *out,
                    char *err, size_t errlen)
{
    struct ctr_tasks ts;
    const struct ctr_task **sorted = NULL, **slow = NULL;
    struct type_row *rows = NULL;
    struct ctr_task_breakdown *bd = NULL;
    int rc = ctr_tasks_build(t, &ts);
    if (rc)
        goto done;
    rc = -ENOMEM;
    size_t n = 0, nslow = 0, nrows = 0;
    sorted = calloc(ts.ntasks ? ts.ntasks : 1, sizeof(*sorted));
    slow = calloc(ts.ntasks ? ts.ntasks : 1, sizeof(*slow));
    rows = calloc(ts.ntasks ? ts.ntasks : 1, sizeof(*rows));
    if (!sorted || !slow || !rows)
        goto done;
    for (size_t i = 0; i < ts.ntasks; i++) {
        const struct ctr_task *task = &ts.tasks[i];
        if (o->type && strcmp(task->type, o->type) != 0)
            continue;
        sorted[n++] = task;
        if (ctr_task_latency(task) >= o->latmin_ns)
            slow[nslow++] = task;
    }
    if (n > 1)
        qsort(sorted, n, sizeof(*sorted), by_type_latency);
    size_t nended = 0, nopen = 0, width = 4;
    for (size_t i = 0; i < n; i++) {
        if (!nrows || strcmp(rows[nrows - 1].type, sorted[i]->type) != 0) {
            rows[nrows++] = (struct type_row){sorted[i]->type, i, 0, 0};
            if (strlen(sorted[i]->type) > width)
                width = strlen(sorted[i]->type);
        }
        if (sorted[i]->ended)
            rows[nrows - 1].nended++, nended++;
        else
            rows[nrows - 1].nopen++, nopen++;
    }

    if (o->tsv) {
        fputs("# type\tcount\tp50_ns\tp90_ns\tp99_ns\tmax_ns\n", out);
        for (size_t r = 0; r < nrows; r++) {
            const struct type_row *row = &rows[r];
            const struct ctr_task *const *lat = &sorted[row->first];
            put_str(out, row->type, 1);
            if (row->nended)
                fprintf(out, "\t%zu\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
                        row->nended, percentile(lat, row->nended, 50),
                        percentile(lat, row->nended, 90), percentile(lat, row->nended, 99),
                        ctr_task_latency(lat[row->nended - 1]));
            else
                fputs("\t0\t0\t0\t0\t0\n", out);
        }
        rc = 0;
        goto done;
    }

    char d[4][32];
    if (n == 0) {
        fputs("no tasks", out);
        if (o->type) {
            fputs(" of type ", out);
            put_str(out, o->type, 0);
        }
        fputs(" in the trace\n", out);
    } else {
        fprintf(out, "%zu task%s of %zu type%s: %zu ended, %zu open\n\n", n, n == 1 ? "" : "s",
                nrows, nrows == 1 ? "" : "s", nended, nopen);
        fprintf(out, "%-*s %7s %6s %9s %9s %9s %9s\n", (int)width, "type", "count", "open", "p50",
                "p90", "p99", "max");
        for (size_t r = 0; r < nrows; r++) {
            const struct type_row *row = &rows[r];
            const struct ctr_task *const *lat = &sorted[row->first];
            put_str(out, row->type, 0);
            fprintf(out, "%*s %7zu %6zu", (int)(width - strlen(row->type)), "", row->nended,
                    row->nopen);
            if (row->nended)
                fprintf(out, " %9s %9s %9s %9s\n",
                        ctr_text_ns((int64_t)percentile(lat, row->nended, 50), d[0], 32),
                        ctr_text_ns((int64_t)percentile(lat, row->nended, 90), d[1], 32),
                        ctr_text_ns((int64_t)percentile(lat, row->nended, 99), d[2], 32),
                        ctr_text_ns((int64_t)ctr_task_latency(lat[row->nended - 1]), d[3], 32));
            else
                fprintf(out, " %9s %9s %9s %9s\n", "-", "-", "-", "-");
        }
    }
    if (ts.ends_without_begin || ts.region_ends_without_begin)
        fprintf(out, "\nignored: %" PRIu64 " task ends without a begin in the trace (or a second "
                     "end), %" PRIu64 " region ends without a begin\n",
                ts.ends_without_begin, ts.region_ends_without_begin);

    if (nopen) {
        /* The open ones, oldest first, at most 10 (they are also ranked
         * among the slowest below by their age). */
        const struct ctr_task **open = calloc(nopen, sizeof(*open));
        if (!open)
            goto done;
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (!sorted[i]->ended)
                open[k++] = sorted[i];
        qsort(open, k, sizeof(*open), by_slowest);
        fprintf(out, "\nopen at the end of the trace: %zu task%s, oldest first\n", k,
                k == 1 ? "" : "s");
        for (size_t i = 0; i < k && i < 10; i++) {
            fprintf(out, "    %9s  task %" PRIu64 " ",
                    ctr_text_ns((int64_t)ctr_task_latency(open[i]), d[0], 32), open[i]->id);
            put_str(out, open[i]->type, 0);
            if (open[i]->parent)
                fprintf(out, ", parent %" PRIu64, open[i]->parent);
            fputs(", began on ", out);
            put_thread(out, t, open[i]->begin_thread);
            fputc('\n', out);
        }
        if (k > 10)
            fprintf(out, "    ... and %zu more\n", k - 10);
        free(open);
    }

    size_t shown = o->n < nslow ? o->n : nslow;
    if (n && o->n) {
        if (nslow > 1)
            qsort(slow, nslow, sizeof(*slow), by_slowest);
        fprintf(out, "\nslowest %zu of %zu task%s", shown, nslow, nslow == 1 ? "" : "s");
        if (o->type) {
            fputs(" of type ", out);
            put_str(out, o->type, 0);
        }
        if (o->latmin_ns)
            fprintf(out, " at least %s long", ctr_text_ns((int64_t)o->latmin_ns, d[0], 32));
        fputs(shown ? ":\n" : "\n", out);
        bd = calloc(shown ? shown : 1, sizeof(*bd));
        if (!bd || ctr_tasks_breakdown(t, &ts, slow, shown, bd))
            goto done;
        for (size_t i = 0; i < shown; i++) {
            fputc('\n', out);
            if (put_instance(out, t, &ts, slow[i], &bd[i]))
                goto done;
        }
    }
    rc = 0;
done:
    if (rc)
        snprintf(err, errlen, "reading the tasks: %s", strerror(-rc));
    free(bd);
    free(rows);
    free(slow);
    free(sorted);
    ctr_tasks_free(&ts);
    return rc;
}
