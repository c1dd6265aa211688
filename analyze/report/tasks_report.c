/* SPDX-License-Identifier: MIT */
/* tasks_report.c - `ctrace tasks` (see tasks_report.h): the table by type,
 * the tasks still open, and the slowest tasks each with its breakdown, its
 * time per region name and its logs.
 *
 * Everything it prints comes from the model (tasks.h) built once per call:
 * the tasks are sorted by (type, ended, latency) so that each type's ended
 * ones form one sorted run, which its percentiles index directly. Text the
 * program supplied (types, names, logs) passes through put_clean, which
 * escapes control characters (blanks them in -tsv).
 */
#include "report/tasks_report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define CPU_FUNCS_SHOWN 3 /* functions on a task's cpu line */

#include "profile/profile.h"
#include "report/cpuleaves.h"
#include "report/stats.h"
#include "model/tasks.h"
#include "profile/text.h"

static void put_clean(FILE *out, const char *s, size_t len, int tsv)
{
    ctr_text_clean(out, s, len, tsv);
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

/* Nearest rank: the smallest of the n sorted values that at least p% of
 * them do not exceed. */
static uint64_t percentile(const struct ctr_task *const *sorted, size_t n, unsigned p)
{
    size_t rank = (p * n + 99) / 100;
    return ctr_task_latency(sorted[rank ? rank - 1 : 0]);
}

struct type_row {
    const char *type;
    size_t first, nended, nopen; /* in the sorted task list */
};

static void put_thread(FILE *out, const struct ctr_trace *t, uint32_t i)
{
    ctr_text_thread(out, t, i);
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

/* "cpu      260.0ms in 25 samples: f 58% (file.c:29), g 42% (...)": the
 * functions that ran most while threads worked for the task. */
static int put_cpu(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                   const struct ctr_task_breakdown *b)
{
    char d[32];
    if (b->cpu.samples == 0) {
        fputs("    cpu      no samples\n", out);
        return 0;
    }
    fprintf(out, "    cpu      %s in %" PRIu64 " sample%s: ",
            ctr_text_ns((int64_t)b->cpu.ns, d, sizeof(d)), b->cpu.samples,
            b->cpu.samples == 1 ? "" : "s");
    int rc = ctr_cpu_leaves_print(out, t, ps, &b->cpu, CPU_FUNCS_SHOWN);
    fputc('\n', out);
    return rc;
}

static int put_instance(FILE *out, const struct ctr_trace *t, const struct ctr_tasks *ts,
                        const struct ctr_task *task, const struct ctr_task_breakdown *b,
                        struct ctr_profile_sym *ps)
{
    char d[2][32];
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
    /* Off-cpu: running time the kernel's CPU time does not hold, in no
     * recorded wait (a column where the trace has CPU readings). */
    int nkinds = t->has_cpu_time ? CTR_TIME_N : CTR_TIME_OFFCPU;
    uint64_t total = 0;
    for (int k = 0; k < nkinds; k++)
        total += b->times[k];
    fprintf(out,
            "    time     %s on %zu thread%s:", ctr_text_ns((int64_t)total, d[0], sizeof(d[0])),
            b->nthreads, b->nthreads == 1 ? "" : "s");
    for (int k = 0; k < nkinds; k++)
        fprintf(out, "%s %s %s", k ? "," : "", ctr_time_names[k],
                ctr_text_ns((int64_t)b->times[k], d[1], sizeof(d[1])));
    fputc('\n', out);
    if (ps && put_cpu(out, t, ps, b) != 0)
        return -ENOMEM;
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

int ctr_tasks_report(const struct ctr_trace *t, const struct ctr_tasks *model,
                     const struct ctr_tasks_opts *o, ctr_breakdown_fn breakdown, void *bd_ctx,
                     FILE *out, char *err, size_t errlen)
{
    const struct ctr_tasks ts = *model;
    const struct ctr_task **sorted = NULL, **slow = NULL;
    struct type_row *rows = NULL;
    struct ctr_task_breakdown *bd = NULL;
    int rc = -ENOMEM;
    size_t n = 0, nslow = 0, nrows = 0, shown = 0;
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
        fprintf(out,
                "\nignored: %" PRIu64 " task ends without a begin in the trace (or a second "
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
        qsort(open, k, sizeof(*open), ctr_task_by_slowest);
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

    shown = o->n < nslow ? o->n : nslow;
    if (n && o->n) {
        if (nslow > 1)
            qsort(slow, nslow, sizeof(*slow), ctr_task_by_slowest);
        fprintf(out, "\nslowest %zu of %zu task%s", shown, nslow, nslow == 1 ? "" : "s");
        if (o->type) {
            fputs(" of type ", out);
            put_str(out, o->type, 0);
        }
        if (o->latmin_ns)
            fprintf(out, " at least %s long", ctr_text_ns((int64_t)o->latmin_ns, d[0], 32));
        fputs(shown ? ":\n" : "\n", out);
        bd = calloc(shown ? shown : 1, sizeof(*bd));
        if (!bd || (rc = breakdown(bd_ctx, slow, shown, bd)) != 0) {
            rc = rc ? rc : -ENOMEM;
            goto done;
        }
        rc = -ENOMEM; /* what put_instance can fail of */
        /* A sampled trace says what ran: symbols for the CPU lines. */
        struct ctr_profile_sym ps = {0};
        int sampled = ctr_stats_sampled(t);
        if (sampled && ctr_profile_sym_open(t, &ps) != 0)
            goto done;
        size_t i = 0;
        for (; i < shown; i++) {
            fputc('\n', out);
            if (put_instance(out, t, &ts, slow[i], &bd[i], sampled ? &ps : NULL))
                break;
        }
        if (sampled)
            ctr_profile_sym_close(&ps, stderr); /* missing files: as the profiles say */
        if (i < shown)
            goto done;
    }
    rc = 0;
done:
    if (rc)
        snprintf(err, errlen, "reading the tasks: %s", strerror(-rc));
    ctr_task_breakdowns_free(bd, shown);
    free(bd);
    free(rows);
    free(slow);
    free(sorted);
    return rc;
}

/* The breakdowns of a trace read whole: one more walk of it. */
struct loaded {
    const struct ctr_trace *t;
    const struct ctr_tasks *ts;
};

static int loaded_breakdown(void *ctx, const struct ctr_task *const *tasks, size_t n,
                            struct ctr_task_breakdown *out)
{
    const struct loaded *l = ctx;
    return ctr_tasks_breakdown(l->t, l->ts, tasks, n, out);
}

int ctr_tasks_write(const struct ctr_trace *t, const struct ctr_tasks_opts *o, FILE *out, char *err,
                    size_t errlen)
{
    struct ctr_tasks ts;
    int rc = ctr_tasks_build(t, &ts);
    if (rc) {
        snprintf(err, errlen, "reading the tasks: %s", strerror(-rc));
        return rc;
    }
    struct loaded l = {t, &ts};
    rc = ctr_tasks_report(t, &ts, o, loaded_breakdown, &l, out, err, errlen);
    ctr_tasks_free(&ts);
    return rc;
}
