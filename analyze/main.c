/* main.c - the `ctrace` command line: flag parsing and dispatch to the
 * analyses. Flags follow Go's style (-flag=value or -flag value; one or two
 * dashes).
 *
 * Exit status: 0 success; 1 an error (unreadable trace, failed write);
 * 2 a usage error; 3 the trace is damaged: the output covers the part before
 * the damage and a message on stderr says where it is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"
#include "reader.h"
#include "stats.h"

#define EXIT_USAGE 2
#define EXIT_DAMAGED 3

static const char usage_text[] =
    "usage: ctrace -pprof=TYPE [-o FILE] TRACE   delay profile (gzip'd pprof) of TRACE\n"
    "                                             TYPE: sync, sched, net or syscall\n"
    "       ctrace stats TRACE                    summary: threads, events, bytes, drops\n"
    "       ctrace -h | ctrace VERB -h            this help, or a verb's\n"
    "\n"
    "Exit status: 0 ok, 1 error, 2 usage, 3 damaged trace (output covers the part\n"
    "before the damage).\n";

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
    return 0;
}

static int cmd_stats(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            fputs("usage: ctrace stats TRACE\n"
                  "Prints what TRACE holds: extent, threads, events by type, bytes per\n"
                  "event, and what was lost (dropped events, table overflows).\n",
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
    int rc = t.damage[0] ? EXIT_DAMAGED : 0;
    ctr_trace_free(&t);
    return rc;
}

static int cmd_pprof(const char *type, const char *out_path, const char *path)
{
    enum ctr_profile_type cls = ctr_profile_parse(type);
    if (!cls)
        return usage_error("unknown profile type '%s' (want sync, sched, net, syscall or blame)", type);
    if (!out_path && isatty(1)) {
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
    int rc = ctr_profile_write(&t, cls, out, stderr, err, sizeof(err));
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

    const char *type = NULL, *out = NULL, *path = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if (is_help(argv[i])) {
            fputs(usage_text, stdout);
            return 0;
        }
        if ((r = flag(argc, argv, &i, "pprof", &type)) != 0 ||
            (r = flag(argc, argv, &i, "o", &out)) != 0) {
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
    return cmd_pprof(type, out, path);
}
