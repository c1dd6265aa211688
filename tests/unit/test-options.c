/* SPDX-License-Identifier: MIT */
/* test-options.c - the options table (format/ctrace_options.h) and
 * the three readers generated from it, each checked against the table row
 * by row, so that a row or a reader that goes wrong fails here:
 *   - the table keeps its own rules: each range holds its default, rounded
 *     options stay in range, names are well-formed and unique, values print
 *     as they parse;
 *   - it keeps what trace.h and flightrec.h promise (written out again
 *     below, on purpose);
 *   - trace_start_opts (api.c) takes every option at both ends of its range,
 *     refuses it just outside, rounds and applies the defaults, and a
 *     session runs with them;
 *   - every CTRACE_* variable (autostart.c) lands in its own field at both
 *     ends of its range and is refused just outside, with the line
 *     autostart prints;
 *   - every `ctrace run` flag (analyze/cli/run.c) is taken at both ends and
 *     refused just outside, with its "wants" line, and `ctrace run -h` lists
 *     it with its range and default (CTR_TEST_CTRACE names the binary);
 *   - flightrec_start agrees with CTR_FLIGHTREC_OPTIONS (until flightrec.c
 *     reads the table itself).
 */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "ctrace/flightrec.h"
#include "collect/face.h"
#include "core/pool.h"
#include "core/session.h"
#include "ctrace/trace.h"
#include "ctrace_options.h"
#include "window.h"

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------- */

/* A field of trace_options by its row's id; a negative int reads as its
 * two's complement, as the table's readers see it. */
static uint64_t get_field(const struct trace_options *o, int id)
{
    switch (id) {
#define GET(field, ...)   \
    case CTR_OPT_##field: \
        return (uint64_t)o->field;
        CTR_OPTIONS(GET)
#undef GET
    }
    fail_msg("no option %d", id);
    return 0;
}

/* Sets a field by its row's id. @return whether v fits the field's type. */
static int set_field(struct trace_options *o, int id, uint64_t v)
{
    switch (id) {
#define SET(field, ...)   \
    case CTR_OPT_##field: \
        o->field = v;     \
        break;
        CTR_OPTIONS(SET)
#undef SET
    }
    return get_field(o, id) == v;
}

static int is_pow2(uint64_t v)
{
    return v && (v & (v - 1)) == 0;
}

static const char *decimal(uint64_t v, char buf[24])
{
    snprintf(buf, 24, "%llu", (unsigned long long)v);
    return buf;
}

/* What option opt given as v resolves to when it is in range. */
static uint64_t expected(const struct ctr_option *opt, uint64_t v)
{
    if (v == 0)
        return opt->def;
    uint64_t p = 1;
    while ((opt->kind & CTR_OPT_POW2) && p < v)
        p <<= 1;
    return opt->kind & CTR_OPT_POW2 ? p : v;
}

/* Options with the pool at its least for the least chunk: so that the pool
 * row can be tested at its min, and the rule between pool and chunk holds
 * for every other value tried. */
static struct trace_options base_options(int id)
{
    struct trace_options o = {.path = "unused", .chunk_bytes = CTR_CHUNK_MIN};
    if (id == CTR_OPT_chunk_bytes)
        o.chunk_bytes = 0; /* with the default pool, every chunk fits 4 times */
    return o;
}

/* ---------------------------------------------------------------------------
 * The table itself
 * ------------------------------------------------------------------------- */

/* The rules of one row; named rows (with a variable and a flag) are those
 * of CTR_OPTIONS. */
static void check_row(const struct ctr_option *opt, int named)
{
    char buf[24];
    uint64_t back;
    print_message("%s\n", opt->field);
    assert_non_null(opt->field);
    assert_true(opt->what && *opt->what && opt->help && *opt->help);
    assert_true(opt->min <= opt->def && opt->def <= opt->max);
    if (opt->kind & CTR_OPT_SWITCH) {
        assert_true(opt->min == 0 && opt->max == 1 && opt->def == 0);
    } else {
        assert_true(opt->min >= 1); /* 0 is the default's */
    }
    if (opt->kind & CTR_OPT_POW2)
        assert_true(is_pow2(opt->min) && is_pow2(opt->max) && is_pow2(opt->def));
    const uint64_t values[] = {opt->min, opt->max, opt->def};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        ctr_option_format(opt, values[i], buf);
        assert_int_equal(ctr_option_parse(opt, buf, &back), 0);
        assert_true(back == values[i]);
    }
    if (named) {
        assert_int_equal(strncmp(opt->env, "CTRACE_", 7), 0);
        assert_true(opt->arg && *opt->arg);
        assert_true(opt->flag[0] >= 'a' && opt->flag[0] <= 'z');
        assert_int_equal(strspn(opt->flag, "abcdefghijklmnopqrstuvwxyz-"), strlen(opt->flag));
    } else {
        assert_true(!opt->env && !opt->flag && !opt->arg);
    }
}

static void test_table_rules(void **state)
{
    (void)state;
    for (int i = 0; i < CTR_OPTION_COUNT; i++) {
        const struct ctr_option *a = ctr_option(i);
        check_row(a, 1);
        /* One variable and one flag per option, none another's. */
        const char *taken_env[] = {CTR_OUTPUT_ENV, CTR_PID_ENV, CTR_UNWIND_ENV};
        for (size_t k = 0; k < sizeof(taken_env) / sizeof(taken_env[0]); k++)
            assert_string_not_equal(a->env, taken_env[k]);
        assert_string_not_equal(a->flag, CTR_UNWIND_FLAG);
        assert_string_not_equal(a->flag, "o");
        for (int j = 0; j < i; j++) {
            assert_string_not_equal(a->env, ctr_option(j)->env);
            assert_string_not_equal(a->flag, ctr_option(j)->flag);
        }
    }
    for (int i = 0; i < CTR_FR_OPTION_COUNT; i++)
        check_row(ctr_flightrec_option(i), 0);
    /* The least pool holds the least chunk CTR_POOL_MIN_CHUNKS times. */
    assert_true(ctr_option(CTR_OPT_chunk_bytes)->min == CTR_CHUNK_MIN);
    assert_true(ctr_option(CTR_OPT_pool_bytes)->min == CTR_POOL_MIN_CHUNKS * CTR_CHUNK_MIN);
    assert_true(ctr_option(CTR_OPT_pool_bytes)->def >=
                CTR_POOL_MIN_CHUNKS * ctr_option(CTR_OPT_chunk_bytes)->max);
}

/* What ctrace/trace.h and ctrace/flightrec.h promise, written out again on
 * purpose: a change of the table that breaks a documented promise fails
 * here, and goes with a change of those headers (and of the man pages). */
struct promise {
    const char *field;
    uint64_t min, max, def;
};

static const struct promise trace_promises[] = {
    {"flush_ms", 1, UINT_MAX, 100},
    {"chunk_bytes", 4 << 10, 1 << 20, 64 << 10},
    {"pool_bytes", 16 << 10, SIZE_MAX, 256 << 20},
    {"compression_level", 1, 22, 1},
    {"stack_depth", 1, 64, 32},
    {"io_min_ns", 1, UINT_MAX, 10000},
    {"sched_switches", 0, 1, 0},
    {"sched_ring_bytes", 4 << 10, 256 << 20, 64 << 10},
    {"lttng", 0, 1, 0},
    {"cpu_hz", 1, 10000, 100},
    {"cpu_timer", 0, 1, 0},
};

static const struct promise flightrec_promises[] = {
    {"min_age_ns", 1, UINT64_MAX, 10ull * 1000 * 1000 * 1000},
    {"max_bytes", 64 << 10, UINT64_MAX, 16 << 20},
};

static void check_promises(const struct promise *p, int n, int count,
                           const struct ctr_option *(*row)(int))
{
    assert_int_equal(n, count);
    for (int i = 0; i < n; i++) {
        const struct ctr_option *opt = row(i);
        assert_string_equal(opt->field, p[i].field);
        assert_true(opt->min == p[i].min && opt->max == p[i].max && opt->def == p[i].def);
    }
}

static void test_table_keeps_promises(void **state)
{
    (void)state;
    check_promises(trace_promises, sizeof(trace_promises) / sizeof(trace_promises[0]),
                   CTR_OPTION_COUNT, ctr_option);
    check_promises(flightrec_promises, sizeof(flightrec_promises) / sizeof(flightrec_promises[0]),
                   CTR_FR_OPTION_COUNT, ctr_flightrec_option);
    assert_int_equal(CTR_STACK_MAX, 64);
}

/* ---------------------------------------------------------------------------
 * trace_options (api.c)
 * ------------------------------------------------------------------------- */

/* o, with row id set to v, resolves (or not, want_ok 0); if it does, the
 * field comes out as `want`. */
static void check_resolve(int id, uint64_t v, int want_ok, uint64_t want)
{
    struct trace_options o = base_options(id), r;
    if (!set_field(&o, id, v))
        return; /* beyond the field's type: nothing to give */
    print_message("%s = %llu\n", ctr_option(id)->field, (unsigned long long)v);
    int rc = ctr__options_resolve(&o, &r);
    assert_int_equal(rc, want_ok ? 0 : -EINVAL);
    assert_int_equal(ctr__options_check(&o), rc);
    if (want_ok)
        assert_true(get_field(&r, id) == want);
}

static void test_api_bounds(void **state)
{
    (void)state;
    for (int id = 0; id < CTR_OPTION_COUNT; id++) {
        const struct ctr_option *opt = ctr_option(id);
        check_resolve(id, 0, 1, opt->kind & CTR_OPT_RATE ? 0 : opt->def);
        check_resolve(id, opt->min, 1, expected(opt, opt->min));
        check_resolve(id, opt->max, 1, expected(opt, opt->max));
        if (opt->min > 1)
            check_resolve(id, opt->min - 1, 0, 0);
        if (opt->kind & CTR_OPT_SWITCH)
            check_resolve(id, opt->max + 1, 1, 1); /* trace.h: any non-zero is on */
        else if (opt->max < UINT64_MAX)
            check_resolve(id, opt->max + 1, 0, 0);
        if (opt->kind & CTR_OPT_POW2)
            check_resolve(id, opt->min + 1, 1, 2 * opt->min);
    }
    /* A negative int is out of range, but a switch's (on). */
    struct trace_options o = {.path = "unused", .compression_level = -1}, r;
    assert_int_equal(ctr__options_resolve(&o, &r), -EINVAL);
    o = (struct trace_options){.path = "unused", .sched_switches = -1};
    assert_int_equal(ctr__options_resolve(&o, &r), 0);
    assert_int_equal(r.sched_switches, 1);
    /* The pool holds CTR_POOL_MIN_CHUNKS chunks, as rounded. */
    o = (struct trace_options){
        .path = "unused", .chunk_bytes = 5000, .pool_bytes = CTR_POOL_MIN_CHUNKS * 8192 - 1};
    assert_int_equal(ctr__options_resolve(&o, &r), -EINVAL);
    o.pool_bytes++;
    assert_int_equal(ctr__options_resolve(&o, &r), 0);
    /* And the public entry point says the same. */
    o = (struct trace_options){.path = "unused", .stack_depth = CTR_STACK_MAX + 1};
    assert_int_equal(trace_start_opts(&o), -EINVAL);
    assert_false(trace_is_running());
}

/* A session runs with the defaults, and with sizes rounded. */
static void test_session_uses_table(void **state)
{
    (void)state;
    char path[64];
    ctr_test_temp(path, sizeof(path), "options");
    struct trace_options o = {.path = path};
    assert_int_equal(trace_start_opts(&o), 0);
    const struct ctr_session *s = &ctr__session;
    assert_int_equal(s->flush_ms, ctr_option(CTR_OPT_flush_ms)->def);
    assert_int_equal(s->level, ctr_option(CTR_OPT_compression_level)->def);
    assert_int_equal(s->stack_depth, ctr_option(CTR_OPT_stack_depth)->def);
    assert_int_equal(s->io_min_ns, ctr_option(CTR_OPT_io_min_ns)->def);
    assert_int_equal(s->sched, ctr_option(CTR_OPT_sched_switches)->def);
    struct ctr_pool *p = atomic_load(&ctr__session.pool);
    uint64_t chunk = ctr_option(CTR_OPT_chunk_bytes)->def;
    assert_int_equal(p->chunk_bytes, chunk);
    assert_int_equal(p->nchunks, ctr_option(CTR_OPT_pool_bytes)->def / chunk);
    assert_int_equal(trace_stop(), 0);

    o = (struct trace_options){.path = path,
                               .chunk_bytes = 5000,
                               .pool_bytes = 100000,
                               .flush_ms = 7,
                               .compression_level = 3,
                               .stack_depth = 5,
                               .io_min_ns = 1};
    assert_int_equal(trace_start_opts(&o), 0);
    p = atomic_load(&ctr__session.pool);
    assert_int_equal(p->chunk_bytes, 8192);
    assert_int_equal(p->nchunks, 100000 / 8192);
    assert_int_equal(s->flush_ms, 7);
    assert_int_equal(s->level, 3);
    assert_int_equal(s->stack_depth, 5);
    assert_int_equal(s->io_min_ns, 1);
    assert_int_equal(trace_stop(), 0);
    unlink(path);
}

/* ---------------------------------------------------------------------------
 * CTRACE_* variables (autostart.c)
 * ------------------------------------------------------------------------- */

/* The variables as the test found them (run.sh sets CTRACE_UNWIND), put
 * back at the end. */
static char *saved_env[CTR_OPTION_COUNT + 1];

static const char *env_name(int i)
{
    return i < CTR_OPTION_COUNT ? ctr_option(i)->env : CTR_UNWIND_ENV;
}

static int clear_env(void **state)
{
    (void)state;
    for (int i = 0; i <= CTR_OPTION_COUNT; i++) {
        const char *v = getenv(env_name(i));
        saved_env[i] = v ? strdup(v) : NULL;
        unsetenv(env_name(i));
    }
    return 0;
}

static int restore_env(void **state)
{
    (void)state;
    for (int i = 0; i <= CTR_OPTION_COUNT; i++) {
        if (saved_env[i])
            setenv(env_name(i), saved_env[i], 1);
        else
            unsetenv(env_name(i));
        free(saved_env[i]);
        saved_env[i] = NULL;
    }
    return 0;
}

/* ctr__options_from_env with name=text in the environment (alone), its
 * stderr into err. @return its result. */
static int from_env(const char *name, const char *text, struct trace_options *o, char *err,
                    size_t cap)
{
    setenv(name, text, 1);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    *o = (struct trace_options){0};
    int rc = ctr__options_from_env(o);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(err, 1, cap - 1, tmp);
    err[n] = 0;
    fclose(tmp);
    unsetenv(name);
    return rc;
}

/* The variable of row id, given text, lands in its field as `want`, and
 * nothing else is set or said. */
static void check_env_ok(int id, const char *text, uint64_t want)
{
    struct trace_options o;
    char err[256];
    print_message("%s=%s\n", ctr_option(id)->env, text);
    assert_int_equal(from_env(ctr_option(id)->env, text, &o, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    for (int i = 0; i < CTR_OPTION_COUNT; i++)
        assert_true(get_field(&o, i) == (i == id ? want : 0));
}

/* The variable of row id, given text, is refused with autostart's line:
 * out of range (range set) or not a number. */
static void check_env_bad(int id, const char *text, int range)
{
    const struct ctr_option *opt = ctr_option(id);
    struct trace_options o;
    char err[256], want[256];
    if (range)
        snprintf(want, sizeof(want), "ctrace: %s: out of range (0, or %llu to %llu): '%s'\n",
                 opt->env, (unsigned long long)opt->min, (unsigned long long)opt->max, text);
    else
        snprintf(want, sizeof(want), "ctrace: %s: not a number: '%s'\n", opt->env, text);
    assert_int_equal(from_env(opt->env, text, &o, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, want);
}

static void test_env_bounds(void **state)
{
    (void)state;
    char buf[24];
    for (int id = 0; id < CTR_OPTION_COUNT; id++) {
        const struct ctr_option *opt = ctr_option(id);
        check_env_ok(id, "0", 0);
        check_env_ok(id, decimal(opt->min, buf), opt->min);
        check_env_ok(id, decimal(opt->max, buf), opt->max);
        check_env_ok(id, ctr_option_format(opt, opt->def, buf), opt->def);
        if (opt->min > 1)
            check_env_bad(id, decimal(opt->min - 1, buf), 1);
        if (opt->max < UINT64_MAX)
            check_env_bad(id, decimal(opt->max + 1, buf), 1);
        check_env_bad(id, "99999999999999999999", 1); /* beyond 64 bits */
        check_env_bad(id, "", 0);
        check_env_bad(id, "x1", 0);
        check_env_bad(id, "-1", 0);
        check_env_bad(id, "1T", 0);
        if (opt->kind & CTR_OPT_SIZE) {
            /* The default with its suffix in the other case: 64K, 256m. */
            char *unit = buf + strlen(ctr_option_format(opt, opt->def, buf)) - 1;
            assert_true(isalpha((unsigned char)*unit));
            *unit = (char)(islower((unsigned char)*unit) ? toupper((unsigned char)*unit)
                                                         : tolower((unsigned char)*unit));
            check_env_ok(id, buf, opt->def);
        } else {
            check_env_bad(id, "1k", 0);
        }
    }
    /* CTRACE_UNWIND, the one word among them. */
    struct trace_options o;
    char err[256];
    const char *good[] = {"fp", "dwarf", "auto"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        assert_int_equal(from_env(CTR_UNWIND_ENV, good[i], &o, err, sizeof(err)), 0);
        assert_string_equal(err, "");
    }
    assert_int_equal(from_env(CTR_UNWIND_ENV, "x", &o, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "ctrace: CTRACE_UNWIND: want fp, dwarf or auto: 'x'\n");
}

/* ---------------------------------------------------------------------------
 * `ctrace run` flags (analyze/cli/run.c)
 * ------------------------------------------------------------------------- */

/* Runs the ctrace CLI with args (NULL-terminated, after "ctrace"), its
 * stdout and stderr into out. @return its exit status. */
static int run_ctrace(const char *const *args, char *out, size_t cap)
{
    const char *bin = getenv("CTR_TEST_CTRACE");
    char *argv[16] = {(char *)bin};
    for (int i = 0; args[i]; i++) {
        assert_true(i + 2 < 16);
        argv[i + 1] = (char *)args[i];
    }
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execv(bin, argv);
        _exit(99);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while ((r = read(fds[0], out + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = 0;
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

#define NO_SUCH_COMMAND "/nonexistent/ctrace-test-command"

/* `ctrace run -flag=text -- NO_SUCH_COMMAND` (or "-flag text" when split):
 * a value the flag takes gets as far as running the command (127); any
 * other is a usage error (2) naming the flag, what it wants and the value. */
static void check_flag(int id, const char *text, int split, int ok)
{
    const struct ctr_option *opt = ctr_option(id);
    char joined[64], dashed[32], out[1024], lo[24], hi[24];
    snprintf(joined, sizeof(joined), "-%s=%s", opt->flag, text);
    snprintf(dashed, sizeof(dashed), "--%s", opt->flag);
    const char *const joined_args[] = {"run", joined, "--", NO_SUCH_COMMAND, NULL};
    const char *const split_args[] = {"run", dashed, text, "--", NO_SUCH_COMMAND, NULL};
    print_message("-%s %s\n", opt->flag, text);
    int status = run_ctrace(split ? split_args : joined_args, out, sizeof(out));
    if (ok) {
        assert_int_equal(status, 127);
        assert_non_null(strstr(out, NO_SUCH_COMMAND ": No such file"));
        return;
    }
    char want[256];
    snprintf(want, sizeof(want), "ctrace: run: -%s wants %s", opt->flag, opt->what);
    assert_int_equal(status, 2);
    assert_int_equal(strncmp(out, want, strlen(want)), 0);
    if (ctr_option_bounded(opt)) {
        snprintf(want, sizeof(want), " from %s to %s,", ctr_option_format(opt, opt->min, lo),
                 ctr_option_format(opt, opt->max, hi));
        assert_non_null(strstr(out, want));
    }
    snprintf(want, sizeof(want), ", not '%s' (ctrace run -h for help)\n", text);
    assert_non_null(strstr(out, want));
}

static void test_flag_bounds(void **state)
{
    (void)state;
    if (!getenv("CTR_TEST_CTRACE"))
        skip(); /* run outside ctest: no CLI to run */
    char buf[24];
    for (int id = 0; id < CTR_OPTION_COUNT; id++) {
        const struct ctr_option *opt = ctr_option(id);
        check_flag(id, "0", 0, 1);
        check_flag(id, ctr_option_format(opt, opt->min, buf), 0, 1);
        check_flag(id, ctr_option_format(opt, opt->max, buf), 1, 1);
        if (opt->min > 1)
            check_flag(id, decimal(opt->min - 1, buf), 1, 0);
        if (opt->max < UINT64_MAX)
            check_flag(id, decimal(opt->max + 1, buf), 0, 0);
        check_flag(id, "x", 0, 0);
        check_flag(id, opt->kind & CTR_OPT_SIZE ? "1T" : "1k", 1, 0);
    }
    char out[1024];
    const char *const bad_unwind[] = {"run", "-unwind=x", "--", NO_SUCH_COMMAND, NULL};
    assert_int_equal(run_ctrace(bad_unwind, out, sizeof(out)), 2);
    assert_string_equal(out, "ctrace: run: -unwind wants fp, dwarf or auto, not 'x' "
                             "(ctrace run -h for help)\n");
    const char *const good_unwind[] = {"run", "-unwind", "dwarf", "--", NO_SUCH_COMMAND, NULL};
    assert_int_equal(run_ctrace(good_unwind, out, sizeof(out)), 127);
}

/* `ctrace run -h` lists each flag with its argument, range and default. */
static void test_flag_help(void **state)
{
    (void)state;
    if (!getenv("CTR_TEST_CTRACE"))
        skip();
    char out[8192], flat[8192], want[128], lo[24], hi[24];
    const char *const args[] = {"run", "-h", NULL};
    assert_int_equal(run_ctrace(args, out, sizeof(out)), 0);
    /* One line, one space between words: a line wraps anywhere. */
    size_t n = 0;
    for (const char *p = out; *p; p++)
        if (!(*p == ' ' || *p == '\n') || (n > 0 && flat[n - 1] != ' '))
            flat[n++] = *p == '\n' ? ' ' : *p;
    flat[n] = 0;
    for (int id = 0; id < CTR_OPTION_COUNT; id++) {
        const struct ctr_option *opt = ctr_option(id);
        snprintf(want, sizeof(want), " -%s %s %s", opt->flag, opt->arg, opt->help);
        assert_non_null(strstr(flat, want));
        /* A rate is off by default; its `def` is what the flag alone means,
         * which its help says. */
        if (opt->kind & CTR_OPT_RATE)
            snprintf(want, sizeof(want), "(default off)");
        else
            snprintf(want, sizeof(want), "(default %s)", ctr_option_format(opt, opt->def, lo));
        assert_non_null(strstr(strstr(flat, opt->help), want));
        if (ctr_option_bounded(opt)) {
            snprintf(want, sizeof(want), "%s, %s..%s (default", opt->help,
                     ctr_option_format(opt, opt->min, lo), ctr_option_format(opt, opt->max, hi));
            assert_non_null(strstr(flat, want));
        }
    }
    assert_non_null(strstr(flat, " -" CTR_UNWIND_FLAG " " CTR_UNWIND_ARG " " CTR_UNWIND_HELP));
}

/* ---------------------------------------------------------------------------
 * The flight recorder
 * ------------------------------------------------------------------------- */

static void test_flightrec_agrees(void **state)
{
    (void)state;
    const struct ctr_option *max = ctr_flightrec_option(CTR_FR_OPT_max_bytes);
    const struct ctr_option *age = ctr_flightrec_option(CTR_FR_OPT_min_age_ns);
    struct flightrec_config c = {.max_bytes = max->min - 1};
    assert_int_equal(flightrec_start(&c), -EINVAL);
    c.max_bytes = max->min;
    uint64_t min_age, max_bytes;
    assert_int_equal(flightrec_start(&c), 0);
    ctr__fr_bounds(&min_age, &max_bytes);
    assert_true(max_bytes == max->min);
    assert_int_equal(flightrec_stop(), 0);
    c = (struct flightrec_config){0};
    assert_int_equal(flightrec_start(&c), 0);
    ctr__fr_bounds(&min_age, &max_bytes);
    assert_true(max_bytes == max->def);
    assert_true(min_age == age->def);
    assert_int_equal(flightrec_stop(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_rules),
        cmocka_unit_test(test_table_keeps_promises),
        cmocka_unit_test(test_api_bounds),
        cmocka_unit_test(test_session_uses_table),
        cmocka_unit_test_setup_teardown(test_env_bounds, clear_env, restore_env),
        cmocka_unit_test(test_flag_bounds),
        cmocka_unit_test(test_flag_help),
        cmocka_unit_test(test_flightrec_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
