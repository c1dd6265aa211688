/* SPDX-License-Identifier: MIT */
/* cpufuncs.c - the functions that ran most, from CPU samples (see
 * cpufuncs.h). The leaves are summed by PC in the event loop; names come
 * only when a report prints them (report/cpuleaves.c), once per distinct
 * PC. */
#include "model/cpufuncs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"

int ctr_cpu_leaves_add(struct ctr_cpu_leaves *l, const struct ctr_trace *t, uint64_t stack_id,
                       uint64_t ns)
{
    const struct ctr_stack_info *s = stack_id ? ctr_trace_stack(t, stack_id) : NULL;
    /* The first PC is the interrupted instruction + 1 (FORMAT.md §4.1). */
    uint64_t pc = s && s->n ? s->pcs[0] - 1 : 0;
    l->samples++;
    l->ns += ns;
    /* Few distinct leaves in a task: a scan, from the last one added (a
     * loop's samples come in runs). */
    for (size_t i = l->n; i-- > 0;)
        if (l->leaf[i].pc == pc) {
            l->leaf[i].samples++;
            l->leaf[i].ns += ns;
            return 0;
        }
    if (ctr_grow(&l->leaf, &l->cap, l->n + 1, sizeof(*l->leaf)) != 0)
        return -ENOMEM;
    l->leaf[l->n++] = (struct ctr_cpu_leaf){pc, stack_id, 1, ns};
    return 0;
}

void ctr_cpu_leaves_free(struct ctr_cpu_leaves *l)
{
    free(l->leaf);
    *l = (struct ctr_cpu_leaves){0};
}
