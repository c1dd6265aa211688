/* SPDX-License-Identifier: MIT */
/* main.c - the `ctrace` command line: flag parsing and dispatch to the
 * analyses, to `ctrace run` (run.c) and to `ctrace ctl` (ctl.c). Flags
 * follow Go's style (-flag=value or -flag value; one or two dashes), parsed
 * by cli.c.
 *
 * Exit status: 0 success; 1 an error (unreadable trace, failed write);
 * 2 a usage error; 3 the trace is damaged: the output covers the part before
 * the damage and a message on stderr says where it is; 4 (`ctrace stats`
 * only) the trace holds no threads or no events and has no end record (its
 * process ended or went away before its first flush). Every verb warns
 * about a trace without threads or events on stderr. `ctrace run` becomes
 * the program it runs, whose status is then its own; `ctrace ctl` exits
 * 128 + the signal when SIGINT or SIGTERM interrupts it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/ctl.h"
#include "ctrace/version.h"
#include "ctrace_format.h"
#include "cli/reading.h"
#include "cli/perfetto_cmd.h"
#include "profile/profile.h"
#include "read/trace.h"
#include "cli/run.h"
#include "cli/why_cmd.h"
#include "report/stats.h"
#include "model/tasks.h"
#include "report/tasks_report.h"
#include "profile/text.h"
#include "report/threads.h"
#include "profile/top.h"

#define EXIT_DAMAGED 3
#define EXIT_EMPTY 4

static const char usage_text[] =
    "usage: ctrace -pprof=TYPE [FILTERS] [-o FILE] TRACE\n"
    "                                             delay or CPU profile (gzip'd pprof) of\n"
    "                                             TRACE; TYPE: " CTR_PROFILE_TYPES "\n"
    "       ctrace -pprof=TYPE -top [-n N] [FILTERS] [-o FILE] TRACE\n"
    "                                             that profile's N (default 10) heaviest\n"
    "                                             stacks, as text\n"
    "       ctrace -perfetto [-o FILE] [-from D] [-to D] [FILTERS] TRACE\n"
    "                                             TRACE as a timeline for the Perfetto UI\n"
    "       ctrace tasks [-type T] [-latmin DURATION] [-n N] [-tsv] TRACE\n"
    "                                             task latencies by type, the N slowest\n"
    "                                             tasks in detail\n"
    "       ctrace why [-type T] [-latmin DURATION] [-n N] [-tsv] TRACE\n"
    "                                             why the N slowest tasks were slow: their\n"
    "                                             critical paths across threads\n"
    "       ctrace threads [-tsv] TRACE           threads by start function, and threads\n"
    "                                             blocked at the end (leaks)\n"
    "       ctrace stats TRACE                    summary: threads, events, bytes, drops\n"
    "       ctrace run [-o FILE] [FLAGS] -- CMD [ARG...]\n"
    "                                             run CMD, unmodified, traced into FILE\n"
    "       ctrace ctl PID COMMAND [FILE]         ask a running process for its status,\n"
    "                                             its recorder's window or a trace\n"
    "       ctrace ctl -list                      the processes that accept commands\n"
    "       ctrace -h | ctrace VERB -h            this help, or a verb's\n"
    "       ctrace -version                       versions: ctrace, libctrace's ABI, trace format\n"
    "\n"
    "FILTERS restrict a profile to the waiting (or CPU) done for the program's tasks:\n"
    "  -task T            while working for a task of type T\n"
    "  -region NAME       inside a region named NAME\n"
    "  -latmin DURATION   while working for a task at least DURATION long\n"
    "DURATION as in Go: 200ns, 500us, 30ms, 1.5s, 1m30s.\n"
    "\n"
    "Every verb reading a TRACE takes -j N: threads that read it, the analysis and\n"
    "N-1 decoding ahead (default: the cores available; the same output for any N),\n"
    "and -mem SIZE: the memory decompression may take (default 512M).\n"
    "TRACE - reads a trace from standard input. A directory is read as the LTTng\n"
    "(CTF) traces in it, of the `ctrace` tracepoints (ctrace run -lttng); -pid PID\n"
    "picks one of its processes, -pid all merges them. A long analysis shows its\n"
    "progress on stderr when that is a terminal.\n"
    "\n"
    "Exit status: 0 ok, 1 error, 2 usage, 3 damaged trace (the output covers the\n"
    "rest; stderr names the damage and the time missing),\n"
    "4 (stats) an unfinished trace without threads or events;\n"
    "ctrace run exits with CMD's own status; ctrace ctl with 130 or 143 when SIGINT\n"
    "or SIGTERM interrupts it.\n";

static int cmd_stats(int argc, char **argv)
{
    const char *path = NULL;
    struct ctr_pipeline_opts o = ctr_cli_pipeline_opts();
    int r;
    for (int i = 1; i < argc; i++) {
        if (ctr_cli_is_help(argv[i])) {
            fputs("usage: ctrace stats [-j N] [-pid PID|all] TRACE\n"
                  "Prints what TRACE holds: extent, threads, events by type, bytes per\n"
                  "event, and what was lost (dropped events, table overflows).\n" CTR_CLI_JOBS_HELP
                  "Exit status: 0 ok, 1 error, 3 damaged, 4 no threads or no events and\n"
                  "no end record (the program ended or forked away before its first flush).\n",
                  stdout);
            return 0;
        }
        if ((r = ctr_cli_reading_arg(argc, argv, &i, "stats", &o)) != 0) {
            if (r < 0)
                return CTR_EXIT_USAGE;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return ctr_cli_usage_error(NULL, "stats: unknown flag %s", argv[i]);
        if (path)
            return ctr_cli_usage_error(NULL, "stats: more than one trace given (%s)", argv[i]);
        path = argv[i];
    }
    if (!path)
        return ctr_cli_usage_error(NULL, "stats: no trace file given");
    struct ctr_reading rd;
    struct ctr_trace *t;
    struct ctr_threadtime *tt = NULL;
    struct ctr_time_totals time;
    if (ctr_reading_open(&rd, path, 1, &o))
        goto fail;
    /* Where the threads' time went: a walk of the states. */
    if (!(tt = ctr_threadtime_new(ctr_reading_trace(&rd)))) {
        fputs("ctrace: stats: out of memory\n", stderr);
        goto fail;
    }
    struct ctr_consumer c = ctr_threadtime_consumer(tt);
    if (ctr_reading_pass(&rd, &c, 1, &t))
        goto fail;
    if (ctr_threadtime_finish(tt, &time) != 0) {
        fputs("ctrace: stats: out of memory\n", stderr);
        goto fail;
    }
    ctr_reading_say(&rd);
    ctr_stats_print(t, path, &time, stdout);
    int rc = t->damage[0]                                 ? EXIT_DAMAGED
             : !t->complete && ctr_stats_empty(t) != NULL ? EXIT_EMPTY
                                                          : 0;
    ctr_threadtime_free(tt);
    ctr_reading_close(&rd);
    return rc;
fail:
    ctr_threadtime_free(tt);
    ctr_reading_close(&rd);
    return 1;
}

/* The filter's windows from a first reading's tasks (nothing when no
 * filter is set). @return 0, or 1 after saying why. */
static int filter_pass(struct ctr_reading *rd, const struct ctr_profile_filter *filter,
                       struct ctr_windows *keep)
{
    *keep = (struct ctr_windows){0};
    if (!ctr_profile_filter_is_set(filter))
        return 0;
    struct ctr_tasks ts;
    struct ctr_trace *t;
    if (ctr_reading_tasks(rd, &ts, NULL, 0, &t))
        return 1;
    size_t ntasks = 0, nregions = 0;
    int rc = ctr_profile_filter_windows(t, &ts, filter, keep, &ntasks, &nregions);
    ctr_tasks_free(&ts);
    if (rc != 0) {
        fprintf(stderr, "ctrace: reading the tasks: %s\n", strerror(-rc));
        return 1;
    }
    ctr_profile_filter_warn(filter, ntasks, nregions, "profile", stderr);
    return 0;
}

/* -pprof=TYPE: the gzip'd profile, or with top_n > 0 (-top) its top_n
 * heaviest stacks as text. */
static int cmd_pprof(const char *type, size_t top_n, const struct ctr_profile_filter *filter,
                     const char *out_path, const char *path, const struct ctr_pipeline_opts *ro)
{
    if (strcmp(type, "critical") == 0) {
        if (top_n)
            return ctr_cli_usage_error(NULL, "-pprof=critical takes no -top (ctrace why says the "
                                             "paths as text)");
        return ctr_cmd_critical(filter, out_path, path, ro);
    }
    enum ctr_profile_type cls = ctr_profile_parse(type);
    if (!cls)
        return ctr_cli_usage_error(NULL, "unknown profile type '%s' (want " CTR_PROFILE_TYPES ")",
                                   type);
    if (!top_n && !out_path && isatty(1)) {
        fputs("ctrace: not writing a binary profile to a terminal; use -o FILE or redirect\n",
              stderr);
        return CTR_EXIT_USAGE;
    }
    struct ctr_reading rd;
    struct ctr_pipeline_opts o = *ro;
    struct ctr_windows keep = {0};
    struct ctr_profile_collect *c = NULL;
    struct ctr_trace *t;
    int status = 1;
    if (ctr_reading_open(&rd, path, ctr_profile_filter_is_set(filter) ? 2 : 1, &o) ||
        filter_pass(&rd, filter, &keep))
        goto done;
    c = ctr_profile_collect_new(ctr_reading_trace(&rd), cls,
                                ctr_profile_filter_is_set(filter) ? &keep : NULL, NULL, NULL);
    if (!c) {
        fprintf(stderr, "ctrace: out of memory\n");
        goto done;
    }
    struct ctr_consumer cons = ctr_profile_consumer(c);
    if (ctr_reading_pass(&rd, &cons, 1, &t))
        goto done;
    ctr_reading_say(&rd);
    char err[256];
    if (ctr_profile_check(t, cls, err, sizeof(err)) != 0) {
        fprintf(stderr, "ctrace: %s: %s\n", path, err);
        goto done;
    }
    /* Remove a half-written output on failure, but only a file we created:
     * the path may name a device or something the user wants kept. */
    struct stat st;
    int created = out_path && stat(out_path, &st) != 0;
    FILE *out = out_path ? fopen(out_path, "wb") : stdout;
    if (!out) {
        fprintf(stderr, "ctrace: %s: %s\n", out_path, strerror(errno));
        goto done;
    }
    int rc = top_n
                 ? ctr_top_write_collected(t, c, cls, filter, top_n, out, stderr, err, sizeof(err))
                 : ctr_profile_write_collected(t, c, out, stderr, err, sizeof(err));
    if (rc == 0 && fflush(out) != 0)
        rc = -errno, snprintf(err, sizeof(err), "writing the profile: %s", strerror(errno));
    if (out_path && fclose(out) != 0 && rc == 0)
        rc = -errno, snprintf(err, sizeof(err), "writing the profile: %s", strerror(errno));
    if (rc != 0) {
        fprintf(stderr, "ctrace: %s%s%s\n", out_path ? out_path : "", out_path ? ": " : "", err);
        if (created)
            unlink(out_path);
    }
    status = rc != 0 ? 1 : ctr_reading_status(&rd);
done:
    ctr_profile_collect_free(c);
    ctr_windows_free(&keep);
    ctr_reading_close(&rd);
    return status;
}

/* After a text report to stdout: the exit status of a verb. */
static int report_status(int rc, const char *err, struct ctr_reading *rd)
{
    if (rc == 0 && fflush(stdout) != 0) {
        fprintf(stderr, "ctrace: writing the output: %s\n", strerror(errno));
        return 1;
    }
    if (rc != 0) {
        fprintf(stderr, "ctrace: %s\n", err);
        return 1;
    }
    ctr_reading_say(rd);
    return ctr_reading_status(rd);
}

static const char tasks_usage[] =
    "usage: ctrace tasks [-type T] [-latmin DURATION] [-n N] [-tsv] [-j N] TRACE\n"
    "Tasks of TRACE (trace_task_begin ... trace_task_end) by type: how many ended,\n"
    "how many are still open, and their latency p50, p90, p99 and max; the tasks\n"
    "still open at the end, oldest first; then the N slowest tasks (an open one by\n"
    "its age), each with the time its threads spent running, runnable, blocked on\n"
    "sync, net, syscall and sleep while working for it, its time per region name\n"
    "and its logs. A thread works for a task while inside a region of the task; a\n"
    "task with no regions counts the thread that began it, from begin to end.\n"
    "  -type T           only tasks of type T\n"
    "  -latmin DURATION  list only tasks at least this long (200ns, 500us, 30ms, 1.5s)\n"
    "  -n N              how many of the slowest tasks to list (default 5; 0: none)\n"
    "  -tsv              only the table by type, as tab-separated lines:\n"
    "                    type count p50_ns p90_ns p99_ns max_ns (after a '#' "
    "header)\n" CTR_CLI_JOBS_HELP;

/* The breakdowns of the slowest tasks: a second reading of the trace. */
struct second_reading {
    struct ctr_reading *rd;
    const struct ctr_trace *model_trace;
    const struct ctr_tasks *ts;
};

static int breakdown_pass(void *ctx, const struct ctr_task *const *tasks, size_t n,
                          struct ctr_task_breakdown *out)
{
    struct second_reading *s = ctx;
    struct ctr_tasks_breakdown_walk *w =
        ctr_tasks_breakdown_new(s->model_trace, s->ts, tasks, n, out);
    if (!w)
        return -ENOMEM;
    struct ctr_consumer c = ctr_tasks_breakdown_consumer(w, ctr_reading_trace(s->rd));
    struct ctr_trace *t;
    int rc = ctr_reading_pass(s->rd, &c, 1, &t) ? -EIO : 0;
    if (rc == 0)
        rc = ctr_tasks_breakdown_finish(w);
    ctr_tasks_breakdown_free(w);
    return rc;
}

static int cmd_tasks(int argc, char **argv)
{
    const char *path = NULL, *v;
    struct ctr_pipeline_opts po = ctr_cli_pipeline_opts();
    struct ctr_tasks_opts o = {.n = 5};
    for (int i = 1; i < argc; i++) {
        int r;
        if (ctr_cli_is_help(argv[i])) {
            fputs(tasks_usage, stdout);
            return 0;
        }
        if (ctr_cli_flag(argc, argv, &i, "tsv", NULL) > 0) {
            o.tsv = 1;
            continue;
        }
        if ((r = ctr_cli_flag(argc, argv, &i, "type", &v)) != 0) {
            if (r < 0 || !*v)
                return ctr_cli_usage_error(NULL, "tasks: flag %s needs a task type", argv[i]);
            o.type = v;
            continue;
        }
        if ((r = ctr_cli_flag(argc, argv, &i, "latmin", &v)) != 0) {
            if (r < 0)
                return ctr_cli_usage_error(NULL, "tasks: flag %s needs a value", argv[i]);
            if (!ctr_cli_duration("tasks", "latmin", v, &o.latmin_ns))
                return CTR_EXIT_USAGE;
            continue;
        }
        if ((r = ctr_cli_reading_arg(argc, argv, &i, "tasks", &po)) != 0) {
            if (r < 0)
                return CTR_EXIT_USAGE;
            continue;
        }
        if ((r = ctr_cli_flag(argc, argv, &i, "n", &v)) != 0) {
            if (r < 0)
                return ctr_cli_usage_error(NULL, "tasks: flag %s needs a value", argv[i]);
            if (!ctr_cli_count(v, 0, SIZE_MAX, &o.n))
                return ctr_cli_usage_error(NULL, "tasks: -n wants a number of tasks, not '%s'", v);
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return ctr_cli_usage_error(NULL, "tasks: unknown flag %s", argv[i]);
        if (path)
            return ctr_cli_usage_error(NULL, "tasks: more than one trace given (%s)", argv[i]);
        path = argv[i];
    }
    if (!path)
        return ctr_cli_usage_error(NULL, "tasks: no trace file given");
    struct ctr_reading rd;
    struct ctr_tasks ts;
    struct ctr_trace *t;
    if (ctr_reading_open(&rd, path, o.tsv || !o.n ? 1 : 2, &po) ||
        ctr_reading_tasks(&rd, &ts, NULL, 0, &t)) {
        ctr_reading_close(&rd);
        return 1;
    }
    char err[256];
    struct second_reading second = {&rd, t, &ts};
    int rc = ctr_tasks_report(t, &ts, &o, breakdown_pass, &second, stdout, err, sizeof(err));
    ctr_tasks_free(&ts);
    int status = report_status(rc, err, &rd);
    ctr_reading_close(&rd);
    return status;
}

static const char threads_usage[] =
    "usage: ctrace threads [-tsv] [-j N] TRACE\n"
    "Threads of TRACE grouped by start function: how many, and the time they spent\n"
    "running, runnable, and blocked on sync, net, syscall and sleep. Then the leak\n"
    "finder: threads still alive and blocked when the trace ends, grouped by the\n"
    "call they block in and its stack, largest group first.\n"
    "  -tsv   only the leak finder, as tab-separated lines:\n"
    "         count call function file:line (innermost frame; after a '#' "
    "header)\n" CTR_CLI_JOBS_HELP;

static int cmd_threads(int argc, char **argv)
{
    const char *path = NULL;
    int tsv = 0, r;
    struct ctr_pipeline_opts o = ctr_cli_pipeline_opts();
    for (int i = 1; i < argc; i++) {
        if (ctr_cli_is_help(argv[i])) {
            fputs(threads_usage, stdout);
            return 0;
        }
        if ((r = ctr_cli_reading_arg(argc, argv, &i, "threads", &o)) != 0) {
            if (r < 0)
                return CTR_EXIT_USAGE;
            continue;
        }
        if (ctr_cli_flag(argc, argv, &i, "tsv", NULL) > 0) {
            tsv = 1;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return ctr_cli_usage_error(NULL, "threads: unknown flag %s", argv[i]);
        if (path)
            return ctr_cli_usage_error(NULL, "threads: more than one trace given (%s)", argv[i]);
        path = argv[i];
    }
    if (!path)
        return ctr_cli_usage_error(NULL, "threads: no trace file given");
    struct ctr_reading rd;
    struct ctr_trace *t;
    if (ctr_reading_open(&rd, path, 1, &o))
        return 1;
    struct ctr_threads_walk *w = ctr_threads_walk_new(ctr_reading_trace(&rd), !tsv);
    struct ctr_consumer c;
    if (!w) {
        fprintf(stderr, "ctrace: out of memory\n");
        ctr_reading_close(&rd);
        return 1;
    }
    c = ctr_threads_consumer(w);
    int status = 1;
    if (ctr_reading_pass(&rd, &c, 1, &t) == 0) {
        char err[256];
        int rc = ctr_threads_report(t, w, stdout, stderr, err, sizeof(err));
        status = report_status(rc, err, &rd);
    }
    ctr_threads_walk_free(w);
    ctr_reading_close(&rd);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return ctr_cli_usage_error(NULL, "no command or trace given");
    if (ctr_cli_is_help(argv[1])) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(argv[1], "-version") == 0 || strcmp(argv[1], "--version") == 0) {
        printf("ctrace %s\nlibctrace ABI %d (libctrace.so.%d)\ntrace format %d.%d\n",
               CTRACE_VERSION_STRING, CTRACE_ABI_VERSION, CTRACE_ABI_VERSION, CTR_VERSION_MAJOR,
               CTR_VERSION_MINOR);
        return 0;
    }
    if (strcmp(argv[1], "stats") == 0)
        return cmd_stats(argc - 1, argv + 1);
    if (strcmp(argv[1], "run") == 0)
        return ctr_cmd_run(argc - 1, argv + 1);
    if (strcmp(argv[1], "ctl") == 0)
        return ctr_cmd_ctl(argc - 1, argv + 1);
    if (strcmp(argv[1], "tasks") == 0)
        return cmd_tasks(argc - 1, argv + 1);
    if (strcmp(argv[1], "threads") == 0)
        return cmd_threads(argc - 1, argv + 1);
    if (strcmp(argv[1], "why") == 0)
        return ctr_cmd_why(argc - 1, argv + 1);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-perfetto") == 0 || strcmp(argv[i], "--perfetto") == 0)
            return ctr_cmd_perfetto(argc, argv);

    const char *type = NULL, *out = NULL, *path = NULL, *n = NULL, *latmin = NULL, *j = NULL,
               *mem = NULL;
    struct ctr_profile_filter filter = {0};
    int top = 0;
    struct ctr_pipeline_opts ro = ctr_cli_pipeline_opts();
    const char *pid = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if (ctr_cli_is_help(argv[i])) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (ctr_cli_flag(argc, argv, &i, "top", NULL) > 0) {
            top = 1;
            continue;
        }
        if ((r = ctr_cli_flag(argc, argv, &i, "pprof", &type)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "o", &out)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "n", &n)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "task", &filter.task)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "region", &filter.region)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "latmin", &latmin)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "j", &j)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "mem", &mem)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "pid", &pid)) != 0) {
            if (r < 0)
                return ctr_cli_usage_error(NULL, "flag %s needs a value", argv[i]);
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return ctr_cli_usage_error(NULL, "unknown flag %s", argv[i]);
        if (path)
            return ctr_cli_usage_error(NULL, "unexpected argument %s (one trace at a time)",
                                       argv[i]);
        path = argv[i];
    }
    if (!type)
        return ctr_cli_usage_error(NULL, "nothing to do: give -pprof=TYPE or a verb such as stats");
    if (!path)
        return ctr_cli_usage_error(NULL, "no trace file given");
    if (latmin && !ctr_cli_duration("", "latmin", latmin, &filter.latmin_ns))
        return CTR_EXIT_USAGE;
    if ((j && !ctr_cli_jobs("", j, &ro.jobs)) || (pid && !ctr_cli_pid("", pid, &ro.pid)) ||
        (mem && !ctr_cli_mem("", mem, &ro.mem)))
        return CTR_EXIT_USAGE;
    if ((filter.task && !*filter.task) || (filter.region && !*filter.region))
        return ctr_cli_usage_error(NULL, "-%s needs a name",
                                   filter.task && !*filter.task ? "task" : "region");
    size_t top_n = 10;
    if (n) {
        if (!top)
            return ctr_cli_usage_error(NULL, "-n goes with -top");
        if (!ctr_cli_count(n, 1, SIZE_MAX, &top_n))
            return ctr_cli_usage_error(NULL, "-n wants a number of stacks >= 1, not '%s'", n);
    }
    return cmd_pprof(type, top ? top_n : 0, &filter, out, path, &ro);
}
