/* SPDX-License-Identifier: MIT */
/* cpuleaves.c - the functions that ran most, printed from a task's CPU
 * leaves (see cpuleaves.h). */
#include "report/cpuleaves.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/text.h"

/* A function's CPU, and the heaviest of its leaves (where to point at).
 * `own`: the name, when this report made it (code without symbols). */
struct func {
    const char *name;
    char *own;
    uint64_t ns;
    const struct ctr_cpu_leaf *where;
};

static int by_ns(const void *pa, const void *pb)
{
    const struct func *a = pa, *b = pb;
    if (a->ns != b->ns)
        return a->ns > b->ns ? -1 : 1;
    return strcmp(a->name, b->name);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* " (file:line)" of the leaf, or " (caller file:line)" of its first caller
 * with a source line; nothing when none has one. */
static void put_where(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                      const struct ctr_cpu_leaf *leaf)
{
    const struct ctr_stack_info *s =
        leaf->stack_id && ps->sym ? ctr_trace_stack(t, leaf->stack_id) : NULL;
    for (uint32_t i = 0; s && i < s->n && i < 64; i++) {
        struct ctr_sym_frame f;
        if (ctr_symbolize(ps->sym, s->pcs[i] - 1, &f, 1) <= 0 || !f.file || f.line <= 0)
            continue;
        if (i == 0)
            fprintf(out, " (%s:%d)", base_name(f.file), f.line);
        else
            fprintf(out, " (%s %s:%d)", f.function ? f.function : "?", base_name(f.file), f.line);
        return;
    }
}

/* The function leaf is in: the symbolizer's name (which lives as long as
 * it does), else "MODULE+0xOFFSET" into buf. */
static const char *leaf_name(struct ctr_profile_sym *ps, const struct ctr_cpu_leaf *leaf, char *buf,
                             size_t len)
{
    struct ctr_sym_frame f;
    if (!leaf->stack_id)
        return "(no stack)";
    if (ps->sym && ctr_symbolize(ps->sym, leaf->pc, &f, 1) > 0 && f.function)
        return f.function;
    return ctr_symbolizer_module_offset(ps->sym, leaf->pc, buf, len);
}

int ctr_cpu_leaves_print(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                         const struct ctr_cpu_leaves *l, size_t top)
{
    struct func *fs = calloc(l->n ? l->n : 1, sizeof(*fs));
    char buf[CTR_TEXT_WHERE_MAX];
    int rc = 0;
    if (!fs)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) {
        const struct ctr_cpu_leaf *leaf = &l->leaf[i];
        const char *name = leaf_name(ps, leaf, buf, sizeof(buf));
        size_t k = 0;
        while (k < n && strcmp(fs[k].name, name) != 0)
            k++;
        if (k == n) {
            fs[n] = (struct func){name, NULL, 0, leaf};
            if (name == buf && !(fs[n].name = fs[n].own = strdup(buf))) {
                rc = -ENOMEM;
                break;
            }
            n++;
        }
        fs[k].ns += leaf->ns;
        if (leaf->ns > fs[k].where->ns)
            fs[k].where = leaf;
    }
    if (rc == 0 && n > 1)
        qsort(fs, n, sizeof(*fs), by_ns);
    for (size_t k = 0; rc == 0 && k < n && k < top; k++) {
        fprintf(out, "%s%s %.0f%%", k ? ", " : "", fs[k].name,
                l->ns ? 100.0 * (double)fs[k].ns / (double)l->ns : 0.0);
        put_where(out, t, ps, fs[k].where);
    }
    for (size_t k = 0; k < n; k++)
        free(fs[k].own);
    free(fs);
    return rc;
}
