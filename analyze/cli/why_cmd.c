/* SPDX-License-Identifier: MIT */
/* why_cmd.c - `ctrace why`: the first reading of the trace finds the tasks
 * and picks the slowest; the second keeps the intervals inside their
 * windows (critpath.h), from which each one's critical path is walked and
 * reported (why.h). */
#include "cli/why_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/paths.h"
#include "cli/reading.h"
#include "model/cpucheck.h"
#include "model/tasks.h"
#include "profile/critical.h"
#include "profile/profile.h"
#include "report/why.h"

static const char why_usage[] =
    "usage: ctrace why [-task T] [-region NAME] [-latmin DURATION] [-n N] [-tsv] [-j N] TRACE\n"
    "Why the N slowest tasks of TRACE took as long as they did: each one's critical\n"
    "path, walked back from its end through the releases that ended its waits to\n"
    "the threads that made it wait, and their own waits in turn. Every nanosecond\n"
    "of the task's latency lands on one thread in one state: its own thread's\n"
    "running, runnable and blocked time, then the waits through which the path left\n"
    "it, the path's largest parts (thread, state, call, frame, and the innermost\n"
    "region of that thread then), and what dominates.\n"
    "  -task T           only tasks of type T (-type T: the same)\n"
    "  -region NAME      only tasks with a region of that name\n"
    "  -latmin DURATION  only tasks at least this long (200ns, 500us, 30ms, 1.5s)\n"
    "  -n N              how many of the slowest tasks (default 3)\n"
    "  -tsv              the paths' parts as tab-separated lines: task thread state\n"
    "                    call hopped ns function file:line region (after a '#'\n"
    "                    header)\n" CTR_CLI_JOBS_HELP;

struct why_opts {
    struct ctr_profile_filter f;
    size_t n;
    int tsv;
};

/* Parses the flags into o, *path. @return -1 to go on, else the status. */
static int parse(int argc, char **argv, struct why_opts *o, struct ctr_pipeline_opts *po,
                 const char **path)
{
    const char *v;
    for (int i = 1; i < argc; i++) {
        int r;
        if (ctr_cli_is_help(argv[i])) {
            fputs(why_usage, stdout);
            return 0;
        }
        if (ctr_cli_flag(argc, argv, &i, "tsv", NULL) > 0) {
            o->tsv = 1;
            continue;
        }
        if ((r = ctr_cli_flag(argc, argv, &i, "task", &v)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "type", &v)) != 0) {
            if (r < 0 || !*v)
                return ctr_cli_usage_error(NULL, "why: flag %s needs a task type", argv[i]);
            o->f.task = v;
            continue;
        }
        if ((r = ctr_cli_flag(argc, argv, &i, "region", &v)) != 0) {
            if (r < 0 || !*v)
                return ctr_cli_usage_error(NULL, "why: flag %s needs a region name", argv[i]);
            o->f.region = v;
            continue;
        }
        if ((r = ctr_cli_flag(argc, argv, &i, "latmin", &v)) != 0) {
            if (r < 0)
                return ctr_cli_usage_error(NULL, "why: flag %s needs a value", argv[i]);
            if (!ctr_cli_duration("why", "latmin", v, &o->f.latmin_ns))
                return CTR_EXIT_USAGE;
            continue;
        }
        if ((r = ctr_cli_reading_arg(argc, argv, &i, "why", po)) != 0) {
            if (r < 0)
                return CTR_EXIT_USAGE;
            continue;
        }
        if ((r = ctr_cli_flag(argc, argv, &i, "n", &v)) != 0) {
            if (r < 0)
                return ctr_cli_usage_error(NULL, "why: flag %s needs a value", argv[i]);
            if (!ctr_cli_count(v, 1, 1000000, &o->n))
                return ctr_cli_usage_error(NULL, "why: -n wants a number of tasks from 1, not '%s'",
                                           v);
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return ctr_cli_usage_error(NULL, "why: unknown flag %s", argv[i]);
        if (*path)
            return ctr_cli_usage_error(NULL, "why: more than one trace given (%s)", argv[i]);
        *path = argv[i];
    }
    if (!*path)
        return ctr_cli_usage_error(NULL, "why: no trace file given");
    return -1;
}

/* Where the walks' paths go: into w[] (why), or summed into sum
 * (-pprof=critical) and let go. */
struct take {
    const struct ctr_task **tasks;
    struct ctr_cp_task *w;
    struct ctr_critical *sum;
};

static int take_path(void *ctx, size_t i, struct ctr_cp_path *p)
{
    struct take *to = ctx;
    if (to->sum) {
        int rc = ctr_critical_add(to->sum, to->tasks[i]->type, p);
        ctr_cp_path_free(p);
        return rc;
    }
    to->w[i] = (struct ctr_cp_task){to->tasks[i], *p};
    return 0;
}

/* A reading of the trace and the paths of the tasks picked. */
struct paths {
    struct ctr_reading rd;
    struct ctr_tasks ts;
    const struct ctr_task **tasks;
    struct ctr_cp_task *w; /* why's; NULL when summed */
    size_t n;
    struct ctr_trace *t;      /* the second reading's: the paths index its threads */
    struct ctr_cpucheck *cpu; /* why's: running held against CPU time */
};

static void paths_free(struct paths *ps)
{
    for (size_t i = 0; ps->w && i < ps->n; i++)
        ctr_cp_path_free(&ps->w[i].path);
    free(ps->w);
    free(ps->tasks);
    ctr_cpucheck_free(ps->cpu);
    ctr_tasks_free(&ps->ts);
    ctr_reading_close(&ps->rd);
}

/* Reads the trace at path twice: its tasks, then the paths of those o
 * picks, into ps->w, or summed into sum if not NULL. @return 0 (free ps
 * with paths_free()), or 1 after saying why on stderr (nothing to free). */
static int paths_read(struct paths *ps, const char *path, const struct ctr_pipeline_opts *po,
                      const struct why_opts *o, struct ctr_critical *sum)
{
    memset(ps, 0, sizeof(*ps));
    if (ctr_reading_open(&ps->rd, path, 2, po) ||
        ctr_reading_tasks(&ps->rd, &ps->ts, NULL, 0, &ps->t)) {
        ctr_reading_close(&ps->rd);
        return 1;
    }
    if (ctr_profile_filter_slowest(&ps->ts, &o->f, o->n, &ps->tasks, &ps->n) != 0 ||
        (!sum && !(ps->w = calloc(ps->n ? ps->n : 1, sizeof(*ps->w))))) {
        fprintf(stderr, "ctrace: why: %s\n", strerror(ENOMEM));
    } else {
        struct take to = {ps->tasks, ps->w, sum};
        struct ctr_paths walk;
        /* why's running parts, held against the kernel's CPU time. */
        if (!sum && (ps->cpu = ctr_cpucheck_new(ctr_reading_trace(&ps->rd))) != NULL)
            ctr_cpucheck_keep(ps->cpu);
        if ((sum || ps->cpu) &&
            ctr_paths_begin(&walk, &ps->rd, &ps->ts, ps->tasks, ps->n, take_path, &to) == 0) {
            struct ctr_consumer c[2] = {ctr_paths_consumer(&walk)};
            if (ps->cpu)
                c[1] = ctr_cpucheck_consumer(ps->cpu);
            int status = ctr_reading_pass(&ps->rd, c, ps->cpu ? 2 : 1, &ps->t);
            if (ctr_paths_end(&walk, status) == 0) {
                if (!ps->cpu || ctr_cpucheck_finish(ps->cpu) == 0)
                    return 0;
                fprintf(stderr, "ctrace: why: %s\n", strerror(ENOMEM));
            }
        } else if (!sum && !ps->cpu) {
            fprintf(stderr, "ctrace: why: %s\n", strerror(ENOMEM));
        }
    }
    paths_free(ps);
    return 1;
}

int ctr_cmd_why(int argc, char **argv)
{
    const char *path = NULL;
    struct ctr_pipeline_opts po = ctr_cli_pipeline_opts();
    struct why_opts o = {.n = 3};
    int status = parse(argc, argv, &o, &po, &path);
    if (status >= 0)
        return status;
    struct paths ps;
    if (paths_read(&ps, path, &po, &o, NULL) != 0)
        return 1;
    char err[256];
    status = 1;
    int rc = ctr_why_write(ps.t, ps.w, ps.n, ps.cpu, o.tsv, stdout, err, sizeof(err));
    if (rc == 0 && fflush(stdout) != 0)
        fprintf(stderr, "ctrace: writing the output: %s\n", strerror(errno));
    else if (rc != 0)
        fprintf(stderr, "ctrace: %s\n", err);
    else
        status = (ctr_reading_say(&ps.rd), ctr_reading_status(&ps.rd));
    paths_free(&ps);
    return status;
}

int ctr_cmd_critical(const struct ctr_profile_filter *f, const char *out_path, const char *path,
                     const struct ctr_pipeline_opts *po)
{
    if (!out_path && isatty(1)) {
        fputs("ctrace: not writing a binary profile to a terminal; use -o FILE or redirect\n",
              stderr);
        return CTR_EXIT_USAGE;
    }
    struct why_opts o = {.f = *f, .n = SIZE_MAX};
    struct ctr_critical *sum = ctr_critical_new();
    struct paths ps;
    if (!sum) {
        fprintf(stderr, "ctrace: %s\n", strerror(ENOMEM));
        return 1;
    }
    if (paths_read(&ps, path, po, &o, sum) != 0) {
        ctr_critical_free(sum);
        return 1;
    }
    if (ps.n == 0)
        fprintf(stderr, "ctrace: %s: no task%s%s%s%s%s: the profile is empty\n", path,
                f->task ? " of type " : "", f->task ? f->task : "",
                f->region ? " with a region " : "", f->region ? f->region : "",
                f->latmin_ns ? " passes -latmin" : "");
    /* Remove a half-written output on failure, but only a file we created. */
    struct stat st;
    int created = out_path && stat(out_path, &st) != 0;
    FILE *out = out_path ? fopen(out_path, "wb") : stdout;
    char err[256];
    int rc = out ? ctr_critical_write(sum, ps.t, out, stderr, err, sizeof(err)) : -errno;
    if (!out)
        snprintf(err, sizeof(err), "%s", strerror(-rc));
    if (rc == 0 && fflush(out) != 0)
        rc = -errno, snprintf(err, sizeof(err), "writing the profile: %s", strerror(errno));
    if (out_path && out && fclose(out) != 0 && rc == 0)
        rc = -errno, snprintf(err, sizeof(err), "writing the profile: %s", strerror(errno));
    int status = 1;
    if (rc != 0) {
        fprintf(stderr, "ctrace: %s%s%s\n", out_path ? out_path : "", out_path ? ": " : "", err);
        if (created)
            unlink(out_path);
    } else {
        ctr_reading_say(&ps.rd);
        status = ctr_reading_status(&ps.rd);
    }
    paths_free(&ps);
    ctr_critical_free(sum);
    return status;
}
