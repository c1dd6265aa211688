/* SPDX-License-Identifier: MIT */
/* ctrace_tp.h - the LTTng-UST tracepoint provider `ctrace`: one tracepoint
 * per ctrace event type and per record kind, declared from the table of
 * format/ctrace_lttng.h (CTR_LTTNG_TRACEPOINTS: names in lower case;
 * the thread and the time first, then the arguments in the format table's
 * order, a tail last), which the babeltrace2 source of native traces
 * (bt2plugin.c) builds its event classes from too. Only tp/provider.c
 * includes it: libctrace reaches the tracepoints through the provider
 * library's function table, never by linking them.
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
#include "ctrace_lttng.h"

/* The wait reasons, by their names in the format table. */
#define CTR_TP_REASON_VALUE(id, name, call, cls, release) lttng_ust_field_enum_value(#name, id)
LTTNG_UST_TRACEPOINT_ENUM(ctrace, reason,
                          LTTNG_UST_TP_ENUM_VALUES(CTR_REASONS(CTR_TP_REASON_VALUE)))

/* ---- The tracepoints, from the table (CTR_LTTNG_TRACEPOINTS) ----
 * An event's are (thread, time, arguments after the delta, payload bytes
 * and their count); a record's are (fields, a UVARINTS tail, a BYTES or
 * LENGTH tail, the tail's count): provider.c passes them so. */

#define CTR_TP_EV_ARGS                                                                             \
    LTTNG_UST_TP_ARGS(uint64_t, th, uint64_t, ts, const uint64_t *, a, const char *, tb, uint32_t, \
                      n)
#define CTR_TP_REC_ARGS \
    LTTNG_UST_TP_ARGS(const uint64_t *, a, const uint64_t *, tu, const char *, tb, uint32_t, n)

#define CTR_TP_SRC_THREAD th
#define CTR_TP_SRC_TIME ts
#define CTR_TP_HEAD(name, src) lttng_ust_field_integer(uint64_t, name, CTR_TP_SRC_##src)
#define CTR_TP_ARG(shape, name, i) CTR_TP_##shape(name, a[i])
#define CTR_TP_TAIL(shape, name) CTR_TP_##shape(name)
#define CTR_TP_U(name, v) lttng_ust_field_integer(uint64_t, name, v)
#define CTR_TP_X(name, v) lttng_ust_field_integer_hex(uint64_t, name, v)
#define CTR_TP_REASON(name, v) lttng_ust_field_enum(ctrace, reason, uint8_t, name, v)
#define CTR_TP_TEXT(name) lttng_ust_field_sequence_text(char, name, tb, uint32_t, n)
#define CTR_TP_HEX64(name) lttng_ust_field_sequence_hex(uint64_t, name, tu, uint32_t, n)
#define CTR_TP_HEX8(name) lttng_ust_field_sequence_hex(uint8_t, name, tb, uint32_t, n)

#define CTR_TP_EV(TYPE, sched, name, members)                \
    LTTNG_UST_TRACEPOINT_EVENT(ctrace, name, CTR_TP_EV_ARGS, \
                               LTTNG_UST_TP_FIELDS(CTR_LTTNG_HEAD(sched, CTR_TP_HEAD) members))
#define CTR_TP_REC(KIND, name, members) \
    LTTNG_UST_TRACEPOINT_EVENT(ctrace, name, CTR_TP_REC_ARGS, LTTNG_UST_TP_FIELDS(members))

CTR_LTTNG_TRACEPOINTS(CTR_TP_EV, CTR_TP_REC, CTR_TP_ARG, CTR_TP_TAIL)

#endif /* CTRACE_TP_H */

#include <lttng/tracepoint-event.h>
