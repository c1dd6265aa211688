/* SPDX-License-Identifier: MIT */
/* golden-dump.c - prints what the analyzer computes from a trace, with no
 * symbolization: the output contract of analyze/ that tests/e2e/golden.sh
 * compares with tests/data/golden/NAME.dump.expected, so that a rewrite of the
 * analyzer can be shown to compute the same (the CLI's outputs that need no
 * symbols are compared there too). Symbolized names depend on the binaries
 * of the machine that reads the trace; code addresses do not.
 *
 * It prints: the reader's view (complete, damage, warning, counts); for
 * each profile type the samples merged by identical frame lists, one line
 * each, `TYPE count delay_ns leaf pc pc ...` (the leaf's name, then the
 * code addresses innermost first, in hex), sorted; the same under each
 * filter given and under all of them together; per thread (by id) its time
 * running, runnable and blocked by wait class from the state machine, and
 * the events that did not fit it; then the leak finder's groups.
 *
 * The profiles and states are computed twice: from the trace read whole
 * (ctr_trace_read, as tests read it) and streamed through the pipeline
 * with `-j JOBS` threads, the profiles as the CLI reads them (cli/reading.h);
 * a line says where the two differ, so the expected file holds both paths
 * to the old answers.
 * usage: golden-dump TRACE [-task TYPE] [-region NAME] [-latmin NS] [-j JOBS]
 * Exit status: 0, 1 when the trace cannot be read or memory runs out. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"
#include "cli/reading.h"
#include "report/stats.h"
#include "read/pipeline.h"
#include "profile/profile.h"
#include "read/load.h"
#include "read/state.h"
#include "model/tasks.h"
#include "report/threads.h"

static const char *trace_path;
static int jobs = 1;

/* ================================================================ profiles */

struct agg {
    char *key; /* "leaf pc pc ..." */
    int64_t count, delay_ns;
};

struct aggs {
    struct agg *a;
    size_t n, cap;
};

static int on_sample(void *ctx, const struct ctr_pprof_frame *frames, size_t n, int64_t count,
                     int64_t delay_ns)
{
    struct aggs *as = ctx;
    char key[4096];
    size_t len = 0;
    for (size_t i = 0; i < n && len < sizeof(key); i++) {
        const char *sep = i ? " " : "";
        int w = frames[i].function
                    ? snprintf(key + len, sizeof(key) - len, "%s%s", sep, frames[i].function)
                    : snprintf(key + len, sizeof(key) - len, "%s%" PRIx64, sep, frames[i].pc);
        len += w > 0 ? (size_t)w : 0;
    }
    if (ctr_grow(&as->a, &as->cap, as->n + 1, sizeof(*as->a)) != 0)
        return -1;
    as->a[as->n] = (struct agg){strdup(key), count, delay_ns};
    return as->a[as->n++].key ? 0 : -1;
}

static int agg_cmp(const void *a, const void *b)
{
    return strcmp(((const struct agg *)a)->key, ((const struct agg *)b)->key);
}

/* Sorts as and merges runs of one key into the first: one entry a stack. */
static size_t merge_aggs(struct aggs *as)
{
    if (as->n) /* qsort must not be given NULL, even for no elements (UBSan) */
        qsort(as->a, as->n, sizeof(*as->a), agg_cmp);
    size_t stacks = 0;
    for (size_t i = 0; i < as->n; i++)
        if (i == 0 || strcmp(as->a[i].key, as->a[stacks - 1].key) != 0) {
            as->a[stacks++] = as->a[i];
        } else {
            as->a[stacks - 1].count += as->a[i].count;
            as->a[stacks - 1].delay_ns += as->a[i].delay_ns;
            free(as->a[i].key);
        }
    return stacks;
}

/* Profile `type` under filter f as the CLI makes it (cli/reading.h): streamed,
 * the waits summed per stack, a first reading for the filter's windows. */
static int stream_profile(enum ctr_profile_type type, const struct ctr_profile_filter *f,
                          struct aggs *as)
{
    struct ctr_reading rd;
    struct ctr_windows keep = {0};
    struct ctr_pipeline_opts o = {.jobs = jobs};
    struct ctr_trace *t;
    int set = ctr_profile_filter_is_set(f);
    if (ctr_reading_open(&rd, trace_path, set ? 2 : 1, &o))
        return -1;
    int rc = 0;
    if (set) {
        struct ctr_tasks ts;
        rc = ctr_reading_tasks(&rd, &ts, NULL, 0, &t) ? -1 : 0;
        if (rc == 0) {
            rc = ctr_profile_filter_windows(t, &ts, f, &keep, NULL, NULL);
            ctr_tasks_free(&ts);
        }
    }
    struct ctr_profile_collect *c = NULL;
    if (rc == 0 && !(c = ctr_profile_collect_new(ctr_reading_trace(&rd), type, set ? &keep : NULL,
                                                 NULL, NULL)))
        rc = -1;
    if (rc == 0) {
        struct ctr_consumer cons = ctr_profile_consumer(c);
        rc = ctr_reading_pass(&rd, &cons, 1, &t) ? -1 : 0;
    }
    if (rc == 0)
        rc = ctr_profile_collect_end(c, on_sample, as);
    ctr_profile_collect_free(c);
    ctr_windows_free(&keep);
    ctr_reading_close(&rd);
    return rc;
}

/* Prints profile `type` of t under filter f (NULL: none) as sorted lines,
 * and where the streamed profile differs. */
static int dump_profile(const struct ctr_trace *t, enum ctr_profile_type type,
                        const struct ctr_profile_filter *f, const char *label)
{
    struct aggs as = {0}, st = {0};
    int rc = ctr_profile_samples(t, type, f, on_sample, &as);
    size_t samples = as.n, stacks = merge_aggs(&as);
    int src = stream_profile(type, f, &st);
    size_t sstacks = merge_aggs(&st);
    printf("# profile %s%s: %zu samples, %zu stacks, status %d\n", ctr_profile_name(type), label,
           samples, stacks, rc);
    for (size_t i = 0; i < stacks; i++) {
        printf("%s %" PRId64 " %" PRId64 " %s\n", ctr_profile_name(type), as.a[i].count,
               as.a[i].delay_ns, as.a[i].key);
        if (src || i >= sstacks || strcmp(as.a[i].key, st.a[i].key) != 0 ||
            as.a[i].count != st.a[i].count || as.a[i].delay_ns != st.a[i].delay_ns)
            printf("STREAMED DIFFERS (status %d): %s\n", src,
                   i < sstacks ? st.a[i].key : "(no such line)");
        free(as.a[i].key);
    }
    if (sstacks != stacks)
        printf("STREAMED DIFFERS: %zu stacks\n", sstacks);
    for (size_t i = 0; i < sstacks; i++)
        free(st.a[i].key);
    free(as.a);
    free(st.a);
    return rc == 0 ? 0 : -1;
}

/* ================================================================ states */

enum { T_RUNNING, T_RUNNABLE, T_SYNC, T_NET, T_SYSCALL, T_SLEEP, T_OTHER, T_N };
static const char *const time_names[T_N] = {"running", "runnable", "sync", "net",
                                            "syscall", "sleep",    "other"};

struct times {
    const struct ctr_trace *t;
    uint64_t (*ns)[T_N]; /* per thread index */
    uint64_t *open;      /* per thread index: intervals flagged open */
};

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct times *tm = ctx;
    size_t th = (size_t)(iv->thread - tm->t->threads);
    int k = T_OTHER;
    if (iv->state == CTR_STATE_RUNNING) {
        k = T_RUNNING;
    } else if (iv->state == CTR_STATE_RUNNABLE) {
        k = T_RUNNABLE;
    } else if (iv->reason < CTR_REASON_LIMIT) {
        uint8_t cls = ctr_reason_specs[iv->reason].wait_class;
        k = cls == CTR_CLASS_SYNC      ? T_SYNC
            : cls == CTR_CLASS_NET     ? T_NET
            : cls == CTR_CLASS_SYSCALL ? T_SYSCALL
            : cls == CTR_CLASS_SLEEP   ? T_SLEEP
                                       : T_OTHER;
    }
    tm->ns[th][k] += iv->end_ns - iv->start_ns;
    tm->open[th] += iv->open != 0;
}

/* The states streamed: thread indexes there follow the file's order, so
 * the times are compared by thread id. */
static int stream_states(const struct ctr_trace *whole, const struct times *want, uint64_t bad)
{
    char err[256];
    struct ctr_source *src;
    struct ctr_trace t = {0};
    struct ctr_pipeline_opts o = {.jobs = jobs};
    size_t cap = whole->nthreads + 1;
    struct times tm = {&t, calloc(cap, sizeof(*tm.ns)), calloc(cap, sizeof(*tm.open))};
    struct ctr_consumer c = {.ctx = &tm, .interval = on_interval};
    int rc = tm.ns && tm.open ? ctr_source_open(trace_path, 0, &src, err, sizeof(err)) : -1;
    if (rc == 0) {
        rc = ctr_analyze(src, &t, &c, 1, &o, err, sizeof(err));
        ctr_source_close(src);
    }
    if (rc == 0 && (t.nthreads != whole->nthreads || t.odd != bad))
        printf("STREAMED DIFFERS: %zu threads, %" PRIu64 " inconsistent\n", t.nthreads, t.odd);
    for (size_t i = 0; rc == 0 && i < t.nthreads && i < whole->nthreads; i++) {
        const struct ctr_thread_info *w = ctr_trace_thread(whole, t.threads[i].id);
        size_t k = w ? (size_t)(w - whole->threads) : 0;
        if (!w || memcmp(tm.ns[i], want->ns[k], sizeof(tm.ns[i])) != 0 ||
            tm.open[i] != want->open[k])
            printf("STREAMED DIFFERS: thread %" PRIu64 "\n", t.threads[i].id);
    }
    free(tm.ns);
    free(tm.open);
    ctr_trace_free(&t);
    return rc;
}

static int dump_states(const struct ctr_trace *t)
{
    struct times tm = {t, calloc(t->nthreads + 1, sizeof(*tm.ns)),
                       calloc(t->nthreads + 1, sizeof(*tm.open))};
    uint64_t bad = tm.ns && tm.open ? ctr_state_walk(t, on_interval, &tm) : UINT64_MAX;
    if (bad != UINT64_MAX && stream_states(t, &tm, bad) != 0)
        bad = UINT64_MAX;
    if (bad != UINT64_MAX) {
        printf("# states: %zu threads\n", t->nthreads);
        for (size_t i = 0; i < t->nthreads; i++) {
            printf("thread %" PRIu64, t->threads[i].id);
            for (int k = 0; k < T_N; k++)
                printf(" %s %" PRIu64, time_names[k], tm.ns[i][k]);
            printf(" open %" PRIu64 "\n", tm.open[i]);
        }
        printf("inconsistent %" PRIu64 "\n", bad);
    }
    free(tm.ns);
    free(tm.open);
    return bad == UINT64_MAX ? -1 : 0;
}

/* ================================================================ leaks */

static int dump_leaks(const struct ctr_trace *t)
{
    struct ctr_leak_group *g;
    size_t n;
    if (ctr_threads_leaks(t, &g, &n) != 0)
        return -1;
    printf("# leaks: %zu groups\n", n);
    for (size_t i = 0; i < n; i++) {
        const char *call = g[i].reason < CTR_REASON_LIMIT ? ctr_reason_specs[g[i].reason].call : 0;
        printf("leak reason %u (%s) stack %" PRIu64 " count %zu longest %" PRIu64 " object %" PRIx64
               " same %d threads",
               g[i].reason, call ? call : "?", g[i].stack_id, g[i].count, g[i].longest_ns,
               g[i].object, g[i].same_object);
        for (size_t k = 0; k < g[i].count; k++)
            printf(" %" PRIu64, t->threads[g[i].threads[k]].id);
        printf("\n");
    }
    ctr_threads_leaks_free(g, n);
    return 0;
}

/* ================================================================ main */

int main(int argc, char **argv)
{
    struct ctr_profile_filter one[3] = {{0}}, all = {0};
    char labels[3][160], all_label[480] = "";
    size_t nf = 0;
    if (argc >= 4 && !strcmp(argv[argc - 2], "-j")) {
        jobs = atoi(argv[argc - 1]);
        argc -= 2;
    }
    for (int i = 2; i + 1 < argc && nf < 3; i += 2, nf++) {
        if (!strcmp(argv[i], "-task"))
            one[nf].task = all.task = argv[i + 1];
        else if (!strcmp(argv[i], "-region"))
            one[nf].region = all.region = argv[i + 1];
        else if (!strcmp(argv[i], "-latmin"))
            one[nf].latmin_ns = all.latmin_ns = strtoull(argv[i + 1], NULL, 10);
        else
            break;
        snprintf(labels[nf], sizeof(labels[nf]), " %s %s", argv[i], argv[i + 1]);
        strcat(all_label, labels[nf]);
    }
    if (argc < 2 || argc != 2 + 2 * (int)nf) {
        fprintf(stderr, "usage: golden-dump TRACE [-task TYPE] [-region NAME] [-latmin NS] "
                        "[-j JOBS]\n");
        return 2;
    }
    struct ctr_trace t;
    char err[256];
    trace_path = argv[1];
    if (ctr_trace_read(argv[1], &t, err, sizeof(err)) != 0) {
        fprintf(stderr, "golden-dump: %s\n", err);
        return 1;
    }
    printf("complete %d generations %" PRIu64 " threads %zu events %" PRIu64 " stacks %zu"
           " span %" PRIu64 "\n",
           t.complete, t.generations, t.nthreads, t.nevents, t.nstacks, t.end_ns - t.start_ns);
    printf("damage %s\nwarning %s\n", t.damage, t.warning);
    for (size_t i = 0; i < nf; i++) /* the filters' matches, as the CLI warns of them */
        printf("# filter%s: %d problems\n", labels[i], ctr_profile_filter_check(&t, &one[i], NULL));
    if (nf > 1)
        printf("# filter%s: %d problems\n", all_label, ctr_profile_filter_check(&t, &all, NULL));
    int rc = 0;
    for (int type = CTR_PROFILE_SYNC; type < CTR_PROFILE_LIMIT && rc == 0; type++) {
        /* The cpu profile of a trace that was not sampled is an error, not
         * an output (and the golden traces predate sampling). */
        if (type == CTR_PROFILE_CPU && !ctr_stats_sampled(&t))
            continue;
        rc = dump_profile(&t, type, NULL, "");
        for (size_t i = 0; i < nf && rc == 0; i++)
            rc = dump_profile(&t, type, &one[i], labels[i]);
        if (nf > 1 && rc == 0)
            rc = dump_profile(&t, type, &all, all_label);
    }
    if (rc == 0)
        rc = dump_states(&t);
    if (rc == 0)
        rc = dump_leaks(&t);
    ctr_trace_free(&t);
    if (rc != 0)
        fprintf(stderr, "golden-dump: out of memory\n");
    return rc == 0 ? 0 : 1;
}
