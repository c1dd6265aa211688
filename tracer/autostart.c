/* SPDX-License-Identifier: MIT */
/* autostart.c - starts tracing when libctrace is loaded into a program whose
 * environment asks for it: how `ctrace run` traces an unmodified program
 * through LD_PRELOAD.
 *
 * When CTRACE_OUTPUT is set, a constructor starts a session into that path
 * (each "%p" replaced by the pid) with the options of the other CTRACE_*
 * variables; the destructor in api.c stops it at exit. Rules kept here:
 *   - Never crash or change the program: a bad variable, or a session that
 *     cannot start, prints one line on stderr and the program runs untraced.
 *   - The variables stay in the environment, as does LD_PRELOAD, so a child
 *     that execs is traced too, into its own file when the path has "%p".
 *     A path without "%p" belongs to the process `ctrace run` started (its pid
 *     is CTRACE_PID): other processes leave it alone rather than truncate it.
 *   - With "%p", a forked child (a daemon's, which goes on after its parent
 *     exits) traces too, from the fork on, into its own file with the same
 *     options: api.c's atfork lets go of the parent's session in the child,
 *     and ours, registered after it, starts the child's. Without "%p", the
 *     first fork says once on stderr that forked processes are not traced
 *     (a daemon's trace would otherwise end, silently, where it forked).
 *   - secure_getenv: a set-user-ID program never opens a path from its caller.
 *   - A trace that could not be written whole (a full disk, a descriptor
 *     closed under the tracer by a raw syscall) is said on stderr at exit.
 * CTRACE_CONTROL=1 opens the control channel (control.c), in every process.
 * This file and flightrec/autostart.c are the only parts of libctrace that
 * print: they speak for the user's `ctrace run`, not for the API.
 */
#include "collect/face.h"
#include "core/fdguard.h"
#include "core/scribe.h"
#include "ctrace/trace.h"
#include "ctrace_control.h"
#include "ctrace_lttng.h"
#include "ctrace_options.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads opt's variable into *out (an unset one leaves it alone). @return 0,
 * or -EINVAL after saying why on stderr. */
static int env_number(const struct ctr_option *opt, uint64_t *out)
{
    const char *s = getenv(opt->env);
    if (!s)
        return 0;
    int rc = ctr_option_parse(opt, s, out);
    if (rc == -EINVAL)
        fprintf(stderr, "ctrace: %s: not a number: '%s'\n", opt->env, s);
    else if (rc != 0)
        fprintf(stderr, "ctrace: %s: out of range (0, or %llu to %llu): '%s'\n", opt->env,
                (unsigned long long)opt->min, (unsigned long long)opt->max, s);
    return rc == 0 ? 0 : -EINVAL;
}

int ctr__options_from_env(struct trace_options *o)
{
    /* Ranges are trace_start_opts()'s (the same table); checked here to
     * name the variable. */
    uint64_t v;
#define FROM_ENV(field, ...)                              \
    v = 0;                                                \
    if (env_number(ctr_option(CTR_OPT_##field), &v) != 0) \
        return -EINVAL;                                   \
    o->field = v; /* in range, so it fits */
    CTR_OPTIONS(FROM_ENV)
#undef FROM_ENV
    const char *unwind = getenv(CTR_UNWIND_ENV);
    if (ctr_unwind_parse(unwind) == CTR_UNWIND_BAD) {
        fprintf(stderr, "ctrace: " CTR_UNWIND_ENV ": want " CTR_UNWIND_WANT ": '%s'\n", unwind);
        return -EINVAL;
    }
    return 0;
}

/* Copies `pattern` to out with each "%p" replaced by the pid. 0, or -1 if it
 * does not fit. */
static int expand_path(const char *pattern, char *out, size_t cap)
{
    char pid[24];
    int pid_len = snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    size_t n = 0;
    for (const char *p = pattern; *p; p++) {
        const char *piece = p;
        size_t len = 1;
        if (p[0] == '%' && p[1] == 'p') {
            piece = pid, len = (size_t)pid_len;
            p++;
        }
        if (n + len >= cap)
            return -1;
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = 0;
    return 0;
}

/* Whether this process should leave a "%p"-less path alone: `ctrace run`
 * named the process that owns it, and this is another one (a child that
 * exec'd). The process that ctrace run exec'd keeps its pid through further
 * execs (`env`, `nice`, a shell's `exec`), and so keeps tracing. */
static int path_is_anothers(const char *pattern)
{
    if (strstr(pattern, "%p"))
        return 0;
    const char *owner = getenv(CTR_PID_ENV);
    if (!owner || !*owner)
        return 0;
    char *end;
    long pid = strtol(owner, &end, 10);
    return *end == 0 && pid != (long)getpid();
}

/* The path this process traces into for `ctrace run`, "" when it does not. */
static char started_path[PATH_MAX];
/* What it was started with, for a forked child's own session. */
static char started_pattern[PATH_MAX];
static struct trace_options started_opts;
static int forks_told; /* the message about forks was printed (inherited) */

void ctr__autostart_stopped(int rc)
{
    if (started_path[0] && rc < 0)
        fprintf(stderr,
                "ctrace: %s: the trace could not be written whole (%s); it ends at the last "
                "frame written\n",
                started_path, ctr__scribe_strerror(-rc));
}

/* In a forked child (after api.c's handler): its own session, into the
 * pattern's path for its pid. */
static void autostart_child(void)
{
    if (!started_path[0])
        return;
    started_path[0] = 0;
    if (!strstr(started_pattern, "%p"))
        return;
    char path[PATH_MAX];
    if (expand_path(started_pattern, path, sizeof(path)) != 0)
        return;
    struct trace_options o = started_opts;
    o.path = path;
    int rc = trace_start_opts(&o);
    if (rc == 0)
        memcpy(started_path, path, sizeof(started_path));
    else
        fprintf(stderr, "ctrace: forked process %ld not traced: %s: %s\n", (long)getpid(), path,
                strerror(-rc));
}

/* In the parent, after a fork: without "%p" the child is not traced. */
static void autostart_parent(void)
{
    if (!started_path[0] || forks_told || strstr(started_pattern, "%p"))
        return;
    forks_told = 1;
    int saved = errno;
    fprintf(stderr,
            "ctrace: the traced process forked; forked processes (a daemon's) are not "
            "traced into %s: use -o NAME%%p (CTRACE_OUTPUT=NAME%%p) to trace each into "
            "its own file\n",
            started_path);
    errno = saved;
}

/* CTRACE_CONTROL=1 (`ctrace run -control`, or -dormant when nothing else
 * records): the control channel, for `ctrace ctl` (CONTROL.md). Opened in
 * every process that loads libctrace with it set, a forked child too (its
 * own, under its own pid: `ctrace ctl -list` shows them). */
static void control_open(void)
{
    struct trace_options o = {0};
    if (ctr__options_from_env(&o) != 0)
        return;
    ctr__api_lock();
    int rc = ctr__control_open(&o);
    ctr__api_unlock();
    if (rc != 0)
        fprintf(stderr, "ctrace: %s: the control channel did not open: %s\n", CTR_CONTROL_ENV,
                strerror(-rc));
}

static void control_autostart(void)
{
    const char *v = secure_getenv(CTR_CONTROL_ENV);
    if (!v || !*v || strcmp(v, "0") == 0)
        return;
    if (strcmp(v, "1") != 0) {
        fprintf(stderr, "ctrace: %s: want 0 or 1: '%s'\n", CTR_CONTROL_ENV, v);
        return;
    }
    control_open();
    /* After api.c's (the open registered it), which closed the parent's. */
    pthread_atfork(NULL, NULL, control_open);
}

__attribute__((constructor)) static void trace_autostart(void)
{
    control_autostart();
    const char *pattern = secure_getenv(CTR_OUTPUT_ENV);
    int to_file = pattern && *pattern && !path_is_anothers(pattern);
    /* LTTng alone (CTRACE_LTTNG without a file) traces every process that
     * loads libctrace, each in the session as its own pid. */
    const char *lttng = getenv(ctr_option(CTR_OPT_lttng)->env);
    if (!to_file && (!lttng || !*lttng || strcmp(lttng, "0") == 0))
        return;
    char path[PATH_MAX] = "";
    if (to_file && expand_path(pattern, path, sizeof(path)) != 0) {
        fprintf(stderr, "ctrace: " CTR_OUTPUT_ENV ": path too long\n");
        return;
    }
    struct trace_options o = {.path = to_file ? path : NULL};
    if (ctr__options_from_env(&o) != 0)
        return;
    int rc = trace_start_opts(&o);
    if (rc == 0 && !to_file)
        return;
    if (rc == 0) {
        memcpy(started_path, path, sizeof(started_path));
        if (strlen(pattern) < sizeof(started_pattern))
            memcpy(started_pattern, pattern, strlen(pattern) + 1);
        started_opts = o;
        started_opts.path = NULL;
        /* After api.c's (trace_start registered it): children run their
         * fork handlers in the order they were registered. */
        pthread_atfork(NULL, autostart_parent, autostart_child);
    } else if (rc == -EINVAL) { /* the one rule the variables cannot check alone */
        const struct ctr_option *pool = ctr_option(CTR_OPT_pool_bytes);
        const struct ctr_option *chunk = ctr_option(CTR_OPT_chunk_bytes);
        char def[24];
        fprintf(stderr, "ctrace: not tracing: %s is less than %d chunks (%s, %s by default)\n",
                pool->env, CTR_POOL_MIN_CHUNKS, chunk->env,
                ctr_option_format(chunk, chunk->def, def));
    } else if (rc == -ELIBACC) {
        fprintf(stderr, "ctrace: not tracing: the LTTng provider (%s) could not be loaded\n",
                CTR_LTTNG_LIBRARY);
    } else if (rc == -EMFILE && to_file && ctr__fd_top() < CTR_FD_TOP_MIN) {
        fprintf(stderr,
                "ctrace: not tracing: %s: the descriptor limit (ulimit -n %d) leaves none to "
                "spare; the tracer takes one from a limit of %d\n",
                path, ctr__fd_top(), CTR_FD_TOP_MIN);
    } else if (rc != 0) {
        fprintf(stderr, "ctrace: not tracing: %s: %s\n", to_file ? path : "LTTng", strerror(-rc));
    }
}
