/* SPDX-License-Identifier: MIT */
/* ctf_rebuild.c - the `ctrace` tracepoints made into native frames again
 * (see ctf_rebuild.h): records re-encoded by the format's tables, each
 * thread's events buffered until its generation closes, processes kept
 * apart or merged.
 */
#include "read/ctf_rebuild.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "ctrace_format.h"
#include "ctrace_lttng.h"
#include "read/idmap.h"
#include "read/pbwrite.h"
#include "read/frame.h"

/* One record: kind, body length, body. */
static void put_record(struct ctr_pb *b, uint8_t kind, const struct ctr_pb *body)
{
    ctr_pb_append(b, &kind, 1);
    ctr_pb_varint(b, body->len);
    ctr_pb_append(b, body->b, body->len);
    b->err |= body->err;
}

/* A thread's events not yet in a generation: each is its time (8 bytes),
 * its length (4), then type, arguments after the delta and payload. */
struct pending_events {
    uint64_t thread_id;
    struct ctr_pb ev;
    size_t head; /* bytes already written out */
};

/* A tracepoint's sequence: its bytes. */
struct seq {
    const uint8_t *p;
    size_t len;
};

/* One traced process's share of the reading: its generation being
 * rebuilt and its threads' buffered events. */
struct proc {
    uint64_t pid;
    uint64_t tag;                /* merged reading: what its ids are told apart by */
    struct ctr_pb frame, tables; /* the frame being built; tables for the next generation */
    int in_gen, gen_closed;      /* inside GEN_BEGIN..GEN_END; after a GEN_END */
    uint64_t clock_ticks;        /* the last CLOCK's ticks in this generation */
    uint64_t gen;                /* the number of the last GEN_BEGIN (as written) */
    int ended;                   /* its END was read: what follows is ignored */
    struct ctr_pb sw;            /* the SWITCHES record being filled */
    uint64_t sw_thread, sw_last;
    int sw_open;
    struct pending_events *threads;
    size_t nthreads, threads_cap;
    struct ctr_idmap thread_ix;
};

struct ctr_rebuild {
    uint64_t want_pid; /* asked for: 0 the only one, CTR_CTF_ALL all, or one */
    int ended;         /* the input finished */
    uint64_t discarded;
    uint64_t pos;    /* tracepoints read, as of the last one */
    char error[160]; /* fits a frame's `skipped` */
    int ambiguous;   /* the error: several processes, none chosen */
    /* The processes read (one unless merged), by pid. */
    struct proc *procs;
    size_t nprocs;
    struct ctr_idmap proc_ix;
    /* Merged: the generations renumbered in the order they come, and the
     * processes' END records summed into one, written last. */
    uint64_t next_gen;
    uint64_t end_fields[CTR_MAX_FIELDS];
    size_t nends;
    struct ctr_pb body, batch; /* scratch */
    /* Frames made, waiting for ctr_rebuild_take. */
    struct ctr_frame *ready;
    size_t nready, ready_head, ready_cap;
    ZSTD_CCtx *zc;
};

/* ---------------------------------------------------------------------------
 * Frames
 * ------------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void fail(struct ctr_rebuild *c, const char *fmt, ...)
{
    if (!c->error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->error, sizeof(c->error), fmt, ap);
        va_end(ap);
    }
}

/* Compresses a frame built so far (emptied) and queues it. */
static void frame_finish(struct ctr_rebuild *c, struct ctr_pb *frame)
{
    if (!frame->len)
        return;
    if (frame->err) {
        fail(c, "out of memory");
        return;
    }
    size_t cap = ZSTD_compressBound(frame->len);
    struct ctr_frame f = {0};
    f.data = malloc(cap);
    if (f.data && c->nready == c->ready_cap) {
        size_t ncap = c->ready_cap ? c->ready_cap * 2 : 8;
        struct ctr_frame *r = realloc(c->ready, ncap * sizeof(*r));
        if (r) {
            c->ready = r;
            c->ready_cap = ncap;
        }
    }
    if (!f.data || c->nready == c->ready_cap) {
        free(f.data);
        fail(c, "out of memory");
        return;
    }
    size_t n = ZSTD_compress2(c->zc, f.data, cap, frame->b, frame->len);
    if (ZSTD_isError(n)) {
        free(f.data);
        fail(c, "compressing a generation: %s", ZSTD_getErrorName(n));
        return;
    }
    f.len = n;
    f.file_off = c->pos;
    c->ready[c->nready++] = f;
    frame->len = 0;
}

static struct pending_events *thread_of(struct proc *p, uint64_t id)
{
    uint64_t *ix = ctr_idmap_get(&p->thread_ix, id);
    if (ix)
        return &p->threads[*ix];
    if (p->nthreads == p->threads_cap) {
        size_t cap = p->threads_cap ? p->threads_cap * 2 : 64;
        struct pending_events *t = realloc(p->threads, cap * sizeof(*t));
        if (!t)
            return NULL;
        p->threads = t;
        p->threads_cap = cap;
    }
    if (ctr_idmap_put(&p->thread_ix, id, p->nthreads) != 0)
        return NULL;
    struct pending_events *t = &p->threads[p->nthreads++];
    *t = (struct pending_events){.thread_id = id};
    return t;
}

/* Writes each thread's buffered events up to `until` ticks (all of them:
 * UINT64_MAX) as one BATCH each. */
static void write_batches(struct ctr_rebuild *c, struct proc *p, uint64_t until)
{
    struct ctr_pb *b = &c->batch;
    for (size_t i = 0; i < p->nthreads; i++) {
        struct pending_events *t = &p->threads[i];
        size_t at = t->head;
        uint64_t last = 0;
        b->len = 0;
        while (at < t->ev.len) {
            uint64_t ticks;
            uint32_t n;
            memcpy(&ticks, t->ev.b + at, 8);
            memcpy(&n, t->ev.b + at + 8, 4);
            if (ticks > until)
                break;
            if (b->len == 0) {
                last = ticks;
                ctr_pb_varint(b, t->thread_id);
                ctr_pb_varint(b, ticks);
            }
            const uint8_t *e = t->ev.b + at + 12;
            ctr_pb_append(b, e, 1);
            ctr_pb_varint(b, ticks > last ? ticks - last : 0);
            ctr_pb_append(b, e + 1, n - 1);
            if (ticks > last)
                last = ticks;
            at += 12 + (size_t)n;
        }
        if (b->len)
            put_record(&p->frame, CTR_REC_BATCH, b);
        t->head = at;
        if (t->head == t->ev.len) {
            t->head = t->ev.len = 0;
        } else if (t->head > t->ev.cap / 2) {
            memmove(t->ev.b, t->ev.b + t->head, t->ev.len - t->head);
            t->ev.len -= t->head;
            t->head = 0;
        }
    }
}

static void switches_close(struct proc *p)
{
    if (p->sw_open && p->sw.len)
        put_record(&p->frame, CTR_REC_SWITCHES, &p->sw);
    p->sw_open = 0;
    p->sw.len = 0;
}

/* What the process has buffered, as the trace stops without its END (the
 * program was killed, or the session stopped first): the last frame. */
static void proc_flush(struct ctr_rebuild *c, struct proc *p)
{
    switches_close(p);
    ctr_pb_append(&p->frame, p->tables.b, p->tables.len);
    p->tables.len = 0;
    write_batches(c, p, UINT64_MAX);
    frame_finish(c, &p->frame);
}

/* What an event class is (CTR_TP_* and the type or kind), by its name: a
 * row of the table the provider declares its tracepoints from. */
uint64_t ctr_rebuild_classify(const char *name)
{
    size_t plen = strlen(CTR_LTTNG_PROVIDER);
    if (strncmp(name, CTR_LTTNG_PROVIDER ":", plen + 1) != 0)
        return (uint64_t)CTR_TP_NONE << 16;
    name += plen + 1;
    for (size_t i = 0; i < CTR_LTTNG_NTRACEPOINTS; i++) {
        const struct ctr_lttng_tracepoint *tp = &ctr_lttng_tracepoints[i];
        if (strcmp(tp->name, name) != 0)
            continue;
        if (tp->kind)
            return (uint64_t)CTR_TP_RECORD << 16 | tp->kind;
        return (uint64_t)(tp->sched ? CTR_TP_SCHED : CTR_TP_EVENT) << 16 | tp->type;
    }
    return (uint64_t)CTR_TP_NONE << 16;
}

/* ---------------------------------------------------------------------------
 * A merged reading: the processes' ids told apart
 * ------------------------------------------------------------------------- */

/* Value v of kind `kind` (enum ctr_arg_kind) of process p, in a reading
 * that merges processes: ids (threads, stacks, strings, mappings, tasks)
 * get the process's tag above bit 40, and objects of sync waits above bit
 * 48 (addresses of different processes may be equal; an I/O wait's object,
 * a descriptor, is shown as it is). 0 stays "none". */
static uint64_t remap(const struct proc *p, uint8_t kind, uint64_t v, int sync)
{
    if (!p->tag)
        return v;
    switch (kind) {
    case CTR_ARG_THREAD:
    case CTR_ARG_STACK:
    case CTR_ARG_STRING:
    case CTR_ARG_TASK:
    case CTR_ARG_MAPPING:
        return v ? p->tag << 40 | v : 0;
    case CTR_ARG_OBJECT:
        return sync ? v ^ p->tag << 48 : v;
    default:
        return v;
    }
}

/* Whether values v[0..n-1] of kinds k[] hold a reason whose waits are not
 * sync (their object is an integer, not an address); no reason: sync (a
 * RELEASE, a thread's handle). */
static int objects_are_addresses(const uint8_t *k, const uint64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        if (k[i] == CTR_ARG_REASON)
            return v[i] < CTR_REASON_LIMIT && ctr_reason_specs[v[i]].wait_class == CTR_CLASS_SYNC;
    return 1;
}

/* ---------------------------------------------------------------------------
 * Tracepoints to records
 * ------------------------------------------------------------------------- */

static void on_record(struct ctr_rebuild *c, struct proc *p, uint8_t kind, uint64_t *v, int nv,
                      const struct seq *seq)
{
    const struct ctr_record_spec *s = &ctr_record_specs[kind];
    if (nv < s->nfields) {
        fail(c, "ctrace:%s has fewer fields than the format's record", s->name);
        return;
    }
    int sync = objects_are_addresses(s->fields, v, s->nfields);
    for (int i = 0; i < s->nfields; i++)
        v[i] = remap(p, s->fields[i], v[i], sync);
    if (p->tag && (kind == CTR_REC_GEN_BEGIN || kind == CTR_REC_GEN_END))
        v[0] = kind == CTR_REC_GEN_BEGIN ? c->next_gen : c->next_gen++;
    if (p->tag && kind == CTR_REC_TRACE_INFO)
        v[0] = 0; /* no one process */
    if (kind != CTR_REC_STRING && kind != CTR_REC_STACK && kind != CTR_REC_MAPPING)
        switches_close(p);
    struct ctr_pb *body = &c->body;
    body->len = 0;
    for (int i = 0; i < s->nfields; i++)
        ctr_pb_varint(body, v[i]);
    if (s->tail == CTR_ARG_UVARINTS) {
        size_t n = seq->len / 8;
        ctr_pb_varint(body, n);
        for (size_t i = 0; i < n; i++) {
            uint64_t x;
            memcpy(&x, seq->p + i * 8, 8);
            ctr_pb_varint(body, x);
        }
    } else if (s->tail == CTR_ARG_LENGTH || s->tail == CTR_ARG_BYTES) {
        if (s->tail == CTR_ARG_LENGTH)
            ctr_pb_varint(body, seq->len);
        ctr_pb_append(body, seq->p, seq->len);
    }
    switch (kind) {
    case CTR_REC_GEN_BEGIN:
        if (p->in_gen) {
            /* LTTng discarded the last one's GEN_END: close it here. */
            write_batches(c, p, p->clock_ticks);
            c->batch.len = 0;
            ctr_pb_varint(&c->batch, p->gen);
            put_record(&p->frame, CTR_REC_GEN_END, &c->batch);
            p->gen_closed = 1;
        }
        p->gen = v[0];
        if (p->gen_closed)
            frame_finish(c, &p->frame);
        p->gen_closed = 0;
        put_record(&p->frame, kind, body);
        ctr_pb_append(&p->frame, p->tables.b, p->tables.len);
        p->frame.err |= p->tables.err;
        p->tables.len = 0;
        p->in_gen = 1;
        return;
    case CTR_REC_GEN_END:
        write_batches(c, p, p->clock_ticks);
        put_record(&p->frame, kind, body);
        p->in_gen = 0;
        p->gen_closed = 1;
        return;
    case CTR_REC_END:
        ctr_pb_append(&p->frame, p->tables.b, p->tables.len);
        p->tables.len = 0;
        write_batches(c, p, UINT64_MAX);
        if (p->tag) {
            /* One END for all, after every process's last frame. */
            for (int i = 0; i < s->nfields; i++)
                c->end_fields[i] += v[i];
            c->nends++;
        } else {
            /* LTTng's discards count with the tracer's own drops. */
            body->len = 0;
            ctr_pb_varint(body, v[0] + c->discarded);
            for (int i = 1; i < s->nfields; i++)
                ctr_pb_varint(body, v[i]);
            put_record(&p->frame, kind, body);
        }
        frame_finish(c, &p->frame);
        p->gen_closed = 0;
        p->ended = 1;
        return;
    case CTR_REC_CLOCK:
        p->clock_ticks = v[0];
        break;
    case CTR_REC_STRING:
    case CTR_REC_STACK:
    case CTR_REC_MAPPING:
        if (!p->in_gen) {
            put_record(&p->tables, kind, body);
            return;
        }
        break;
    default:
        break;
    }
    put_record(&p->frame, kind, body);
}

static void on_event(struct ctr_rebuild *c, struct proc *p, uint8_t type, int sched, uint64_t *v,
                     int nv, const struct seq *seq)
{
    const struct ctr_event_spec *s = &ctr_event_specs[type];
    int has_len = s->args[s->nargs - 1] == CTR_ARG_LENGTH;
    int want = 2 + s->nargs - 1 - has_len; /* thread, time, arguments but a LENGTH */
    if (nv < want) {
        fail(c, "ctrace:%s has fewer fields than the format's event", s->name);
        return;
    }
    uint64_t thread = remap(p, CTR_ARG_THREAD, v[0], 1), time = v[1];
    int sync = objects_are_addresses(s->args + 1, v + 2, want - 2);
    for (int i = 2; i < want; i++)
        v[i] = remap(p, s->args[i - 1], v[i], sync);
    size_t plen =
        has_len ? (seq->len < CTR_MAX_EVENT_PAYLOAD ? seq->len : CTR_MAX_EVENT_PAYLOAD) : 0;
    if (sched) {
        if (p->sw_open && p->sw_thread != thread)
            switches_close(p);
        if (!p->sw_open) {
            p->sw_open = 1;
            p->sw_thread = thread;
            p->sw_last = time;
            ctr_pb_varint(&p->sw, thread);
            ctr_pb_varint(&p->sw, time);
        }
        ctr_pb_append(&p->sw, &type, 1);
        ctr_pb_varint(&p->sw, time > p->sw_last ? time - p->sw_last : 0);
        for (int i = 2; i < want; i++)
            ctr_pb_varint(&p->sw, v[i]);
        if (time > p->sw_last)
            p->sw_last = time;
        return;
    }
    struct pending_events *t = thread_of(p, thread);
    if (!t) {
        fail(c, "out of memory");
        return;
    }
    struct ctr_pb *body = &c->body;
    body->len = 0;
    ctr_pb_append(body, &type, 1);
    for (int i = 2; i < want; i++)
        ctr_pb_varint(body, v[i]);
    if (has_len) {
        ctr_pb_varint(body, plen);
        ctr_pb_append(body, seq->p, plen);
    }
    uint32_t n = (uint32_t)body->len;
    ctr_pb_append(&t->ev, &time, 8);
    ctr_pb_append(&t->ev, &n, 4);
    ctr_pb_append(&t->ev, body->b, n);
    if (t->ev.err)
        fail(c, "out of memory");
}

/* The process an event of pid `pid` belongs to in this reading, or NULL
 * when it is not read (another process than the one asked for). */
static struct proc *proc_of(struct ctr_rebuild *c, uint64_t pid)
{
    uint64_t *ix = ctr_idmap_get(&c->proc_ix, pid);
    if (ix)
        return &c->procs[*ix];
    if (c->want_pid != CTR_CTF_ALL && c->want_pid && pid && pid != c->want_pid)
        return NULL;
    if (c->want_pid == 0 && c->nprocs == 1) {
        char pids[64];
        snprintf(pids, sizeof(pids), "%llu and %llu", (unsigned long long)c->procs[0].pid,
                 (unsigned long long)pid);
        fail(c,
             "several processes (pids %s at least): choose one with -pid PID, or "
             "-pid all to merge them",
             pids);
        c->ambiguous = 1;
        return NULL;
    }
    struct proc *procs = realloc(c->procs, (c->nprocs + 1) * sizeof(*procs));
    if (!procs || ctr_idmap_put(&c->proc_ix, pid, c->nprocs) != 0) {
        if (procs)
            c->procs = procs;
        fail(c, "out of memory");
        return NULL;
    }
    c->procs = procs;
    struct proc *p = &c->procs[c->nprocs];
    *p = (struct proc){.pid = pid, .tag = c->want_pid == CTR_CTF_ALL ? c->nprocs + 1 : 0};
    c->nprocs++;
    return p;
}

void ctr_rebuild_point(struct ctr_rebuild *c, uint64_t what, uint64_t pid, uint64_t *v, int nv,
                       const uint8_t *seq, size_t seq_len, uint64_t pos)
{
    int k = (int)(what >> 16);
    c->pos = pos;
    if (k == CTR_TP_NONE || c->ended || c->error[0])
        return;
    if (!pid && k == CTR_TP_RECORD && (uint8_t)what == CTR_REC_TRACE_INFO && c->nprocs &&
        c->procs[0].pid && c->procs[0].pid != v[0]) {
        /* Nothing says whose events these are, so all are one process's;
         * a TRACE_INFO of another pid than the first says they are not. */
        fail(c, "events of several processes, not told apart: record the vpid context "
                "(lttng add-context -u -t vpid) or use --buffers-pid");
        return;
    }
    struct proc *p = proc_of(c, pid);
    if (!p || p->ended)
        return;
    if (k == CTR_TP_RECORD && (uint8_t)what == CTR_REC_TRACE_INFO && !p->pid)
        p->pid = v[0];
    struct seq sq = {seq, seq_len};
    if (k == CTR_TP_RECORD)
        on_record(c, p, (uint8_t)what, v, nv, &sq);
    else
        on_event(c, p, (uint8_t)what, k == CTR_TP_SCHED, v, nv, &sq);
}

void ctr_rebuild_discarded(struct ctr_rebuild *c, uint64_t n)
{
    c->discarded += n;
}

void ctr_rebuild_finish(struct ctr_rebuild *c, uint64_t pos)
{
    c->pos = pos;
    if (c->ended)
        return;
    for (size_t i = 0; i < c->nprocs; i++)
        if (!c->procs[i].ended)
            proc_flush(c, &c->procs[i]);
    if (c->nends) {
        /* A merged reading's one END, with LTTng's discards. */
        struct ctr_pb end = {0};
        c->body.len = 0;
        c->end_fields[0] += c->discarded;
        for (int i = 0; i < ctr_record_specs[CTR_REC_END].nfields; i++)
            ctr_pb_varint(&c->body, c->end_fields[i]);
        put_record(&end, CTR_REC_END, &c->body);
        frame_finish(c, &end);
        free(end.b);
    }
    c->ended = 1;
}

int ctr_rebuild_take(struct ctr_rebuild *c, struct ctr_frame *f)
{
    if (c->ready_head == c->nready) {
        c->nready = c->ready_head = 0;
        return 0;
    }
    *f = c->ready[c->ready_head++];
    return 1;
}

int ctr_rebuild_done(const struct ctr_rebuild *c)
{
    return c->ended;
}

const char *ctr_rebuild_error(const struct ctr_rebuild *c, int *ambiguous)
{
    *ambiguous = c->ambiguous;
    return c->error;
}

uint64_t ctr_rebuild_discards(const struct ctr_rebuild *c)
{
    return c->discarded;
}

struct ctr_rebuild *ctr_rebuild_new(uint64_t pid)
{
    struct ctr_rebuild *c = calloc(1, sizeof(*c));
    if (!c || !(c->zc = ZSTD_createCCtx())) {
        free(c);
        return NULL;
    }
    ZSTD_CCtx_setParameter(c->zc, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(c->zc, ZSTD_c_checksumFlag, 1);
    c->want_pid = pid;
    return c;
}

void ctr_rebuild_free(struct ctr_rebuild *c)
{
    if (!c)
        return;
    for (size_t i = c->ready_head; i < c->nready; i++)
        free(c->ready[i].data);
    for (size_t i = 0; i < c->nprocs; i++) {
        struct proc *p = &c->procs[i];
        for (size_t k = 0; k < p->nthreads; k++)
            free(p->threads[k].ev.b);
        free(p->threads);
        ctr_idmap_free(&p->thread_ix);
        free(p->frame.b);
        free(p->tables.b);
        free(p->sw.b);
    }
    free(c->procs);
    ctr_idmap_free(&c->proc_ix);
    free(c->ready);
    free(c->body.b);
    free(c->batch.b);
    ZSTD_freeCCtx(c->zc);
    free(c);
}
