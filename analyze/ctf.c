/* ctf.c - LTTng traces read back as native frames (see ctf.h).
 *
 * A babeltrace2 graph: source.ctf.fs over every trace found under the
 * directory, flt.utils.muxer to merge their streams by time, and a simple
 * sink whose consume step (one bt_graph_run_once) turns the messages it
 * gets into records. ctr_ctf_next runs the graph until a generation is
 * whole, then hands it out compressed, as source.c hands out a file's.
 */
#include "ctf.h"

#include <babeltrace2/babeltrace.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "ctrace_format.h"
#include "ctrace_lttng.h"
#include "idmap.h"
#include "source.h"

/* A growing byte buffer; `oom` sticks. */
struct buf {
    uint8_t *p;
    size_t len, cap;
    int oom;
};

static uint8_t *buf_room(struct buf *b, size_t n)
{
    if (b->oom)
        return NULL;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    return b->p + b->len;
}

static void buf_put(struct buf *b, const void *d, size_t n)
{
    uint8_t *p = buf_room(b, n);
    if (p && n) {
        memcpy(p, d, n);
        b->len += n;
    }
}

static void buf_uv(struct buf *b, uint64_t v)
{
    uint8_t *p = buf_room(b, CTR_VARINT_MAX);
    if (p)
        b->len = (size_t)(ctr_put_uvarint(p, v) - b->p);
}

/* One record: kind, body length, body. */
static void put_record(struct buf *b, uint8_t kind, const struct buf *body)
{
    buf_put(b, &kind, 1);
    buf_uv(b, body->len);
    buf_put(b, body->p, body->len);
    b->oom |= body->oom;
}

/* A thread's events not yet in a generation: each is its time (8 bytes),
 * its length (4), then type, arguments after the delta and payload. */
struct pending_events {
    uint64_t thread_id;
    struct buf ev;
    size_t head;                 /* bytes already written out */
};

/* What a tracepoint is, by its event class (cached in `kinds`). */
enum { K_NONE = 1, K_EVENT, K_SCHED, K_RECORD };

/* One traced process's share of the reading: its generation being
 * rebuilt and its threads' buffered events. */
struct proc {
    uint64_t pid;
    uint64_t tag;                /* merged reading: what its ids are told apart by */
    struct buf frame, tables;    /* the frame being built; tables for the next generation */
    int in_gen, gen_closed;      /* inside GEN_BEGIN..GEN_END; after a GEN_END */
    uint64_t clock_ticks;        /* the last CLOCK's ticks in this generation */
    uint64_t gen;                /* the number of the last GEN_BEGIN (as written) */
    struct buf sw;               /* the SWITCHES record being filled */
    uint64_t sw_thread, sw_last;
    int sw_open;
    struct pending_events *threads;
    size_t nthreads, threads_cap;
    struct ctr_idmap thread_ix;
};

struct ctr_ctf {
    char *dir;
    uint64_t want_pid;           /* asked for: 0 the only one, CTR_CTF_ALL all, or one */
    bt_graph *graph;
    bt_message_iterator *it;     /* the simple sink's */
    int ended;                   /* the graph ran to its end, or END was read */
    uint64_t nevents, discarded;
    char error[160];             /* fits a frame's `skipped` */
    /* Event class -> (K_* << 16 | type-or-kind). */
    struct ctr_idmap kinds;
    /* Where an event's process is: its stream class's context member
     * `vpid` (index + 1; 0: none), else its trace's environment. */
    const void *ctx_class;
    uint64_t ctx_vpid;
    const void *env_trace;
    uint64_t env_pid;
    /* The processes read (one unless merged), by pid. */
    struct proc *procs;
    size_t nprocs;
    struct ctr_idmap proc_ix;
    int unknown_pid_seen;        /* events with no pid at all */
    int ambiguous;               /* the error: several processes, none chosen */
    /* Merged: the generations renumbered in the order they come, and the
     * processes' END records summed into one, written last. */
    uint64_t next_gen;
    uint64_t end_fields[CTR_MAX_FIELDS];
    size_t nends;
    struct buf body, seq, batch; /* scratch */
    /* Frames made, waiting for ctr_ctf_next. */
    struct ctr_frame *ready;
    size_t nready, ready_head, ready_cap;
    ZSTD_CCtx *zc;
};

/* ---------------------------------------------------------------------------
 * Frames
 * ------------------------------------------------------------------------- */

static void fail(struct ctr_ctf *c, const char *fmt, const char *arg)
{
    if (!c->error[0])
        snprintf(c->error, sizeof(c->error), fmt, arg);
}

/* Compresses a frame built so far (emptied) and queues it. */
static void frame_finish(struct ctr_ctf *c, struct buf *frame)
{
    if (!frame->len)
        return;
    if (frame->oom) {
        fail(c, "out of memory%s", "");
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
        fail(c, "out of memory%s", "");
        return;
    }
    size_t n = ZSTD_compress2(c->zc, f.data, cap, frame->p, frame->len);
    if (ZSTD_isError(n)) {
        free(f.data);
        fail(c, "compressing a generation: %s", ZSTD_getErrorName(n));
        return;
    }
    f.len = n;
    f.file_off = c->nevents;
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
static void write_batches(struct ctr_ctf *c, struct proc *p, uint64_t until)
{
    struct buf *b = &c->batch;
    for (size_t i = 0; i < p->nthreads; i++) {
        struct pending_events *t = &p->threads[i];
        size_t at = t->head;
        uint64_t last = 0;
        b->len = 0;
        while (at < t->ev.len) {
            uint64_t ticks;
            uint32_t n;
            memcpy(&ticks, t->ev.p + at, 8);
            memcpy(&n, t->ev.p + at + 8, 4);
            if (ticks > until)
                break;
            if (b->len == 0) {
                last = ticks;
                buf_uv(b, t->thread_id);
                buf_uv(b, ticks);
            }
            const uint8_t *e = t->ev.p + at + 12;
            buf_put(b, e, 1);
            buf_uv(b, ticks > last ? ticks - last : 0);
            buf_put(b, e + 1, n - 1);
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
            memmove(t->ev.p, t->ev.p + t->head, t->ev.len - t->head);
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
static void proc_flush(struct ctr_ctf *c, struct proc *p)
{
    switches_close(p);
    buf_put(&p->frame, p->tables.p, p->tables.len);
    p->tables.len = 0;
    write_batches(c, p, UINT64_MAX);
    frame_finish(c, &p->frame);
}

/* ---------------------------------------------------------------------------
 * Reading a tracepoint's fields
 * ------------------------------------------------------------------------- */

static int read_fields(const bt_field *payload, uint64_t *v, int max, struct buf *seq)
{
    const bt_field_class *sc = bt_field_borrow_class_const(payload);
    uint64_t n = bt_field_class_structure_get_member_count(sc);
    int nv = 0;
    seq->len = 0;
    for (uint64_t i = 0; i < n; i++) {
        const bt_field_class_structure_member *m =
            bt_field_class_structure_borrow_member_by_index_const(sc, i);
        if (bt_field_class_structure_member_get_name(m)[0] == '_')
            continue;
        const bt_field *f = bt_field_structure_borrow_member_field_by_index_const(payload, i);
        bt_field_class_type t = bt_field_get_class_type(f);
        if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
            if (nv < max)
                v[nv] = bt_field_integer_unsigned_get_value(f);
            nv++;
        } else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
            if (nv < max)
                v[nv] = (uint64_t)bt_field_integer_signed_get_value(f);
            nv++;
        } else if (t == BT_FIELD_CLASS_TYPE_STRING) {
            buf_put(seq, bt_field_string_get_value(f), bt_field_string_get_length(f));
        } else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)) {
            /* Bytes (a build-id) as bytes, wider integers (a stack's
             * addresses) as 8 bytes each. */
            const bt_field_class *ec =
                bt_field_class_array_borrow_element_field_class_const(bt_field_borrow_class_const(f));
            if (!bt_field_class_type_is(bt_field_class_get_type(ec),
                                        BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
                return -1;
            size_t width = bt_field_class_integer_get_field_value_range(ec) <= 8 ? 1 : 8;
            uint64_t len = bt_field_array_get_length(f);
            for (uint64_t k = 0; k < len; k++) {
                uint64_t x = bt_field_integer_unsigned_get_value(
                    bt_field_array_borrow_element_field_by_index_const(f, k));
                buf_put(seq, &x, width); /* little-endian: the low byte first */
            }
        } else {
            return -1;
        }
    }
    return nv;
}

/* What an event class is (K_* and the type or kind), by its name. */
static uint64_t classify(const char *name)
{
    size_t plen = strlen(CTR_LTTNG_PROVIDER);
    if (strncmp(name, CTR_LTTNG_PROVIDER ":", plen + 1) != 0)
        return (uint64_t)K_NONE << 16;
    name += plen + 1;
    char buf[32];
    for (uint8_t t = 1; t < CTR_EV_LIMIT; t++)
        for (int sched = 0; sched < 2; sched++)
            if (ctr_lttng_name(t, sched, 0, buf) && strcmp(buf, name) == 0) {
                int is_sched = t == CTR_EV_SWITCH_IN || t == CTR_EV_SWITCH_OUT ||
                               (t == CTR_EV_LOST && sched);
                return (uint64_t)(is_sched ? K_SCHED : K_EVENT) << 16 | t;
            }
    for (uint8_t k = 1; k < CTR_REC_LIMIT; k++)
        if (k != CTR_REC_BATCH && k != CTR_REC_SWITCHES && ctr_lttng_name(0, 0, k, buf) &&
            strcmp(buf, name) == 0)
            return (uint64_t)K_RECORD << 16 | k;
    return (uint64_t)K_NONE << 16;
}

/* The process of an event: its `vpid` context, its trace's `vpid`; 0 if
 * neither says. */
static uint64_t event_pid(struct ctr_ctf *c, const bt_event *ev)
{
    const bt_field *ctx = bt_event_borrow_common_context_field_const(ev);
    if (ctx) {
        const bt_field_class *cc = bt_field_borrow_class_const(ctx);
        if ((const void *)cc != c->ctx_class) {
            c->ctx_class = cc;
            c->ctx_vpid = 0;
            uint64_t n = bt_field_class_structure_get_member_count(cc);
            for (uint64_t i = 0; i < n; i++)
                if (strcmp(bt_field_class_structure_member_get_name(
                               bt_field_class_structure_borrow_member_by_index_const(cc, i)),
                           "vpid") == 0)
                    c->ctx_vpid = i + 1;
        }
        if (c->ctx_vpid) {
            const bt_field *f =
                bt_field_structure_borrow_member_field_by_index_const(ctx, c->ctx_vpid - 1);
            return (uint64_t)bt_field_integer_signed_get_value(f);
        }
    }
    const bt_trace *tr = bt_stream_borrow_trace_const(bt_event_borrow_stream_const(ev));
    if ((const void *)tr != c->env_trace) {
        c->env_trace = tr;
        c->env_pid = 0;
        const bt_value *v = bt_trace_borrow_environment_entry_value_by_name_const(tr, "vpid");
        if (v && bt_value_is_signed_integer(v))
            c->env_pid = (uint64_t)bt_value_integer_signed_get(v);
    }
    return c->env_pid;
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

static void on_record(struct ctr_ctf *c, struct proc *p, uint8_t kind, uint64_t *v, int nv,
                      const struct buf *seq)
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
    struct buf *body = &c->body;
    body->len = 0;
    for (int i = 0; i < s->nfields; i++)
        buf_uv(body, v[i]);
    if (s->tail == CTR_ARG_UVARINTS) {
        size_t n = seq->len / 8;
        buf_uv(body, n);
        for (size_t i = 0; i < n; i++) {
            uint64_t x;
            memcpy(&x, seq->p + i * 8, 8);
            buf_uv(body, x);
        }
    } else if (s->tail == CTR_ARG_LENGTH || s->tail == CTR_ARG_BYTES) {
        if (s->tail == CTR_ARG_LENGTH)
            buf_uv(body, seq->len);
        buf_put(body, seq->p, seq->len);
    }
    switch (kind) {
    case CTR_REC_GEN_BEGIN:
        if (p->in_gen) {
            /* LTTng discarded the last one's GEN_END: close it here. */
            write_batches(c, p, p->clock_ticks);
            c->batch.len = 0;
            buf_uv(&c->batch, p->gen);
            put_record(&p->frame, CTR_REC_GEN_END, &c->batch);
            p->gen_closed = 1;
        }
        p->gen = v[0];
        if (p->gen_closed)
            frame_finish(c, &p->frame);
        p->gen_closed = 0;
        put_record(&p->frame, kind, body);
        buf_put(&p->frame, p->tables.p, p->tables.len);
        p->frame.oom |= p->tables.oom;
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
        buf_put(&p->frame, p->tables.p, p->tables.len);
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
            buf_uv(body, v[0] + c->discarded);
            for (int i = 1; i < s->nfields; i++)
                buf_uv(body, v[i]);
            put_record(&p->frame, kind, body);
            c->ended = 1;
        }
        frame_finish(c, &p->frame);
        p->gen_closed = 0;
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

static void on_event(struct ctr_ctf *c, struct proc *p, uint8_t type, int sched, uint64_t *v,
                     int nv, const struct buf *seq)
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
    size_t plen = has_len ? (seq->len < CTR_MAX_EVENT_PAYLOAD ? seq->len : CTR_MAX_EVENT_PAYLOAD) : 0;
    if (sched) {
        if (p->sw_open && p->sw_thread != thread)
            switches_close(p);
        if (!p->sw_open) {
            p->sw_open = 1;
            p->sw_thread = thread;
            p->sw_last = time;
            buf_uv(&p->sw, thread);
            buf_uv(&p->sw, time);
        }
        buf_put(&p->sw, &type, 1);
        buf_uv(&p->sw, time > p->sw_last ? time - p->sw_last : 0);
        for (int i = 2; i < want; i++)
            buf_uv(&p->sw, v[i]);
        if (time > p->sw_last)
            p->sw_last = time;
        return;
    }
    struct pending_events *t = thread_of(p, thread);
    if (!t) {
        fail(c, "out of memory%s", "");
        return;
    }
    struct buf *body = &c->body;
    body->len = 0;
    buf_put(body, &type, 1);
    for (int i = 2; i < want; i++)
        buf_uv(body, v[i]);
    if (has_len) {
        buf_uv(body, plen);
        buf_put(body, seq->p, plen);
    }
    uint32_t n = (uint32_t)body->len;
    buf_put(&t->ev, &time, 8);
    buf_put(&t->ev, &n, 4);
    buf_put(&t->ev, body->p, n);
    if (t->ev.oom)
        fail(c, "out of memory%s", "");
}

/* The process an event of pid `pid` belongs to in this reading, or NULL
 * when it is not read (another process than the one asked for). */
static struct proc *proc_of(struct ctr_ctf *c, uint64_t pid)
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
        fail(c, "several processes (pids %s at least): choose one with -pid PID, or "
                "-pid all to merge them", pids);
        c->ambiguous = 1;
        return NULL;
    }
    struct proc *procs = realloc(c->procs, (c->nprocs + 1) * sizeof(*procs));
    if (!procs || ctr_idmap_put(&c->proc_ix, pid, c->nprocs) != 0) {
        if (procs)
            c->procs = procs;
        fail(c, "out of memory%s", "");
        return NULL;
    }
    c->procs = procs;
    struct proc *p = &c->procs[c->nprocs];
    *p = (struct proc){.pid = pid, .tag = c->want_pid == CTR_CTF_ALL ? c->nprocs + 1 : 0};
    c->nprocs++;
    return p;
}

static void on_message(struct ctr_ctf *c, const bt_message *m)
{
    bt_message_type mt = bt_message_get_type(m);
    if (mt == BT_MESSAGE_TYPE_DISCARDED_EVENTS) {
        uint64_t n;
        if (bt_message_discarded_events_get_count(m, &n) == BT_PROPERTY_AVAILABILITY_AVAILABLE)
            c->discarded += n;
        return;
    }
    if (mt != BT_MESSAGE_TYPE_EVENT || c->ended || c->error[0])
        return;
    c->nevents++;
    const bt_event *ev = bt_message_event_borrow_event_const(m);
    const bt_event_class *cls = bt_event_borrow_class_const(ev);
    uint64_t *known = ctr_idmap_get(&c->kinds, (uintptr_t)cls);
    uint64_t what = known ? *known : classify(bt_event_class_get_name(cls));
    if (!known && ctr_idmap_put(&c->kinds, (uintptr_t)cls, what) != 0) {
        fail(c, "out of memory%s", "");
        return;
    }
    int k = (int)(what >> 16);
    if (k == K_NONE)
        return;
    uint64_t v[CTR_MAX_FIELDS + 4];
    int nv = read_fields(bt_event_borrow_payload_field_const(ev), v, CTR_MAX_FIELDS + 4, &c->seq);
    if (nv < 0) {
        fail(c, "%s: a field of a type the ctrace provider never writes",
             bt_event_class_get_name(cls));
        return;
    }
    uint64_t pid = event_pid(c, ev);
    if (!pid) {
        /* Nothing says whose it is: only one process can be read. A
         * TRACE_INFO of another pid than the first says there are more. */
        if ((uint8_t)what == CTR_REC_TRACE_INFO && k == K_RECORD && c->nprocs &&
            c->procs[0].pid && c->procs[0].pid != v[0]) {
            fail(c, "events of several processes, not told apart: record the vpid context "
                    "(lttng add-context -u -t vpid) or use --buffers-pid%s", "");
            return;
        }
        c->unknown_pid_seen = 1; /* all of them are the process of key 0 */
    }
    struct proc *p = proc_of(c, pid);
    if (!p)
        return;
    if (k == K_RECORD && (uint8_t)what == CTR_REC_TRACE_INFO && !p->pid)
        p->pid = v[0];
    if (k == K_RECORD)
        on_record(c, p, (uint8_t)what, v, nv, &c->seq);
    else
        on_event(c, p, (uint8_t)what, k == K_SCHED, v, nv, &c->seq);
}

/* ---------------------------------------------------------------------------
 * The graph
 * ------------------------------------------------------------------------- */

static bt_graph_simple_sink_component_initialize_func_status sink_init(bt_message_iterator *it,
                                                                       void *data)
{
    ((struct ctr_ctf *)data)->it = it;
    return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

static bt_graph_simple_sink_component_consume_func_status sink_consume(bt_message_iterator *it,
                                                                       void *data)
{
    struct ctr_ctf *c = data;
    bt_message_array_const msgs;
    uint64_t n;
    switch (bt_message_iterator_next(it, &msgs, &n)) {
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
        break;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
    default:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
    }
    for (uint64_t i = 0; i < n; i++) {
        on_message(c, msgs[i]);
        bt_message_put_ref(msgs[i]);
    }
    return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

/* The directories under root that hold a CTF trace (a `metadata` file). */
static bt_value *found_traces;

/* How deep a session's traces lie: ust/uid/UID/64-bit, or a relay daemon's
 * HOST/SESSION/ust/pid/NAME-PID-DATE/64-bit. Deeper is not searched (a
 * user who names / by mistake does not wait for the whole disk). */
#define TRACE_DEPTH_MAX 8

static int find_trace(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    if (type == FTW_D && ftw->level >= TRACE_DEPTH_MAX)
        return FTW_SKIP_SUBTREE;
    const char *base = strrchr(path, '/');
    if (type == FTW_F && base && strcmp(base + 1, "metadata") == 0) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%.*s", (int)(base - path), path);
        if (bt_value_array_append_string_element(found_traces, dir) != 0)
            return FTW_STOP;
    }
    return FTW_CONTINUE;
}

/* Builds the graph: source.ctf.fs over the traces, muxer, our sink. */
static int graph_make(struct ctr_ctf *c, char *err, size_t errlen)
{
    const bt_plugin *ctf = NULL, *utils = NULL;
    bt_value *params = bt_value_map_create();
    found_traces = bt_value_array_create();
    int rc = -ENOMEM;
    if (!params || !found_traces)
        goto out;
    if (nftw(c->dir, find_trace, 16, FTW_PHYS | FTW_ACTIONRETVAL) != 0) {
        snprintf(err, errlen, "%s: cannot search it for CTF traces", c->dir);
        rc = -EIO;
        goto out;
    }
    if (bt_value_array_get_length(found_traces) == 0) {
        snprintf(err, errlen, "%s: a directory with no CTF trace in it (no `metadata` file)",
                 c->dir);
        rc = -ENOENT;
        goto out;
    }
    if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &ctf) !=
            BT_PLUGIN_FIND_STATUS_OK ||
        bt_plugin_find("utils", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &utils) !=
            BT_PLUGIN_FIND_STATUS_OK) {
        snprintf(err, errlen, "%s: babeltrace2's ctf and utils plugins are not installed "
                              "(Debian: libbabeltrace2-0)", c->dir);
        rc = -ENOENT;
        goto out;
    }
    const bt_component_class_source *fs =
        bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs");
    const bt_component_class_filter *mux =
        bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer");
    const bt_component_source *src;
    const bt_component_filter *muxer;
    const bt_component_sink *sink;
    c->graph = bt_graph_create(0);
    if (!fs || !mux || !c->graph ||
        bt_value_map_insert_entry(params, "inputs", found_traces) != BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK)
        goto out;
    if (bt_graph_add_source_component(c->graph, fs, "ctf", params, BT_LOGGING_LEVEL_NONE, &src) !=
        BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
        const bt_error *e = bt_current_thread_take_error();
        snprintf(err, errlen, "%s: babeltrace2 cannot read it as CTF%s%s", c->dir,
                 e ? ": " : "", e ? bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0)) : "");
        if (e)
            bt_error_release(e);
        rc = -EINVAL;
        goto out;
    }
    if (bt_graph_add_filter_component(c->graph, mux, "muxer", NULL, BT_LOGGING_LEVEL_NONE,
                                      &muxer) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
        bt_graph_add_simple_sink_component(c->graph, "ctrace", sink_init, sink_consume, NULL, c,
                                           &sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK)
        goto out;
    uint64_t nports = bt_component_source_get_output_port_count(src);
    for (uint64_t i = 0; i < nports; i++) {
        /* The muxer adds an input port each time one is connected. */
        uint64_t in = bt_component_filter_get_input_port_count(muxer);
        if (bt_graph_connect_ports(c->graph, bt_component_source_borrow_output_port_by_index_const(src, i),
                                   bt_component_filter_borrow_input_port_by_index_const(muxer, in - 1),
                                   NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
            goto out;
    }
    if (bt_graph_connect_ports(c->graph, bt_component_filter_borrow_output_port_by_index_const(muxer, 0),
                               bt_component_sink_borrow_input_port_by_index_const(sink, 0),
                               NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
        goto out;
    rc = 0;
out:
    if (rc == -ENOMEM)
        snprintf(err, errlen, "%s: setting up babeltrace2 failed", c->dir);
    bt_value_put_ref(params);
    bt_value_put_ref(found_traces);
    found_traces = NULL;
    bt_plugin_put_ref(ctf);
    bt_plugin_put_ref(utils);
    return rc;
}

/* Forgets what was read: the state of a new reading. */
static void reading_reset(struct ctr_ctf *c)
{
    for (size_t i = c->ready_head; i < c->nready; i++)
        free(c->ready[i].data);
    c->nready = c->ready_head = 0;
    for (size_t i = 0; i < c->nprocs; i++) {
        struct proc *p = &c->procs[i];
        for (size_t k = 0; k < p->nthreads; k++)
            free(p->threads[k].ev.p);
        free(p->threads);
        ctr_idmap_free(&p->thread_ix);
        free(p->frame.p);
        free(p->tables.p);
        free(p->sw.p);
    }
    free(c->procs);
    c->procs = NULL;
    c->nprocs = 0;
    ctr_idmap_free(&c->proc_ix);
    ctr_idmap_free(&c->kinds);
    c->body.oom = c->seq.oom = c->batch.oom = 0;
    c->ended = c->unknown_pid_seen = c->ambiguous = 0;
    c->nevents = c->discarded = c->next_gen = 0;
    memset(c->end_fields, 0, sizeof(c->end_fields));
    c->nends = 0;
    c->ctx_class = c->env_trace = NULL;
    c->error[0] = 0;
    bt_graph_put_ref(c->graph);
    c->graph = NULL;
    c->it = NULL;
}

int ctr_ctf_open(const char *dir, uint64_t pid, struct ctr_ctf **out, char *err, size_t errlen)
{
    *out = NULL;
    struct ctr_ctf *c = calloc(1, sizeof(*c));
    if (!c || !(c->dir = strdup(dir)) || !(c->zc = ZSTD_createCCtx())) {
        if (c)
            free(c->dir);
        free(c);
        snprintf(err, errlen, "%s: out of memory", dir);
        return -ENOMEM;
    }
    ZSTD_CCtx_setParameter(c->zc, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(c->zc, ZSTD_c_checksumFlag, 1);
    c->want_pid = pid;
    int rc = graph_make(c, err, errlen);
    if (rc != 0) {
        ctr_ctf_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

int ctr_ctf_next(struct ctr_ctf *c, struct ctr_frame *f)
{
    *f = (struct ctr_frame){0};
    while (c->ready_head == c->nready && !c->error[0] && c->graph) {
        c->nready = c->ready_head = 0;
        if (c->ended)
            return 0;
        bt_graph_run_once_status st = bt_graph_run_once(c->graph);
        if (st == BT_GRAPH_RUN_ONCE_STATUS_END) {
            for (size_t i = 0; i < c->nprocs; i++)
                proc_flush(c, &c->procs[i]);
            if (c->nends) {
                /* A merged reading's one END, with LTTng's discards. */
                struct buf end = {0};
                c->body.len = 0;
                c->end_fields[0] += c->discarded;
                for (int i = 0; i < ctr_record_specs[CTR_REC_END].nfields; i++)
                    buf_uv(&c->body, c->end_fields[i]);
                put_record(&end, CTR_REC_END, &c->body);
                frame_finish(c, &end);
                free(end.p);
            }
            c->ended = 1;
        } else if (st != BT_GRAPH_RUN_ONCE_STATUS_OK && st != BT_GRAPH_RUN_ONCE_STATUS_AGAIN) {
            const bt_error *e = bt_current_thread_take_error();
            fail(c, "babeltrace2: %s",
                 e && bt_error_get_cause_count(e)
                     ? bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0))
                     : "reading failed");
            if (e)
                bt_error_release(e);
        }
    }
    if (c->error[0]) {
        snprintf(f->skipped, sizeof(f->skipped), "%s", c->error);
        return c->ambiguous ? -ENOTUNIQ : -EINVAL;
    }
    if (c->ready_head == c->nready)
        return 0;
    *f = c->ready[c->ready_head++];
    return 1;
}

int ctr_ctf_rewind(struct ctr_ctf *c)
{
    reading_reset(c);
    char err[256];
    return graph_make(c, err, sizeof(err));
}

uint64_t ctr_ctf_pos(const struct ctr_ctf *c)
{
    return c->nevents;
}

uint64_t ctr_ctf_discarded(const struct ctr_ctf *c)
{
    return c->discarded;
}

void ctr_ctf_close(struct ctr_ctf *c)
{
    if (!c)
        return;
    reading_reset(c);
    free(c->ready);
    free(c->body.p);
    free(c->batch.p);
    free(c->seq.p);
    ZSTD_freeCCtx(c->zc);
    free(c->dir);
    free(c);
}
