/* SPDX-License-Identifier: MIT */
/* text.c - durations and symbolized frames for the text outputs (text.h). */
#include "profile/text.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "read/trace.h"
#include "symbols/symbolize.h"

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

/* "function(sep)(file.c:line)", or "function\tfile.c:line" (tab). */
static void put_frame(FILE *out, const struct ctr_sym_frame *f, const char *sep, int tab)
{
    fputs(f->function ? f->function : "?", out);
    const char *base = f->file ? strrchr(f->file, '/') : NULL;
    base = base ? base + 1 : f->file;
    if (base && f->line > 0 && tab)
        fprintf(out, "\t%s:%d", base, f->line);
    else if (base && f->line > 0)
        fprintf(out, "%s(%s:%d)", sep, base, f->line);
    else if (tab)
        fputs("\t?", out);
}

void ctr_text_frame(FILE *out, struct ctr_profile_sym *ps, uint64_t pc, const char *sep)
{
    struct ctr_sym_frame chain[INLINE_MAX];
    int k = ps->sym ? ctr_symbolize(ps->sym, pc, chain, INLINE_MAX) : 0;
    int tab = sep[0] == '\t';
    char where[CTR_TEXT_WHERE_MAX];
    if (k <= 0 || !chain[0].function) {
        fputs(ctr_symbolizer_module_offset(ps->sym, pc, where, sizeof(where)), out);
        if (tab)
            fputs("\t?", out);
        return;
    }
    put_frame(out, &chain[0], sep, tab);
    /* Text: when inlined, the function it was inlined into too (a
     * helper's line says little alone). */
    if (!tab && k > 1) {
        fputs(" in ", out);
        put_frame(out, &chain[k - 1], sep, 0);
    }
}

void ctr_text_clean(FILE *out, const char *s, size_t len, int tsv)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != 0x7f)
            fputc(c, out);
        else if (tsv)
            fputc(' ', out);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else
            fprintf(out, "\\x%02x", c);
    }
}

void ctr_text_thread(FILE *out, const struct ctr_trace *t, uint32_t i)
{
    const struct ctr_thread_info *th = &t->threads[i];
    fprintf(out, "thread %" PRIu64, th->id);
    if (th->name && th->name[0]) {
        fputs(" (", out);
        ctr_text_clean(out, th->name, strlen(th->name), 0);
        fputc(')', out);
    }
}
