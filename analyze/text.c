/* SPDX-License-Identifier: MIT */
/* text.c - durations and symbolized frames for the text outputs (text.h). */
#include "text.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "symbolize.h"

#define INLINE_MAX 16 /* inline chain printed per PC */

const char *ctr_text_ns(int64_t ns, char *buf, size_t len)
{
    if (ns < 1000)
        snprintf(buf, len, "%" PRId64 "ns", ns);
    else if (ns < 1000000)
        snprintf(buf, len, "%.1fus", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, len, "%.1fms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.2fs", (double)ns / 1e9);
    return buf;
}

/* ================================================================ durations */

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

int ctr_parse_duration(const char *s, uint64_t *ns)
{
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

/* ================================================================ frames */

void ctr_text_pc(FILE *out, struct ctr_profile_sym *ps, uint64_t pc, const char *indent)
{
    struct ctr_sym_frame chain[INLINE_MAX];
    int k = ps->sym ? ctr_symbolize(ps->sym, pc, chain, INLINE_MAX) : 0;
    int mi = ps->sym ? ctr_symbolizer_mapping(ps->sym, pc) : -1;
    const char *module = mi >= 0 && (size_t)mi < ps->nmaps ? ps->maps[mi].path : NULL;
    char where[CTR_TEXT_WHERE_MAX];
    if (k <= 0) {
        fprintf(out, "%s\n", ctr_symbolizer_module_offset(ps->sym, pc, where, sizeof(where)));
        return;
    }
    for (int i = 0; i < k; i++) {
        const struct ctr_sym_frame *f = &chain[i];
        if (i > 0)
            fputs(indent, out);
        if (f->function)
            fputs(f->function, out);
        else
            fputs(ctr_symbolizer_module_offset(ps->sym, pc, where, sizeof(where)), out);
        if (f->file && f->line > 0)
            fprintf(out, " (%s:%d)", f->file, f->line);
        else if (f->file)
            fprintf(out, " (%s)", f->file);
        else if (module && f->function)
            fprintf(out, " [%s]", module);
        fputc('\n', out);
    }
}
