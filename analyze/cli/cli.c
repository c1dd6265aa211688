/* SPDX-License-Identifier: MIT */
/* cli.c - the command-line helpers that main.c and run.c share (see cli.h). */
#include "cli/cli.h"
#include "read/ctf.h"
#include "read/pipeline.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctrace_options.h"
#include "profile/text.h"
#include "read/decoders.h"

int ctr_cli_flag(int argc, char **argv, int *i, const char *name, const char **value)
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

int ctr_cli_is_help(const char *a)
{
    return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "-help") == 0;
}

int ctr_cli_usage_error(const char *verb, const char *fmt, ...)
{
    fprintf(stderr, "ctrace: %s%s", verb ? verb : "", verb ? ": " : "");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (ctrace %s%s-h for help)\n", verb ? verb : "", verb ? " " : "");
    return CTR_EXIT_USAGE;
}

int ctr_cli_pid(const char *verb, const char *v, uint64_t *pid)
{
    if (strcmp(v, "all") == 0) {
        *pid = CTR_CTF_ALL;
        return 1;
    }
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (*v < '1' || *v > '9' || *end || errno || n >= CTR_CTF_ALL) {
        fprintf(stderr,
                "ctrace: %s%s-pid wants a process id or all, not '%s' "
                "(ctrace %s%s-h for help)\n",
                verb, verb[0] ? ": " : "", v, verb, verb[0] ? " " : "");
        return 0;
    }
    *pid = n;
    return 1;
}

int ctr_cli_count(const char *v, uint64_t min, uint64_t max, size_t *n)
{
    char *end;
    errno = 0;
    unsigned long long k = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || errno || k < min || k > max || k > SIZE_MAX)
        return 0;
    *n = (size_t)k;
    return 1;
}

int ctr_cli_jobs(const char *verb, const char *v, int *jobs)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || errno || n < 1 || n > 1024) {
        fprintf(stderr,
                "ctrace: %s%s-j wants a number of threads from 1 to 1024, not '%s' "
                "(ctrace %s%s-h for help)\n",
                verb, verb[0] ? ": " : "", v, verb, verb[0] ? " " : "");
        return 0;
    }
    *jobs = (int)n;
    return 1;
}

int ctr_cli_mem(const char *verb, const char *v, size_t *mem)
{
    const struct ctr_option opt = {
        .kind = CTR_OPT_SIZE, .min = CTR_DECODERS_MEM_MIN, .max = (uint64_t)1 << 40};
    uint64_t n = 0;
    if (ctr_option_parse(&opt, v, &n) != 0 || n == 0) {
        fprintf(stderr,
                "ctrace: %s%s-mem wants a size from %zuM to 1024G such as 256M, not '%s' "
                "(ctrace %s%s-h for help)\n",
                verb, verb[0] ? ": " : "", CTR_DECODERS_MEM_MIN >> 20, v, verb, verb[0] ? " " : "");
        return 0;
    }
    *mem = (size_t)n;
    return 1;
}

int ctr_cli_duration(const char *verb, const char *name, const char *v, uint64_t *ns)
{
    int rc = ctr_parse_duration(v, ns);
    if (rc == 0)
        return 1;
    fprintf(stderr,
            "ctrace: %s%s-%s wants a duration such as 500us, 30ms or 1.5s, not '%s'%s "
            "(ctrace %s%s-h for help)\n",
            verb, verb[0] ? ": " : "", name, v, rc == -ERANGE ? " (too long)" : "", verb,
            verb[0] ? " " : "");
    return 0;
}

/* -j N, -mem SIZE or -pid PID among a verb's flags, into o: 1 when
 * argv[*i] is one (taken), 0 when it is not, -1 after a usage error said. */
int ctr_cli_reading_arg(int argc, char **argv, int *i, const char *verb,
                        struct ctr_pipeline_opts *o)
{
    const char *v;
    char which = 'j';
    int r = ctr_cli_flag(argc, argv, i, "j", &v);
    if (r == 0 && (r = ctr_cli_flag(argc, argv, i, "pid", &v)) != 0)
        which = 'p';
    else if (r == 0 && (r = ctr_cli_flag(argc, argv, i, "mem", &v)) != 0)
        which = 'm';
    if (r < 0) {
        fprintf(stderr, "ctrace: %s: flag %s needs a value (ctrace %s -h for help)\n", verb,
                argv[*i], verb);
        return -1;
    }
    if (r == 0)
        return 0;
    int ok = which == 'p'   ? ctr_cli_pid(verb, v, &o->pid)
             : which == 'm' ? ctr_cli_mem(verb, v, &o->mem)
                            : ctr_cli_jobs(verb, v, &o->jobs);
    return ok ? 1 : -1;
}

/* The pipeline's options, before the flags: -j 0 (the cores available);
 * progress on a terminal's stderr. */
struct ctr_pipeline_opts ctr_cli_pipeline_opts(void)
{
    return (struct ctr_pipeline_opts){.progress = isatty(2) ? stderr : NULL};
}
