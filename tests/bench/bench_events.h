/* SPDX-License-Identifier: MIT */
/* bench_events.h - the event-writing loops that several benchmarks time
 * (bench_hotpath: the native path; bench_lttng: the native path against
 * LTTng's): one event at a time, each in its own write section, by the
 * calling thread, which must be traced. Each returns ns per event, or -1
 * when the thread is not traced. Needs the tracer's internal.h. */
#ifndef CTR_BENCH_EVENTS_H
#define CTR_BENCH_EVENTS_H

#include "bench.h"
#include "core/emit.h"
#include "core/thread.h"
#include "ctrace_format.h"

static inline double run_emit_unblock(uint64_t iters)
{
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return -1;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++)
        ctr__emit_one(t, CTR_EV_UNBLOCK, NULL);
    return (double)(bench_now_ns() - t0) / (double)iters;
}

static inline double run_emit_block(uint64_t iters)
{
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return -1;
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        uint64_t args[3] = {CTR_REASON_MUTEX_LOCK, 0x7ffd00001000ull + (i & 0xff), 17};
        ctr__emit_one(t, CTR_EV_BLOCK, args);
    }
    return (double)(bench_now_ns() - t0) / (double)iters;
}

#endif
