/* SPDX-License-Identifier: MIT */
/* cli.h - what the verbs of the `ctrace` command line (main.c, run.c)
 * share: Go-style flags (-flag=value or -flag value; one or two dashes),
 * the help flag, and usage errors with their exit status. */
#ifndef CTR_CLI_H
#define CTR_CLI_H

#include <stddef.h>
#include <stdint.h>

/* The exit status of a usage error (the others are main.c's and run.c's). */
#define CTR_EXIT_USAGE 2

/* What every verb that reads a trace says of the flags that
 * ctr_cli_reading_arg() takes, for its -h. */
#define CTR_CLI_JOBS_HELP                                                            \
    "  -j N              threads that read the trace: the analysis and N-1 that\n"   \
    "                    decode ahead of it (default: the cores available); the\n"   \
    "                    output is the same for any N\n"                             \
    "  -mem SIZE         the memory decompression may take (default 512M; a frame\n" \
    "                    may need a quarter of it)\n"                                \
    "  -pid PID|all      of an LTTng trace of several processes, the one to read,\n" \
    "                    or all of them merged\n"                                    \
    "TRACE - reads a trace from standard input; a directory, the LTTng traces in it.\n"

/* ctr_cli_reading_arg() : -j N, -mem SIZE or -pid PID among verb's flags,
 * into o. @return 1 when argv[*i] is one (taken), 0 when it is not, -1
 * after a usage error said on stderr. */
struct ctr_pipeline_opts;
int ctr_cli_reading_arg(int argc, char **argv, int *i, const char *verb,
                        struct ctr_pipeline_opts *o);

/* ctr_cli_pipeline_opts() : the pipeline's options before the flags: -j 0
 * (the cores available), progress on stderr when it is a terminal. */
struct ctr_pipeline_opts ctr_cli_pipeline_opts(void);

/* ctr_cli_flag() : whether argv[*i] is the flag name: "-name", "--name",
 * "-name=v" or "--name=v". With value NULL the flag takes no value (then
 * "-name=v" is not a match); else *value gets the text after '=' or the
 * next argument (advancing *i).
 * @return 1 on a match, -1 if a value is needed and missing, 0 if argv[*i]
 *         is not the flag. */
int ctr_cli_flag(int argc, char **argv, int *i, const char *name, const char **value);

/* ctr_cli_pid() : -pid's value v, for verb (as ctr_cli_jobs): a process id,
 * or "all" (CTR_CTF_ALL, ctf.h), into *pid. @return 1, or 0 after saying
 * on stderr why v is not one. */
int ctr_cli_pid(const char *verb, const char *v, uint64_t *pid);

/* ctr_cli_is_help() : @return 1 if a is -h, -help or --help, else 0. */
int ctr_cli_is_help(const char *a);

/* ctr_cli_usage_error() : prints "ctrace: VERB: MESSAGE (ctrace VERB -h for
 * help)" on stderr, MESSAGE being fmt formatted (printf) with the arguments
 * that follow; with verb NULL "ctrace: MESSAGE (ctrace -h for help)".
 * @return CTR_EXIT_USAGE. */
int ctr_cli_usage_error(const char *verb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ctr_cli_count() : whether v is a number written in decimal digits alone,
 * from min to max; then *n gets it. The caller says what was wrong. */
int ctr_cli_count(const char *v, uint64_t min, uint64_t max, size_t *n);

/* ctr_cli_jobs() : -j's value v, a number of threads from 1 to 1024, into
 * *jobs. @return 1, or 0 after printing a usage error (verb "" for the
 * profile flags). */
int ctr_cli_jobs(const char *verb, const char *v, int *jobs);

/* ctr_cli_mem() : -mem's value v, a size (k, M, G) from
 * CTR_DECODERS_MEM_MIN up, into *mem. @return 1, or 0 after printing a
 * usage error (verb "" for the profile flags). */
int ctr_cli_mem(const char *verb, const char *v, size_t *mem);

/* ctr_cli_duration() : the value v of flag -name, a Go-style duration
 * (200ns, 500us, 30ms, 1.5s, 1m30s), into *ns. @return 1, or 0 after
 * printing a usage error (verb "" for the profile flags). */
int ctr_cli_duration(const char *verb, const char *name, const char *v, uint64_t *ns);

#endif
