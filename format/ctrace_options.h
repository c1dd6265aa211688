/* SPDX-License-Identifier: MIT */
/* ctrace_options.h - the one table of libctrace's options: for each field of
 * struct trace_options (ctrace/trace.h), its CTRACE_* environment variable,
 * its `ctrace run` flag, its range, its default and its help text.
 *
 * Three places read options, and each is generated from CTR_OPTIONS below:
 * tracer/api.c checks a struct trace_options and applies the defaults,
 * tracer/autostart.c reads the CTRACE_* variables (`ctrace run`, or
 * LD_PRELOAD by hand), and the `ctrace` CLI (analyze/cli/run.c) parses, checks
 * and lists `ctrace run`'s flags, which it passes on as those variables.
 * libctrace and the CLI link nothing in common: like ctrace_format.h beside
 * it, this header holds only macros, constants and static inline functions.
 *
 * The rules every option keeps (tests/unit/test-options.c checks them):
 *   - 0 means the option's default everywhere: in the zero value of struct
 *     trace_options, as a variable's or a flag's value, and an unset
 *     variable or a flag not given is 0. Any other value lies in min..max,
 *     checked as given (before any rounding). A rate (CTR_OPT_RATE) is off
 *     by default: its `def` is what a flag given alone stands for.
 *   - As text (variables, flags) a value is decimal; a size (CTR_OPT_SIZE)
 *     may end in k, M or G (powers of 1024). A switch (CTR_OPT_SWITCH) is
 *     0 or 1 as text, while trace_options takes any non-zero int as on.
 *   - A rounded option (CTR_OPT_POW2) is used rounded up to a power of two;
 *     its min, max and default are powers of two, so rounding stays in range.
 * The flight recorder's options (struct flightrec_config) follow the same
 * rules in CTR_FLIGHTREC_OPTIONS; CTRACE_FLIGHT (`ctrace run -flight`) sets
 * both in one spec (ctr_flight_parse, at the end).
 */
#ifndef CTRACE_OPTIONS_H
#define CTRACE_OPTIONS_H

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Kinds of option (bits). */
/* clang-format off */
#define CTR_OPT_SIZE 1u   /* bytes: k, M and G in text, and printed so */
#define CTR_OPT_POW2 2u   /* used rounded up to a power of two */
#define CTR_OPT_SWITCH 4u /* off (0, the default) or on */
#define CTR_OPT_RATE 8u   /* off (0, the default) or a rate in min..max; `def`
                             is the rate when it is just switched on */
/* clang-format on */

/* Bounds that other code needs as constants: stack.c sizes its arrays by
 * the deepest stack, sched.c sizes rings by the default before a session
 * says otherwise, and a pool holds at least CTR_POOL_MIN_CHUNKS chunks
 * (api.c checks it once both sizes are known; the least pool is that many
 * of the least chunk). */
#define CTR_STACK_MAX 64
#define CTR_CHUNK_MIN ((uint64_t)4 << 10)
#define CTR_POOL_MIN_CHUNKS 4
#define CTR_SCHED_RING_DEFAULT ((uint64_t)64 << 10)

/* X(field, env, flag, arg, kind, min, max, def, what, help)
 *   field     the member of struct trace_options
 *   env       the variable autostart.c reads; `ctrace run -flag arg` sets it
 *   kind      CTR_OPT_* bits
 *   min, max  the range of a value other than 0; a max at the field type's
 *             own limit (UINT_MAX or more) is no limit to tell a user of
 *   def       what 0 stands for
 *   what      what a value is, for "-flag wants WHAT, not ..." (the CLI
 *             adds the range, or for an unlimited size an example)
 *   help      the flag's line in `ctrace run -h` (the CLI adds the range
 *             and the default)
 * In the order `ctrace run -h` lists them. The pool is only reserved address
 * space until used: the default's 4096 chunks keep a few thousand live
 * threads writing before any has to drop. */
/* clang-format off */
#define CTR_OPTIONS(X)                                                                           \
    X(flush_ms, "CTRACE_FLUSH_MS", "flush-ms", "N", 0, 1, UINT_MAX, 100, "milliseconds",         \
      "collector period in ms")                                                                  \
    X(chunk_bytes, "CTRACE_CHUNK_BYTES", "chunk-bytes", "N", CTR_OPT_SIZE | CTR_OPT_POW2,        \
      CTR_CHUNK_MIN, (uint64_t)1 << 20, (uint64_t)64 << 10, "a size", "per-thread buffer chunk") \
    X(pool_bytes, "CTRACE_POOL_BYTES", "pool-bytes", "N", CTR_OPT_SIZE,                          \
      CTR_POOL_MIN_CHUNKS * CTR_CHUNK_MIN, SIZE_MAX, (uint64_t)256 << 20, "a size",              \
      "buffer memory shared by all threads")                                                     \
    X(compression_level, "CTRACE_LEVEL", "level", "N", 0, 1, 22, 1, "a level",                   \
      "zstd level of the file")                                                                  \
    X(stack_depth, "CTRACE_STACK_DEPTH", "stack-depth", "N", 0, 1, CTR_STACK_MAX, 32, "a depth", \
      "most frames per stack")                                                                   \
    X(io_min_ns, "CTRACE_IO_MIN_NS", "io-min-ns", "N", 0, 1, UINT_MAX, 10000, "nanoseconds",     \
      "I/O calls shorter than this are not recorded")                                            \
    X(sched_switches, "CTRACE_SCHED", "sched", "1", CTR_OPT_SWITCH, 0, 1, 0, "0 or 1",           \
      "also record context switches (perf_event), for preemption in the sched profile")          \
    X(sched_ring_bytes, "CTRACE_SCHED_RING_BYTES", "sched-ring-bytes", "N",                      \
      CTR_OPT_SIZE | CTR_OPT_POW2, (uint64_t)4 << 10, (uint64_t)256 << 20,                       \
      CTR_SCHED_RING_DEFAULT, "a size",                                                          \
      "each thread's context-switch ring (switches beyond it per flush are lost and counted)") \
    X(lttng, "CTRACE_LTTNG", "lttng", "1", CTR_OPT_SWITCH, 0, 1, 0, "0 or 1",                    \
      "also send every event to LTTng-UST (the ctrace tracepoints); with no output file, "     \
      "to LTTng only")                                                                         \
    X(cpu_hz, "CTRACE_CPU_HZ", "cpu", "HZ", CTR_OPT_RATE, 1, 10000, 100, "samples per second",    \
      "also sample each thread's stack every 1/HZ s of its CPU time (-cpu alone: 100)")          \
    X(cpu_timer, "CTRACE_CPU_TIMER", "cpu-timer", "1", CTR_OPT_SWITCH, 0, 1, 0, "0 or 1",        \
      "take CPU samples with a CPU-time timer and SIGPROF instead of perf_event")

/* struct flightrec_config (ctrace/flightrec.h), in the same columns. */
#define CTR_FLIGHTREC_OPTIONS(X)                                                                 \
    X(min_age_ns, NULL, NULL, NULL, 0, 1, UINT64_MAX, (uint64_t)10 * 1000 * 1000 * 1000,         \
      "nanoseconds", "the least span of recent trace the window keeps")                          \
    X(max_bytes, NULL, NULL, NULL, CTR_OPT_SIZE, (uint64_t)64 << 10, UINT64_MAX,                 \
      (uint64_t)16 << 20, "a size", "the most memory the window holds")

/* One row of a table. */
struct ctr_option {
    const char *field, *env, *flag, *arg;
    unsigned kind;
    uint64_t min, max, def;
    const char *what, *help;
};

#define CTR_OPTION_ROW(field, env, flag, arg, kind, min, max, def, what, help) \
    {#field, env, flag, arg, kind, min, max, def, what, help},

/* CTR_OPT_<field>: a row's index in CTR_OPTIONS. */
enum ctr_option_id {
#define CTR_X_OPT(field, ...) CTR_OPT_##field,
    CTR_OPTIONS(CTR_X_OPT)
#undef CTR_X_OPT
    CTR_OPTION_COUNT
};

/* CTR_FR_OPT_<field>: a row's index in CTR_FLIGHTREC_OPTIONS. */
enum ctr_fr_option_id {
#define CTR_X_FR_OPT(field, ...) CTR_FR_OPT_##field,
    CTR_FLIGHTREC_OPTIONS(CTR_X_FR_OPT)
#undef CTR_X_FR_OPT
    CTR_FR_OPTION_COUNT
};
/* clang-format on */

/* ctr_option() : the row of CTR_OPTIONS numbered id (enum ctr_option_id).
 * The rows live in a function so that a file that does not use them keeps
 * no copy (and no unused-variable warning). */
static inline const struct ctr_option *ctr_option(int id)
{
    static const struct ctr_option rows[] = {CTR_OPTIONS(CTR_OPTION_ROW)};
    return &rows[id];
}

/* ctr_flightrec_option() : the row of CTR_FLIGHTREC_OPTIONS numbered id
 * (enum ctr_fr_option_id). */
static inline const struct ctr_option *ctr_flightrec_option(int id)
{
    static const struct ctr_option rows[] = {CTR_FLIGHTREC_OPTIONS(CTR_OPTION_ROW)};
    return &rows[id];
}

/* ctr_option_off_by_default() : whether 0 leaves the option off (a switch,
 * a rate) rather than standing for `def`. */
static inline int ctr_option_off_by_default(const struct ctr_option *opt)
{
    return (opt->kind & (CTR_OPT_SWITCH | CTR_OPT_RATE)) != 0;
}

/* ctr_option_resolve() : the value an option given as v takes: its default
 * when v is 0 (0, off, for a rate); for a switch, 1 when v is anything
 * else; else v, rounded up to a power of two for CTR_OPT_POW2. Into *out.
 * @return 0, or -ERANGE (and *out untouched) when v is out of min..max. */
static inline int ctr_option_resolve(const struct ctr_option *opt, uint64_t v, uint64_t *out)
{
    if (v == 0) {
        *out = opt->kind & CTR_OPT_RATE ? 0 : opt->def;
        return 0;
    }
    if (opt->kind & CTR_OPT_SWITCH) {
        *out = 1;
        return 0;
    }
    if (v < opt->min || v > opt->max)
        return -ERANGE;
    uint64_t p = 1;
    while ((opt->kind & CTR_OPT_POW2) && p < v)
        p <<= 1; /* max is a power of two: no overflow */
    *out = opt->kind & CTR_OPT_POW2 ? p : v;
    return 0;
}

/* ctr_option_parse() : reads the text s of a variable or flag into *out:
 * decimal digits, then for a size an optional k, M or G.
 * @return 0; -EINVAL if it is not such a number; -ERANGE if it is neither
 * 0 nor in min..max (a number too large for 64 bits included). */
static inline int ctr_option_parse(const struct ctr_option *opt, const char *s, uint64_t *out)
{
    const char *p = s;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return -EINVAL;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned digit = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return -ERANGE;
        v = v * 10 + digit;
    }
    if ((opt->kind & CTR_OPT_SIZE) && *p) {
        static const char units[] = "kKmMgG";
        const char *u = strchr(units, *p);
        unsigned shift = u ? 10u * (unsigned)((u - units) / 2 + 1) : 0;
        if (!shift)
            return -EINVAL;
        if (v > UINT64_MAX >> shift)
            return -ERANGE;
        v <<= shift;
        p++;
    }
    if (*p)
        return -EINVAL;
    if (v != 0 && (v < opt->min || v > opt->max))
        return -ERANGE;
    *out = v;
    return 0;
}

/* ctr_option_bounded() : whether the range is worth telling a user: a
 * switch's is its "0 or 1", and a max at UINT_MAX or above is the field
 * type's own. */
static inline int ctr_option_bounded(const struct ctr_option *opt)
{
    return !(opt->kind & CTR_OPT_SWITCH) && opt->max < UINT_MAX;
}

/* ctr_option_format() : v as text that ctr_option_parse() reads back: a
 * size in the largest of G, M and k that divides it ("64k", "256M"), any
 * other number in decimal. @return buf. */
static inline const char *ctr_option_format(const struct ctr_option *opt, uint64_t v, char buf[24])
{
    static const char units[] = "GMk";
    for (unsigned i = 0; (opt->kind & CTR_OPT_SIZE) && v && i < 3; i++) {
        unsigned shift = 30 - 10 * i;
        if ((v & (((uint64_t)1 << shift) - 1)) == 0) {
            snprintf(buf, 24, "%llu%c", (unsigned long long)(v >> shift), units[i]);
            return buf;
        }
    }
    snprintf(buf, 24, "%llu", (unsigned long long)v);
    return buf;
}

/* ---------------------------------------------------------------------------
 * Options that are not numbers
 * ------------------------------------------------------------------------- */

/* CTRACE_OUTPUT, the trace file, is what starts tracing at load (autostart.c;
 * each "%p" becomes the pid); `ctrace run -o` sets it, and CTRACE_PID to the
 * pid of the process that owns a path without "%p". */
#define CTR_OUTPUT_ENV "CTRACE_OUTPUT"
#define CTR_PID_ENV "CTRACE_PID"

/* CTRACE_UNWIND, how stacks are taken, is no field of trace_options: every
 * trace_start reads it (stack.c). `ctrace run -unwind` sets it. */
#define CTR_UNWIND_ENV "CTRACE_UNWIND"
#define CTR_UNWIND_FLAG "unwind"
#define CTR_UNWIND_ARG "HOW"
#define CTR_UNWIND_WANT "fp, dwarf or auto"
#define CTR_UNWIND_HELP                                                                   \
    "how stacks are taken: fp (frame pointers), dwarf (libunwind) or auto (default: fp, " \
    "dwarf where frame pointers are missing)"

enum ctr_unwind { CTR_UNWIND_BAD, CTR_UNWIND_FP, CTR_UNWIND_DWARF, CTR_UNWIND_AUTO };

/* ctr_unwind_parse() : CTRACE_UNWIND's value s; NULL (unset) is auto.
 * @return the method, or CTR_UNWIND_BAD for anything but CTR_UNWIND_WANT. */
static inline enum ctr_unwind ctr_unwind_parse(const char *s)
{
    return !s || strcmp(s, "auto") == 0 ? CTR_UNWIND_AUTO
           : strcmp(s, "fp") == 0       ? CTR_UNWIND_FP
           : strcmp(s, "dwarf") == 0    ? CTR_UNWIND_DWARF
                                        : CTR_UNWIND_BAD;
}

/* ---------------------------------------------------------------------------
 * Durations, and the flight recorder's spec
 * ------------------------------------------------------------------------- */

/* ctr_parse_duration() : parses a duration written as Go's
 * time.ParseDuration takes it, without a sign: one or more decimal numbers,
 * each with an optional fraction and a unit (ns, us, µs, ms, s, m, h), such
 * as "500us", "1.5s", "1m30s"; or "0". The CLI's (-latmin, -for) and
 * CTRACE_FLIGHT's.
 * @return 0 with *ns set; -EINVAL for anything else, -ERANGE beyond
 *         UINT64_MAX nanoseconds. */
static inline int ctr_parse_duration(const char *s, uint64_t *ns)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {
        /* Longer names first where one is a prefix of another ("ms" before "m"). */
        {"ns", 1},
        {"us", 1000},
        {"\xc2\xb5s", 1000},
        {"\xce\xbcs", 1000}, /* µs: micro, mu */
        {"ms", 1000000},
        {"s", 1000000000},
        {"m", 60000000000ull},
        {"h", 3600000000000ull},
    };
    if (!s || !*s)
        return -EINVAL;
    if (strcmp(s, "0") == 0) {
        *ns = 0;
        return 0;
    }
    uint64_t total = 0;
    const char *p = s;
    while (*p) {
        /* The number: digits, optionally '.' and more digits; one side may
         * be empty ("1.", ".5") but not both. */
        uint64_t whole = 0, frac = 0, scale = 1;
        int digits = 0, overflow = 0;
        for (; *p >= '0' && *p <= '9'; p++, digits++) {
            if (whole > (UINT64_MAX - 9) / 10)
                overflow = 1;
            else
                whole = whole * 10 + (uint64_t)(*p - '0');
        }
        if (*p == '.') {
            p++;
            for (; *p >= '0' && *p <= '9'; p++, digits++)
                if (scale <= UINT64_MAX / 100) { /* further digits are below 1 ns */
                    frac = frac * 10 + (uint64_t)(*p - '0');
                    scale *= 10;
                }
        }
        if (!digits)
            return -EINVAL;
        size_t u = 0, ulen = 0;
        for (; u < sizeof(units) / sizeof(units[0]); u++) {
            ulen = strlen(units[u].name);
            if (strncmp(p, units[u].name, ulen) == 0)
                break;
        }
        if (u == sizeof(units) / sizeof(units[0]))
            return -EINVAL; /* no unit, or an unknown one */
        p += ulen;
        uint64_t unit = units[u].ns;
        if (overflow || (unit && whole > UINT64_MAX / unit))
            return -ERANGE;
        uint64_t v = whole * unit;
        /* frac/scale of a unit, rounded down; frac < scale <= 1e18. */
        v += (uint64_t)((long double)frac * (long double)unit / (long double)scale);
        if (v < whole * unit || total > UINT64_MAX - v)
            return -ERANGE;
        total += v;
    }
    *ns = total;
    return 0;
}

/* CTRACE_FLIGHT, which starts the flight recorder at load (`ctrace run
 * -flight SPEC`), and the dump signal's variables (flightrec/autostart.c). */
#define CTR_FLIGHT_ENV "CTRACE_FLIGHT"
#define CTR_FLIGHT_WANT "MINAGE[,MAXBYTES] such as 2s,8M (or ,MAXBYTES, or on)"
#define CTR_DUMP_SIGNAL_ENV "CTRACE_DUMP_SIGNAL"
#define CTR_DUMP_DIR_ENV "CTRACE_DUMP_DIR"
#define CTR_DUMP_SIGNAL_WANT "USR1, USR2, HUP, WINCH, URG or PWR (with or without SIG), or a number"

/* ctr_flight_parse() : a flight recorder spec s, "MINAGE[,MAXBYTES]": a
 * duration (ctr_parse_duration), then a size as a variable's (k, M, G);
 * either may be left out ("2s", ",8M"), and "on" or "1" is both left out.
 * Into *min_age_ns and *max_bytes (0: the default). @return 0; -EINVAL if
 * s is no such spec; -ERANGE if a value is out of its range (the rows of
 * CTR_FLIGHTREC_OPTIONS). */
static inline int ctr_flight_parse(const char *s, uint64_t *min_age_ns, uint64_t *max_bytes)
{
    *min_age_ns = *max_bytes = 0;
    if (strcmp(s, "on") == 0 || strcmp(s, "1") == 0)
        return 0;
    const char *comma = strchr(s, ',');
    size_t age_len = comma ? (size_t)(comma - s) : strlen(s);
    char age[64];
    if (age_len >= sizeof(age) || (!age_len && !comma) || (comma && !comma[1]))
        return -EINVAL;
    memcpy(age, s, age_len);
    age[age_len] = 0;
    if (age_len) {
        int rc = ctr_parse_duration(age, min_age_ns);
        if (rc != 0)
            return rc;
        const struct ctr_option *o = ctr_flightrec_option(CTR_FR_OPT_min_age_ns);
        if (*min_age_ns != 0 && *min_age_ns < o->min)
            return -ERANGE;
    }
    return comma
               ? ctr_option_parse(ctr_flightrec_option(CTR_FR_OPT_max_bytes), comma + 1, max_bytes)
               : 0;
}

/* ctr_dump_signal_parse() : the signal named by s (CTR_DUMP_SIGNAL_WANT; a
 * number: a real-time signal too). @return it, or -1 for anything else
 * (among them the signals that kill or stop, and SIGPROF, the CPU timer's). */
static inline int ctr_dump_signal_parse(const char *s)
{
    static const struct {
        const char *name;
        int sig;
    } ok[] = {{"USR1", SIGUSR1},   {"USR2", SIGUSR2}, {"HUP", SIGHUP},
              {"WINCH", SIGWINCH}, {"URG", SIGURG},   {"PWR", SIGPWR}};
    const char *name = strncmp(s, "SIG", 3) == 0 ? s + 3 : s;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strcmp(name, ok[i].name) == 0)
            return ok[i].sig;
    int v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > 1000)
            return -1;
        v = v * 10 + (*p - '0');
    }
    for (size_t i = 0; *s && i < sizeof(ok) / sizeof(ok[0]); i++)
        if (v == ok[i].sig)
            return v;
    return *s && v >= SIGRTMIN && v <= SIGRTMAX ? v : -1;
}

#endif /* CTRACE_OPTIONS_H */
