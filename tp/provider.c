/* SPDX-License-Identifier: MIT */
/* provider.c - libctrace-lttng: the `ctrace` LTTng-UST tracepoint provider
 * (ctrace_tp.h) and the function table through which libctrace sends its
 * events to it (struct ctr_lttng_ops, format/ctrace_lttng.h).
 *
 * libctrace loads this library with dlopen only when asked to (CTRACE_LTTNG,
 * trace_options.lttng), so a program that does not ask never loads
 * lttng-ust. The probes and every call site live here, which makes the
 * library a provider that needs nothing from the program; libctrace never
 * unloads it (LTTng-UST does not count references to a provider).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "ctrace_tp.h"

#include "ctrace_lttng.h"

/* Both switches are generated from the table the tracepoints are declared
 * from (CTR_LTTNG_TRACEPOINTS), so a new row needs no code here. An event
 * is told by its type and whether it came from a SWITCHES record (LOST
 * is two tracepoints). */
#define EV_CASE(TYPE, sched, name, members)                  \
    case CTR_EV_##TYPE << 1 | sched:                         \
        lttng_ust_tracepoint(ctrace, name, th, ts, a, p, n); \
        break;
#define REC_CASE(KIND, name, members)                     \
    case CTR_REC_##KIND:                                  \
        lttng_ust_tracepoint(ctrace, name, a, tu, tb, n); \
        break;
#define NO_MEMBERS(...)

static void send_event(uint64_t th, uint64_t ts, uint8_t type, int sched, const uint64_t *a,
                       const void *payload, uint32_t n)
{
    const char *p = payload;
    switch (type << 1 | !!sched) {
        CTR_LTTNG_TRACEPOINTS(EV_CASE, NO_MEMBERS, NO_MEMBERS, NO_MEMBERS)
    default:
        break;
    }
}

static void send_record(uint8_t kind, const uint64_t *a, const uint64_t *tu, const void *tail_b,
                        uint32_t n)
{
    const char *tb = tail_b;
    switch (kind) {
        CTR_LTTNG_TRACEPOINTS(NO_MEMBERS, REC_CASE, NO_MEMBERS, NO_MEMBERS)
    default: /* BATCH and SWITCHES travel as their events */
        break;
    }
}

static int recording(void)
{
    return lttng_ust_tracepoint_enabled(ctrace, stack) != 0;
}

__attribute__((visibility("default")))
const struct ctr_lttng_ops ctrace_lttng_ops = {CTR_LTTNG_ABI, send_event, send_record, recording};
