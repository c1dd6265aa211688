/* SPDX-License-Identifier: MIT */
/* run.c - `ctrace run` (see run.h): trace an unmodified program through
 * LD_PRELOAD. This process sets the CTRACE_* variables that libctrace's
 * autostart reads, puts libctrace.so first in LD_PRELOAD and becomes the
 * program (execvp), so the program keeps this pid, its descriptors and its
 * exit status.
 *
 * The flags come from the options table (ctrace_options.h): each one's
 * parsing, its line in `ctrace run -h` and the variable it sets, so that a
 * new row of the table needs no code here; -unwind, a word rather than a
 * number, has constants of its own there.
 */
#include "cli/run.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "ctrace/version.h"
#include "ctrace_control.h"
#include "ctrace_options.h"

#define RUN_DEFAULT_OUT "trace.bin"

static const char run_usage_head[] =
    "usage: ctrace run [-o FILE] [FLAGS] [--] CMD [ARG...]\n"
    "       ctrace run -flight [MINAGE[,MAXBYTES]] [-control] [FLAGS] [--] CMD [ARG...]\n"
    "       ctrace run -dormant [FLAGS] [--] CMD [ARG...]\n"
    "Runs CMD with libctrace preloaded (LD_PRELOAD) and traces it from start to\n"
    "exit into FILE (with -lttng and no -o: into LTTng's sessions alone); with\n"
    "-flight, keeps the last moments in memory instead (the flight recorder),\n"
    "written out on demand (ctrace ctl PID dump FILE, or -dump-signal); with\n"
    "-dormant, records nothing until asked (ctrace ctl PID trace -for 5s FILE).\n"
    "CMD's output and exit status are its own. Dynamically linked programs only.\n"
    "With %p in FILE, children (that exec, or fork: a daemon's) are\n"
    "traced too, each into its own file; without it, only CMD is (a child would\n"
    "overwrite its trace).\n";

static const char run_usage_tail[] =
    "Sizes take a k, M or G suffix; durations as 500ms, 2s, 1m. Each flag sets a\n"
    "CTRACE_* variable (see ctrace(1)); children that exec or fork under -flight or\n"
    "-control have a recorder or a channel of their own.\n"
    "Variables already set and not overridden are kept. CTRACE_LIB names the\n"
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
               "trace file (default " RUN_DEFAULT_OUT ", none with -flight or -dormant); %p in "
               "it becomes the pid");
    usage_flag(f, "flight", "[SPEC]",
               "the flight recorder, SPEC = MINAGE[,MAXBYTES]: keep at least MINAGE of the "
               "trace (default 10s) in at most MAXBYTES of memory (default 16M), e.g. 2s,8M");
    usage_flag(f, "control", "",
               "open the control channel: ctrace ctl PID status|dump|trace (ctrace ctl -h)");
    usage_flag(f, "dormant", "",
               "record nothing until ctrace ctl PID trace asks (implies -control)");
    usage_flag(f, "dump-signal", "SIG",
               "with -flight, SIG (USR1, USR2, HUP, ...) dumps the window into -dump-dir "
               "(default: none)");
    usage_flag(f, "dump-dir", "DIR",
               "where -dump-signal's dumps go (default: the current directory)");
    for (int k = 0; k < CTR_OPTION_COUNT; k++) {
        const struct ctr_option *opt = ctr_option(k);
        char text[256], lo[24], hi[24], def[24];
        if (opt->kind & CTR_OPT_RATE)
            snprintf(text, sizeof(text), "%s, %s..%s (default off)", opt->help,
                     ctr_option_format(opt, opt->min, lo), ctr_option_format(opt, opt->max, hi));
        else if (ctr_option_bounded(opt))
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

#define EXIT_NOT_FOUND 127
#define EXIT_CANNOT_RUN 126

/* Says on stderr what a flag of `ctrace run` wants, for a value v it
 * refused: the table's "what", then the range, or for a size without one
 * an example. @return CTR_EXIT_USAGE. */
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
    return CTR_EXIT_USAGE;
}

/* Whether path names a readable file; if so, its absolute form into out. */
static int lib_at(const char *path, char *out)
{
    return access(path, R_OK) == 0 && realpath(path, out) != NULL;
}

/* libctrace by its SONAME (an installation may hold only that), else the
 * development link (the build tree). */
static const char *const lib_names[] = {
    "libctrace.so." CTRACE_VERSION__XSTR(CTRACE_ABI_VERSION),
    "libctrace.so",
};

/* Whether dir holds libctrace; if so, its absolute path into out. */
static int lib_in(const char *dir, char out[PATH_MAX])
{
    char cand[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof(lib_names) / sizeof(lib_names[0]); i++) {
        snprintf(cand, sizeof(cand), "%s/%s", dir, lib_names[i]);
        if (lib_at(cand, out))
            return 1;
    }
    return 0;
}

/* Finds libctrace: $CTRACE_LIB, else next to this binary (the build tree's
 * tracer/, an installation's LIBDIR however the tree was moved), else the
 * configured install directory. Prints why not and returns -1 when there
 * is none. */
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
        static const char *const beside[] = {"tracer", CTRACE_LIBDIR_FROM_BIN};
        for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++) {
            snprintf(cand, sizeof(cand), "%s/%s", dir, beside[i]);
            if (lib_in(cand, out))
                return 0;
        }
    }
    if (lib_in(CTRACE_INSTALL_LIBDIR, out))
        return 0;
    fprintf(stderr,
            "ctrace: run: cannot find %s next to ctrace or in %s; set CTRACE_LIB to its path\n",
            lib_names[0], CTRACE_INSTALL_LIBDIR);
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
        fprintf(stderr,
                "ctrace: run: cannot preload %s: LD_PRELOAD cannot hold a path "
                "with ':' or ' '; set CTRACE_LIB to another path\n",
                lib);
        return -1;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t len = (asan ? strlen(asan) + 1 : 0) + strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
    char *v = malloc(len);
    if (!v)
        return -1;
    snprintf(v, len, "%s%s%s%s%s", asan ? asan : "", asan ? ":" : "", lib, old && *old ? ":" : "",
             old && *old ? old : "");
    int rc = setenv("LD_PRELOAD", v, 1);
    free(v);
    return rc;
}

/* Whether the word after a switch's or a rate's flag is its value ("0" or
 * "1" for a switch, a number for a rate) rather than the command. */
static int given_value(const struct ctr_option *opt, const char *next)
{
    if (opt->kind & CTR_OPT_SWITCH)
        return strcmp(next, "0") == 0 || strcmp(next, "1") == 0;
    return next[0] >= '0' && next[0] <= '9';
}

/* -flight's value, if the word after it is one (else the command). */
static int flight_value(const char *next)
{
    return strchr("0123456789.,", next[0]) || strcmp(next, "on") == 0;
}

/* p as an absolute path into out: the program or its children may change
 * directory. @return 0, or -1 after saying why. */
static int absolute(const char *p, char out[PATH_MAX])
{
    char cwd[PATH_MAX];
    int len = p[0] != '/' && getcwd(cwd, sizeof(cwd)) ? snprintf(out, PATH_MAX, "%s/%s", cwd, p)
                                                      : snprintf(out, PATH_MAX, "%s", p);
    if (len >= 0 && len < PATH_MAX)
        return 0;
    fprintf(stderr, "ctrace: run: %s: file name too long\n", p);
    return -1;
}

int ctr_cmd_run(int argc, char **argv)
{
    const char *out = RUN_DEFAULT_OUT, *unwind = NULL;
    const char *values[CTR_OPTION_COUNT] = {0};
    const char *flight = NULL, *dump_signal = NULL, *dump_dir = NULL;
    int out_given = 0, control = 0, dormant = 0;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == 0)
            break; /* the command */
        if (ctr_cli_is_help(a)) {
            run_usage(stdout);
            return 0;
        }
        int r = 0;
        uint64_t v;
        /* A switch given alone (-sched, -lttng) is on, a rate given alone
         * (-cpu) is at its usual value; "-sched 0", "-cpu 1000" still read
         * their values. */
        char alone[CTR_OPTION_COUNT][24];
        for (int k = 0; r == 0 && k < CTR_OPTION_COUNT; k++)
            if (ctr_option_off_by_default(ctr_option(k)) && a[1] != '-' &&
                strcmp(a + 1, ctr_option(k)->flag) == 0 &&
                (i + 1 >= argc || !given_value(ctr_option(k), argv[i + 1]))) {
                values[k] = ctr_option(k)->kind & CTR_OPT_SWITCH
                                ? "1"
                                : ctr_option_format(ctr_option(k), ctr_option(k)->def, alone[k]);
                r = 1;
            }
        for (int k = 0; r == 0 && k < CTR_OPTION_COUNT; k++)
            if ((r = ctr_cli_flag(argc, argv, &i, ctr_option(k)->flag, &values[k])) > 0 &&
                ctr_option_parse(ctr_option(k), values[k], &v) != 0)
                return run_option_error(ctr_option(k), values[k]);
        if (r == 0 && (r = ctr_cli_flag(argc, argv, &i, CTR_UNWIND_FLAG, &unwind)) > 0 &&
            ctr_unwind_parse(unwind) == CTR_UNWIND_BAD)
            return ctr_cli_usage_error(
                "run", "-" CTR_UNWIND_FLAG " wants " CTR_UNWIND_WANT ", not '%s'", unwind);
        if (r == 0 && (r = ctr_cli_flag(argc, argv, &i, "o", &out)) > 0)
            out_given = 1;
        if (r == 0 && (r = ctr_cli_flag(argc, argv, &i, "flight", NULL)) > 0)
            flight = i + 1 < argc && flight_value(argv[i + 1]) ? argv[++i] : "on";
        if (r == 0 && strchr(a, '=')) /* -flight=SPEC */
            r = ctr_cli_flag(argc, argv, &i, "flight", &flight);
        if (r == 0 && (r = ctr_cli_flag(argc, argv, &i, "control", NULL)) > 0)
            control = 1;
        if (r == 0 && (r = ctr_cli_flag(argc, argv, &i, "dormant", NULL)) > 0)
            dormant = 1;
        if (r == 0)
            r = ctr_cli_flag(argc, argv, &i, "dump-signal", &dump_signal);
        if (r == 0)
            r = ctr_cli_flag(argc, argv, &i, "dump-dir", &dump_dir);
        if (r < 0)
            return ctr_cli_usage_error("run", "flag %s needs a value", a);
        if (r == 0)
            return ctr_cli_usage_error("run", "unknown flag %s", a);
    }
    if (i >= argc)
        return ctr_cli_usage_error("run", "no command given");
    if (!*out)
        return ctr_cli_usage_error("run", "-o needs a file name");
    uint64_t age, bytes;
    int frc = flight ? ctr_flight_parse(flight, &age, &bytes) : 0;
    if (frc != 0)
        return ctr_cli_usage_error("run", "-flight wants %s, not '%s'%s", CTR_FLIGHT_WANT, flight,
                                   frc == -ERANGE ? " (a value is out of range)" : "");
    if (dormant && (flight || out_given || values[CTR_OPT_lttng]))
        return ctr_cli_usage_error("run", "-dormant records nothing until asked: not with -o, "
                                          "-flight or -lttng");
    if (dump_signal && ctr_dump_signal_parse(dump_signal) < 0)
        return ctr_cli_usage_error("run", "-dump-signal wants %s, not '%s'", CTR_DUMP_SIGNAL_WANT,
                                   dump_signal);
    if ((dump_signal || dump_dir) && !flight)
        return ctr_cli_usage_error("run", "-dump-signal and -dump-dir dump the flight recorder's "
                                          "window: they need -flight");
    if (dump_dir && !dump_signal)
        return ctr_cli_usage_error("run", "-dump-dir is where -dump-signal's dumps go: give "
                                          "-dump-signal too");
    char dir[PATH_MAX];
    if (dump_dir && absolute(dump_dir, dir) != 0)
        return 1;

    char lib[PATH_MAX];
    if (find_lib(lib) != 0 || preload(lib) != 0)
        return 1;
    char path[PATH_MAX];
    if (absolute(out, path) != 0)
        return 1;
    char pid[24];
    snprintf(pid, sizeof(pid), "%ld", (long)getpid()); /* execvp keeps it */
    /* -lttng, -flight or -dormant without -o: no file. */
    const char *lttng = values[CTR_OPT_lttng];
    int no_file = !out_given && ((lttng && strcmp(lttng, "0")) || flight || dormant);
    int rc = no_file ? unsetenv(CTR_OUTPUT_ENV)
                     : setenv(CTR_OUTPUT_ENV, path, 1) | setenv(CTR_PID_ENV, pid, 1);
    if (flight)
        rc |= setenv(CTR_FLIGHT_ENV, flight, 1);
    if (control || dormant)
        rc |= setenv(CTR_CONTROL_ENV, "1", 1);
    if (dump_signal)
        rc |= setenv(CTR_DUMP_SIGNAL_ENV, dump_signal, 1);
    if (dump_dir)
        rc |= setenv(CTR_DUMP_DIR_ENV, dir, 1);
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
