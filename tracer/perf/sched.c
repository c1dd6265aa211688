/* SPDX-License-Identifier: MIT */
/* sched.c - context switches from perf_event, the opt-in second source of the
 * sched profile (trace_options.sched_switches).
 *
 * Each traced thread opens a software perf event on itself with
 * context_switch=1 and exclude_kernel=1, which needs no privilege
 * (perf_event_paranoid <= 2) and makes the kernel append a record to a small
 * ring buffer at every switch out (marked when the thread was preempted) and
 * every switch in, stamped with CLOCK_MONOTONIC. The collector drains the
 * rings each generation (ctr__sched_drain). That adds preemption, which
 * release events cannot see, and the exact time a released waiter ran again.
 * The ring and its protocol are perfring.c's; a ring is kept across
 * sessions and unmapped only when its slot is reused by a new thread.
 */
#include "perf/sched.h"

#include "core/hooks.h"
#include "core/perfring.h"
#include "core/session.h"
#include "core/thread.h"
#include "ctrace_options.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

/* Bytes of data of the rings opened now (a power of two, at least a page):
 * set at a session's start, before the session is published (relaxed). 24
 * bytes a switch: 64 KiB, the default, hold about 2700 per flush. */
static _Atomic size_t ring_data_bytes = CTR_SCHED_RING_DEFAULT;

/* Closes t's ring if it is not of `bytes` (the mapping's, page included). */
static void close_other_size(struct ctr_thread *t, void *bytes)
{
    if (ctr__perf_is_open(&t->sched_ring) && t->sched_ring.bytes != *(size_t *)bytes)
        ctr__perf_close(&t->sched_ring);
}

void ctr__sched_session(size_t data_bytes, int idle)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (data_bytes < page)
        data_bytes = page;
    /* relaxed: see ring_data_bytes. */
    atomic_store_explicit(&ring_data_bytes, data_bytes, memory_order_relaxed);
    size_t bytes = page + data_bytes;
    if (idle)
        ctr__threads_each(close_other_size, &bytes);
}

void ctr__sched_open(struct ctr_thread *t)
{
    if (ctr__perf_is_open(&t->sched_ring)) {
        /* Still this thread's from an earlier session: drop what it
         * recorded since, and record again. */
        ctr__perf_restart(&t->sched_ring);
        return;
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    a.sample_id_all = 1;
    a.context_switch = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    /* relaxed: see ring_data_bytes. */
    if (ctr__perf_open(&t->sched_ring, &a, 0,
                       atomic_load_explicit(&ring_data_bytes, memory_order_relaxed)) != 0)
        /* relaxed: a count read only for the trace's trailer (records.c). */
        atomic_fetch_add_explicit(&ctr__session.sched_failed, 1, memory_order_relaxed);
}

void ctr__sched_disable(struct ctr_thread *t)
{
    ctr__perf_disable(&t->sched_ring);
}

/* A drain's callbacks and their context. */
struct switch_drain {
    uint64_t since_ns;
    void (*on_switch)(void *ctx, uint64_t ns, int out, int preempted);
    void *ctx;
};

static void on_record(void *ctx, const struct perf_event_header *h, const uint8_t *body, size_t len)
{
    const struct switch_drain *d = ctx;
    /* SWITCH: header, then sample_id {u32 pid, u32 tid, u64 time}. */
    if (h->type != PERF_RECORD_SWITCH || len < 16)
        return;
    uint64_t ns;
    memcpy(&ns, body + 8, sizeof(ns));
    if (ns >= d->since_ns)
        d->on_switch(d->ctx, ns, (h->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0,
                     (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0);
}

void ctr__sched_drain(struct ctr_thread *t, uint64_t since_ns,
                      void (*on_switch)(void *ctx, uint64_t ns, int out, int preempted),
                      void (*on_lost)(void *ctx, uint64_t n), void *ctx)
{
    struct switch_drain d = {since_ns, on_switch, ctx};
    uint64_t lost = ctr__perf_drain(&t->sched_ring, on_record, &d);
    if (lost)
        on_lost(ctx, lost);
}
