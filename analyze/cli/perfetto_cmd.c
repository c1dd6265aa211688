/* SPDX-License-Identifier: MIT */
/* perfetto_cmd.c - `ctrace -perfetto`: a trace as a Perfetto timeline
 * (perfetto.h), written to a file or served to the Perfetto UI.
 *
 * Two readings of the trace: the first ranks the threads by the time they
 * were busy (running or runnable), and with a filter builds the task model
 * that gives the filter's windows and the tasks shown; the second writes
 * the timeline as the pipeline streams it.
 */
#include "cli/perfetto_cmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "ctrace_grow.h"
#include "cli/reading.h"
#include "cli/paths.h"
#include "perfetto/perfetto.h"
#include "profile/profile.h"
#include "perfetto/serve.h"
#include "model/tasks.h"

static const char usage[] =
    "usage: ctrace -perfetto [-o FILE] [-from D] [-to D] [FILTERS] [-j N] [-pid P] TRACE\n"
    "       ctrace -perfetto -http [-port N] [-o FILE] [...] TRACE\n"
    "Writes TRACE as a timeline in Perfetto's trace format (open it at\n"
    "https://ui.perfetto.dev): per thread its waits (with their stacks and a\n"
    "flow from the release that ended each), runnable and running time, its\n"
    "regions and logs; tasks on tracks of their type; threads blocked and\n"
    "runnable as counters; lost events and damage where they happened.\n"
    "  -o FILE          where to write it (default: standard output, not a terminal)\n"
    "  -from D, -to D   only the time from D to D after the trace's start (500ms, 2s)\n"
    "  -task T, -region NAME, -latmin D\n"
    "                   only the time threads worked for such tasks (as the profiles'\n"
    "                   filters), and those tasks\n"
    "  -critical N      the critical paths of the N slowest tasks (of those), each on a\n"
    "                   track of its own (as `ctrace why` walks them)\n"
    "  -j N             threads that read the trace (default: the cores available)\n"
    "  -mem SIZE        the memory decompression may take (default 512M)\n"
    "  -pid PID|all     of an LTTng trace of several processes, the one to show, or all\n"
    "  -http            then serve it on 127.0.0.1 and print the link that opens it\n"
    "                   in the Perfetto UI, until Ctrl-C (without -o, in a temporary\n"
    "                   file, removed at the end)\n"
    "  -port N          the port to serve on (default 9001, the only one the UI\n"
    "                   fetches from)\n"
    "  -buffer SIZE     memory for putting the timeline in time order (default 32M;\n"
    "                   K, M, G); past it, what comes late is placed at the last\n"
    "                   time written, and said\n"
    "TRACE - reads a trace from standard input.\n"
    "Exit status: 0 ok, 1 error, 2 usage, 3 damaged trace (the output covers the\n"
    "rest; stderr names the damage).\n";

struct opts {
    const char *out, *path;
    struct ctr_profile_filter filter;
    uint64_t from_ns, to_ns;
    int has_to, jobs, http, port;
    uint64_t pid; /* -pid: ctr_pipeline_opts.pid */
    size_t buffer;
    size_t mem;      /* -mem: ctr_pipeline_opts.mem */
    size_t critical; /* -critical: how many paths */
};

/* -buffer's value: bytes, with an optional K, M or G. @return 0 or -1. */
static int parse_size(const char *v, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (*v < '0' || *v > '9' || *end || errno || n == 0 || n > (SIZE_MAX >> 30))
        return -1;
    *out = (size_t)n << shift;
    return 0;
}

/* ---------------------------------------------------------------------------
 * The first reading
 * ------------------------------------------------------------------------- */

/* Busy time per thread index: running, or runnable without waiting. */
struct busy {
    const struct ctr_trace *t;
    uint64_t *ns;
    size_t n, cap;
    int err;
};

static void busy_interval(void *ctx, const struct ctr_interval *iv)
{
    struct busy *b = ctx;
    if (iv->state == CTR_STATE_BLOCKED || (iv->state == CTR_STATE_RUNNABLE && iv->reason))
        return;
    size_t i = (size_t)(iv->thread - b->t->threads);
    if (i >= b->n) {
        if (ctr_grow(&b->ns, &b->cap, i + 1, sizeof(*b->ns)) != 0) {
            b->err = -ENOMEM;
            return;
        }
        memset(b->ns + b->n, 0, (i + 1 - b->n) * sizeof(*b->ns));
        b->n = i + 1;
    }
    b->ns[i] += iv->end_ns - iv->start_ns;
}

/* Ids of the tasks the filter keeps, sorted (ts is sorted by id). */
static int tasks_shown(const struct ctr_tasks *ts, const struct ctr_profile_filter *f,
                       uint64_t **ids, size_t *n)
{
    *ids = malloc((ts->ntasks ? ts->ntasks : 1) * sizeof(**ids));
    *n = 0;
    if (!*ids)
        return -ENOMEM;
    for (size_t i = 0; i < ts->ntasks; i++)
        if (ctr_profile_filter_task(ts, f, &ts->tasks[i]))
            (*ids)[(*n)++] = ts->tasks[i].id;
    return 0;
}

/* ---------------------------------------------------------------------------
 * The command
 * ------------------------------------------------------------------------- */

static int parse(int argc, char **argv, struct opts *o)
{
    const char *latmin = NULL, *from = NULL, *to = NULL, *j = NULL, *port = NULL, *buffer = NULL,
               *pid = NULL, *mem = NULL, *critical = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if (ctr_cli_is_help(argv[i])) {
            fputs(usage, stdout);
            return 0;
        }
        if (ctr_cli_flag(argc, argv, &i, "perfetto", NULL) > 0)
            continue;
        if (ctr_cli_flag(argc, argv, &i, "http", NULL) > 0) {
            o->http = 1;
            continue;
        }
        if ((r = ctr_cli_flag(argc, argv, &i, "o", &o->out)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "from", &from)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "to", &to)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "task", &o->filter.task)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "region", &o->filter.region)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "latmin", &latmin)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "j", &j)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "pid", &pid)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "mem", &mem)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "port", &port)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "buffer", &buffer)) != 0 ||
            (r = ctr_cli_flag(argc, argv, &i, "critical", &critical)) != 0) {
            if (r < 0)
                return ctr_cli_usage_error("-perfetto", "flag %s needs a value", argv[i]);
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return ctr_cli_usage_error("-perfetto", "unknown flag %s", argv[i]);
        if (o->path)
            return ctr_cli_usage_error("-perfetto", "more than one trace given (%s)", argv[i]);
        o->path = argv[i];
    }
    if (!o->path)
        return ctr_cli_usage_error("-perfetto", "no trace file given");
    if ((latmin && !ctr_cli_duration("-perfetto", "latmin", latmin, &o->filter.latmin_ns)) ||
        (from && !ctr_cli_duration("-perfetto", "from", from, &o->from_ns)) ||
        (to && !ctr_cli_duration("-perfetto", "to", to, &o->to_ns)) ||
        (j && !ctr_cli_jobs("-perfetto", j, &o->jobs)) ||
        (pid && !ctr_cli_pid("-perfetto", pid, &o->pid)) ||
        (mem && !ctr_cli_mem("-perfetto", mem, &o->mem)))
        return CTR_EXIT_USAGE;
    o->has_to = to != NULL;
    if (critical && !ctr_cli_count(critical, 1, 1000, &o->critical))
        return ctr_cli_usage_error(
            "-perfetto", "-critical wants a number of tasks from 1 to 1000, not '%s'", critical);
    if (buffer && parse_size(buffer, &o->buffer) != 0)
        return ctr_cli_usage_error("-perfetto", "-buffer wants a size such as 64K or 32M, not '%s'",
                                   buffer);
    o->port = CTR_SERVE_PORT;
    if (port) {
        char *end;
        long n = strtol(port, &end, 10);
        if (*port < '0' || *port > '9' || *end || n < 1 || n > 65535)
            return ctr_cli_usage_error("-perfetto", "-port wants a port from 1 to 65535, not '%s'",
                                       port);
        if (!o->http)
            return ctr_cli_usage_error("-perfetto", "-port goes with -http");
        o->port = (int)n;
    }
    if (o->has_to && o->to_ns <= o->from_ns)
        return ctr_cli_usage_error("-perfetto", "-to must be after -from (%s)", to);
    if ((o->filter.task && !*o->filter.task) || (o->filter.region && !*o->filter.region))
        return ctr_cli_usage_error("-perfetto", "-%s needs a name",
                                   o->filter.task && !*o->filter.task ? "task" : "region");
    if (!o->out && !o->http && isatty(1))
        return ctr_cli_usage_error("-perfetto", "not writing a binary trace to a terminal; use "
                                                "-o FILE or redirect");
    return -1;
}

/* Where the walks' paths go: w[i] for tasks[i]. */
struct taken_paths {
    const struct ctr_task **tasks;
    struct ctr_cp_task *w;
};

static int take_path(void *ctx, size_t i, struct ctr_cp_path *path)
{
    struct taken_paths *tp = ctx;
    tp->w[i] = (struct ctr_cp_task){tp->tasks[i], *path};
    return 0;
}

static void paths_free(struct taken_paths *tp, size_t n)
{
    for (size_t i = 0; tp->w && i < n; i++)
        ctr_cp_path_free(&tp->w[i].path);
    free(tp->w);
}

/* The second reading, into out, with the critical paths of tasks[0..n-1]
 * of the model ts. @return 0, or 1 after saying why. */
static int write_timeline(struct ctr_reading *rd, struct ctr_perfetto_opts *po, FILE *out,
                          const char *name, const struct ctr_tasks *ts,
                          const struct ctr_task **tasks, size_t n)
{
    struct taken_paths tp = {tasks, n ? calloc(n, sizeof(*tp.w)) : NULL};
    struct ctr_paths walk = {0};
    if (n && (!tp.w || ctr_paths_begin(&walk, rd, ts, tasks, n, take_path, &tp) != 0)) {
        if (!tp.w)
            fprintf(stderr, "ctrace: out of memory\n");
        free(tp.w);
        return 1;
    }
    struct ctr_perfetto *p = ctr_perfetto_new(po, ctr_reading_trace(rd), out);
    if (!p) {
        fprintf(stderr, "ctrace: out of memory\n");
        if (n)
            ctr_paths_end(&walk, 1);
        paths_free(&tp, n);
        return 1;
    }
    struct ctr_consumer c[2] = {ctr_perfetto_consumer(p)};
    if (n)
        c[1] = ctr_paths_consumer(&walk);
    struct ctr_trace *t;
    struct ctr_perfetto_stats st;
    char err[256];
    int rc = 1, status = ctr_reading_pass(rd, c, n ? 2 : 1, &t);
    if (n)
        status = ctr_paths_end(&walk, status);
    if (status == 0) {
        ctr_perfetto_paths(p, tp.w, n);
        if (ctr_perfetto_end(p, t, &st, err, sizeof(err)) != 0) {
            fprintf(stderr, "ctrace: %s: %s\n", name, err);
        } else {
            rc = 0;
            fprintf(stderr,
                    "ctrace: %s: %llu events as %llu packets, %llu bytes (%.2f bytes/event): "
                    "%llu slices, %llu instants, %llu counter values, %llu flows\n",
                    name, (unsigned long long)st.events, (unsigned long long)st.packets,
                    (unsigned long long)st.bytes,
                    st.events ? (double)st.bytes / (double)st.events : 0.0,
                    (unsigned long long)st.slices, (unsigned long long)st.instants,
                    (unsigned long long)st.counters, (unsigned long long)st.flows);
            if (n)
                fprintf(stderr,
                        "ctrace: %s: the critical paths of the %zu slowest task%s, on the "
                        "tracks 'critical path 1' to %zu\n",
                        name, n, n == 1 ? "" : "s", n);
            if (st.late || st.unlinked)
                fprintf(stderr,
                        "ctrace: %s: the time-order buffer was full: %llu items placed "
                        "late, %llu waits without their release's flow\n",
                        name, (unsigned long long)st.late, (unsigned long long)st.unlinked);
        }
    }
    ctr_perfetto_free(p);
    paths_free(&tp, n);
    return rc;
}

int ctr_cmd_perfetto(int argc, char **argv)
{
    struct opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    struct ctr_reading rd;
    struct ctr_pipeline_opts popts = {
        .jobs = o.jobs, .progress = isatty(2) ? stderr : NULL, .pid = o.pid, .mem = o.mem};
    struct busy busy = {0};
    struct ctr_consumer bc = {.ctx = &busy, .interval = busy_interval};
    struct ctr_windows keep = {0};
    uint64_t *ids = NULL;
    size_t nids = 0;
    struct ctr_trace *t1;
    struct ctr_tasks ts;
    int have_tasks = 0;
    const struct ctr_task **slowest = NULL; /* into ts */
    size_t nslowest = 0;
    int filtered = ctr_profile_filter_is_set(&o.filter);
    int status = 1;
    if (ctr_reading_open(&rd, o.path, 2, &popts) != 0)
        return 1;
    busy.t = ctr_reading_trace(&rd);
    if (filtered || o.critical) {
        size_t ntasks = 0, nregions = 0;
        if (ctr_reading_tasks(&rd, &ts, &bc, 1, &t1) != 0)
            goto done;
        have_tasks = 1;
        rc = 0;
        if (filtered)
            rc = ctr_profile_filter_windows(t1, &ts, &o.filter, &keep, &ntasks, &nregions);
        if (rc == 0 && filtered)
            rc = tasks_shown(&ts, &o.filter, &ids, &nids);
        if (rc == 0 && o.critical)
            rc = ctr_profile_filter_slowest(&ts, &o.filter, o.critical, &slowest, &nslowest);
        if (rc != 0) {
            fprintf(stderr, "ctrace: reading the tasks: %s\n", strerror(-rc));
            goto done;
        }
        if (filtered)
            ctr_profile_filter_warn(&o.filter, ntasks, nregions, "timeline", stderr);
        if (o.critical && !nslowest)
            fprintf(stderr, "ctrace: -critical: no task%s to walk\n",
                    filtered ? " passes the filter" : " in the trace");
    } else if (ctr_reading_pass(&rd, &bc, 1, &t1) != 0) {
        goto done;
    }
    if (busy.err) {
        fprintf(stderr, "ctrace: out of memory\n");
        goto done;
    }
    if (ctr_grow(&busy.ns, &busy.cap, t1->nthreads + 1, sizeof(*busy.ns)) != 0)
        goto done;
    memset(busy.ns + busy.n, 0, (t1->nthreads + 1 - busy.n) * sizeof(*busy.ns));
    struct ctr_perfetto_opts po = {.model = t1,
                                   .busy_ns = busy.ns,
                                   .from_ns = t1->start_ns + o.from_ns,
                                   .to_ns = o.has_to ? t1->start_ns + o.to_ns : UINT64_MAX,
                                   .keep = filtered ? &keep : NULL,
                                   .tasks = filtered ? ids : NULL,
                                   .ntasks = nids,
                                   .window_gens = t1->first_gen,
                                   .budget = o.buffer};
    char tmpdir[4096] = "", tmpfile[4200];
    if (o.http && !o.out) { /* a file of our own, named after the trace */
        const char *base = strrchr(o.path, '/');
        base = base ? base + 1 : o.path;
        const char *dir = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
        snprintf(tmpdir, sizeof(tmpdir), "%s/ctrace-perfetto-XXXXXX", dir);
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "ctrace: %s: %s\n", tmpdir, strerror(errno));
            goto done;
        }
        snprintf(tmpfile, sizeof(tmpfile), "%s/%s.pftrace", tmpdir,
                 strcmp(base, "-") == 0 ? "stdin" : base);
        o.out = tmpfile;
    }
    struct stat st;
    int created = o.out && stat(o.out, &st) != 0;
    FILE *out = o.out ? fopen(o.out, "wb") : stdout;
    if (!out) {
        fprintf(stderr, "ctrace: %s: %s\n", o.out, strerror(errno));
        goto done;
    }
    rc = write_timeline(&rd, &po, out, o.out ? o.out : "standard output", have_tasks ? &ts : NULL,
                        slowest, nslowest);
    if (o.out && fclose(out) != 0 && rc == 0) {
        fprintf(stderr, "ctrace: %s: %s\n", o.out, strerror(errno));
        rc = 1;
    }
    if (rc != 0 && created)
        unlink(o.out);
    if (rc == 0) {
        ctr_reading_say(&rd);
        status = ctr_reading_status(&rd);
    }
    if (rc == 0 && o.http) {
        char err[512];
        fflush(stderr);
        if (ctr_serve_file(o.out, NULL, o.port, stdout, err, sizeof(err)) != 0) {
            fprintf(stderr, "ctrace: %s\n", err);
            status = 1;
        }
    }
done:
    if (tmpdir[0]) {
        unlink(tmpfile);
        rmdir(tmpdir);
    }
    free(busy.ns);
    free(ids);
    free(slowest);
    if (have_tasks)
        ctr_tasks_free(&ts);
    ctr_windows_free(&keep);
    ctr_reading_close(&rd);
    return status;
}
