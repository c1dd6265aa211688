/* SPDX-License-Identifier: MIT */
/* engine.h - the analyzer's event loop: merges the threads' events into one
 * time order, runs the state machine (state.h) over them and hands events
 * and intervals to the consumers (the analyses: stats, profiles, threads,
 * tasks, and the writers of other formats).
 *
 * Events arrive as segments: runs of one thread's events already in time
 * order (a generation's batches of that thread, or its context switches),
 * each tagged with the generation it came from. The merge is a k-way merge
 * over each thread's two streams (batches and switches), a heap keyed by
 * the head events' (time, release first, thread id, batches before
 * switches); so at equal times a thread's own order stands, as a stable
 * sort by time would leave it, and releases come before what they release.
 * Segments may be added while earlier ones are being consumed: the
 * pipeline (pipeline.c) adds generation g+1 before it drains generation g,
 * so events a thread buffered across a generation's end still come in
 * order. The engine only points at the events; whoever added them keeps
 * them alive until ctr_engine_drain() has consumed their tag.
 *
 * Not thread-safe: one caller (the pipeline's main thread).
 */
#ifndef CTR_ENGINE_H
#define CTR_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "read/trace.h"
#include "read/state.h"

/* A consumer of the merged trace. Each callback may be NULL. They see t's
 * tables as read so far (every stack and string an event refers to is in),
 * and are called on the pipeline's main thread only. */
struct ctr_consumer {
    void *ctx;
    /* Every event, in time order; `thread` indexes t->threads. */
    void (*event)(void *ctx, const struct ctr_trace *t, uint32_t thread,
                  const struct ctr_trace_event *e);
    /* Every interval of the state machine, as it ends. */
    ctr_interval_fn interval;
    /* Every interval as it begins (state.h, ctr_states_new()). */
    ctr_interval_fn begin;
    /* Now and then (every few thousand events, and when the trace ends):
     * intervals before ns are final (ctr_states_settled()); UINT64_MAX
     * once every interval is out. */
    void (*settle)(void *ctx, uint64_t ns);
    /* A thread's CPU_TIME reading, as its generation is read: before the
     * intervals that end after it, not always after those that end before
     * it (a trace read whole gives every reading first). */
    void (*cputime)(void *ctx, const struct ctr_trace *t, uint32_t thread,
                    const struct ctr_cpu_reading *r);
    /* A missing part of the trace (a damaged generation was skipped). */
    void (*gap)(void *ctx, const struct ctr_trace *t, uint64_t from_ns, uint64_t to_ns);
};

struct ctr_engine;

/* ctr_engine_new() : an engine over trace t feeding the n consumers c[]
 * (copied). t must outlive it. @return NULL if out of memory. */
struct ctr_engine *ctr_engine_new(const struct ctr_trace *t, const struct ctr_consumer *c,
                                  size_t n);
void ctr_engine_free(struct ctr_engine *e);

/* ctr_engine_add() : queues ev[0..n-1], events of thread index `thread` in
 * time order, behind what that thread's stream (`switches`: its context
 * switches; else its own events) already has. Tags never decrease.
 * @return 0 or -ENOMEM. */
int ctr_engine_add(struct ctr_engine *e, uint32_t thread, int switches,
                   const struct ctr_trace_event *ev, size_t n, uint64_t tag);

/* ctr_engine_first_ns() : the time of the earliest event queued, or
 * UINT64_MAX when none is. */
uint64_t ctr_engine_first_ns(const struct ctr_engine *e);

/* ctr_engine_hold() : events dated from ns on may still be added, after
 * later ones were consumed (an I/O call's Block is written when it returns,
 * dated when it began: FORMAT.md §3.1's PENDING records name the calls in
 * progress); the consumers' settle time stays before ns until the next
 * hold. UINT64_MAX: none. */
void ctr_engine_hold(struct ctr_engine *e, uint64_t ns);

/* ctr_engine_drain() : consumes events in time order until none of a
 * segment tagged `tag` or lower is left (UINT64_MAX: all).
 * @return 0 or -ENOMEM. */
int ctr_engine_drain(struct ctr_engine *e, uint64_t tag);

/* ctr_engine_cputime() : gives thread index `thread`'s reading r to the
 * consumers now. */
void ctr_engine_cputime(struct ctr_engine *e, uint32_t thread, const struct ctr_cpu_reading *r);

/* ctr_engine_gap() : after draining all, tells the state machine and the
 * consumers that [from_ns, to_ns] is missing. */
void ctr_engine_gap(struct ctr_engine *e, uint64_t from_ns, uint64_t to_ns);

/* ctr_engine_finish() : drains all and ends every thread's state at
 * t->end_ns. @return the events that did not fit the state machine, or
 * UINT64_MAX if out of memory. */
uint64_t ctr_engine_finish(struct ctr_engine *e);

/* ctr_trace_replay() : runs the engine over a trace read whole
 * (ctr_trace_read()), feeding the n consumers c[]; *odd (may be NULL) gets
 * the events that did not fit the state machine. @return 0 or -ENOMEM. */
int ctr_trace_replay(const struct ctr_trace *t, const struct ctr_consumer *c, size_t n,
                     uint64_t *odd);

#endif
