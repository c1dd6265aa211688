/* SPDX-License-Identifier: MIT */
/* tracesym.c - a symbolizer over a trace's mapping table (see tracesym.h). */
#include "symbols/tracesym.h"

#include <errno.h>
#include <stdlib.h>

int ctr_profile_sym_open(const struct ctr_trace *t, struct ctr_profile_sym *ps)
{
    *ps = (struct ctr_profile_sym){0};
    ps->maps = calloc(t->nmappings ? t->nmappings : 1, sizeof(*ps->maps));
    if (!ps->maps)
        return -ENOMEM;
    for (size_t i = 0; i < t->nmappings; i++) {
        const struct ctr_mapping_info *m = &t->mappings[i];
        ps->maps[i] =
            (struct ctr_sym_mapping){m->start,       m->limit, m->file_offset,
                                     m->bias,        m->path,  m->build_id_len ? m->build_id : NULL,
                                     m->build_id_len};
    }
    ps->nmaps = t->nmappings;
    ps->sym = ctr_symbolizer_new(ps->maps, ps->nmaps);
    if (!ps->sym) {
        free(ps->maps);
        ps->maps = NULL;
        return -ENOMEM;
    }
    return 0;
}

void ctr_profile_sym_close(struct ctr_profile_sym *ps, FILE *warn)
{
    if (ps->sym) {
        const char *w = ctr_symbolizer_warnings(ps->sym);
        if (warn && w && w[0])
            fputs(w, warn);
        ctr_symbolizer_free(ps->sym);
    }
    free(ps->maps);
    *ps = (struct ctr_profile_sym){0};
}
