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
 *     SWITCHES records, so their time field is in nanoseconds; a LOST in a
 *     SWITCHES record is `ctrace:sched_lost`.
 *   - each record kind but BATCH and SWITCHES (whose events are the
 *     tracepoints above) is the tracepoint `ctrace:<name>` with the
 *     record's fields in the table's order, then its tail as a sequence
 *     (STACK's return addresses, STRING's bytes as text, MAPPING's build-id).
 * A reader (analyze/ctf.c) turns the tracepoints back into records by these
 * rules and the tables alone: it reads fields by position, so the provider
 * declares them in the tables' order, and a tracepoint with fewer fields
 * than its spec is damage.
 *
 * Where the tracepoints come from: a thread's events are sent by the
 * thread itself as it writes them (LTTng's own timestamp and context are
 * then the event's); the records of each generation and of the trailer by
 * the collector (tracer/lttng.c); a stack or string by the thread that adds
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

/* The tracepoint of a LOST event inside a SWITCHES record (the kernel lost
 * context switches), apart from the thread's own LOST events. */
#define CTR_LTTNG_SCHED_LOST "sched_lost"

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
    void (*record)(uint8_t kind, const uint64_t *fields, const uint64_t *tail_u,
                   const void *tail_b, uint32_t tail_n);
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
    if (type)
        n = sched && type == CTR_EV_LOST ? CTR_LTTNG_SCHED_LOST
            : type < CTR_EV_LIMIT        ? ctr_event_specs[type].name
                                         : NULL;
    else
        n = kind < CTR_REC_LIMIT ? ctr_record_specs[kind].name : NULL;
    if (!n)
        return NULL;
    unsigned i = 0;
    for (; n[i] && i < 31; i++)
        buf[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] - 'A' + 'a' : n[i]);
    buf[i] = 0;
    return buf;
}

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
                struct ctr_event ev;
                size_t m = ctr_decode_event(q, f.tail_end, &ev);
                if (m == 0)
                    return -1;
                q += m;
                time += ev.args[0];
                e->event(e->ctx, f.v[0], time, ev.type, sched, ev.args + 1, ev.payload,
                         (uint32_t)ev.payload_len);
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
