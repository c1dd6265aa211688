/* SPDX-License-Identifier: MIT */
/* emit.h - writing events: the write section every event is written in, and
 * the encoder's fast path into the thread's chunk (slow path in thread.c). */
#ifndef CTR_EMIT_H
#define CTR_EMIT_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/clock.h"
#include "core/common.h"
#include "core/hooks.h"
#include "core/pool.h"
#include "core/session.h"
#include "core/thread.h"
#include "ctrace_format.h"

/* ---------------------------------------------------------------------------
 * Write sections: the one guarded path of every event (thread.c)
 *
 * A thread writes events only between ctr__write_begin() and
 * ctr__write_end() on its own slot. The section is what makes three things
 * safe:
 *   - Re-entry. A signal handler that interrupts a section and reaches a
 *     traced call finds `writing` set: its event is counted as dropped
 *     instead of being written into the half-written one.
 *   - Stopping. ctr__session_end stores epoch 0, then waits for every
 *     section to end (ctr__threads_quiesce), so no thread still writes into
 *     the pool when the final round reads it or the next session reuses it.
 *     The section's relaxed store of `writing` is ordered before its load of
 *     the epoch by the stopper's membarrier (which makes every running thread
 *     execute a full barrier), so either the stopper sees `writing` set or
 *     the writer sees epoch 0. The release store that ends a section pairs
 *     with the stopper's acquire load: the section's stores happen before
 *     whatever the stopper does next.
 *   - Sessions. The section remembers its epoch (section_epoch) and writes
 *     only into a chunk of that epoch and a pool whose epoch it is: a thread
 *     that a stop gave up waiting for cannot cross into the next session.
 * ------------------------------------------------------------------------- */

/* A signal handler interrupted t's section: its `events` are not written. */
void ctr__drop_nested(struct ctr_thread *t, unsigned events);

/* ctr__write_begin_n() : opens a write section on t, the calling thread's
 * own slot, for `events` events. @return 1 when they may be written (end
 * with ctr__write_end), 0 when not: tracing is off, or t is already writing
 * (a signal handler interrupted an event; these are counted as dropped). */
static inline int ctr__write_begin_n(struct ctr_thread *t, unsigned events)
{
    /* relaxed: only this thread (and its signal handlers, on this CPU) stores
     * `writing`; the stopper's side is described above. */
    if (CTR_UNLIKELY(atomic_load_explicit(&t->writing, memory_order_relaxed))) {
        ctr__drop_nested(t, events);
        return 0;
    }
    atomic_store_explicit(&t->writing, 1, memory_order_relaxed);
    /* Keeps the compiler from moving the store after the load below, or the
     * section's stores before the store (a handler on this thread must see
     * `writing` first); the CPU's side is the stopper's membarrier. */
    atomic_signal_fence(memory_order_seq_cst);
    /* acquire: pairs with the release store of the epoch in
     * ctr__session_begin (api.c), so the session's fields (pool, stack
     * depth, ...) are visible. */
    uint32_t epoch = atomic_load_explicit(&ctr__session.epoch, memory_order_acquire);
    if (CTR_UNLIKELY(epoch == 0)) {
        /* release: as in ctr__write_end. */
        atomic_store_explicit(&t->writing, 0, memory_order_release);
        return 0;
    }
    t->section_epoch = epoch;
    t->section_frame = (uintptr_t)__builtin_frame_address(0);
    return 1;
}

/* ctr__write_begin() : a section for one event. */
static inline int ctr__write_begin(struct ctr_thread *t)
{
    return ctr__write_begin_n(t, 1);
}

/* ctr__write_end() : closes the section ctr__write_begin opened. */
static inline void ctr__write_end(struct ctr_thread *t)
{
    /* release: every store of the section before a stopper's acquire load
     * that sees 0 (ctr__threads_quiesce); also a compiler barrier against
     * the handler case. */
    atomic_store_explicit(&t->writing, 0, memory_order_release);
}

/* ---------------------------------------------------------------------------
 * Writing events, inside a write section (fast path inline, slow path in
 * thread.c)
 * ------------------------------------------------------------------------- */

void ctr__emit_slow(struct ctr_thread *t, uint8_t type, uint64_t now, const uint64_t *args,
                    const void *payload, size_t len);

/* Where events go besides the chunks (collect/sink.c sets it as sinks
 * come and go; defined in session.c):
 * OFF, only the chunks; ALSO, LTTng and the chunks; ONLY, LTTng alone (no
 * sink reads chunks). */
enum { CTR_INLINE_OFF = 0, CTR_INLINE_ALSO, CTR_INLINE_ONLY };
extern _Atomic int ctr__inline_mode;

/* Bytes ahead of the write cursor to prefetch (a few cache lines). */
#define CTR_PREFETCH_AHEAD 256

/* ctr__emit_chunk() : ctr__emit_payload() into t's chunk alone, with `now`
 * no earlier than the thread's last event. */
static inline void ctr__emit_chunk(struct ctr_thread *t, uint8_t type, uint64_t now,
                                   const uint64_t *args, const void *payload, size_t len)
{
    if (CTR_UNLIKELY((size_t)(t->end - t->pos) < CTR_MAX_EVENT_BYTES + len ||
                     now - t->base_ticks >= CTR_TICKS_WINDOW || t->epoch != t->section_epoch)) {
        ctr__emit_slow(t, type, now, args, payload, len);
        return;
    }
    uint8_t *p = ctr_encode_event(t->pos, type, now - t->last_ticks, args);
    /* The chunk's next lines are cold (the collector last read them, on
     * another CPU): ask for them ahead, so the store that first reaches one
     * does not stall the thread. */
    __builtin_prefetch(p + CTR_PREFETCH_AHEAD, 1);
    if (len) {
        memcpy(p, payload, len);
        p += len;
    }
    t->pos = p;
    t->last_ticks = now;
    /* Release: the event bytes above are visible to the collector before it
     * sees the position that covers them (pairs with the acquire load in
     * write_chunk, collector.c). */
    atomic_store_explicit(&t->chunk->commit,
                          ((now - t->base_ticks) << CTR_COMMIT_POS_BITS) |
                              (uint64_t)(p - t->chunk->data),
                          memory_order_release);
}

/* ctr__emit_payload() : appends event `type` at time `now` (ticks) with
 * args[0..nargs-2] (the arguments after the time delta, as many as
 * ctr_event_specs[type] says) to t's chunk, followed by `len` raw bytes
 * (for an event whose last argument is a LENGTH, which must equal len;
 * len <= CTR_MAX_EVENT_PAYLOAD), and sends it to LTTng when a sink takes
 * events as they are written (ctr__inline_mode). A time before the
 * thread's last event is written as that event's time. Owner thread only,
 * inside a write section. With `type` a constant and no payload,
 * ctr_encode_event's loop unrolls and the copy disappears. */
static inline void ctr__emit_payload(struct ctr_thread *t, uint8_t type, uint64_t now,
                                     const uint64_t *args, const void *payload, size_t len)
{
    /* Time never runs backwards within a thread, even if the TSCs of two
     * CPUs disagree a little after a migration. This also keeps
     * now - base_ticks from wrapping. */
    if (now < t->last_ticks)
        now = t->last_ticks;
    /* relaxed: a mode that changes only as sinks come and go; the event is
     * written by the rules of whichever mode it sees (ctr__lttng_event
     * loads what it needs with acquire). */
    int mode = atomic_load_explicit(&ctr__inline_mode, memory_order_relaxed);
    if (CTR_UNLIKELY(mode != CTR_INLINE_OFF)) {
        ctr__lttng_event(t, type, now, args, payload, len);
        if (mode == CTR_INLINE_ONLY) {
            t->last_ticks = now;
            return;
        }
    }
    ctr__emit_chunk(t, type, now, args, payload, len);
}

/* ctr__emit_at() : an event with no payload at time `now`. */
static inline void ctr__emit_at(struct ctr_thread *t, uint8_t type, uint64_t now,
                                const uint64_t *args)
{
    ctr__emit_payload(t, type, now, args, NULL, 0);
}

/* ctr__emit() : ctr__emit_at(), now. */
static inline void ctr__emit(struct ctr_thread *t, uint8_t type, const uint64_t *args)
{
    ctr__emit_at(t, type, ctr__ticks(), args);
}

/* ctr__emit_one() : one event in a section of its own (the annotations'
 * and thread events' way). */
static inline void ctr__emit_one(struct ctr_thread *t, uint8_t type, const uint64_t *args)
{
    if (ctr__write_begin(t)) {
        ctr__emit(t, type, args);
        ctr__write_end(t);
    }
}

/* ctr__self_traced() : the calling thread's slot if tracing is on and the
 * tracer is not itself calling out (ctr__internal_begin); registers the
 * thread on first use. NULL means: do not trace this call. A thread inside
 * a write section (a signal handler interrupted it) still gets its slot:
 * the section's check counts what it would have written. */
static inline struct ctr_thread *ctr__self_traced(void)
{
    /* relaxed: as in ctr__tracing. */
    if (CTR_LIKELY(atomic_load_explicit(&ctr__session.epoch, memory_order_relaxed) == 0))
        return NULL;
    struct ctr_thread *t = ctr__self;
    if (CTR_UNLIKELY(t == NULL))
        t = ctr__thread_register(ctr__thread_new_id(), 0);
    if (t == NULL || t->internal)
        return NULL;
    return t;
}

/* ctr__self_traced_keeping_errno() : ctr__self_traced(), keeping errno when
 * it registers the thread (a wrapper's call that succeeds must leave the
 * caller's errno as it was). */
static inline struct ctr_thread *ctr__self_traced_keeping_errno(void)
{
    if (CTR_UNLIKELY(ctr__self == NULL)) {
        int saved = errno;
        struct ctr_thread *t = ctr__self_traced();
        errno = saved;
        return t;
    }
    return ctr__self_traced();
}

#endif /* CTR_EMIT_H */
