/* SPDX-License-Identifier: MIT */
/* profile.c - delay profiles (-pprof=sync|sched|net|syscall|blame), built
 * from the state machine's intervals, and the CPU profile (-pprof=cpu) from
 * the CPU_SAMPLE events (see profile.h for what each counts). A CPU sample
 * is summed as a wait is: a weight (its CPU ns) at a stack, with no leaf. */
#include "profile/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "read/state.h"
#include "symbols/symbolize.h"
#include "model/tasks.h"
#include "profile/sums.h"
#include "profile/text.h"
#include "ctrace_grow.h"

/* clang-format off */
static const char *const names[CTR_PROFILE_LIMIT] = {
    [CTR_PROFILE_SYNC] = "sync",
    [CTR_PROFILE_SCHED] = "sched",
    [CTR_PROFILE_NET] = "net",
    [CTR_PROFILE_SYSCALL] = "syscall",
    [CTR_PROFILE_BLAME] = "blame",
    [CTR_PROFILE_CPU] = "cpu",
};
/* clang-format on */

const char *ctr_profile_name(enum ctr_profile_type type)
{
    return type > 0 && type < CTR_PROFILE_LIMIT ? names[type] : NULL;
}

enum ctr_profile_type ctr_profile_parse(const char *name)
{
    for (int p = 1; p < CTR_PROFILE_LIMIT; p++)
        if (strcmp(names[p], name) == 0)
            return (enum ctr_profile_type)p;
    return 0;
}

/* The call that releases a wait of this reason: the leaf of blame samples
 * (the reasons table's `release`). */
static const char *release_call(uint8_t reason)
{
    const char *call = reason < CTR_REASON_LIMIT ? ctr_reason_specs[reason].release : NULL;
    return call ? call : "release";
}

static uint8_t class_of(uint8_t reason)
{
    return reason < CTR_REASON_LIMIT ? ctr_reason_specs[reason].wait_class : 0;
}

struct ctr_profile_collect {
    const struct ctr_trace *t;
    enum ctr_profile_type type;
    const struct ctr_windows *keep; /* the filter's windows; NULL: keep all */
    ctr_sample_fn each;
    void *each_ctx;
    int rc;
    /* Summed per (leaf, stack, pc); the leaf's name (NULL: none, a CPU
     * sample) by its address, the pc a preempted sample's start routine
     * that stands for its stack. */
    struct ctr_sums sums;
};

struct ctr_profile_collect *ctr_profile_collect_new(const struct ctr_trace *t,
                                                    enum ctr_profile_type type,
                                                    const struct ctr_windows *keep,
                                                    ctr_sample_fn each, void *each_ctx)
{
    struct ctr_profile_collect *c = calloc(1, sizeof(*c));
    if (c)
        *c = (struct ctr_profile_collect){
            .t = t, .type = type, .keep = keep, .each = each, .each_ctx = each_ctx};
    return c;
}

void ctr_profile_collect_free(struct ctr_profile_collect *c)
{
    if (c) {
        ctr_sums_free(&c->sums);
        free(c);
    }
}

/* The frames of a sample (`leaf` unless NULL, then stack_id's PCs, or for
 * a preempted one its start routine) to fn. A CPU sample's first PC is the
 * interrupted instruction + 1 (FORMAT.md §4.1), so the one rule below
 * holds for it too. */
static int give(const struct ctr_trace *t, const char *leaf, uint64_t stack_id, uint64_t pc,
                int64_t count, int64_t ns, ctr_sample_fn fn, void *ctx)
{
    struct ctr_pprof_frame frames[1 + 1024];
    size_t n = 0;
    if (leaf)
        frames[n++] = (struct ctr_pprof_frame){0, leaf};
    if (pc)
        frames[n++] = (struct ctr_pprof_frame){pc, NULL};
    const struct ctr_stack_info *s = stack_id ? ctr_trace_stack(t, stack_id) : NULL;
    for (uint32_t i = 0; s && i < s->n && n < sizeof(frames) / sizeof(frames[0]); i++)
        /* Return addresses: the call is the instruction before. */
        frames[n++] = (struct ctr_pprof_frame){s->pcs[i] - 1, NULL};
    return fn(ctx, frames, n, count, ns);
}

/* A wait's delay at its stack: to `each`, or into its stack's sum. Leaf
 * names are static strings, so their addresses tell them apart. */
static void add_sample(struct ctr_profile_collect *c, const char *leaf, uint64_t stack_id,
                       uint64_t pc, uint64_t ns)
{
    if (c->each) {
        c->rc = give(c->t, leaf, stack_id, pc, 1, (int64_t)ns, c->each, c->each_ctx);
        return;
    }
    struct ctr_sum_key key = {{(uint64_t)(uintptr_t)leaf, stack_id, pc, 0}};
    if (ctr_sums_add(&c->sums, &key, 1, (int64_t)ns) != 0)
        c->rc = -ENOMEM;
}

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_profile_collect *c = ctx;
    if (c->rc != 0 || iv->state == CTR_STATE_RUNNING)
        return;
    uint64_t ns = iv->end_ns - iv->start_ns;
    if (c->keep) {
        ns = ctr_windows_overlap(c->keep, (uint32_t)(iv->thread - c->t->threads), iv->start_ns,
                                 iv->end_ns);
        if (ns == 0)
            return; /* outside the filter (or an empty interval: no wait to count) */
    }
    if (iv->state == CTR_STATE_RUNNABLE && iv->reason == 0) {
        /* Preempted: no stack was taken, so the thread's start routine
         * stands for where it ran. */
        if (c->type == CTR_PROFILE_SCHED)
            add_sample(c, "preempted", 0, iv->thread->start_pc, ns);
        return;
    }
    const char *call = iv->reason < CTR_REASON_LIMIT ? ctr_reason_specs[iv->reason].call : NULL;
    if (!call)
        return;
    switch (c->type) {
    case CTR_PROFILE_SYNC:
    case CTR_PROFILE_NET:
    case CTR_PROFILE_SYSCALL: {
        static const uint8_t cls[CTR_PROFILE_LIMIT] = {
            [CTR_PROFILE_SYNC] = CTR_CLASS_SYNC,
            [CTR_PROFILE_NET] = CTR_CLASS_NET,
            [CTR_PROFILE_SYSCALL] = CTR_CLASS_SYSCALL,
        };
        if (iv->state == CTR_STATE_BLOCKED && class_of(iv->reason) == cls[c->type])
            add_sample(c, call, iv->stack_id, 0, ns);
        break;
    }
    case CTR_PROFILE_SCHED:
        if (iv->state == CTR_STATE_RUNNABLE)
            add_sample(c, call, iv->stack_id, 0, ns);
        break;
    case CTR_PROFILE_BLAME:
        if (iv->state == CTR_STATE_BLOCKED && iv->release && class_of(iv->reason) == CTR_CLASS_SYNC)
            add_sample(c, release_call(iv->reason), iv->release->stack_id, 0, ns);
        break;
    default:
        break;
    }
}

/* A CPU sample counts whole, when the filter keeps the instant it was
 * taken (ctr_windows_keep_sample). */
static void on_event(void *ctx, const struct ctr_trace *t, uint32_t thread,
                     const struct ctr_trace_event *e)
{
    struct ctr_profile_collect *c = ctx;
    (void)t;
    if (c->rc != 0 || e->type != CTR_EV_CPU_SAMPLE)
        return;
    if (c->keep && !ctr_windows_keep_sample(c->keep, thread, e->ns))
        return;
    add_sample(c, NULL, e->args[0], 0, e->args[1]);
}

struct ctr_consumer ctr_profile_consumer(struct ctr_profile_collect *c)
{
    if (c->type == CTR_PROFILE_CPU)
        return (struct ctr_consumer){.ctx = c, .event = on_event};
    return (struct ctr_consumer){.ctx = c, .interval = on_interval};
}

int ctr_profile_collect_end(struct ctr_profile_collect *c, ctr_sample_fn fn, void *ctx)
{
    for (size_t i = 0; c->rc == 0 && fn && i < c->sums.n; i++) {
        const struct ctr_sum *e = &c->sums.v[i];
        c->rc = give(c->t, (const char *)(uintptr_t)e->key.w[0], e->key.w[1], e->key.w[2], e->count,
                     e->ns, fn, ctx);
    }
    return c->rc;
}

/* ---------------------------------------------------------------------------
 * Filters
 * ------------------------------------------------------------------------- */

int ctr_profile_filter_task(const struct ctr_tasks *ts, const struct ctr_profile_filter *f,
                            const struct ctr_task *task)
{
    if ((f->task && strcmp(task->type, f->task) != 0) || ctr_task_latency(task) < f->latmin_ns)
        return 0;
    if (!f->region)
        return 1;
    for (size_t r = task->region0; r < task->region0 + task->nregions; r++)
        if (strcmp(ts->regions[r].name, f->region) == 0)
            return 1;
    return 0;
}

int ctr_profile_filter_slowest(const struct ctr_tasks *ts, const struct ctr_profile_filter *f,
                               size_t max, const struct ctr_task ***out, size_t *n)
{
    *n = 0;
    const struct ctr_task **v = malloc((ts->ntasks ? ts->ntasks : 1) * sizeof(*v));
    if (!(*out = v))
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < ts->ntasks; i++)
        if (ctr_profile_filter_task(ts, f, &ts->tasks[i]))
            v[k++] = &ts->tasks[i];
    if (k) /* qsort wants an array, even of none */
        qsort(v, k, sizeof(*v), ctr_task_by_slowest);
    *n = k < max ? k : max;
    return 0;
}

int ctr_profile_filter_is_set(const struct ctr_profile_filter *f)
{
    return f && (f->task || f->region || f->latmin_ns);
}

int ctr_profile_filter_windows(const struct ctr_trace *t, const struct ctr_tasks *ts,
                               const struct ctr_profile_filter *f, struct ctr_windows *keep,
                               size_t *ntasks, size_t *nregions)
{
    struct ctr_windows bytask = {0}, byregion = {0};
    int want_tasks = f->task || f->latmin_ns;
    int rc = 0;
    *keep = (struct ctr_windows){0};
    if (want_tasks)
        rc = ctr_tasks_windows(t, ts, f->task, f->latmin_ns, &bytask, ntasks);
    if (rc == 0 && f->region)
        rc = ctr_region_windows(t, ts, f->region, &byregion, nregions);
    if (rc == 0) {
        if (want_tasks && f->region) {
            rc = ctr_windows_intersect(&bytask, &byregion, keep);
        } else if (want_tasks) {
            *keep = bytask;
            bytask = (struct ctr_windows){0};
        } else {
            *keep = byregion;
            byregion = (struct ctr_windows){0};
        }
    }
    ctr_windows_free(&bytask);
    ctr_windows_free(&byregion);
    return rc;
}

int ctr_profile_filter_warn(const struct ctr_profile_filter *f, size_t ntasks, size_t nregions,
                            const char *what, FILE *warn)
{
    int problems = 0;
    char d[32];
    if (!ctr_profile_filter_is_set(f))
        return 0;
    if ((f->task || f->latmin_ns) && ntasks == 0) {
        problems++;
        if (warn) {
            fputs("ctrace: no task", warn);
            if (f->task)
                fprintf(warn, " of type '%s'", f->task);
            if (f->latmin_ns)
                fprintf(warn, " at least %s long",
                        ctr_text_ns((int64_t)f->latmin_ns, d, sizeof(d)));
            fprintf(warn, " in the trace: the %s is empty\n", what);
        }
    }
    if (f->region && nregions == 0) {
        problems++;
        if (warn)
            fprintf(warn, "ctrace: no region named '%s' in the trace: the %s is empty\n", f->region,
                    what);
    }
    return problems;
}

/* The windows of filter (none when it is not set) over a trace read whole. */
static int loaded_windows(const struct ctr_trace *t, const struct ctr_profile_filter *filter,
                          struct ctr_windows *keep, size_t *ntasks, size_t *nregions)
{
    *keep = (struct ctr_windows){0};
    if (!ctr_profile_filter_is_set(filter))
        return 0;
    struct ctr_tasks ts;
    int rc = ctr_tasks_build(t, &ts);
    if (rc == 0)
        rc = ctr_profile_filter_windows(t, &ts, filter, keep, ntasks, nregions);
    ctr_tasks_free(&ts);
    return rc;
}

int ctr_profile_filter_check(const struct ctr_trace *t, const struct ctr_profile_filter *filter,
                             FILE *warn)
{
    struct ctr_windows keep;
    size_t ntasks = 0, nregions = 0;
    int rc = loaded_windows(t, filter, &keep, &ntasks, &nregions);
    ctr_windows_free(&keep);
    return rc ? rc : ctr_profile_filter_warn(filter, ntasks, nregions, "profile", warn);
}

int ctr_profile_collect_whole(const struct ctr_trace *t, enum ctr_profile_type type,
                              const struct ctr_profile_filter *filter, ctr_sample_fn each,
                              void *each_ctx, struct ctr_windows *keep,
                              struct ctr_profile_collect **c, FILE *warn)
{
    size_t ntasks = 0, nregions = 0;
    int rc = loaded_windows(t, filter, keep, &ntasks, &nregions);
    if (rc == 0)
        ctr_profile_filter_warn(filter, ntasks, nregions, "profile", warn);
    *c = NULL;
    if (rc)
        return rc;
    *c = ctr_profile_collect_new(t, type, ctr_profile_filter_is_set(filter) ? keep : NULL, each,
                                 each_ctx);
    if (!*c)
        return -ENOMEM;
    struct ctr_consumer cons = ctr_profile_consumer(*c);
    rc = ctr_trace_replay(t, &cons, 1, NULL);
    return rc ? rc : (*c)->rc;
}

int ctr_profile_samples(const struct ctr_trace *t, enum ctr_profile_type type,
                        const struct ctr_profile_filter *filter, ctr_sample_fn fn, void *ctx)
{
    struct ctr_windows keep;
    struct ctr_profile_collect *c;
    int rc = ctr_profile_collect_whole(t, type, filter, fn, ctx, &keep, &c, NULL);
    ctr_profile_collect_free(c);
    ctr_windows_free(&keep);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Writing pprof
 * ------------------------------------------------------------------------- */

static int to_pprof(void *ctx, const struct ctr_pprof_frame *frames, size_t n, int64_t count,
                    int64_t delay_ns)
{
    int64_t values[2] = {count, delay_ns};
    return ctr_pprof_add(ctx, frames, n, values);
}

int ctr_profile_check(const struct ctr_trace *t, enum ctr_profile_type type, char *err,
                      size_t errlen)
{
    if (type != CTR_PROFILE_CPU || t->events_by_type[CTR_EV_CPU_SAMPLE] > 0)
        return 0;
    if (t->cpu_source)
        snprintf(err, errlen,
                 "the trace has no CPU samples: sampling was on (one every %.3g ms "
                 "of CPU), but no thread ran that long",
                 (double)t->cpu_period_ns / 1e6);
    else
        snprintf(err, errlen,
                 "the trace has no CPU samples: record it with `ctrace run -cpu HZ` "
                 "or trace_options.cpu_hz");
    return -ENODATA;
}

int ctr_profile_emit(const struct ctr_trace *t, const struct ctr_pprof_value_type *types,
                     const struct ctr_pprof_value_type *period_type, int64_t period,
                     ctr_profile_fill_fn fill, void *ctx, FILE *out, FILE *warn, char *err,
                     size_t errlen)
{
    struct ctr_profile_sym ps;
    if (ctr_profile_sym_open(t, &ps) != 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    struct ctr_pprof *p = ctr_pprof_new(types, 2, *period_type, period, ps.sym, ps.maps, ps.nmaps);
    int rc = -ENOMEM;
    if (p) {
        ctr_pprof_set_time(p, (int64_t)t->start_real_ns, (int64_t)(t->end_ns - t->start_ns));
        rc = fill(ctx, p);
        if (rc == 0)
            rc = ctr_pprof_write(p, out);
        ctr_pprof_free(p);
    }
    ctr_profile_sym_close(&ps, warn);
    if (rc != 0)
        snprintf(err, errlen, "writing the profile: %s", strerror(-rc));
    return rc;
}

static int fill_collected(void *ctx, struct ctr_pprof *p)
{
    return ctr_profile_collect_end(ctx, to_pprof, p);
}

int ctr_profile_write_collected(const struct ctr_trace *t, struct ctr_profile_collect *c, FILE *out,
                                FILE *warn, char *err, size_t errlen)
{
    /* Go's value types: a CPU profile's period is the sampling period, a
     * delay profile's one event of the trace. */
    static const struct ctr_pprof_value_type delay_types[] = {{"contentions", "count"},
                                                              {"delay", "nanoseconds"}};
    static const struct ctr_pprof_value_type cpu_types[] = {{"samples", "count"},
                                                            {"cpu", "nanoseconds"}};
    static const struct ctr_pprof_value_type per_event = {"trace", "count"};
    int cpu = c->type == CTR_PROFILE_CPU;
    return ctr_profile_emit(t, cpu ? cpu_types : delay_types, cpu ? &cpu_types[1] : &per_event,
                            cpu ? (int64_t)t->cpu_period_ns : 1, fill_collected, c, out, warn, err,
                            errlen);
}

int ctr_profile_collect_checked(const struct ctr_trace *t, enum ctr_profile_type type,
                                const struct ctr_profile_filter *filter, struct ctr_windows *keep,
                                struct ctr_profile_collect **c, FILE *warn, const char *doing,
                                char *err, size_t errlen)
{
    int rc = ctr_profile_check(t, type, err, errlen);
    if (rc != 0)
        return rc;
    rc = ctr_profile_collect_whole(t, type, filter, NULL, NULL, keep, c, warn);
    if (rc != 0)
        snprintf(err, errlen, "%s: %s", doing, strerror(-rc));
    return rc;
}

int ctr_profile_write(const struct ctr_trace *t, enum ctr_profile_type type,
                      const struct ctr_profile_filter *filter, FILE *out, FILE *warn, char *err,
                      size_t errlen)
{
    struct ctr_windows keep = {0};
    struct ctr_profile_collect *c = NULL;
    int rc = ctr_profile_collect_checked(t, type, filter, &keep, &c, warn, "writing the profile",
                                         err, errlen);
    if (rc == 0)
        rc = ctr_profile_write_collected(t, c, out, warn, err, errlen);
    ctr_profile_collect_free(c);
    ctr_windows_free(&keep);
    return rc;
}
