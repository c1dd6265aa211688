/* SPDX-License-Identifier: MIT */
/* ctrace_lttng.h - ctrace's events as LTTng-UST tracepoints: how the trace
 * format (ctrace_format.h) maps onto the `ctrace` tracepoint provider
 * (tp/ctrace_tp.h), and the interface between libctrace and the provider
 * library it loads (tp/provider.c).
 *
 * The mapping (FORMAT.md §8 is its prose):
 *   - each event type (CTR_EVENTS) is the tracepoint `ctrace:<name>`, its
 *     name in lower case (`ctrace:block`), whose fields are the thread's
 *     trace id, the event's time in ticks, then the event's arguments
 *     after the time delta, in the table's order; a LENGTH argument is a
 *     text sequence holding the bytes. SWITCH_OUT and SWITCH_IN come from
 *     SWITCHES records, so their time field is in nanoseconds; a LOST or a
 *     CPU_SAMPLE in a SWITCHES record is `ctrace:sched_lost`,
 *     `ctrace:sched_cpu_sample`.
 *   - each record kind but BATCH and SWITCHES (whose events are the
 *     tracepoints above) is the tracepoint `ctrace:<name>` with the
 *     record's fields in the table's order, then its tail as a sequence
 *     (STACK's return addresses, STRING's bytes as text, MAPPING's build-id).
 * A reader (analyze/read/ctf.c) turns the tracepoints back into records by these
 * rules and the tables alone: it reads fields by position, so the provider
 * declares them in the tables' order, and a tracepoint with fewer fields
 * than its spec is damage.
 *
 * Where the tracepoints come from: a thread's events are sent by the
 * thread itself as it writes them (LTTng's own timestamp and context are
 * then the event's); the records of each generation and of the trailer by
 * the collector (tracer/sinks/lttng.c); a stack or string by the thread that adds
 * it to its table, once, and the whole tables again by the collector when a
 * session starts recording them.
 */
#ifndef CTRACE_LTTNG_H
#define CTRACE_LTTNG_H

#include <stdint.h>

#include "ctrace_format.h"

/* The provider's name, and the prefix of every event it defines. */
#define CTR_LTTNG_PROVIDER "ctrace"

/* The provider library that libctrace loads (dlopen) when asked to send its
 * events to LTTng, and the variable that names another one. */
#define CTR_LTTNG_LIBRARY "libctrace-lttng.so.1"
#define CTR_LTTNG_LIBRARY_ENV "CTRACE_LTTNG_PROVIDER"

/* The two event types that come in both BATCH and SWITCHES records (LOST:
 * in a SWITCHES record the kernel lost context switches; CPU_SAMPLE: taken
 * by perf_event) have a tracepoint for each: the SWITCHES one's name is the
 * type's after this prefix (`ctrace:sched_lost`), and its time is in
 * nanoseconds. Every other type has one tracepoint. */
#define CTR_LTTNG_SCHED_PREFIX "sched_"

/* The version of struct ctr_lttng_ops below: libctrace refuses a provider
 * of another. */
#define CTR_LTTNG_ABI 1

/* What the provider library exports as CTR_LTTNG_OPS_SYMBOL. */
struct ctr_lttng_ops {
    uint32_t abi; /* CTR_LTTNG_ABI */
    /* Event `type` (enum ctr_event_type) of trace thread `thread` at `ticks`
     * with args[0 .. nargs-2] (the arguments after the delta, as
     * ctr_event_specs says) and, for a LENGTH argument, its `len` bytes.
     * `sched`: the event came from a SWITCHES record (SWITCH_*, or a LOST
     * there), and its time is in nanoseconds. Any thread, signal-safe. */
    void (*event)(uint64_t thread, uint64_t ticks, uint8_t type, int sched, const uint64_t *args,
                  const void *payload, uint32_t len);
    /* Record `kind` (enum ctr_record_kind) with its fields (as
     * ctr_record_specs says) and tail: UVARINTS as `tail_u` (tail_n
     * values), BYTES or LENGTH as `tail_b` (tail_n bytes). */
    void (*record)(uint8_t kind, const uint64_t *fields, const uint64_t *tail_u, const void *tail_b,
                   uint32_t tail_n);
    /* Whether some session records the provider's events now: the
     * collector sends the tables again when this turns on. */
    int (*recording)(void);
};

#define CTR_LTTNG_OPS_SYMBOL "ctrace_lttng_ops"

/* ctr_lttng_name() : the tracepoint name (without the provider) of event
 * type `type`, `sched` as in ctr_lttng_ops.event, or of record kind `kind`
 * when type is 0, in lower case into buf. @return buf, or NULL for an id
 * without a spec. */
static inline const char *ctr_lttng_name(uint8_t type, int sched, uint8_t kind, char buf[32])
{
    const char *n;
    unsigned i = 0;
    if (type) {
        n = type < CTR_EV_LIMIT ? ctr_event_specs[type].name : NULL;
        if (n && sched && (type == CTR_EV_LOST || type == CTR_EV_CPU_SAMPLE))
            for (const char *p = CTR_LTTNG_SCHED_PREFIX; *p; p++)
                buf[i++] = *p;
    } else {
        n = kind < CTR_REC_LIMIT ? ctr_record_specs[kind].name : NULL;
    }
    if (!n)
        return NULL;
    for (const char *p = n; *p && i < 31; p++)
        buf[i++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    buf[i] = 0;
    return buf;
}

/* ---------------------------------------------------------------------------
 * The tracepoints' members
 *
 * One table of every tracepoint of the provider, in the order the provider
 * declares them, with its members in order: tp/ctrace_tp.h declares the
 * tracepoints from it, and the babeltrace2 source of native traces
 * (tp/bt2plugin.c) builds its event classes from it, so the two agree field
 * for field. A row is
 *   EV(TYPE, sched, name, members)  event type CTR_EV_TYPE (from a SWITCHES
 *                                   record when sched is 1), whose head
 *                                   (CTR_LTTNG_HEAD) comes before `members`;
 *   REC(KIND, name, members)        record kind CTR_REC_KIND;
 * and its members are ARG(shape, name, i), the event's argument i after the
 * delta or the record's field i, and at most one TAIL(shape, name) last:
 * a LENGTH argument's bytes or a record's tail, which LTTng precedes with a
 * uint32 member `_<name>_length`. Shapes (enum ctr_lttng_shape):
 *   U       a uint64, shown in decimal
 *   X       a uint64, shown in hexadecimal (addresses, flags)
 *   REASON  a uint8 enumeration of CTR_REASONS, labelled by their names
 *   TEXT    a text sequence (a string's or a message's bytes)
 *   HEX64   a sequence of uint64s in hexadecimal (a stack's addresses)
 *   HEX8    a sequence of bytes in hexadecimal (a build-id)
 * `name` is ctr_lttng_name()'s (tests/unit/test-format.c checks the table against
 * it and against the format's tables).
 * ------------------------------------------------------------------------- */

#define CTR_LTTNG_TRACEPOINTS(EV, REC, ARG, TAIL)                                              \
    EV(THREAD_CREATE, 0, thread_create, ARG(U, child, 0) ARG(U, stack, 1))                     \
    EV(THREAD_START, 0, thread_start, ARG(U, parent, 0) ARG(X, start_pc, 1))                   \
    EV(THREAD_END, 0, thread_end, )                                                            \
    EV(THREAD_NAME, 0, thread_name, ARG(U, target, 0) ARG(U, name, 1))                         \
    EV(BLOCK, 0, block, ARG(REASON, reason, 0) ARG(X, object, 1) ARG(U, stack, 2))             \
    EV(UNBLOCK, 0, unblock, )                                                                  \
    EV(LOST, 0, lost, ARG(U, count, 0))                                                        \
    EV(RELEASE, 0, release, ARG(X, object, 0) ARG(U, stack, 1))                                \
    EV(SWITCH_OUT, 1, switch_out, ARG(U, preempted, 0))                                        \
    EV(SWITCH_IN, 1, switch_in, )                                                              \
    EV(SWITCH_WAIT, 1, switch_wait, ARG(REASON, reason, 0) ARG(X, object, 1) ARG(U, stack, 2)) \
    EV(LOST, 1, sched_lost, ARG(U, count, 0))                                                  \
    EV(TASK_BEGIN, 0, task_begin, ARG(U, task, 0) ARG(U, parent, 1) ARG(U, type, 2))           \
    EV(TASK_END, 0, task_end, ARG(U, task, 0))                                                 \
    EV(REGION_BEGIN, 0, region_begin, ARG(U, task, 0) ARG(U, name, 1))                         \
    EV(REGION_END, 0, region_end, ARG(U, task, 0) ARG(U, name, 1))                             \
    EV(LOG, 0, log, ARG(U, task, 0) ARG(U, category, 1) TAIL(TEXT, message))                   \
    EV(CPU_SAMPLE, 0, cpu_sample, ARG(U, stack, 0) ARG(U, cpu_ns, 1))                          \
    EV(CPU_SAMPLE, 1, sched_cpu_sample, ARG(U, stack, 0) ARG(U, cpu_ns, 1))                    \
    REC(TRACE_INFO, trace_info,                                                                \
        ARG(U, pid, 0) ARG(U, tick_source, 1) ARG(X, flags, 2) ARG(U, exe, 3)                  \
            ARG(U, io_min_ns, 4))                                                              \
    REC(GEN_BEGIN, gen_begin, ARG(U, gen, 0))                                                  \
    REC(GEN_END, gen_end, ARG(U, gen, 0))                                                      \
    REC(CLOCK, clock, ARG(U, ticks, 0) ARG(U, mono_ns, 1) ARG(U, real_ns, 2))                  \
    REC(STRING, string, ARG(U, id, 0) TAIL(TEXT, text))                                        \
    REC(STACK, stack, ARG(U, id, 0) TAIL(HEX64, pcs))                                          \
    REC(THREAD, thread,                                                                        \
        ARG(U, id, 0) ARG(U, tid, 1) ARG(U, parent, 2) ARG(U, name, 3) ARG(X, handle, 4))      \
    REC(MAPPING, mapping,                                                                      \
        ARG(U, id, 0) ARG(X, start, 1) ARG(X, limit, 2) ARG(X, offset, 3) ARG(X, bias, 4)      \
            ARG(U, path, 5) TAIL(HEX8, build_id))                                              \
    REC(DROPS, drops, ARG(U, thread, 0) ARG(U, count, 1))                                      \
    REC(END, end,                                                                              \
        ARG(U, dropped, 0) ARG(U, stacks_lost, 1) ARG(U, untraced, 2) ARG(U, sched_failed, 3)) \
    REC(PENDING, pending,                                                                      \
        ARG(U, thread, 0) ARG(U, ticks, 1) ARG(REASON, reason, 2) ARG(X, object, 3)            \
            ARG(U, stack, 4))                                                                  \
    REC(WAITING, waiting,                                                                      \
        ARG(U, thread, 0) ARG(U, ticks, 1) ARG(REASON, reason, 2) ARG(X, object, 3)            \
            ARG(U, stack, 4))                                                                  \
    REC(SAMPLING, sampling, ARG(U, sources, 0) ARG(U, period_ns, 1) ARG(U, lost, 2))           \
    REC(CPU_TIME, cpu_time,                                                                    \
        ARG(U, thread, 0) ARG(U, ticks, 1) ARG(U, cpu_ns, 2) ARG(U, delay_ns, 3) ARG(X, flags, 4))

/* An event tracepoint's head, before its ARGs: HEAD(name, THREAD) for the
 * thread's trace id, HEAD(name, TIME) for the event's time, in ticks, or
 * in nanoseconds for one from a SWITCHES record (sched 1). */
#define CTR_LTTNG_HEAD(sched, HEAD) HEAD(thread, THREAD) CTR_LTTNG_HEAD_TIME_##sched(HEAD)
#define CTR_LTTNG_HEAD_TIME_0(HEAD) HEAD(ticks, TIME)
#define CTR_LTTNG_HEAD_TIME_1(HEAD) HEAD(ns, TIME)

enum ctr_lttng_shape {
    CTR_LTTNG_U = 1,
    CTR_LTTNG_X,
    CTR_LTTNG_REASON,
    CTR_LTTNG_TEXT,
    CTR_LTTNG_HEX64,
    CTR_LTTNG_HEX8
};

/* Where a member's value comes from: an ARG's index (>= 0), or these. */
enum { CTR_LTTNG_SRC_THREAD = -1, CTR_LTTNG_SRC_TIME = -2, CTR_LTTNG_SRC_TAIL = -3 };

/* The most members a row has, head included (MAPPING: 6 fields, a tail),
 * with room for the NULL name that ends the list. */
#define CTR_LTTNG_MAX_MEMBERS 8

/* The table as data: members[] ends at the first NULL name. */
struct ctr_lttng_member {
    const char *name;
    uint8_t shape; /* enum ctr_lttng_shape */
    int8_t src;    /* an ARG's index, or CTR_LTTNG_SRC_* */
};

struct ctr_lttng_tracepoint {
    const char *name; /* without the provider */
    uint8_t type;     /* enum ctr_event_type, 0 for a record */
    uint8_t sched;
    uint8_t kind; /* enum ctr_record_kind, 0 for an event */
    struct ctr_lttng_member members[CTR_LTTNG_MAX_MEMBERS];
};

#define CTR_X_LTTNG_HEAD(name, src) {#name, CTR_LTTNG_U, CTR_LTTNG_SRC_##src},
#define CTR_X_LTTNG_ARG(shape, name, i) {#name, CTR_LTTNG_##shape, i},
#define CTR_X_LTTNG_TAIL(shape, name) {#name, CTR_LTTNG_##shape, CTR_LTTNG_SRC_TAIL},
#define CTR_X_LTTNG_EV(TYPE, sched, name, members) \
    {#name, CTR_EV_##TYPE, sched, 0, {CTR_LTTNG_HEAD(sched, CTR_X_LTTNG_HEAD) members}},
#define CTR_X_LTTNG_REC(KIND, name, members) {#name, 0, 0, CTR_REC_##KIND, {members}},
static const struct ctr_lttng_tracepoint ctr_lttng_tracepoints[] = {
    CTR_LTTNG_TRACEPOINTS(CTR_X_LTTNG_EV, CTR_X_LTTNG_REC, CTR_X_LTTNG_ARG, CTR_X_LTTNG_TAIL)};
#undef CTR_X_LTTNG_HEAD
#undef CTR_X_LTTNG_ARG
#undef CTR_X_LTTNG_TAIL
#undef CTR_X_LTTNG_EV
#undef CTR_X_LTTNG_REC

#define CTR_LTTNG_NTRACEPOINTS (sizeof(ctr_lttng_tracepoints) / sizeof(ctr_lttng_tracepoints[0]))

/* ---------------------------------------------------------------------------
 * Transcription
 * ------------------------------------------------------------------------- */

/* The longest STACK tail a transcription takes (a writer records at most
 * CTR_STACK_MAX frames; more is damage). */
#define CTR_LTTNG_MAX_PCS 256

/* Where ctr_lttng_transcribe() sends what it reads: the calls of struct
 * ctr_lttng_ops with a context. */
struct ctr_lttng_emitter {
    void *ctx;
    void (*event)(void *ctx, uint64_t thread, uint64_t time, uint8_t type, int sched,
                  const uint64_t *args, const void *payload, uint32_t len);
    void (*record)(void *ctx, uint8_t kind, const uint64_t *fields, const uint64_t *tail_u,
                   const void *tail_b, uint32_t tail_n);
};

/* ctr_lttng_transcribe_event() : the event at [q, end), inside a BATCH
 * (sched 0) or SWITCHES (sched 1) record of thread `thread`, to e->event;
 * *time is the time of the event before it (the record's base for the
 * first) and becomes this one's. A reader that interleaves several
 * records' events steps through each with this.
 * @return the bytes the event takes, or 0 at damage (nothing sent). */
static inline size_t ctr_lttng_transcribe_event(const uint8_t *q, const uint8_t *end,
                                                uint64_t thread, uint64_t *time, int sched,
                                                const struct ctr_lttng_emitter *e)
{
    struct ctr_event ev;
    size_t m = ctr_decode_event(q, end, &ev);
    if (m == 0)
        return 0;
    *time += ev.args[0];
    e->event(e->ctx, thread, *time, ev.type, sched, ev.args + 1, ev.payload,
             (uint32_t)ev.payload_len);
    return m;
}

/* ctr_lttng_transcribe() : the records in [p, end) (FORMAT.md §3) as
 * tracepoints by the mapping above: each record but BATCH and SWITCHES to
 * e->record, each event of a SWITCHES record (and of a BATCH when
 * `batches`) to e->event with its time. Records of a kind without a spec
 * are skipped (§3). The bytes are hostile (a file): every count is checked.
 * @return 0, or -1 at damage (what came before it was sent). */
static inline int ctr_lttng_transcribe(const uint8_t *p, const uint8_t *end, int batches,
                                       const struct ctr_lttng_emitter *e)
{
    uint64_t pcs[CTR_LTTNG_MAX_PCS];
    while (p < end) {
        struct ctr_record rec;
        size_t n = ctr_decode_record(p, end, &rec);
        if (n == 0)
            return -1;
        p += n;
        if (rec.kind >= CTR_REC_LIMIT || !ctr_record_specs[rec.kind].name)
            continue;
        struct ctr_record_fields f;
        if (ctr_decode_record_fields(&rec, &f) != 0)
            return -1;
        const struct ctr_record_spec *s = &ctr_record_specs[rec.kind];
        if (s->tail == CTR_ARG_EVENTS) {
            int sched = rec.kind == CTR_REC_SWITCHES;
            if (!sched && !batches)
                continue;
            uint64_t time = f.v[1];
            for (const uint8_t *q = f.tail; q < f.tail_end;) {
                size_t m = ctr_lttng_transcribe_event(q, f.tail_end, f.v[0], &time, sched, e);
                if (m == 0)
                    return -1;
                q += m;
            }
            continue;
        }
        uint32_t tail_n = 0;
        if (s->tail == CTR_ARG_UVARINTS) {
            uint64_t count = f.v[s->nfields];
            if (count > CTR_LTTNG_MAX_PCS)
                return -1;
            const uint8_t *q = f.tail;
            for (uint32_t i = 0; i < count; i++) {
                size_t used = ctr_get_uvarint(q, f.tail_end, &pcs[i]);
                if (used == 0)
                    return -1;
                q += used;
            }
            tail_n = (uint32_t)count;
        } else if (s->tail == CTR_ARG_BYTES || s->tail == CTR_ARG_LENGTH) {
            if ((uint64_t)(f.tail_end - f.tail) > UINT32_MAX)
                return -1;
            tail_n = (uint32_t)(f.tail_end - f.tail);
        }
        e->record(e->ctx, rec.kind, f.v, pcs, f.tail, tail_n);
    }
    return 0;
}

#endif /* CTRACE_LTTNG_H */
