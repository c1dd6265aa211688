/* profile.c - delay profiles (-pprof=sync|sched|net|syscall) built from the
 * state machine's blocked intervals, with Go's semantics: one sample per wait,
 * valued (1 contention, its duration), at the stack where the wait began,
 * under a leaf frame naming the call that blocked. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "state.h"
#include "symbolize.h"

static const char *const class_names[] = {
    [CTR_CLASS_SYNC] = "sync",
    [CTR_CLASS_SCHED] = "sched",
    [CTR_CLASS_NET] = "net",
    [CTR_CLASS_SYSCALL] = "syscall",
};

const char *ctr_wait_class_name(int cls)
{
    if (cls <= 0 || cls >= (int)(sizeof(class_names) / sizeof(class_names[0])))
        return NULL;
    return class_names[cls];
}

int ctr_wait_class_parse(const char *name)
{
    for (int c = 1; c < (int)(sizeof(class_names) / sizeof(class_names[0])); c++)
        if (class_names[c] && strcmp(class_names[c], name) == 0)
            return c;
    return 0;
}

struct collect {
    const struct ctr_trace *t;
    struct ctr_pprof *p;
    int cls;
    int rc;
};

static void add_wait(void *ctx, const struct ctr_interval *iv)
{
    struct collect *c = ctx;
    if (iv->state != CTR_STATE_BLOCKED || c->rc != 0)
        return;
    if (iv->reason >= CTR_REASON_LIMIT || ctr_reason_specs[iv->reason].wait_class != c->cls)
        return;
    struct ctr_pprof_frame frames[1 + 1024];
    size_t n = 0;
    frames[n++] = (struct ctr_pprof_frame){0, ctr_reason_specs[iv->reason].call};
    const struct ctr_stack_info *s = ctr_trace_stack(c->t, iv->stack_id);
    for (uint32_t i = 0; s && i < s->n && n < sizeof(frames) / sizeof(frames[0]); i++)
        /* Return addresses: the call is the instruction before. */
        frames[n++] = (struct ctr_pprof_frame){s->pcs[i] - 1, NULL};
    int64_t values[2] = {1, (int64_t)(iv->end_ns - iv->start_ns)};
    c->rc = ctr_pprof_add(c->p, frames, n, values);
}

int ctr_profile_write(const struct ctr_trace *t, int cls, FILE *out, FILE *warn, char *err,
                      size_t errlen)
{
    struct ctr_sym_mapping *maps = calloc(t->nmappings ? t->nmappings : 1, sizeof(*maps));
    if (!maps)
        goto oom;
    for (size_t i = 0; i < t->nmappings; i++) {
        const struct ctr_mapping_info *m = &t->mappings[i];
        maps[i] = (struct ctr_sym_mapping){m->start, m->limit, m->file_offset, m->bias, m->path,
                                           m->build_id_len ? m->build_id : NULL, m->build_id_len};
    }
    struct ctr_symbolizer *sym = ctr_symbolizer_new(maps, t->nmappings);
    if (!sym) {
        free(maps);
        goto oom;
    }
    static const struct ctr_pprof_value_type types[] = {{"contentions", "count"},
                                                        {"delay", "nanoseconds"}};
    struct ctr_pprof *p = ctr_pprof_new(types, 2, (struct ctr_pprof_value_type){"trace", "count"},
                                        1, sym, maps, t->nmappings);
    int rc = -ENOMEM;
    if (p) {
        ctr_pprof_set_time(p, (int64_t)t->start_real_ns, (int64_t)(t->end_ns - t->start_ns));
        struct collect c = {t, p, cls, 0};
        ctr_state_walk(t, add_wait, &c);
        rc = c.rc ? c.rc : ctr_pprof_write(p, out);
        ctr_pprof_free(p);
    }
    const char *w = ctr_symbolizer_warnings(sym);
    if (warn && w && w[0])
        fputs(w, warn);
    ctr_symbolizer_free(sym);
    free(maps);
    if (rc != 0)
        snprintf(err, errlen, "writing the profile: %s", strerror(-rc));
    return rc;
oom:
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}
