/* profile.c - delay profiles (-pprof=sync|sched|net|syscall|blame), built
 * from the state machine's intervals (see profile.h for what each counts). */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "symbolize.h"
#include "tasks.h"
#include "text.h"

static const char *const names[CTR_PROFILE_LIMIT] = {
    [CTR_PROFILE_SYNC] = "sync",
    [CTR_PROFILE_SCHED] = "sched",
    [CTR_PROFILE_NET] = "net",
    [CTR_PROFILE_SYSCALL] = "syscall",
    [CTR_PROFILE_BLAME] = "blame",
};

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

struct collect {
    const struct ctr_trace *t;
    enum ctr_profile_type type;
    ctr_sample_fn fn;
    void *ctx;
    int rc;
    const struct ctr_windows *keep; /* the filter's windows; NULL: keep all */
};

/* Builds the sample's frames: `leaf`, then stack_id's PCs. */
static void add_sample(struct collect *c, const char *leaf, uint64_t stack_id, uint64_t ns)
{
    struct ctr_pprof_frame frames[1 + 1024];
    size_t n = 0;
    frames[n++] = (struct ctr_pprof_frame){0, leaf};
    const struct ctr_stack_info *s = ctr_trace_stack(c->t, stack_id);
    for (uint32_t i = 0; s && i < s->n && n < sizeof(frames) / sizeof(frames[0]); i++)
        /* Return addresses: the call is the instruction before. */
        frames[n++] = (struct ctr_pprof_frame){s->pcs[i] - 1, NULL};
    c->rc = c->fn(c->ctx, frames, n, 1, (int64_t)ns);
}

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct collect *c = ctx;
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
        if (c->type == CTR_PROFILE_SCHED) {
            struct ctr_pprof_frame frames[2] = {{0, "preempted"}, {iv->thread->start_pc, NULL}};
            c->rc = c->fn(c->ctx, frames, iv->thread->start_pc ? 2 : 1, 1, (int64_t)ns);
        }
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
            add_sample(c, call, iv->stack_id, ns);
        break;
    }
    case CTR_PROFILE_SCHED:
        if (iv->state == CTR_STATE_RUNNABLE)
            add_sample(c, call, iv->stack_id, ns);
        break;
    case CTR_PROFILE_BLAME:
        if (iv->state == CTR_STATE_BLOCKED && iv->release && class_of(iv->reason) == CTR_CLASS_SYNC)
            add_sample(c, release_call(iv->reason), iv->release->stack_id, ns);
        break;
    default:
        break;
    }
}

/* ---------------------------------------------------------------------------
 * Filters
 * ------------------------------------------------------------------------- */

static int filter_is_set(const struct ctr_profile_filter *f)
{
    return f && (f->task || f->region || f->latmin_ns);
}

/* The windows that filter f keeps, into *keep; *ntasks and *nregions (may
 * be NULL) get how many tasks and regions matched. */
static int filter_windows(const struct ctr_trace *t, const struct ctr_profile_filter *f,
                          struct ctr_windows *keep, size_t *ntasks, size_t *nregions)
{
    struct ctr_tasks ts;
    struct ctr_windows bytask = {0}, byregion = {0};
    int rc = ctr_tasks_build(t, &ts);
    if (rc)
        return rc;
    int want_tasks = f->task || f->latmin_ns;
    if (want_tasks)
        rc = ctr_tasks_windows(t, &ts, f->task, f->latmin_ns, &bytask, ntasks);
    if (rc == 0 && f->region)
        rc = ctr_region_windows(t, &ts, f->region, &byregion, nregions);
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
    ctr_tasks_free(&ts);
    return rc;
}

int ctr_profile_filter_check(const struct ctr_trace *t, const struct ctr_profile_filter *filter,
                             FILE *warn)
{
    if (!filter_is_set(filter))
        return 0;
    struct ctr_windows keep;
    size_t ntasks = 0, nregions = 0;
    int rc = filter_windows(t, filter, &keep, &ntasks, &nregions);
    if (rc)
        return rc;
    ctr_windows_free(&keep);
    int problems = 0;
    char d[32];
    if ((filter->task || filter->latmin_ns) && ntasks == 0) {
        problems++;
        if (warn) {
            fputs("ctrace: no task", warn);
            if (filter->task)
                fprintf(warn, " of type '%s'", filter->task);
            if (filter->latmin_ns)
                fprintf(warn, " at least %s long",
                        ctr_text_ns((int64_t)filter->latmin_ns, d, sizeof(d)));
            fputs(" in the trace: the profile is empty\n", warn);
        }
    }
    if (filter->region && nregions == 0) {
        problems++;
        if (warn)
            fprintf(warn, "ctrace: no region named '%s' in the trace: the profile is empty\n",
                    filter->region);
    }
    return problems;
}

int ctr_profile_samples(const struct ctr_trace *t, enum ctr_profile_type type,
                        const struct ctr_profile_filter *filter, ctr_sample_fn fn, void *ctx)
{
    struct collect c = {t, type, fn, ctx, 0, NULL};
    struct ctr_windows keep = {0};
    if (filter_is_set(filter)) {
        int rc = filter_windows(t, filter, &keep, NULL, NULL);
        if (rc)
            return rc;
        c.keep = &keep;
    }
    if (ctr_state_walk(t, on_interval, &c) == UINT64_MAX)
        c.rc = -ENOMEM;
    ctr_windows_free(&keep);
    return c.rc;
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

int ctr_profile_sym_open(const struct ctr_trace *t, struct ctr_profile_sym *ps)
{
    *ps = (struct ctr_profile_sym){0};
    ps->maps = calloc(t->nmappings ? t->nmappings : 1, sizeof(*ps->maps));
    if (!ps->maps)
        return -ENOMEM;
    for (size_t i = 0; i < t->nmappings; i++) {
        const struct ctr_mapping_info *m = &t->mappings[i];
        ps->maps[i] = (struct ctr_sym_mapping){m->start, m->limit, m->file_offset, m->bias,
                                               m->path, m->build_id_len ? m->build_id : NULL,
                                               m->build_id_len};
    }
    ps->nmaps = t->nmappings;
    ps->sym = ctr_symbolizer_new(ps->maps, ps->nmaps);
    if (!ps->sym) {
        free(ps->maps);
        ps->maps = NULL;
        return -ENOMEM;
    }
    return 0;
}

void ctr_profile_sym_close(struct ctr_profile_sym *ps, FILE *warn)
{
    if (ps->sym) {
        const char *w = ctr_symbolizer_warnings(ps->sym);
        if (warn && w && w[0])
            fputs(w, warn);
        ctr_symbolizer_free(ps->sym);
    }
    free(ps->maps);
    *ps = (struct ctr_profile_sym){0};
}

int ctr_profile_write(const struct ctr_trace *t, enum ctr_profile_type type,
                      const struct ctr_profile_filter *filter, FILE *out, FILE *warn, char *err,
                      size_t errlen)
{
    struct ctr_profile_sym ps;
    if (ctr_profile_sym_open(t, &ps) != 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    static const struct ctr_pprof_value_type types[] = {{"contentions", "count"},
                                                        {"delay", "nanoseconds"}};
    struct ctr_pprof *p = ctr_pprof_new(types, 2, (struct ctr_pprof_value_type){"trace", "count"},
                                        1, ps.sym, ps.maps, ps.nmaps);
    int rc = -ENOMEM;
    if (p) {
        ctr_pprof_set_time(p, (int64_t)t->start_real_ns, (int64_t)(t->end_ns - t->start_ns));
        rc = ctr_profile_filter_check(t, filter, warn);
        if (rc >= 0)
            rc = ctr_profile_samples(t, type, filter, to_pprof, p);
        if (rc == 0)
            rc = ctr_pprof_write(p, out);
        ctr_pprof_free(p);
    }
    ctr_profile_sym_close(&ps, warn);
    if (rc != 0)
        snprintf(err, errlen, "writing the profile: %s", strerror(-rc));
    return rc;
}
