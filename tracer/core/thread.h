/* SPDX-License-Identifier: MIT */
/* thread.h - the traced threads' slots, the slab that holds them, and the
 * calling thread's own (thread.c). */
#ifndef CTR_THREAD_H
#define CTR_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/lfstack.h"
#include "core/lock.h"
#include "core/perfring.h"
#include "core/segarr.h"

/* ---------------------------------------------------------------------------
 * Threads (thread.c)
 * ------------------------------------------------------------------------- */

/* Who owns a slot when (the hand-off protocol; thread.c says it in full):
 *   FREE      on the free list; a registering thread pops it and owns it.
 *   LIVE      its thread's. The collector reads the shared fields only.
 *   EXITED    the thread is handing its last chunk to the collector; after
 *             the push the thread never touches the slot again, and the
 *             collector frees it once it has written that chunk.
 *   ORPHANED  the thread ended with no chunk to hand over and has made its
 *             last store; the collector (or the next session's start) frees
 *             it.
 * Slots are freed by the collector during a session, by the session's start
 * between sessions, and by an exiting thread itself when no session runs;
 * always under ctr__threads.reclaim, which readers of other threads' slots
 * (dumps, pthread_setname_np on another thread) hold too. */
enum ctr_slot_state { CTR_SLOT_FREE = 0, CTR_SLOT_LIVE, CTR_SLOT_EXITED, CTR_SLOT_ORPHANED };

/* What an open call mark (call_kind) stands for: a call the trace must hear
 * the end of however it ends (returned, cancelled, jumped out of). */
enum ctr_call_kind {
    CTR_CALL_NONE = 0,
    CTR_CALL_IO,      /* an I/O call: its span is written when it ends (long enough) */
    CTR_CALL_BLOCKED, /* a wait whose Block is written: its Unblock is owed */
};

/* Names remembered per thread (annotate.c): 1 << CTR_NAME_MEMO_SET_BITS
 * sets of CTR_NAME_MEMO_WAYS. */
#define CTR_NAME_MEMO_SET_BITS 3
#define CTR_NAME_MEMO_WAYS 4u
#define CTR_NAME_MEMO ((1u << CTR_NAME_MEMO_SET_BITS) * CTR_NAME_MEMO_WAYS)

struct ctr_thread {
    /* Owner-only, touched on every event. */
    uint8_t *pos, *end;      /* write cursor in chunk->data */
    uint64_t last_ticks;     /* time of the previous event */
    uint64_t base_ticks;     /* == chunk->base_ticks */
    struct ctr_chunk *chunk; /* owner's current chunk (or NULL) */
    uint32_t epoch;          /* session the chunk belongs to */
    uint32_t section_epoch;  /* session of the write section in progress */
    /* 1 while the owner writes an event (a write section, see emit.h); the
     * owner stores it, relaxed on entry and release on exit; a stopping
     * session reads it (acquire) to wait for writers to leave. */
    _Atomic uint32_t writing;
    uint32_t internal;       /* > 0: the tracer itself is calling out; not traced */
    uintptr_t section_frame; /* frame address where the section began */
    uint64_t id;             /* trace thread id, unique per registration */
    uint64_t lost_pending;   /* drops not yet reported by a LOST event */
    /* The names this thread's annotations used last (annotate.c), so that
     * a name passed again costs a compare instead of a hash and a probe of
     * the shared table. Owner-only. */
    struct ctr_name_memo {
        const char *ptr;
        const struct ctr_intern_entry *entry;
    } names[CTR_NAME_MEMO];

    /* Shared with the collector. */
    _Atomic(struct ctr_chunk *) cur; /* owner: release on change */
    _Atomic uint64_t dropped;        /* owner (and its signal handlers) add, collector reads */
    _Atomic int state;               /* enum ctr_slot_state */
    /* The thread's CPU time (ns) and the ticks it was read at, by the
     * thread itself as it ended (perf/cputime.c): no one can read an ended
     * thread's clock. Written before the release store of `state` (EXITED,
     * ORPHANED) that the collector's acquire load pairs with. */
    uint64_t end_cpu_ns, end_cpu_ticks, end_cpu_delay_ns;
    uint32_t end_cpu_flags;
    /* The same as it registered (set before `state` becomes LIVE). */
    uint64_t start_cpu_ns, start_cpu_ticks;

    /* Set at registration, before state becomes LIVE (release). */
    uintptr_t stack_lo, stack_hi; /* the thread's stack, [lo, hi) */
    pthread_t handle;
    int os_tid;
    uint64_t parent_id;
    uint32_t name_id; /* string id of the name at registration */
    uint32_t slot;

    /* The open call (wait.c): owner-only, set while a wrapper is inside the
     * real call. A signal handler's own calls leave a set mark alone. */
    uint8_t call_kind;    /* enum ctr_call_kind */
    uintptr_t call_frame; /* the wrapper's frame address */
    uintptr_t call_obj;   /* CTR_CALL_IO: the descriptor, for the span */
    /* CTR_CALL_IO also publishes the call for the collector, which reads it
     * for PENDING records and a trace's trailer (records.c, pending_calls):
     * a seqlock whose sequence is io_start (0: no call). The owner clears
     * io_start when a call ends (ctr__io_end); for the next one it makes a
     * release fence, writes the fields, then io_start (release). The reader
     * loads io_start (acquire), the fields, makes an acquire fence and loads
     * io_start again: if it changed, the fields may be another call's and
     * are discarded. The fields are relaxed atomics: they may change under
     * the reader, which is no data race. */
    _Atomic uint64_t io_start; /* ticks; 0: none */
    _Atomic uintptr_t io_pc;   /* the call site */
    _Atomic int32_t io_fd;
    _Atomic uint8_t io_reason, io_rules; /* io_rules: CTR_IO_BY_FD, CTR_IO_NB_FD */

    struct ctr_lfnode node; /* free-slot list; fields above are zeroed at registration */

    /* Kept across the slot's memset at registration, which first closes
     * the previous occupant's (ctr__cpu_close, ctr__perf_close). */
    struct ctr_perf_ring sched_ring; /* context switches (sched.c) */
    /* CPU sampling (cpu.c). */
    struct ctr_perf_ring cpu_ring; /* perf_event samples */
    size_t cpu_ring_data;          /* its data bytes, the stack copy and */
    unsigned cpu_ring_copy;        /* the period it was opened with (the */
    uint64_t cpu_ring_period;      /* opener's) */
    /* The collector's, reset by the opener before the ring is published:
     * whether the first sample came (and the real period was set); the CPU
     * ns of samples thinned since the last one kept; the first period
     * (cpu.c, "Phase"). */
    int cpu_phase;
    uint64_t cpu_credit, cpu_first;
    /* The session whose sampler this thread has: claimed by CAS, so that
     * the thread and the session's start never both open one. */
    _Atomic uint32_t cpu_epoch;
    /* The timer source's kernel timer id, valid in CTR_CPU_TIMER_ARMED;
     * every change goes through BUSY by CAS (cpu.c), so that the thread's
     * exit and the session's end never both delete it, and never delete an
     * id the program's own timer_create got since. */
    _Atomic int cpu_timer_state;
    int cpu_timer_id;
};

/* The thread slab: slots are recycled through free_slots (see above). Its
 * memory is mapped a segment of slots at a time as `high` grows
 * (core/segarr.h): a slot below high may still be unmapped (its taker is
 * mapping it, or the kernel refused), which ctr__thread_at says with NULL. */
struct ctr_threads {
    struct ctr_segarr slab;
    uint32_t capacity;
    _Atomic uint32_t high; /* slots [0, high) have been handed out */
    struct ctr_lfstack free_slots;
    _Atomic uint64_t next_id;
    _Atomic uint64_t unregistered; /* threads that found no slot */
    /* Threads between the start and the end of their exit hand-off
     * (ctr__thread_exit): a stopping session waits for it to be 0. */
    _Atomic uint32_t exiting;
    struct ctr_lock reclaim; /* see enum ctr_slot_state */
};

extern struct ctr_threads ctr__threads;

/* Slot i, or NULL when its segment is not mapped (never handed out). */
static inline struct ctr_thread *ctr__thread_at(uint32_t i)
{
    return (struct ctr_thread *)ctr_segarr_at(&ctr__threads.slab, i);
}

/* Slot i, which the caller knows was handed out (a live thread's). */
static inline struct ctr_thread *ctr__thread_slot(uint32_t i)
{
    return (struct ctr_thread *)ctr_segarr_elem(&ctr__threads.slab, i);
}

/* Whether the slab exists (ctr__threads_init succeeded). */
static inline int ctr__threads_ready(void)
{
    return ctr_segarr_ready(&ctr__threads.slab);
}

/* The calling thread's slot, NULL before registration; &ctr__thread_off when
 * the thread is exiting or is the collector (its `internal` is never 0). */
extern __thread struct ctr_thread *ctr__self __attribute__((tls_model("initial-exec")));
extern struct ctr_thread ctr__thread_off;

struct ctr_thread *ctr__thread_register(uint64_t id, uint64_t parent_id);
uint64_t ctr__thread_new_id(void);
/* The live slot of the thread with this handle, or NULL; its id and slot
 * into *id (the slot may be freed once this returns). */
int ctr__thread_find(pthread_t handle, uint64_t *id);
/* Puts a slot back on the free list, under ctr__threads.reclaim. */
void ctr__thread_free_slot(struct ctr_thread *t);
/* Before a session is published (trace_start): zeroes every slot's drop
 * count and current chunk, so nothing of an earlier session is reported or
 * read, and frees the slots of threads that ended meanwhile (not those of
 * EXITED threads when `keep_exited`: a writer of the last session was not
 * seen to leave and may still be handing its chunk over). */
void ctr__threads_reset_session(int keep_exited);
void ctr__threads_init(void);
/* Unmaps the slab (ctr__threads_ready() is 0 again), for a first start that
 * failed: only while no thread was ever given a slot. Under the API lock. */
void ctr__threads_release(void);
/* In a forked child (alone), after the intern tables were emptied: frees
 * every slot but the calling thread's, and forgets what the parent's
 * threads held (locks, rings, chunks). */
void ctr__threads_forked(void);
/* Calls fn on every slot ever used, whatever its state. No lock: for what
 * no one else touches meanwhile (a session's start, under the API lock,
 * before the collector runs), or state that takes its own turns (CAS). */
void ctr__threads_each(void (*fn)(struct ctr_thread *t, void *ctx), void *ctx);
/* Waits until no thread is inside a write section or an exit hand-off,
 * after the session's epoch went to 0: a full memory barrier on every
 * thread of the process (membarrier), then a scan of the slots. Gives up
 * after timeout_ns (a signal handler that never returns, interrupting an
 * event). @return 0, or -ETIMEDOUT when some writer did not leave. */
int ctr__threads_quiesce(uint64_t timeout_ns);
/* At the end of the calling thread (its TSD destructor): closes its open
 * call, writes ThreadEnd and hands its last chunk to the collector. */
void ctr__thread_exit(struct ctr_thread *t);

/* ctr__internal_begin() / ctr__internal_end() : while between them, the
 * calling thread's calls to wrapped functions go straight to the real ones
 * (the tracer calling libunwind, creating its own thread). Nest properly. */
static inline struct ctr_thread *ctr__internal_begin(void)
{
    struct ctr_thread *saved = ctr__self;
    if (saved && saved != &ctr__thread_off)
        saved->internal++;
    else
        ctr__self = &ctr__thread_off;
    return saved;
}

static inline void ctr__internal_end(struct ctr_thread *saved)
{
    if (saved && saved != &ctr__thread_off)
        saved->internal--;
    else
        ctr__self = saved;
}

#endif /* CTR_THREAD_H */
