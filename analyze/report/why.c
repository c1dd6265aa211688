/* SPDX-License-Identifier: MIT */
/* why.c - `ctrace why`: critical paths as a report (why.h).
 *
 * A path's parts are summed by (thread, state, call, stack, region, whether
 * reached through a hop): the same wait or the same running stretch met several
 * times along the path is one line. What dominates is the task thread's
 * hop (its wait, by call and stack) that explains the most time, and, within
 * what that hop's releasers did, their largest part. */
#include "report/why.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_format.h"
#include "model/cpucheck.h"
#include "profile/text.h"
#include "symbols/tracesym.h"

/* Lines of a path's largest parts printed per task. */
#define WHY_PARTS 6

struct part {
    uint32_t thread;
    uint8_t state, reason;
    int hopped; /* reached through a release */
    uint64_t stack_id;
    const char *region; /* the innermost region's name, or NULL */
    uint32_t via;       /* the task thread's hop (UINT32_MAX: none) */
    uint64_t ns;
    /* Running: of ns, what the kernel's CPU time says was waiting for a CPU
     * or off it in no recorded wait (model/cpucheck.h; 0 without it). */
    uint64_t runnable_ns, offcpu_ns;
};

static int part_key_cmp(const struct part *a, const struct part *b)
{
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    if (a->state != b->state)
        return a->state < b->state ? -1 : 1;
    if (a->reason != b->reason)
        return a->reason < b->reason ? -1 : 1;
    if (a->hopped != b->hopped)
        return a->hopped < b->hopped ? -1 : 1;
    if (a->stack_id != b->stack_id)
        return a->stack_id < b->stack_id ? -1 : 1;
    if (a->region != b->region)
        return !a->region ? -1 : !b->region ? 1 : strcmp(a->region, b->region);
    return 0;
}

static int by_key(const void *pa, const void *pb)
{
    return part_key_cmp(pa, pb);
}

static int by_ns_desc(const void *pa, const void *pb)
{
    const struct part *a = pa, *b = pb;
    if (a->ns != b->ns)
        return a->ns > b->ns ? -1 : 1;
    return part_key_cmp(a, b);
}

static int hop_same(const struct ctr_cp_hop *a, const struct ctr_cp_hop *b)
{
    return a->reason == b->reason && a->stack_id == b->stack_id;
}

/* Segment s as a part on `thread`; its running time held against the CPU
 * time (cpu: NULL, not). */
static struct part part_of(const struct ctr_cp_segment *s, uint32_t thread,
                           const struct ctr_cpucheck *cpu)
{
    struct part v = {thread,      s->state,
                     s->reason,   s->hops > 0,
                     s->stack_id, s->region ? s->region->name : NULL,
                     s->via,      s->end_ns - s->start_ns,
                     0,           0};
    if (cpu && s->state == CTR_CP_RUNNING)
        ctr_cpucheck_split(cpu, s->thread, s->start_ns, s->end_ns, &v.runnable_ns, &v.offcpu_ns);
    return v;
}

/* Whether segment s of p is on another thread, reached through a hop of
 * the task thread like `under` (the same wait). */
static int reached_through(const struct ctr_cp_path *p, const struct ctr_cp_segment *s,
                           const struct ctr_cp_hop *under)
{
    return s->hops > 0 && s->via < p->nhop && hop_same(&p->hop[s->via], under);
}

/* The path's parts summed by key, largest first, into a new array of *n:
 * all of them, or (under not NULL) those reached through a hop of the task
 * thread like `under` (the same wait), summed across threads (their thread
 * UINT32_MAX). @return NULL if out of memory (or empty). */
static struct part *sum_parts(const struct ctr_cp_path *p, const struct ctr_cp_hop *under,
                              const struct ctr_cpucheck *cpu, size_t *n)
{
    *n = 0;
    struct part *v = p->nseg ? malloc(p->nseg * sizeof(*v)) : NULL;
    if (!v)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < p->nseg; i++) {
        const struct ctr_cp_segment *s = &p->seg[i];
        if (under && !reached_through(p, s, under))
            continue;
        v[k++] = part_of(s, under ? UINT32_MAX : s->thread, cpu);
    }
    qsort(v, k, sizeof(*v), by_key);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && part_key_cmp(&v[m - 1], &v[i]) == 0) {
            v[m - 1].ns += v[i].ns;
            v[m - 1].runnable_ns += v[i].runnable_ns;
            v[m - 1].offcpu_ns += v[i].offcpu_ns;
        } else {
            v[m++] = v[i];
        }
    }
    qsort(v, m, sizeof(*v), by_ns_desc);
    *n = m;
    return v;
}

static const char *call_name(uint8_t reason)
{
    const char *c = reason < CTR_REASON_LIMIT ? ctr_reason_specs[reason].call : NULL;
    return c ? c : "-";
}

/* The innermost frame of a stack ("?" when none). */
static void put_stack(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                      uint64_t stack_id, const char *sep)
{
    const struct ctr_stack_info *s = stack_id ? ctr_trace_stack(t, stack_id) : NULL;
    if (!s || s->n == 0) {
        fputs(sep[0] == '\t' ? "?\t?" : "?", out);
        return;
    }
    ctr_text_frame(out, ps, s->pcs[0] - 1, sep); /* a return address: the call is before */
}

/* " (of which runnable R, off-cpu O)": running time that was not, by the
 * kernel's CPU time; nothing when all of it was. */
static void put_off_cpu(FILE *out, uint64_t runnable_ns, uint64_t offcpu_ns)
{
    char a[32];
    if (!runnable_ns && !offcpu_ns)
        return;
    fputs(" (of which", out);
    if (runnable_ns)
        fprintf(out, " runnable %s%s", ctr_text_ns((int64_t)runnable_ns, a, sizeof(a)),
                offcpu_ns ? "," : "");
    if (offcpu_ns)
        fprintf(out, " off-cpu %s", ctr_text_ns((int64_t)offcpu_ns, a, sizeof(a)));
    fputc(')', out);
}

/* "state in CALL at FRAME" ("running up to FRAME"), then ' in region
 * "NAME"', then what of a running part was not. */
static void put_what(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                     const struct part *v)
{
    fputs(ctr_cp_state_name(v->state), out);
    if (v->state == CTR_CP_BLOCKED || v->state == CTR_CP_RUNNABLE)
        fprintf(out, " in %s at ", call_name(v->reason));
    else if (v->state == CTR_CP_RUNNING && v->stack_id)
        fputs(" up to ", out);
    if (v->state != CTR_CP_UNKNOWN && (v->state != CTR_CP_RUNNING || v->stack_id))
        put_stack(out, t, ps, v->stack_id, " ");
    if (v->region) {
        fputs(" in region \"", out);
        ctr_text_clean(out, v->region, strlen(v->region), 0);
        fputc('"', out);
    }
    put_off_cpu(out, v->runnable_ns, v->offcpu_ns);
}

/* "thread ID (name)<sep>" and what it did there. */
static void put_part(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                     const struct part *v, const char *sep)
{
    ctr_text_thread(out, t, v->thread);
    fputs(sep, out);
    put_what(out, t, ps, v);
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void write_tsv(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                      const struct ctr_cp_task *w, const struct part *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%" PRIu64 "\t%" PRIu64 "\t%s\t%s\t%d\t%" PRIu64 "\t", w->task->id,
                t->threads[v[i].thread].id, ctr_cp_state_name(v[i].state),
                v[i].state == CTR_CP_BLOCKED || v[i].state == CTR_CP_RUNNABLE
                    ? call_name(v[i].reason)
                    : "-",
                v[i].hopped, v[i].ns);
        put_stack(out, t, ps, v[i].stack_id, "\t");
        fputc('\t', out);
        if (v[i].region)
            ctr_text_clean(out, v[i].region, strlen(v[i].region), 1);
        else
            fputc('-', out);
        fputc('\n', out);
    }
}

/* The task thread's own time by state, and its hops by wait. */
static void write_own(FILE *out, const struct ctr_cp_path *p, uint64_t latency,
                      const struct ctr_cpucheck *cpu)
{
    uint64_t by_state[5] = {0}, hopped = 0, runnable = 0, offcpu = 0;
    for (size_t i = 0; i < p->nseg; i++) {
        uint64_t d = p->seg[i].end_ns - p->seg[i].start_ns;
        if (p->seg[i].hops == 0 && p->seg[i].state < 5) {
            struct part v = part_of(&p->seg[i], p->seg[i].thread, cpu);
            by_state[p->seg[i].state] += d;
            runnable += v.runnable_ns;
            offcpu += v.offcpu_ns;
        } else {
            hopped += d;
        }
    }
    char a[32], b[32], c[32], d[32];
    fprintf(out, "  on its own thread %.1f%%: running %s", pct(latency - hopped, latency),
            ctr_text_ns((int64_t)by_state[CTR_CP_RUNNING], a, sizeof(a)));
    put_off_cpu(out, runnable, offcpu);
    fprintf(out, ", runnable %s, blocked %s",
            ctr_text_ns((int64_t)by_state[CTR_CP_RUNNABLE], b, sizeof(b)),
            ctr_text_ns((int64_t)by_state[CTR_CP_BLOCKED], c, sizeof(c)));
    if (by_state[CTR_CP_UNKNOWN])
        fprintf(out, ", unknown %s", ctr_text_ns((int64_t)by_state[CTR_CP_UNKNOWN], d, sizeof(d)));
    fputc('\n', out);
}

/* Hops grouped by the wait's call and stack: the index of each group's
 * first hop, and the time on other threads under them; largest first. */
struct hop_group {
    size_t first;
    uint64_t ns; /* the time on other threads reached through them */
};

static int by_group_ns(const void *pa, const void *pb)
{
    const struct hop_group *a = pa, *b = pb;
    return a->ns != b->ns ? (a->ns > b->ns ? -1 : 1)
                          : (a->first > b->first) - (a->first < b->first);
}

static struct hop_group *group_hops(const struct ctr_cp_path *p, size_t *n)
{
    *n = 0;
    struct hop_group *g = p->nhop ? calloc(p->nhop, sizeof(*g)) : NULL;
    size_t *group_of = p->nhop ? malloc(p->nhop * sizeof(*group_of)) : NULL;
    if (!g || !group_of) {
        free(g);
        free(group_of);
        return NULL;
    }
    for (size_t i = 0; i < p->nhop; i++) {
        size_t k = 0;
        while (k < *n && !hop_same(&p->hop[g[k].first], &p->hop[i]))
            k++;
        if (k == *n)
            g[(*n)++].first = i;
        group_of[i] = k;
    }
    /* The time on other threads under each: a lock's wait can also hold
     * time of its own, where the lock was between holders (critpath.h). */
    for (size_t i = 0; i < p->nseg; i++)
        if (p->seg[i].hops > 0 && p->seg[i].via < p->nhop)
            g[group_of[p->seg[i].via]].ns += p->seg[i].end_ns - p->seg[i].start_ns;
    free(group_of);
    qsort(g, *n, sizeof(*g), by_group_ns);
    return g;
}

static int by_u32(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return (a > b) - (a < b);
}

/* The largest part, summed across threads, reached through the hops of
 * group g; on how many threads it was, and one of them. */
static int dominant_under(const struct ctr_cp_path *p, const struct hop_group *g,
                          const struct ctr_cpucheck *cpu, struct part *best, size_t *nthreads,
                          uint32_t *one)
{
    memset(best, 0, sizeof(*best));
    *nthreads = 0;
    size_t n;
    const struct ctr_cp_hop *under = &p->hop[g->first];
    struct part *v = sum_parts(p, under, cpu, &n);
    if (!v && p->nseg)
        return -ENOMEM;
    if (!n) {
        free(v);
        return 0;
    }
    *best = v[0];
    free(v);
    uint32_t *threads = malloc(p->nseg * sizeof(*threads));
    if (!threads)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < p->nseg; i++) {
        const struct ctr_cp_segment *s = &p->seg[i];
        struct part key = part_of(s, UINT32_MAX, NULL);
        if (reached_through(p, s, under) && part_key_cmp(&key, best) == 0)
            threads[k++] = s->thread;
    }
    qsort(threads, k, sizeof(*threads), by_u32);
    *one = k ? threads[0] : 0;
    for (size_t i = 0; i < k; i++)
        *nthreads += i == 0 || threads[i] != threads[i - 1];
    free(threads);
    return 0;
}

static int write_task(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                      const struct ctr_cp_task *w, const struct ctr_cpucheck *cpu)
{
    const struct ctr_task *task = w->task;
    const struct ctr_cp_path *p = &w->path;
    uint64_t latency = p->end_ns - p->begin_ns;
    char a[32], b[32];
    fprintf(out, "\ntask %" PRIu64 " ", task->id);
    ctr_text_clean(out, task->type, strlen(task->type), 0);
    fprintf(out, ": %s%s, ended on ", ctr_text_ns((int64_t)latency, a, sizeof(a)),
            task->ended ? "" : " (still open: its age)");
    ctr_text_thread(out, t, task->ended ? task->end_thread : task->begin_thread);
    fputc('\n', out);
    write_own(out, p, latency, cpu);
    size_t ng;
    struct hop_group *g = group_hops(p, &ng);
    if (!g && p->nhop)
        return -ENOMEM;
    for (size_t i = 0; i < ng; i++) {
        const struct ctr_cp_hop *h = &p->hop[g[i].first];
        fprintf(out, "  behind other threads %.1f%% (%s): %s at ", pct(g[i].ns, latency),
                ctr_text_ns((int64_t)g[i].ns, a, sizeof(a)), call_name(h->reason));
        put_stack(out, t, ps, h->stack_id, " ");
        fputs(", released by ", out);
        ctr_text_thread(out, t, h->releaser);
        fputs(" at ", out);
        put_stack(out, t, ps, h->release_stack, " ");
        fputc('\n', out);
    }
    size_t n;
    struct part *v = sum_parts(p, NULL, cpu, &n);
    if (!v && p->nseg) {
        free(g);
        return -ENOMEM;
    }
    fputs("  the path, largest parts first:\n", out);
    uint64_t own = 0;
    const struct part *own_best = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].hopped) {
            own += v[i].ns;
            own_best = own_best ? own_best : &v[i];
        }
        if (i >= WHY_PARTS)
            continue;
        fprintf(out, "    %5.1f%% %9s  ", pct(v[i].ns, latency),
                ctr_text_ns((int64_t)v[i].ns, a, sizeof(a)));
        put_part(out, t, ps, &v[i], "  ");
        fputc('\n', out);
    }
    if (ng && g[0].ns > own) {
        struct part best;
        size_t nthreads;
        uint32_t one;
        int rc = dominant_under(p, &g[0], cpu, &best, &nthreads, &one);
        if (rc != 0) {
            free(v);
            free(g);
            return rc;
        }
        const struct ctr_cp_hop *h = &p->hop[g[0].first];
        fprintf(out, "  dominant: %.1f%% behind %s at ", pct(g[0].ns, latency),
                call_name(h->reason));
        put_stack(out, t, ps, h->stack_id, " ");
        if (best.ns) {
            fprintf(out, "; of that, %.1f%% (%s) is ", pct(best.ns, g[0].ns),
                    ctr_text_ns((int64_t)best.ns, b, sizeof(b)));
            put_what(out, t, ps, &best);
            if (nthreads == 1) {
                fputs(", on ", out);
                ctr_text_thread(out, t, one);
            } else {
                fprintf(out, ", on %zu threads", nthreads);
            }
        }
        fputc('\n', out);
    } else if (own_best) {
        fprintf(out, "  dominant: %.1f%% on its own thread; the most, %s, ", pct(own, latency),
                ctr_text_ns((int64_t)own_best->ns, b, sizeof(b)));
        put_part(out, t, ps, own_best, " ");
        fputc('\n', out);
    }
    free(v);
    free(g);
    if (p->unknown_ns)
        fprintf(out, "  %s of the path (%.1f%%) is outside what the trace holds of its threads%s\n",
                ctr_text_ns((int64_t)p->unknown_ns, a, sizeof(a)), pct(p->unknown_ns, latency),
                p->forgotten ? ", or before the history the walk could keep in memory" : "");
    if (p->cut)
        fputs("  a chain of releases deeper than 512 was cut: its last releaser takes the rest\n",
              out);
    return 0;
}

int ctr_why_write(const struct ctr_trace *t, const struct ctr_cp_task *w, size_t n,
                  const struct ctr_cpucheck *cpu, int tsv, FILE *out, char *err, size_t errlen)
{
    struct ctr_profile_sym ps;
    if (ctr_profile_sym_open(t, &ps) != 0) {
        snprintf(err, errlen, "symbolizing: %s", strerror(ENOMEM));
        return -ENOMEM;
    }
    int rc = 0;
    if (tsv)
        fputs("# task\tthread\tstate\tcall\thopped\tns\tfunction\tfile:line\tregion\n", out);
    else if (n == 0)
        fputs("no task to explain (none in the trace, or none passed the filters)\n", out);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (tsv) {
            size_t k;
            struct part *v = sum_parts(&w[i].path, NULL, NULL, &k);
            if (!v && w[i].path.nseg)
                rc = -ENOMEM;
            else
                write_tsv(out, t, &ps, &w[i], v, k);
            free(v);
        } else {
            rc = write_task(out, t, &ps, &w[i], cpu);
        }
    }
    if (rc == 0 && !tsv && n)
        fputs("\nUncontended acquisitions are not recorded: a lock holder's critical section\n"
              "is taken to begin when it can have taken the lock (after the release before\n"
              "its own, once running, in the region of its release); time before that (the\n"
              "lock free, or held by a thread whose release was not recorded) stays the\n"
              "waiter's, blocked.\n",
              out);
    if (rc != 0)
        snprintf(err, errlen, "explaining the tasks: %s", strerror(-rc));
    ctr_profile_sym_close(&ps, stderr);
    return rc;
}
