/* ctrace_tp.h - the LTTng-UST tracepoint provider `ctrace`: one tracepoint
 * per ctrace event type and per record kind, by the mapping that
 * tracer/format/ctrace_lttng.h states (names in lower case; the thread and
 * the time first, then the arguments in the format table's order, a tail
 * last). Only tp/provider.c includes it: libctrace reaches the tracepoints
 * through the provider library's function table, never by linking them.
 *
 * Every integer is a uint64_t as in the format, but the wait reason (an
 * enumeration of CTR_REASONS, so readers print its name) and the lengths of
 * the sequences.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ctrace

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./ctrace_tp.h"

#if !defined(CTRACE_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define CTRACE_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

#include "ctrace_format.h"

/* The wait reasons, by their names in the format table. */
#undef CTR_TP_REASON
#define CTR_TP_REASON(id, name, call, cls, release) lttng_ust_field_enum_value(#name, id)
LTTNG_UST_TRACEPOINT_ENUM(ctrace, reason, LTTNG_UST_TP_ENUM_VALUES(CTR_REASONS(CTR_TP_REASON)))

/* ---- Events: thread, ticks (ns for the SWITCHES ones), arguments ---- */

#define CTR_TP_EV_ARGS                                                                  \
    LTTNG_UST_TP_ARGS(uint64_t, th, uint64_t, ts, const uint64_t *, a, const char *, p, \
                      uint32_t, n)
#define CTR_TP_EV_HEAD                                                                  \
    lttng_ust_field_integer(uint64_t, thread, th) lttng_ust_field_integer(uint64_t, ticks, ts)
#define CTR_TP_SCHED_HEAD                                                               \
    lttng_ust_field_integer(uint64_t, thread, th) lttng_ust_field_integer(uint64_t, ns, ts)
#define CTR_TP_U(name, i) lttng_ust_field_integer(uint64_t, name, a[i])
#define CTR_TP_X(name, i) lttng_ust_field_integer_hex(uint64_t, name, a[i])

LTTNG_UST_TRACEPOINT_EVENT(ctrace, thread_create, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD CTR_TP_U(child, 0) CTR_TP_U(stack, 1)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, thread_start, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD CTR_TP_U(parent, 0) CTR_TP_X(start_pc, 1)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, thread_end, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, thread_name, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD CTR_TP_U(target, 0) CTR_TP_U(name, 1)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, block, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD
        lttng_ust_field_enum(ctrace, reason, uint8_t, reason, a[0])
        CTR_TP_X(object, 1) CTR_TP_U(stack, 2)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, unblock, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, lost, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD CTR_TP_U(count, 0)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, release, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD CTR_TP_X(object, 0) CTR_TP_U(stack, 1)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, switch_out, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_SCHED_HEAD CTR_TP_U(preempted, 0)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, switch_in, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_SCHED_HEAD))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, sched_lost, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_SCHED_HEAD CTR_TP_U(count, 0)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, task_begin, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD CTR_TP_U(task, 0) CTR_TP_U(parent, 1) CTR_TP_U(type, 2)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, task_end, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD CTR_TP_U(task, 0)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, region_begin, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD CTR_TP_U(task, 0) CTR_TP_U(name, 1)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, region_end, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD CTR_TP_U(task, 0) CTR_TP_U(name, 1)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, log, CTR_TP_EV_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_EV_HEAD CTR_TP_U(task, 0) CTR_TP_U(category, 1)
        lttng_ust_field_sequence_text(char, message, p, uint32_t, n)))

/* ---- Records: fields, then the tail ---- */

#define CTR_TP_REC_ARGS                                                                 \
    LTTNG_UST_TP_ARGS(const uint64_t *, a, const uint64_t *, tu, const char *, tb,     \
                      uint32_t, n)

LTTNG_UST_TRACEPOINT_EVENT(ctrace, trace_info, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(pid, 0) CTR_TP_U(tick_source, 1) CTR_TP_X(flags, 2)
        CTR_TP_U(exe, 3) CTR_TP_U(io_min_ns, 4)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, gen_begin, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(gen, 0)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, gen_end, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(gen, 0)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, clock, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(ticks, 0) CTR_TP_U(mono_ns, 1) CTR_TP_U(real_ns, 2)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, string, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(id, 0) lttng_ust_field_sequence_text(char, text, tb, uint32_t, n)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, stack, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(id, 0) lttng_ust_field_sequence_hex(uint64_t, pcs, tu, uint32_t, n)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, thread, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(id, 0) CTR_TP_U(tid, 1) CTR_TP_U(parent, 2) CTR_TP_U(name, 3)
        CTR_TP_X(handle, 4)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, mapping, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(id, 0) CTR_TP_X(start, 1) CTR_TP_X(limit, 2) CTR_TP_X(offset, 3)
        CTR_TP_X(bias, 4) CTR_TP_U(path, 5)
        lttng_ust_field_sequence_hex(uint8_t, build_id, tb, uint32_t, n)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, drops, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(thread, 0) CTR_TP_U(count, 1)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, end, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(dropped, 0) CTR_TP_U(stacks_lost, 1) CTR_TP_U(untraced, 2)
        CTR_TP_U(sched_failed, 3)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, pending, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(thread, 0) CTR_TP_U(ticks, 1)
        lttng_ust_field_enum(ctrace, reason, uint8_t, reason, a[2])
        CTR_TP_X(object, 3) CTR_TP_U(stack, 4)))
LTTNG_UST_TRACEPOINT_EVENT(ctrace, waiting, CTR_TP_REC_ARGS,
    LTTNG_UST_TP_FIELDS(CTR_TP_U(thread, 0) CTR_TP_U(ticks, 1)
        lttng_ust_field_enum(ctrace, reason, uint8_t, reason, a[2])
        CTR_TP_X(object, 3) CTR_TP_U(stack, 4)))

#endif /* CTRACE_TP_H */

#include <lttng/tracepoint-event.h>
