/* SPDX-License-Identifier: MIT */
/* threads.c - `ctrace threads` and the leak finder (see threads.h).
 *
 * One walk of the state machine fills a row of times per thread and notes
 * every wait still open at the end of the trace; groups are then formed by
 * sorting: threads by start routine (then merged by symbolized name, since
 * two addresses may name one function), open waits by (reason, stack).
 */
#include "report/threads.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/threadtime.h"
#include "profile/profile.h"
#include "read/state.h"
#include "report/stats.h"
#include "symbols/symbolize.h"
#include "profile/text.h"
#include "ctrace_grow.h"

struct open_wait {
    uint32_t thread;
    uint8_t reason;
    uint64_t stack_id, object, start_ns, thread_id;
};

struct ctr_threads_walk {
    const struct ctr_trace *t;    /* the trace walked */
    struct ctr_threadtime *time;  /* NULL: leaks only */
    struct ctr_consumer time_sum; /* its consumer, fed by the walk's */
    uint8_t *first;               /* per thread index: 0 no event yet, 1 its first
                                     was its THREAD_START, 2 something else */
    size_t nfirst;
    uint64_t *cpu_ns; /* per thread index: CPU its samples stand for */
    size_t ncpu;
    struct open_wait *open;
    size_t nopen, cap;
    int oom;
};

static void on_event(void *ctx, const struct ctr_trace *t, uint32_t th,
                     const struct ctr_trace_event *e)
{
    struct ctr_threads_walk *w = ctx;
    (void)t;
    if (ctr_grow_zeroed(&w->first, &w->nfirst, (size_t)th + 1, 1) != 0) {
        w->oom = 1;
        return;
    }
    if (!w->first[th])
        w->first[th] = e->type == CTR_EV_THREAD_START ? 1 : 2;
    if (e->type == CTR_EV_CPU_SAMPLE) {
        if (ctr_grow_zeroed(&w->cpu_ns, &w->ncpu, (size_t)th + 1, sizeof(*w->cpu_ns)) != 0) {
            w->oom = 1;
            return;
        }
        w->cpu_ns[th] += e->args[1];
    }
}

static void on_cputime(void *ctx, const struct ctr_trace *t, uint32_t th,
                       const struct ctr_cpu_reading *r)
{
    struct ctr_threads_walk *w = ctx;
    if (w->time)
        w->time_sum.cputime(w->time_sum.ctx, t, th, r);
}

static void on_settle(void *ctx, uint64_t ns)
{
    struct ctr_threads_walk *w = ctx;
    if (w->time)
        w->time_sum.settle(w->time_sum.ctx, ns);
}

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_threads_walk *w = ctx;
    if (w->time)
        w->time_sum.interval(w->time_sum.ctx, iv);
    uint32_t th = (uint32_t)(iv->thread - w->t->threads);
    if (iv->open && iv->state == CTR_STATE_BLOCKED) {
        if (w->nopen == w->cap) {
            size_t cap = w->cap ? w->cap * 2 : 16;
            struct open_wait *o = realloc(w->open, cap * sizeof(*o));
            if (!o) {
                w->oom = 1;
                return;
            }
            w->open = o;
            w->cap = cap;
        }
        w->open[w->nopen++] = (struct open_wait){th,         iv->reason,   iv->stack_id,
                                                 iv->object, iv->start_ns, iv->thread->id};
    }
}

struct ctr_threads_walk *ctr_threads_walk_new(const struct ctr_trace *t, int times)
{
    struct ctr_threads_walk *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    *w = (struct ctr_threads_walk){.t = t};
    if (times) {
        if (!(w->time = ctr_threadtime_new(t))) {
            free(w);
            return NULL;
        }
        w->time_sum = ctr_threadtime_consumer(w->time);
    }
    return w;
}

struct ctr_consumer ctr_threads_consumer(struct ctr_threads_walk *w)
{
    return (struct ctr_consumer){.ctx = w,
                                 .event = on_event,
                                 .interval = on_interval,
                                 .cputime = on_cputime,
                                 .settle = on_settle};
}

void ctr_threads_walk_free(struct ctr_threads_walk *w)
{
    if (w) {
        free(w->open);
        free(w->first);
        free(w->cpu_ns);
        ctr_threadtime_free(w->time);
        free(w);
    }
}

/* A walk of a trace read whole. */
static int walk_loaded(const struct ctr_trace *t, int times, struct ctr_threads_walk **w)
{
    *w = ctr_threads_walk_new(t, times);
    if (!*w)
        return -ENOMEM;
    struct ctr_consumer c = ctr_threads_consumer(*w);
    int rc = ctr_trace_replay(t, &c, 1, NULL);
    return rc ? rc : (*w)->oom ? -ENOMEM : 0;
}

/* ================================================================ leaks */

static int by_reason_stack(const void *pa, const void *pb)
{
    const struct open_wait *a = pa, *b = pb;
    if (a->reason != b->reason)
        return a->reason < b->reason ? -1 : 1;
    if (a->stack_id != b->stack_id)
        return a->stack_id < b->stack_id ? -1 : 1;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    return (a->thread_id > b->thread_id) - (a->thread_id < b->thread_id);
}

static int by_size(const void *pa, const void *pb)
{
    const struct ctr_leak_group *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    if (a->longest_ns != b->longest_ns)
        return a->longest_ns > b->longest_ns ? -1 : 1;
    if (a->reason != b->reason)
        return a->reason < b->reason ? -1 : 1;
    return (a->stack_id > b->stack_id) - (a->stack_id < b->stack_id);
}

/* A thread's index with its id, to list a group's threads by id. */
struct index_id {
    uint64_t id;
    uint32_t index;
};

static int by_id(const void *pa, const void *pb)
{
    uint64_t a = ((const struct index_id *)pa)->id, b = ((const struct index_id *)pb)->id;
    return (a > b) - (a < b);
}

/* Sorts thread indexes by their threads' ids. */
static int sort_by_id(const struct ctr_trace *t, uint32_t *threads, size_t n)
{
    struct index_id *pairs = malloc((n ? n : 1) * sizeof(*pairs));
    if (!pairs)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        pairs[i] = (struct index_id){t->threads[threads[i]].id, threads[i]};
    qsort(pairs, n, sizeof(*pairs), by_id);
    for (size_t i = 0; i < n; i++)
        threads[i] = pairs[i].index;
    free(pairs);
    return 0;
}

/* Groups w's open waits (sorting them) into *groups; each group's threads
 * in the trace's order. */
static int group_leaks(const struct ctr_trace *t, struct ctr_threads_walk *w,
                       struct ctr_leak_group **groups, size_t *n)
{
    *groups = NULL;
    *n = 0;
    if (w->nopen == 0)
        return 0;
    qsort(w->open, w->nopen, sizeof(*w->open), by_reason_stack);
    struct ctr_leak_group *g = calloc(w->nopen, sizeof(*g));
    uint32_t *ids = malloc(w->nopen * sizeof(*ids));
    if (!g || !ids) {
        free(g);
        free(ids);
        return -ENOMEM;
    }
    size_t ng = 0;
    for (size_t i = 0; i < w->nopen; i++) {
        const struct open_wait *o = &w->open[i];
        struct ctr_leak_group *cur = ng ? &g[ng - 1] : NULL;
        if (!cur || cur->reason != o->reason || cur->stack_id != o->stack_id) {
            cur = &g[ng++];
            *cur = (struct ctr_leak_group){o->reason, o->stack_id, 0, 0, o->object, 1, &ids[i]};
        }
        cur->threads[cur->count++] = o->thread;
        uint64_t age = t->end_ns > o->start_ns ? t->end_ns - o->start_ns : 0;
        if (age > cur->longest_ns)
            cur->longest_ns = age;
        if (o->object != cur->object)
            cur->same_object = 0;
    }
    qsort(g, ng, sizeof(*g), by_size);
    /* Each group gets its own copy of its thread list, so that the groups
     * can be freed one by one whatever order sorting left them in. */
    for (size_t i = 0; i < ng; i++) {
        uint32_t *own = malloc(g[i].count * sizeof(*own));
        if (own)
            memcpy(own, g[i].threads, g[i].count * sizeof(*own));
        if (!own || sort_by_id(t, own, g[i].count) != 0) {
            free(own);
            for (size_t k = 0; k < i; k++)
                free(g[k].threads);
            free(g);
            free(ids);
            return -ENOMEM;
        }
        g[i].threads = own;
    }
    free(ids);
    *groups = g;
    *n = ng;
    return 0;
}

int ctr_threads_leaks(const struct ctr_trace *t, struct ctr_leak_group **groups, size_t *n)
{
    struct ctr_threads_walk *w;
    int rc = walk_loaded(t, 0, &w);
    *groups = NULL;
    *n = 0;
    if (rc == 0)
        rc = group_leaks(t, w, groups, n);
    ctr_threads_walk_free(w);
    return rc;
}

void ctr_threads_leaks_free(struct ctr_leak_group *groups, size_t n)
{
    for (size_t i = 0; groups && i < n; i++)
        free(groups[i].threads);
    free(groups);
}

/* ================================================================ start functions */

struct start_group {
    char *label;          /* "function (file:line)", or the placeholder */
    const char *function; /* what groups merge by (symbolizer-owned or label) */
    size_t nthreads;
    uint64_t times[CTR_TIME_N];
    uint64_t total;  /* of the times: what ranks the groups */
    uint64_t cpu_ns; /* sampled CPU (FORMAT.md §4.1) */
};

static int by_pc(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

static int by_total(const void *pa, const void *pb)
{
    const struct start_group *a = pa, *b = pb;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    if (a->nthreads != b->nthreads)
        return a->nthreads > b->nthreads ? -1 : 1;
    return strcmp(a->label, b->label);
}

#define NO_START "(running at trace start)"

/* Whether thread i had events. */
static int had_events(const struct ctr_threads_walk *w, size_t i)
{
    return i < w->nfirst && w->first[i];
}

/* The start routine of thread i, 0 when its first event is not its
 * THREAD_START. */
static uint64_t start_of(const struct ctr_trace *t, const struct ctr_threads_walk *w, size_t i)
{
    return i < w->nfirst && w->first[i] == 1 ? t->threads[i].start_pc : 0;
}

/* The label of a start routine: its function and where it begins. */
static char *label_of(struct ctr_profile_sym *ps, uint64_t pc, const char **function)
{
    struct ctr_sym_frame f[16];
    int k = pc && ps->sym ? ctr_symbolize(ps->sym, pc, f, 16) : 0;
    char buf[1024];
    if (!pc)
        snprintf(buf, sizeof(buf), NO_START);
    else if (k <= 0 || !f[k - 1].function)
        ctr_symbolizer_module_offset(ps->sym, pc, buf, sizeof(buf));
    else if (f[k - 1].file && f[k - 1].line > 0)
        snprintf(buf, sizeof(buf), "%s (%s:%d)", f[k - 1].function, f[k - 1].file, f[k - 1].line);
    else
        snprintf(buf, sizeof(buf), "%s", f[k - 1].function);
    char *label = strdup(buf);
    /* The real function (the outermost of an inline chain) names the group;
     * the symbolizer owns its string until it is closed. */
    *function = pc && k > 0 && f[k - 1].function ? f[k - 1].function : label;
    return label;
}

/* Builds the groups by start function, heaviest first, into *out. */
static int start_groups(const struct ctr_trace *t, const struct ctr_threads_walk *w,
                        struct ctr_profile_sym *ps, struct start_group **out, size_t *nout)
{
    size_t cap = t->nthreads ? t->nthreads : 1;
    uint64_t *pcs = malloc(cap * sizeof(*pcs));         /* distinct start routines, sorted */
    size_t *group_of = malloc(cap * sizeof(*group_of)); /* ... and the group of each */
    struct start_group *g = calloc(cap, sizeof(*g));
    size_t npcs = 0, ng = 0;
    if (!pcs || !group_of || !g)
        goto oom;
    for (size_t i = 0; i < t->nthreads; i++)
        if (had_events(w, i))
            pcs[npcs++] = start_of(t, w, i);
    if (npcs > 1)
        qsort(pcs, npcs, sizeof(*pcs), by_pc);
    size_t n = 0;
    for (size_t i = 0; i < npcs; i++)
        if (n == 0 || pcs[i] != pcs[n - 1])
            pcs[n++] = pcs[i];
    npcs = n;
    /* One group per function: two addresses may name the same one. */
    for (size_t i = 0; i < npcs; i++) {
        const char *fn;
        char *label = label_of(ps, pcs[i], &fn);
        if (!label)
            goto oom;
        size_t k = 0;
        while (k < ng && strcmp(g[k].function, fn) != 0)
            k++;
        if (k < ng)
            free(label);
        else
            g[ng++] = (struct start_group){.label = label, .function = fn};
        group_of[i] = k;
    }
    for (size_t i = 0; i < t->nthreads; i++) {
        if (!had_events(w, i))
            continue;
        uint64_t pc = start_of(t, w, i);
        const uint64_t *at = bsearch(&pc, pcs, npcs, sizeof(*pcs), by_pc);
        struct start_group *grp = &g[group_of[at - pcs]];
        grp->nthreads++;
        grp->cpu_ns += i < w->ncpu ? w->cpu_ns[i] : 0;
        const uint64_t *row = ctr_threadtime_row(w->time, (uint32_t)i);
        for (int c = 0; c < CTR_TIME_N; c++) {
            grp->times[c] += row[c];
            grp->total += row[c];
        }
    }
    if (ng > 1)
        qsort(g, ng, sizeof(*g), by_total);
    free(pcs);
    free(group_of);
    *out = g;
    *nout = ng;
    return 0;
oom:
    for (size_t k = 0; k < ng; k++)
        free(g[k].label);
    free(g);
    free(pcs);
    free(group_of);
    return -ENOMEM;
}

/* ================================================================ writing */

/* The innermost frame of a stack, for the tsv: function and file:line. */
static void put_innermost_tsv(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                              uint64_t stack_id)
{
    const struct ctr_stack_info *s = ctr_trace_stack(t, stack_id);
    if (!s || s->n == 0) {
        fputs("?\t?", out);
        return;
    }
    uint64_t pc = s->pcs[0] - 1; /* a return address: the call is before it */
    struct ctr_sym_frame f[16];
    int k = ps->sym ? ctr_symbolize(ps->sym, pc, f, 16) : 0;
    char where[CTR_TEXT_WHERE_MAX];
    if (k <= 0 || !f[0].function)
        fputs(ctr_symbolizer_module_offset(ps->sym, pc, where, sizeof(where)), out);
    else
        fputs(f[0].function, out);
    if (k > 0 && f[0].file && f[0].line > 0)
        fprintf(out, "\t%s:%d", f[0].file, f[0].line);
    else if (k > 0 && f[0].file)
        fprintf(out, "\t%s", f[0].file);
    else
        fputs("\t?", out);
}

static const char *call_of(uint8_t reason)
{
    const char *c = reason < CTR_REASON_LIMIT ? ctr_reason_specs[reason].call : NULL;
    return c ? c : "?";
}

#define LEAK_INDENT "         "

static void put_leak(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                     const struct ctr_leak_group *g)
{
    char d[32];
    uint8_t cls = g->reason < CTR_REASON_LIMIT ? ctr_reason_specs[g->reason].wait_class : 0;
    fprintf(out, "%7zu  %s, blocked %s%s", g->count, call_of(g->reason),
            g->count > 1 ? "up to " : "", ctr_text_ns((int64_t)g->longest_ns, d, sizeof(d)));
    if (!g->same_object)
        fputs(", on several objects", out);
    else if (g->reason >= CTR_REASON_WAIT && g->reason <= CTR_REASON_WAITID)
        /* FORMAT.md §5: the pid asked for, -1 for any child */
        if ((int64_t)g->object == -1)
            fputs(", for any child", out);
        else
            fprintf(out, ", for pid %" PRId64, (int64_t)g->object);
    else if (g->reason >= CTR_REASON_SIGWAIT && g->reason <= CTR_REASON_SIGSUSPEND)
        fputs(", for a signal", out);
    else if (cls == CTR_CLASS_NET || cls == CTR_CLASS_SYSCALL)
        fprintf(out, ", on fd %" PRId64, (int64_t)g->object);
    else
        fprintf(out, ", on 0x%" PRIx64, g->object);
    fputs("; threads", out);
    for (size_t i = 0; i < g->count && i < 6; i++) {
        const struct ctr_thread_info *th = &t->threads[g->threads[i]];
        fprintf(out, "%s %" PRIu64, i ? "," : "", th->id);
        if (th->name && th->name[0])
            fprintf(out, " (%s)", th->name);
    }
    if (g->count > 6)
        fprintf(out, ", ... %zu more", g->count - 6);
    fputc('\n', out);
    const struct ctr_stack_info *s = ctr_trace_stack(t, g->stack_id);
    if (!s || s->n == 0)
        fputs(LEAK_INDENT "(no stack)\n", out);
    for (uint32_t i = 0; s && i < s->n; i++) {
        fputs(LEAK_INDENT, out);
        ctr_text_pc(out, ps, s->pcs[i] - 1, LEAK_INDENT);
    }
}

int ctr_threads_report(const struct ctr_trace *t, struct ctr_threads_walk *w, FILE *out, FILE *warn,
                       char *err, size_t errlen)
{
    int tsv = !w->time;
    struct ctr_leak_group *leaks = NULL;
    struct start_group *groups = NULL;
    size_t nleaks = 0, ngroups = 0;
    struct ctr_profile_sym ps = {0};
    int rc = -ENOMEM;
    if (w->oom)
        goto done;
    /* Running time the kernel's CPU time cannot hold: waiting for a CPU
     * (runnable) or off the CPU in no recorded wait. */
    struct ctr_time_totals tot;
    if (!tsv && ctr_threadtime_finish(w->time, &tot) != 0)
        goto done;
    if ((rc = group_leaks(t, w, &leaks, &nleaks)) != 0 || (rc = ctr_profile_sym_open(t, &ps)) != 0)
        goto done;

    if (tsv) {
        fputs("# count\tcall\tfunction\tfile:line\n", out);
        for (size_t i = 0; i < nleaks; i++) {
            fprintf(out, "%zu\t%s\t", leaks[i].count, call_of(leaks[i].reason));
            put_innermost_tsv(out, t, &ps, leaks[i].stack_id);
            fputc('\n', out);
        }
        goto done;
    }

    if ((rc = start_groups(t, w, &ps, &groups, &ngroups)) != 0)
        goto done;
    size_t nthreads = 0;
    for (size_t i = 0; i < ngroups; i++)
        nthreads += groups[i].nthreads;
    fprintf(out, "%zu thread%s by start function (times summed over each group's threads)\n\n",
            nthreads, nthreads == 1 ? "" : "s");
    fprintf(out, "%7s", "threads");
    int ncols = tot.checked ? CTR_TIME_N : CTR_TIME_OFFCPU; /* off-cpu: readings only */
    for (int c = 0; c < ncols; c++)
        fprintf(out, " %9s", ctr_time_names[c]);
    /* A sampled trace also says how much CPU each group used (running
     * time is not CPU: a thread runnable in the kernel's eyes, or
     * running in code the tracer does not see, is counted as running). */
    int sampled = ctr_stats_sampled(t);
    if (sampled)
        fprintf(out, " %9s", "cpu");
    fputs("  start function\n", out);
    char d[32];
    for (size_t i = 0; i < ngroups; i++) {
        fprintf(out, "%7zu", groups[i].nthreads);
        for (int c = 0; c < ncols; c++)
            fprintf(out, " %9s", ctr_text_ns((int64_t)groups[i].times[c], d, sizeof(d)));
        if (sampled)
            fprintf(out, " %9s", ctr_text_ns((int64_t)groups[i].cpu_ns, d, sizeof(d)));
        fprintf(out, "  %s\n", groups[i].label);
    }

    /* The invariant: what is shown as running, the kernel gave as CPU. */
    ctr_stats_warn_offcpu(out, &tot);

    size_t nleaked = 0;
    for (size_t i = 0; i < nleaks; i++)
        nleaked += leaks[i].count;
    if (nleaks == 0) {
        fputs("\nblocked at the end of the trace: no thread\n", out);
    } else {
        fprintf(out,
                "\nblocked at the end of the trace (leaked?): %zu thread%s in %zu group%s, "
                "largest first\n\n",
                nleaked, nleaked == 1 ? "" : "s", nleaks, nleaks == 1 ? "" : "s");
        fprintf(out, "%7s  %s\n", "threads", "call, stack innermost first");
        for (size_t i = 0; i < nleaks; i++) {
            if (i > 0)
                fputc('\n', out);
            put_leak(out, t, &ps, &leaks[i]);
        }
    }
    rc = 0;
done:
    if (ps.sym || ps.maps)
        ctr_profile_sym_close(&ps, warn);
    for (size_t i = 0; groups && i < ngroups; i++)
        free(groups[i].label);
    free(groups);
    ctr_threads_leaks_free(leaks, nleaks);
    if (rc != 0)
        snprintf(err, errlen, "reading the threads: %s", strerror(-rc));
    return rc;
}

int ctr_threads_write(const struct ctr_trace *t, int tsv, FILE *out, FILE *warn, char *err,
                      size_t errlen)
{
    struct ctr_threads_walk *w;
    int rc = walk_loaded(t, !tsv, &w);
    if (rc == 0)
        rc = ctr_threads_report(t, w, out, warn, err, errlen);
    else
        snprintf(err, errlen, "reading the threads: %s", strerror(-rc));
    ctr_threads_walk_free(w);
    return rc;
}
