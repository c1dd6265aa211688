/* SPDX-License-Identifier: MIT */
/* sched.h - context switches, from each thread's perf_event ring (sched.c);
 * the ring's opening is in core/hooks.h (the thread opens it). */
#ifndef CTR_SCHED_H
#define CTR_SCHED_H

#include <stddef.h>
#include <stdint.h>

struct ctr_thread;

/* ---------------------------------------------------------------------------
 * Context switches (sched.c)
 * ------------------------------------------------------------------------- */

/* A session that records switches begins: rings opened from now on have
 * data_bytes (a power of two) of data, at least a page. With `idle` (no
 * thread of an earlier session may still write, and no collector runs),
 * the rings that threads kept from an earlier session with another size are
 * closed, to be opened again at the new size. */
void ctr__sched_session(size_t data_bytes, int idle);
/* Stops t's ring recording (the session ended). */
void ctr__sched_disable(struct ctr_thread *t);
/* Collector: reads t's ring, calling on_switch for each switch at or after
 * since_ns and on_lost for records the kernel had to drop. */
void ctr__sched_drain(struct ctr_thread *t, uint64_t since_ns,
                      void (*on_switch)(void *ctx, uint64_t ns, int out, int preempted),
                      void (*on_lost)(void *ctx, uint64_t n), void *ctx);

#endif /* CTR_SCHED_H */
