/* SPDX-License-Identifier: MIT */
/* records.c - the records that describe the traced process rather than its
 * events (FORMAT.md §3): TRACE_INFO, CLOCK, MAPPING, STRING, STACK, THREAD,
 * WAITING, and for the calls still in progress the PENDING records of each
 * generation and the one-event batches of a trace's trailer.
 *
 * The collector writes them into each generation (which repeats what its
 * events need: genstate.c); a sink that ends a trace (the file, a flight
 * recorder's dump) writes the trailer (ctr__rec_trailer), from whatever
 * thread it runs on. So nothing here keeps state between calls or belongs
 * to one thread: each
 * function writes into the buffer it is given, and reads only what any
 * thread may read (the lock-free intern tables, the loader's list of
 * objects, the thread slab under its reclaim lock, which the callers of the
 * slab scans hold).
 */
#include "collect/records.h"

#include "core/clock.h"
#include "core/fdclass.h"
#include "core/intern.h"
#include "core/lock.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "ctrace_record.h"
#include "wrap/wait.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

uint32_t ctr__rec_trace_info(struct ctr_outbuf *o)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    uint32_t exe_id = n > 0 ? ctr__intern(&ctr__strings, exe, (uint32_t)n) : 0;
    /* relaxed: as in ctr__ticks (core/clock.h). */
    CTR_REC_PUT(o, TRACE_INFO, (uint64_t)getpid(),
                atomic_load_explicit(&ctr__clock_tsc, memory_order_relaxed)
                    ? CTR_TICKS_TSC
                    : CTR_TICKS_MONOTONIC_NS,
                ctr__stack_info() | (ctr__session.sched ? CTR_INFO_SCHED_SWITCHES : 0), exe_id,
                ctr__session.io_min_ns);
    return exe_id;
}

void ctr__rec_clock(struct ctr_outbuf *o, const struct ctr_clock_sample *c)
{
    CTR_REC_PUT(o, CLOCK, c->ticks, c->mono, c->real);
}

void ctr__rec_mapping(struct ctr_outbuf *o, uint64_t id, uint64_t start, uint64_t limit,
                      uint64_t file_offset, uint64_t bias, uint32_t path, const uint8_t *build_id,
                      size_t build_id_len)
{
    CTR_REC_PUT_BYTES(o, MAPPING, build_id, build_id_len, id, start, limit, file_offset, bias,
                      path);
}

void ctr__rec_string(struct ctr_outbuf *o, const struct ctr_intern_entry *e)
{
    CTR_REC_PUT_BYTES(o, STRING, e->bytes, e->len, e->id);
}

void ctr__rec_stack(struct ctr_outbuf *o, const struct ctr_intern_entry *e)
{
    /* Entries start 8-aligned in the arena, and so do their bytes. */
    CTR_REC_PUT_UVARINTS(o, STACK, (const uintptr_t *)(const void *)e->bytes,
                         e->len / sizeof(uintptr_t), e->id);
}

void ctr__rec_thread(struct ctr_outbuf *o, const struct ctr_thread *t, uint32_t name)
{
    CTR_REC_PUT(o, THREAD, t->id, (uint64_t)t->os_tid, t->parent_id, name, (uint64_t)t->handle);
}

void ctr__rec_waiting(struct ctr_outbuf *o, uint64_t thread_id, uint64_t ticks, uint64_t reason,
                      uint64_t object, uint64_t stack)
{
    CTR_REC_PUT(o, WAITING, thread_id, ticks, reason, object, stack);
}

void ctr__rec_block(struct ctr_outbuf *o, uint64_t thread_id, uint64_t ticks, uint64_t reason,
                    uint64_t object, uint64_t stack)
{
    /* A batch of its own whose base is the BLOCK's time: delta 0. */
    uint8_t ev[CTR_MAX_EVENT_BYTES];
    uint8_t *end = ctr_encode_event(ev, CTR_EV_BLOCK, 0, (const uint64_t[]){reason, object, stack});
    CTR_REC_PUT_BYTES(o, BATCH, ev, (size_t)(end - ev), thread_id, ticks);
}

/* The slab's used slots, for a scan (under ctr__threads.reclaim). */
static uint32_t slots_in_use(void)
{
    /* acquire: more than needed (slot_get's add, thread.c, is relaxed); each
     * slot is read after the acquire load of its state. */
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    return high < ctr__threads.capacity ? high : ctr__threads.capacity;
}

/* A call in progress (pending_calls). */
struct pending_call {
    uint32_t slot;
    uint64_t thread_id, ticks, reason, object;
    uintptr_t pc;
};

/* Calls emit for each thread inside an I/O call (or a wait for a process
 * or a signal) for io_min_ns or more. Under ctr__threads.reclaim. */
static void pending_calls(void (*emit)(void *ctx, const struct pending_call *c), void *ctx)
{
    uint64_t now = ctr__ticks();
    /* relaxed: a threshold on its own. acquire on the state: pairs with the
     * release store of LIVE in ctr__thread_register. */
    uint64_t min = atomic_load_explicit(&ctr__session.io_min_ticks, memory_order_relaxed);
    for (uint32_t s = 0; s < slots_in_use(); s++) {
        struct ctr_thread *t = ctr__thread_at(s);
        if (!t || atomic_load_explicit(&t->state, memory_order_acquire) != CTR_SLOT_LIVE)
            continue;
        /* The owner's protocol (ctr__io_begin, ctr__io_end): a seqlock whose
         * sequence is io_start. acquire: pairs with ctr__io_begin's release
         * store, so the fields it wrote before are seen. */
        uint64_t start = atomic_load_explicit(&t->io_start, memory_order_acquire);
        if (!start || now - start < min)
            continue;
        /* relaxed: the fields may change under us; the check below tells. */
        uint64_t reason = atomic_load_explicit(&t->io_reason, memory_order_relaxed);
        uintptr_t pc = atomic_load_explicit(&t->io_pc, memory_order_relaxed);
        int fd = atomic_load_explicit(&t->io_fd, memory_order_relaxed);
        int rules = atomic_load_explicit(&t->io_rules, memory_order_relaxed);
        /* acquire fence: if a field load above read a store of the owner's
         * next call, which the owner made after its release fence in
         * ctr__io_begin, then its clearing of io_start (before that fence)
         * is visible to the load below (relaxed: ordered by the fence), which
         * then differs from start. */
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&t->io_start, memory_order_relaxed) != start)
            continue;
        /* The rule of a call that returned: a call on a descriptor that
         * cannot block is working, not waiting, however long it takes. */
        if (!ctr__io_waited(rules, fd, 0))
            continue;
        struct pending_call c = {
            s, t->id, start, ctr__io_reason(reason, rules, fd), (uint64_t)(int64_t)fd, pc};
        emit(ctx, &c);
    }
}

struct pending_ctx {
    struct ctr_outbuf *o;
    void (*noted)(uint32_t slot, uint64_t thread_id, uint64_t stack);
};

static uint64_t call_site_stack(const struct pending_call *c)
{
    return c->pc ? ctr__intern(&ctr__stacks, &c->pc, sizeof(c->pc)) : 0;
}

/* PENDING(thread, start, reason, object, stack) (FORMAT.md §3). */
static void emit_pending(void *ctx, const struct pending_call *c)
{
    struct pending_ctx *pc = ctx;
    uint64_t stack = call_site_stack(c);
    pc->noted(c->slot, c->thread_id, stack);
    CTR_REC_PUT(pc->o, PENDING, c->thread_id, c->ticks, c->reason, c->object, stack);
}

void ctr__rec_pending(struct ctr_outbuf *o,
                      void (*noted)(uint32_t slot, uint64_t thread_id, uint64_t stack))
{
    struct pending_ctx ctx = {o, noted};
    ctr_lock_acquire(&ctr__threads.reclaim);
    pending_calls(emit_pending, &ctx);
    ctr_lock_release(&ctr__threads.reclaim);
}

/* A one-event batch opening the call's wait, and the stack it names. */
static void emit_open_wait(void *ctx, const struct pending_call *c)
{
    struct ctr_outbuf *o = ctx;
    uint64_t stack = call_site_stack(c);
    if (stack)
        CTR_REC_PUT_UVARINTS(o, STACK, &c->pc, 1, stack);
    ctr__rec_block(o, c->thread_id, c->ticks, c->reason, c->object, stack);
}

void ctr__rec_trailer(struct ctr_outbuf *o, uint64_t events_dropped)
{
    ctr_lock_acquire(&ctr__threads.reclaim);
    pending_calls(emit_open_wait, o);
    ctr_lock_release(&ctr__threads.reclaim);
    struct ctr_clock_sample now;
    ctr__clock_sample(&now.ticks, &now.mono, &now.real);
    ctr__rec_clock(o, &now);
    /* relaxed: counts, read for the record alone. */
    CTR_REC_PUT(o, END, events_dropped,
                atomic_load_explicit(&ctr__stacks.overflows, memory_order_relaxed),
                atomic_load_explicit(&ctr__threads.unregistered, memory_order_relaxed),
                atomic_load_explicit(&ctr__session.sched_failed, memory_order_relaxed));
}
