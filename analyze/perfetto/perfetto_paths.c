/* SPDX-License-Identifier: MIT */
/* perfetto_paths.c - the critical paths as tracks (perfetto_paths.h). */
#include "perfetto/perfetto_paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_format.h"
#include "model/tasks.h"
#include "perfetto/pf_proto.h"
#include "profile/text.h"
#include "read/pbwrite.h"

/* Far above the timeline's track uuids (perfetto_enc.c: small numbers). */
#define PATH_UUID(i) (((uint64_t)1 << 62) + (uint64_t)(i))
#define TEXT_MAX 512

/* A slice's edge: where part k of path i begins or ends. */
struct edge {
    uint64_t ts;
    uint32_t path, part;
    uint8_t end;
};

/* In time order; at one time, ends before begins (the parts of a path
 * tile it: one ends where the next begins). */
static int by_time(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->end != y->end)
        return x->end ? -1 : 1;
    if (x->path != y->path)
        return x->path < y->path ? -1 : 1;
    return (x->part > y->part) - (x->part < y->part);
}

/* What fprintf-style helpers print, into buf (cut to its size). */
struct text {
    char buf[TEXT_MAX];
    FILE *f;
};

static FILE *text_open(struct text *t)
{
    memset(t->buf, 0, sizeof(t->buf));
    t->f = fmemopen(t->buf, sizeof(t->buf) - 1, "w");
    return t->f;
}

static const char *text_close(struct text *t)
{
    if (t->f)
        fclose(t->f);
    t->f = NULL;
    return t->buf;
}

static void arg_string(struct ctr_pb *w, const char *name, const char *value)
{
    size_t m = ctr_pb_open(w, TE_ARGS);
    ctr_pb_string(w, DA_NAME, name);
    ctr_pb_string(w, DA_STRING, value);
    ctr_pb_close(w, m);
}

static void arg_uint(struct ctr_pb *w, const char *name, uint64_t value, int field)
{
    size_t m = ctr_pb_open(w, TE_ARGS);
    ctr_pb_string(w, DA_NAME, name);
    ctr_pb_field(w, field, value);
    ctr_pb_close(w, m);
}

static const char *thread_name(const struct ctr_thread_info *th)
{
    return th->name && th->name[0] ? th->name : "thread";
}

/* The call a part waited in, or NULL. */
static const char *call_of(const struct ctr_cp_segment *s)
{
    return s->state != CTR_CP_RUNNING && s->reason && s->reason < CTR_REASON_LIMIT
               ? ctr_reason_specs[s->reason].call
               : NULL;
}

/* Part s's slice begins at ts. */
static void describe(struct pf_enc *e, struct ctr_pb *w, const struct ctr_trace *m,
                     const struct ctr_cp_segment *s)
{
    const struct ctr_thread_info *th = s->thread < m->nthreads ? &m->threads[s->thread] : NULL;
    const char *call = call_of(s);
    const char *what = s->state == CTR_CP_BLOCKED && call ? call : ctr_cp_state_name(s->state);
    char name[TEXT_MAX];
    snprintf(name, sizeof(name), "%s: %s", th ? thread_name(th) : "thread", what);
    ctr_pb_string(w, TE_NAME, name);
    struct text t;
    if (th && text_open(&t)) {
        ctr_text_thread(t.f, m, s->thread);
        arg_string(w, "thread", text_close(&t));
    }
    arg_string(w, "state", ctr_cp_state_name(s->state));
    if (call)
        arg_string(w, "call", call);
    const struct ctr_stack_info *st = s->stack_id ? ctr_trace_stack(m, s->stack_id) : NULL;
    if (st && st->n && text_open(&t)) {
        /* A return address: the call is the instruction before. */
        ctr_text_frame(t.f, pf_enc_symbols(e), st->pcs[0] - 1, " ");
        arg_string(w, "frame", text_close(&t));
    }
    if (s->region)
        arg_string(w, "region", s->region->name);
    if (s->object)
        arg_uint(w, "object", s->object, DA_POINTER);
    arg_uint(w, "hops", s->hops, DA_UINT);
}

/* Path i's track, under the process. */
static int declare(struct pf_enc *e, const struct ctr_trace *m, const struct ctr_cp_task *w,
                   size_t i)
{
    struct ctr_pb *b = pf_enc_raw(e);
    ctr_pb_field(b, TD_UUID, PATH_UUID(i));
    ctr_pb_field(b, TD_PARENT, 1); /* the process (perfetto_enc.c) */
    char name[TEXT_MAX], lat[32];
    const struct ctr_task *task = w[i].task;
    const char *type = task->type && task->type[0] ? task->type : "task";
    (void)m;
    snprintf(name, sizeof(name), "critical path %zu: %s %llu, %s", i + 1, type,
             (unsigned long long)task->id,
             ctr_text_ns((int64_t)(task->end_ns - task->begin_ns), lat, sizeof(lat)));
    ctr_pb_string(b, TD_NAME, name);
    return pf_enc_raw_end(e, PF_SEQ_PATHS, PKT_TRACK_DESCRIPTOR, 0, 0);
}

int pf_paths_write(struct pf_enc *e, const struct ctr_trace *m, const struct ctr_cp_task *w,
                   size_t n, uint64_t from_ns, uint64_t to_ns)
{
    size_t nedges = 0;
    for (size_t i = 0; i < n; i++)
        nedges += 2 * w[i].path.nseg;
    struct edge *v = malloc((nedges ? nedges : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < w[i].path.nseg; j++) {
            const struct ctr_cp_segment *s = &w[i].path.seg[j];
            uint64_t a = s->start_ns > from_ns ? s->start_ns : from_ns;
            uint64_t b = s->end_ns < to_ns ? s->end_ns : to_ns;
            if (a >= b)
                continue;
            v[k++] = (struct edge){a, (uint32_t)i, (uint32_t)j, 0};
            v[k++] = (struct edge){b, (uint32_t)i, (uint32_t)j, 1};
        }
    }
    if (k)
        qsort(v, k, sizeof(*v), by_time);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = declare(e, m, w, i);
    for (size_t j = 0; j < k && rc == 0; j++) {
        struct ctr_pb *b = pf_enc_raw(e);
        ctr_pb_field(b, TE_TYPE, v[j].end ? TYPE_END : TYPE_BEGIN);
        ctr_pb_field(b, TE_TRACK, PATH_UUID(v[j].path));
        if (!v[j].end)
            describe(e, b, m, &w[v[j].path].path.seg[v[j].part]);
        rc = pf_enc_raw_end(e, PF_SEQ_PATHS, PKT_TRACK_EVENT, v[j].ts, 1);
    }
    if (rc == 0)
        pf_enc_count_slices(e, k / 2);
    free(v);
    return rc;
}
