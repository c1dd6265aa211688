/* main.c - the `ctrace` command line: flag parsing and dispatch to the
 * analyses. Flags follow Go's style (-flag=value or -flag value; one or two
 * dashes).
 *
 * Exit status: 0 success; 1 an error (unreadable trace, failed write);
 * 2 a usage error; 3 the trace is damaged: the output covers the part before
 * the damage and a message on stderr says where it is; 4 (`ctrace stats`
 * only) the trace holds no threads or no events and has no end record (its
 * process ended or went away before its first flush). Every verb warns
 * about a trace without threads or events on stderr. `ctrace run` becomes the program it runs, whose
 * status is then its own.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctrace_options.h"
#include "profile.h"
#include "reader.h"
#include "stats.h"
#include "tasks_report.h"
#include "text.h"
#include "threads.h"
#include "top.h"

#define EXIT_USAGE 2
#define EXIT_DAMAGED 3
#define EXIT_EMPTY 4

static const char usage_text[] =
    "usage: ctrace -pprof=TYPE [FILTERS] [-o FILE] TRACE\n"
    "                                             delay profile (gzip'd pprof) of TRACE\n"
    "                                             TYPE: sync, sched, net, syscall or blame\n"
    "       ctrace -pprof=TYPE -top [-n N] [FILTERS] [-o FILE] TRACE\n"
    "                                             that profile's N (default 10) heaviest\n"
    "                                             stacks, as text\n"
    "       ctrace tasks [-type T] [-latmin DURATION] [-n N] [-tsv] TRACE\n"
    "                                             task latencies by type, the N slowest\n"
    "                                             tasks in detail\n"
    "       ctrace threads [-tsv] TRACE           threads by start function, and threads\n"
    "                                             blocked at the end (leaks)\n"
    "       ctrace stats TRACE                    summary: threads, events, bytes, drops\n"
    "       ctrace run [-o FILE] [FLAGS] -- CMD [ARG...]\n"
    "                                             run CMD, unmodified, traced into FILE\n"
    "       ctrace -h | ctrace VERB -h            this help, or a verb's\n"
    "\n"
    "FILTERS restrict a profile to the waiting done for the program's tasks:\n"
    "  -task T            while working for a task of type T\n"
    "  -region NAME       inside a region named NAME\n"
    "  -latmin DURATION   while working for a task at least DURATION long\n"
    "DURATION as in Go: 200ns, 500us, 30ms, 1.5s, 1m30s.\n"
    "\n"
    "Exit status: 0 ok, 1 error, 2 usage, 3 damaged trace (output covers the part\n"
    "before the damage), 4 (stats) an unfinished trace without threads or events;\n"
    "ctrace run exits with CMD's own status.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("ctrace: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (ctrace -h for help)\n", stderr);
    return EXIT_USAGE;
}

/* Matches "-name", "--name", "-name=v", "--name=v". On a match returns 1 and
 * sets *value to the text after '=' or to the next argument (advancing *i);
 * returns -1 if a value is needed and missing, 0 if argv[*i] is not the flag. */
static int flag(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *a = argv[*i];
    if (a[0] != '-')
        return 0;
    a += a[1] == '-' ? 2 : 1;
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0 || (a[n] != 0 && a[n] != '='))
        return 0;
    if (!value)
        return a[n] == 0 ? 1 : 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

static int is_help(const char *a)
{
    return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "-help") == 0;
}

/* Reads the trace; prints why on failure. */
static int load(const char *path, struct ctr_trace *t)
{
    char err[512];
    if (ctr_trace_read(path, t, err, sizeof(err)) != 0) {
        fprintf(stderr, "ctrace: %s\n", err);
        return 1;
    }
    if (t->damage[0])
        fprintf(stderr, "ctrace: %s: %s\n", path, t->damage);
    else if (ctr_stats_empty(t))
        fprintf(stderr, "ctrace: %s: warning: %s\n", path, ctr_stats_empty(t));
    return 0;
}

static int cmd_stats(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs("usage: ctrace stats TRACE\n"
                  "Prints what TRACE holds: extent, threads, events by type, bytes per\n"
                  "event, and what was lost (dropped events, table overflows).\n"
                  "Exit status: 0 ok, 1 error, 3 damaged, 4 no threads or no events and\n"
                  "no end record (the program ended or forked away before its first flush).\n",
                  stdout);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return usage_error("stats: unknown flag %s", argv[i]);
        if (path)
            return usage_error("stats: more than one trace given (%s)", argv[i]);
        path = argv[i];
    }
    if (!path)
        return usage_error("stats: no trace file given%s", "");
    struct ctr_trace t;
    if (load(path, &t))
        return 1;
    ctr_stats_print(&t, path, stdout);
    int rc = t.damage[0]                               ? EXIT_DAMAGED
             : !t.complete && ctr_stats_empty(&t) != NULL ? EXIT_EMPTY
                                                          : 0;
    ctr_trace_free(&t);
    return rc;
}

/* -pprof=TYPE: the gzip'd profile, or with top_n > 0 (-top) its top_n
 * heaviest stacks as text. */
static int cmd_pprof(const char *type, size_t top_n, const struct ctr_profile_filter *filter,
                     const char *out_path, const char *path)
{
    enum ctr_profile_type cls = ctr_profile_parse(type);
    if (!cls)
        return usage_error("unknown profile type '%s' (want sync, sched, net, syscall or blame)", type);
    if (!top_n && !out_path && isatty(1)) {
        fputs("ctrace: not writing a binary profile to a terminal; use -o FILE or redirect\n",
              stderr);
        return EXIT_USAGE;
    }
    struct ctr_trace t;
    if (load(path, &t))
        return 1;
    /* Remove a half-written output on failure, but only a file we created:
     * the path may name a device or something the user wants kept. */
    struct stat st;
    int created = out_path && stat(out_path, &st) != 0;
    FILE *out = out_path ? fopen(out_path, "wb") : stdout;
    if (!out) {
        fprintf(stderr, "ctrace: %s: %s\n", out_path, strerror(errno));
        ctr_trace_free(&t);
        return 1;
    }
    char err[256];
    int rc = top_n ? ctr_top_write(&t, cls, filter, top_n, out, stderr, err, sizeof(err))
                   : ctr_profile_write(&t, cls, filter, out, stderr, err, sizeof(err));
    if (rc == 0 && fflush(out) != 0)
        rc = -errno, snprintf(err, sizeof(err), "writing the profile: %s", strerror(errno));
    if (out_path && fclose(out) != 0 && rc == 0)
        rc = -errno, snprintf(err, sizeof(err), "writing the profile: %s", strerror(errno));
    if (rc != 0) {
        fprintf(stderr, "ctrace: %s%s%s\n", out_path ? out_path : "", out_path ? ": " : "", err);
        if (created)
            unlink(out_path);
    }
    int status = rc != 0 ? 1 : t.damage[0] ? EXIT_DAMAGED : 0;
    ctr_trace_free(&t);
    return status;
}

/* -latmin and the like: a Go-style duration into *ns (returns 1), or a
 * usage error printed (returns 0). verb is "" for the profile flags. */
static int duration_flag(const char *verb, const char *name, const char *v, uint64_t *ns)
{
    int rc = ctr_parse_duration(v, ns);
    if (rc == 0)
        return 1;
    fprintf(stderr, "ctrace: %s%s-%s wants a duration such as 500us, 30ms or 1.5s, not '%s'%s "
                    "(ctrace %s%s-h for help)\n",
            verb, verb[0] ? ": " : "", name, v, rc == -ERANGE ? " (too long)" : "", verb,
            verb[0] ? " " : "");
    return 0;
}

/* Writes a text report to stdout; the exit status of a verb. */
static int report_status(int rc, const char *err, const struct ctr_trace *t)
{
    if (rc == 0 && fflush(stdout) != 0) {
        fprintf(stderr, "ctrace: writing the output: %s\n", strerror(errno));
        return 1;
    }
    if (rc != 0) {
        fprintf(stderr, "ctrace: %s\n", err);
        return 1;
    }
    return t->damage[0] ? EXIT_DAMAGED : 0;
}

static const char tasks_usage[] =
    "usage: ctrace tasks [-type T] [-latmin DURATION] [-n N] [-tsv] TRACE\n"
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
    "                    type count p50_ns p90_ns p99_ns max_ns (after a '#' header)\n";

static int cmd_tasks(int argc, char **argv)
{
    const char *path = NULL, *v;
    struct ctr_tasks_opts o = {.n = 5};
    for (int i = 1; i < argc; i++) {
        int r;
        if (is_help(argv[i])) {
            fputs(tasks_usage, stdout);
            return 0;
        }
        if (flag(argc, argv, &i, "tsv", NULL) > 0) {
            o.tsv = 1;
            continue;
        }
        if ((r = flag(argc, argv, &i, "type", &v)) != 0) {
            if (r < 0 || !*v)
                return usage_error("tasks: flag %s needs a task type", argv[i]);
            o.type = v;
            continue;
        }
        if ((r = flag(argc, argv, &i, "latmin", &v)) != 0) {
            if (r < 0)
                return usage_error("tasks: flag %s needs a value", argv[i]);
            if (!duration_flag("tasks", "latmin", v, &o.latmin_ns))
                return EXIT_USAGE;
            continue;
        }
        if ((r = flag(argc, argv, &i, "n", &v)) != 0) {
            if (r < 0)
                return usage_error("tasks: flag %s needs a value", argv[i]);
            char *end;
            errno = 0;
            unsigned long long n = strtoull(v, &end, 10);
            if (*v < '0' || *v > '9' || *end || errno || n > SIZE_MAX)
                return usage_error("tasks: -n wants a number of tasks, not '%s'", v);
            o.n = (size_t)n;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return usage_error("tasks: unknown flag %s", argv[i]);
        if (path)
            return usage_error("tasks: more than one trace given (%s)", argv[i]);
        path = argv[i];
    }
    if (!path)
        return usage_error("tasks: no trace file given%s", "");
    struct ctr_trace t;
    if (load(path, &t))
        return 1;
    char err[256];
    int rc = ctr_tasks_write(&t, &o, stdout, err, sizeof(err));
    int status = report_status(rc, err, &t);
    ctr_trace_free(&t);
    return status;
}

static const char threads_usage[] =
    "usage: ctrace threads [-tsv] TRACE\n"
    "Threads of TRACE grouped by start function: how many, and the time they spent\n"
    "running, runnable, and blocked on sync, net, syscall and sleep. Then the leak\n"
    "finder: threads still alive and blocked when the trace ends, grouped by the\n"
    "call they block in and its stack, largest group first.\n"
    "  -tsv   only the leak finder, as tab-separated lines:\n"
    "         count call function file:line (innermost frame; after a '#' header)\n";

static int cmd_threads(int argc, char **argv)
{
    const char *path = NULL;
    int tsv = 0;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs(threads_usage, stdout);
            return 0;
        }
        if (flag(argc, argv, &i, "tsv", NULL) > 0) {
            tsv = 1;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return usage_error("threads: unknown flag %s", argv[i]);
        if (path)
            return usage_error("threads: more than one trace given (%s)", argv[i]);
        path = argv[i];
    }
    if (!path)
        return usage_error("threads: no trace file given%s", "");
    struct ctr_trace t;
    if (load(path, &t))
        return 1;
    char err[256];
    int rc = ctr_threads_write(&t, tsv, stdout, stderr, err, sizeof(err));
    int status = report_status(rc, err, &t);
    ctr_trace_free(&t);
    return status;
}

/* ---------------------------------------------------------------------------
 * ctrace run: trace an unmodified program through LD_PRELOAD. This process
 * sets the CTRACE_* variables that libctrace's autostart reads, puts
 * libctrace.so first in LD_PRELOAD and becomes the program (execvp), so the
 * program keeps this pid, its descriptors and its exit status.
 * ------------------------------------------------------------------------- */

#define RUN_DEFAULT_OUT "trace.bin"

static const char run_usage_head[] =
    "usage: ctrace run [-o FILE] [FLAGS] [--] CMD [ARG...]\n"
    "Runs CMD with libctrace preloaded (LD_PRELOAD) and traces it from start to\n"
    "exit into FILE. CMD's output and exit status are its own. Dynamically linked\n"
    "programs only. With %p in FILE, children (that exec, or fork: a daemon's) are\n"
    "traced too, each into its own file; without it, only CMD is (a child would\n"
    "overwrite its trace).\n";

static const char run_usage_tail[] =
    "Sizes take a k, M or G suffix. Each flag sets a CTRACE_* variable (see README);\n"
    "variables already set and not overridden are kept. CTRACE_LIB names the\n"
    "libctrace.so to preload instead of the one installed with ctrace.\n"
    "A program that calls trace_start() itself gets -EBUSY: it is already traced.\n"
    "Exit status: CMD's; 127 CMD not found, 126 CMD cannot run, 1 libctrace.so not\n"
    "found, 2 usage.\n";

/* Prints a flag's line of a usage text: "  -name arg", then text from
 * column 19 (two spaces after a longer flag), its words wrapped at 80
 * columns onto lines indented to 19. */
static void usage_flag(FILE *f, const char *name, const char *arg, const char *text)
{
    enum { TEXT_COLUMN = 19, WIDTH = 80 };
    int col = fprintf(f, "  -%s %s", name, arg);
    col += fprintf(f, "%*s", col + 2 > TEXT_COLUMN ? 2 : TEXT_COLUMN - col, "");
    for (int first = 1; *text; first = 0) {
        int n = (int)strcspn(text, " ");
        if (!first && col + 1 + n > WIDTH) {
            fprintf(f, "\n%*s", TEXT_COLUMN, "");
            col = TEXT_COLUMN;
        } else if (!first) {
            col += fprintf(f, " ");
        }
        col += fprintf(f, "%.*s", n, text);
        text += n + strspn(text + n, " ");
    }
    fputc('\n', f);
}

/* `ctrace run -h`: the flags' lines come from the options table, with each
 * option's range (when it has one worth telling) and default. */
static void run_usage(FILE *f)
{
    fputs(run_usage_head, f);
    usage_flag(f, "o", "FILE",
               "trace file (default " RUN_DEFAULT_OUT "); %p in it becomes the pid");
    for (int k = 0; k < CTR_OPTION_COUNT; k++) {
        const struct ctr_option *opt = ctr_option(k);
        char text[256], lo[24], hi[24], def[24];
        if (ctr_option_bounded(opt))
            snprintf(text, sizeof(text), "%s, %s..%s (default %s)", opt->help,
                     ctr_option_format(opt, opt->min, lo), ctr_option_format(opt, opt->max, hi),
                     ctr_option_format(opt, opt->def, def));
        else
            snprintf(text, sizeof(text), "%s (default %s)", opt->help,
                     ctr_option_format(opt, opt->def, def));
        usage_flag(f, opt->flag, opt->arg, text);
    }
    usage_flag(f, CTR_UNWIND_FLAG, CTR_UNWIND_ARG, CTR_UNWIND_HELP);
    fputs(run_usage_tail, f);
}

static int run_usage_error(const char *fmt, const char *arg)
{
    fputs("ctrace: run: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs(" (ctrace run -h for help)\n", stderr);
    return EXIT_USAGE;
}

#define EXIT_NOT_FOUND 127
#define EXIT_CANNOT_RUN 126

/* Says on stderr what a flag of `ctrace run` wants, for a value v it
 * refused: the table's "what", then the range, or for a size without one
 * an example. @return EXIT_USAGE. */
static int run_option_error(const struct ctr_option *opt, const char *v)
{
    char range[64] = "", lo[24], hi[24];
    if (ctr_option_bounded(opt))
        snprintf(range, sizeof(range), " from %s to %s", ctr_option_format(opt, opt->min, lo),
                 ctr_option_format(opt, opt->max, hi));
    else if (opt->kind & CTR_OPT_SIZE)
        snprintf(range, sizeof(range), " such as %s", ctr_option_format(opt, opt->def, lo));
    fprintf(stderr, "ctrace: run: -%s wants %s%s, not '%s' (ctrace run -h for help)\n", opt->flag,
            opt->what, range, v);
    return EXIT_USAGE;
}

/* Whether path names a readable file; if so, its absolute form into out. */
static int lib_at(const char *path, char *out)
{
    return access(path, R_OK) == 0 && realpath(path, out) != NULL;
}

/* Finds libctrace.so: $CTRACE_LIB, else next to this binary (the build
 * tree's tracer/, an installation's ../lib), else the configured install
 * directory. Prints why not and returns -1 when there is none. */
static int find_lib(char out[PATH_MAX])
{
    const char *env = getenv("CTRACE_LIB");
    if (env && *env) {
        if (lib_at(env, out))
            return 0;
        fprintf(stderr, "ctrace: run: CTRACE_LIB=%s: %s\n", env, strerror(errno));
        return -1;
    }
    char dir[PATH_MAX], cand[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
    if (n > 0) {
        dir[n] = 0;
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
        snprintf(cand, sizeof(cand), "%s/tracer/libctrace.so", dir);
        if (lib_at(cand, out))
            return 0;
        snprintf(cand, sizeof(cand), "%s/../lib/libctrace.so", dir);
        if (lib_at(cand, out))
            return 0;
    }
#ifdef CTRACE_INSTALL_LIBDIR
    if (lib_at(CTRACE_INSTALL_LIBDIR "/libctrace.so", out))
        return 0;
#endif
    fprintf(stderr, "ctrace: run: cannot find libctrace.so next to ctrace%s%s; "
                    "set CTRACE_LIB to its path\n",
#ifdef CTRACE_INSTALL_LIBDIR
            " or in ", CTRACE_INSTALL_LIBDIR
#else
            "", ""
#endif
    );
    return -1;
}

#if defined(__SANITIZE_ADDRESS__)
#define CTR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CTR_ASAN 1
#endif
#endif

/* In an AddressSanitizer build (CTRACE_SANITIZE), libctrace.so is built with
 * ASan too, and ASan's runtime must be the first library of the process: so
 * it is preloaded ahead of libctrace. NULL if this is no such build. */
static const char *asan_runtime(void)
{
#ifdef CTR_ASAN
    Dl_info info;
    void *sym = dlsym(RTLD_DEFAULT, "__asan_init");
    if (sym && dladdr(sym, &info) && info.dli_fname && strstr(info.dli_fname, ".so"))
        return info.dli_fname;
    return "";
#else
    return NULL;
#endif
}

/* Puts lib first in LD_PRELOAD, keeping what was there after it. */
static int preload(const char *lib)
{
    const char *asan = asan_runtime();
    if (asan && !*asan) {
        fprintf(stderr, "ctrace: run: this ctrace is built with AddressSanitizer linked in "
                        "statically: it cannot preload an ASan-built libctrace.so\n");
        return -1;
    }
    if (strpbrk(lib, ": ") || (asan && strpbrk(asan, ": "))) {
        fprintf(stderr, "ctrace: run: cannot preload %s: LD_PRELOAD cannot hold a path "
                        "with ':' or ' '; set CTRACE_LIB to another path\n", lib);
        return -1;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t len = (asan ? strlen(asan) + 1 : 0) + strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
    char *v = malloc(len);
    if (!v)
        return -1;
    snprintf(v, len, "%s%s%s%s%s", asan ? asan : "", asan ? ":" : "", lib,
             old && *old ? ":" : "", old && *old ? old : "");
    int rc = setenv("LD_PRELOAD", v, 1);
    free(v);
    return rc;
}

static int cmd_run(int argc, char **argv)
{
    const char *out = RUN_DEFAULT_OUT, *unwind = NULL;
    const char *values[CTR_OPTION_COUNT] = {0};
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == 0)
            break; /* the command */
        if (is_help(a)) {
            run_usage(stdout);
            return 0;
        }
        int r = 0;
        uint64_t v;
        for (int k = 0; r == 0 && k < CTR_OPTION_COUNT; k++)
            if ((r = flag(argc, argv, &i, ctr_option(k)->flag, &values[k])) > 0 &&
                ctr_option_parse(ctr_option(k), values[k], &v) != 0)
                return run_option_error(ctr_option(k), values[k]);
        if (r == 0 && (r = flag(argc, argv, &i, CTR_UNWIND_FLAG, &unwind)) > 0 &&
            ctr_unwind_parse(unwind) == CTR_UNWIND_BAD)
            return run_usage_error("-" CTR_UNWIND_FLAG " wants " CTR_UNWIND_WANT ", not '%s'",
                                   unwind);
        if (r == 0)
            r = flag(argc, argv, &i, "o", &out);
        if (r < 0)
            return run_usage_error("flag %s needs a value", a);
        if (r == 0)
            return run_usage_error("unknown flag %s", a);
    }
    if (i >= argc)
        return run_usage_error("no command given%s", "");
    if (!*out)
        return run_usage_error("-o needs a file name%s", "");

    char lib[PATH_MAX];
    if (find_lib(lib) != 0 || preload(lib) != 0)
        return 1;
    /* An absolute path: the program or its children may change directory. */
    char path[PATH_MAX], cwd[PATH_MAX];
    int len = out[0] != '/' && getcwd(cwd, sizeof(cwd))
                  ? snprintf(path, sizeof(path), "%s/%s", cwd, out)
                  : snprintf(path, sizeof(path), "%s", out);
    if (len < 0 || (size_t)len >= sizeof(path)) {
        fprintf(stderr, "ctrace: run: %s: file name too long\n", out);
        return 1;
    }
    char pid[24];
    snprintf(pid, sizeof(pid), "%ld", (long)getpid()); /* execvp keeps it */
    int rc = setenv(CTR_OUTPUT_ENV, path, 1) | setenv(CTR_PID_ENV, pid, 1);
    for (int k = 0; k < CTR_OPTION_COUNT; k++)
        if (values[k])
            rc |= setenv(ctr_option(k)->env, values[k], 1);
    if (unwind)
        rc |= setenv(CTR_UNWIND_ENV, unwind, 1);
    if (rc != 0) {
        fprintf(stderr, "ctrace: run: setting the environment: %s\n", strerror(errno));
        return 1;
    }
    fflush(NULL);
    execvp(argv[i], argv + i);
    int err = errno;
    if (err == ENOENT && !strchr(argv[i], '/'))
        fprintf(stderr, "ctrace: run: %s: command not found\n", argv[i]);
    else
        fprintf(stderr, "ctrace: run: %s: %s\n", argv[i], strerror(err));
    return err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("no command or trace given%s", "");
    if (is_help(argv[1])) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(argv[1], "stats") == 0)
        return cmd_stats(argc - 1, argv + 1);
    if (strcmp(argv[1], "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(argv[1], "tasks") == 0)
        return cmd_tasks(argc - 1, argv + 1);
    if (strcmp(argv[1], "threads") == 0)
        return cmd_threads(argc - 1, argv + 1);

    const char *type = NULL, *out = NULL, *path = NULL, *n = NULL, *latmin = NULL;
    struct ctr_profile_filter filter = {0};
    int top = 0;
    for (int i = 1; i < argc; i++) {
        int r;
        if (is_help(argv[i])) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (flag(argc, argv, &i, "top", NULL) > 0) {
            top = 1;
            continue;
        }
        if ((r = flag(argc, argv, &i, "pprof", &type)) != 0 ||
            (r = flag(argc, argv, &i, "o", &out)) != 0 ||
            (r = flag(argc, argv, &i, "n", &n)) != 0 ||
            (r = flag(argc, argv, &i, "task", &filter.task)) != 0 ||
            (r = flag(argc, argv, &i, "region", &filter.region)) != 0 ||
            (r = flag(argc, argv, &i, "latmin", &latmin)) != 0) {
            if (r < 0)
                return usage_error("flag %s needs a value", argv[i]);
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1])
            return usage_error("unknown flag %s", argv[i]);
        if (path)
            return usage_error("unexpected argument %s (one trace at a time)", argv[i]);
        path = argv[i];
    }
    if (!type)
        return usage_error("nothing to do: give -pprof=TYPE or a verb such as stats%s", "");
    if (!path)
        return usage_error("no trace file given%s", "");
    if (latmin && !duration_flag("", "latmin", latmin, &filter.latmin_ns))
        return EXIT_USAGE;
    if ((filter.task && !*filter.task) || (filter.region && !*filter.region))
        return usage_error("-%s needs a name", filter.task && !*filter.task ? "task" : "region");
    size_t top_n = 10;
    if (n) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(n, &end, 10);
        if (!top)
            return usage_error("-n goes with -top%s", "");
        if (*n < '0' || *n > '9' || *end || errno || v == 0 || v > SIZE_MAX)
            return usage_error("-n wants a number of stacks >= 1, not '%s'", n);
        top_n = (size_t)v;
    }
    return cmd_pprof(type, top ? top_n : 0, &filter, out, path);
}
