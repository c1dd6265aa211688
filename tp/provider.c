/* provider.c - libctrace-lttng: the `ctrace` LTTng-UST tracepoint provider
 * (ctrace_tp.h) and the function table through which libctrace sends its
 * events to it (struct ctr_lttng_ops, tracer/format/ctrace_lttng.h).
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

static void send_event(uint64_t th, uint64_t ts, uint8_t type, int sched, const uint64_t *a,
                       const void *payload, uint32_t n)
{
    const char *p = payload;
    switch (type) {
#define EV(NAME, name)                                                  \
    case CTR_EV_##NAME:                                                 \
        lttng_ust_tracepoint(ctrace, name, th, ts, a, p, n);            \
        break;
        EV(THREAD_CREATE, thread_create)
        EV(THREAD_START, thread_start)
        EV(THREAD_END, thread_end)
        EV(THREAD_NAME, thread_name)
        EV(BLOCK, block)
        EV(UNBLOCK, unblock)
        EV(RELEASE, release)
        EV(SWITCH_OUT, switch_out)
        EV(SWITCH_IN, switch_in)
        EV(TASK_BEGIN, task_begin)
        EV(TASK_END, task_end)
        EV(REGION_BEGIN, region_begin)
        EV(REGION_END, region_end)
        EV(LOG, log)
#undef EV
    case CTR_EV_LOST:
        if (sched)
            lttng_ust_tracepoint(ctrace, sched_lost, th, ts, a, p, n);
        else
            lttng_ust_tracepoint(ctrace, lost, th, ts, a, p, n);
        break;
    default:
        break;
    }
}

static void send_record(uint8_t kind, const uint64_t *a, const uint64_t *tu, const void *tail_b,
                        uint32_t n)
{
    const char *tb = tail_b;
    switch (kind) {
#define REC(NAME, name)                                                 \
    case CTR_REC_##NAME:                                                \
        lttng_ust_tracepoint(ctrace, name, a, tu, tb, n);               \
        break;
        REC(TRACE_INFO, trace_info)
        REC(GEN_BEGIN, gen_begin)
        REC(GEN_END, gen_end)
        REC(CLOCK, clock)
        REC(STRING, string)
        REC(STACK, stack)
        REC(THREAD, thread)
        REC(MAPPING, mapping)
        REC(DROPS, drops)
        REC(END, end)
        REC(PENDING, pending)
        REC(WAITING, waiting)
#undef REC
    default: /* BATCH and SWITCHES travel as their events */
        break;
    }
}

static int recording(void)
{
    return lttng_ust_tracepoint_enabled(ctrace, stack) != 0;
}

__attribute__((visibility("default"))) const struct ctr_lttng_ops ctrace_lttng_ops = {
    CTR_LTTNG_ABI, send_event, send_record, recording};
