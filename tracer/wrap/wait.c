/* SPDX-License-Identifier: MIT */
/* wait.c - how a wrapper records a wait, a release or an I/O call: the events,
 * each in a write section (core/emit.h), the stack of the code that called
 * the wrapper, and the open call mark that lets the trace hear the end of a
 * call that never returns normally.
 *
 * These functions live in the wrapper section (CTR_WRAPPER_TEXT) like their
 * callers, so the stack walk skips them and everything above them up to the
 * user's call site, whatever the compiler inlined or tail-called. Only the
 * slow paths call them: a lock that must wait, an object that has waiters,
 * an I/O call that lasted.
 *
 * The mark (call_kind, call_frame) is the owner's alone: set by the wrapper
 * before the real call, cleared after it. A signal handler's own calls inside
 * a marked call leave the mark alone (their waits are written, not marked).
 * A call that does not return normally is ended by ctr__call_abandon, from
 *   - the cleanup of the wrapper's CTR_CALL_GUARD, when a cancellation
 *     unwinds through it (its landing pad runs in the wrapper's frame, so the
 *     frame chain above is whole);
 *   - the longjmp wrappers (interpose.c), before a jump out of the frame;
 *   - the thread's end, for what is left (the frames are gone by then).
 */
#include "wrap/wait.h"

#include "core/clock.h"
#include "core/emit.h"
#include "core/fdclass.h"
#include "core/hooks.h"
#include "core/intern.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "ctrace_format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------
 * Wrappers switched off, for the tests of waits no wrapper saw
 * ------------------------------------------------------------------------- */

/* The reasons whose waits go unrecorded: CTRACE_TEST_UNWRAP, a list of
 * calls as the reasons name them ("flock,pthread_mutex_lock"), read as a
 * session starts. What a wrapper would have recorded then is as a call
 * ctrace does not wrap: off-cpu, or with context switches an untraced wait
 * that the collector may name (tests/e2e/offcpu.sh). A bit a reason, NET_
 * twins with their plain calls. relaxed: set before the session is
 * published (its epoch's release), read-only while it runs. */
static _Atomic uint64_t unwrapped[(CTR_REASON_LIMIT + 63) / 64];

void ctr__unwrap_init(void)
{
    const char *list = getenv("CTRACE_TEST_UNWRAP");
    for (int r = 1; r < CTR_REASON_LIMIT; r++) {
        const char *call = ctr_reason_specs[r].call;
        size_t len = call ? strlen(call) : 0;
        int on = 0;
        for (const char *p = list; call && p && *p;) {
            size_t n = strcspn(p, ",");
            on |= n == len && strncmp(p, call, len) == 0;
            p += n + (p[n] == ',');
        }
        uint64_t bit = (uint64_t)1 << (r % 64);
        if (on)
            atomic_fetch_or_explicit(&unwrapped[r / 64], bit, memory_order_relaxed);
        else
            atomic_fetch_and_explicit(&unwrapped[r / 64], ~bit, memory_order_relaxed);
    }
}

static inline int is_unwrapped(enum ctr_reason r)
{
    /* relaxed: see unwrapped. */
    return (atomic_load_explicit(&unwrapped[r / 64], memory_order_relaxed) >> (r % 64)) & 1;
}

CTR_WRAPPER_TEXT int ctr__wait_begin(struct ctr_thread *t, enum ctr_reason reason, const void *obj,
                                     uintptr_t frame)
{
    if (CTR_UNLIKELY(is_unwrapped(reason)) || !ctr__write_begin(t))
        return CTR_WAIT_NONE;
    uint64_t args[3] = {reason, (uintptr_t)obj, ctr__stack_here(t)};
    ctr__emit(t, CTR_EV_BLOCK, args);
    ctr__write_end(t);
    if (t->call_kind != CTR_CALL_NONE)
        return CTR_WAIT_NESTED; /* a handler's wait inside a marked call */
    t->call_frame = frame;
    t->call_kind = CTR_CALL_BLOCKED;
    return CTR_WAIT_MARKED;
}

void ctr__wait_end(struct ctr_thread *t, int token)
{
    if (token == CTR_WAIT_NONE)
        return;
    if (token == CTR_WAIT_MARKED) {
        if (t->call_kind != CTR_CALL_BLOCKED)
            return; /* already ended (a longjmp wrapper that jumped nowhere far) */
        t->call_kind = CTR_CALL_NONE;
    }
    ctr__emit_one(t, CTR_EV_UNBLOCK, NULL);
}

/* Block at `start` and Unblock now, in one section, with stack `stack`. */
static void write_span(struct ctr_thread *t, enum ctr_reason reason, const void *obj,
                       uint64_t start, uint32_t stack)
{
    uint64_t args[3] = {reason, (uintptr_t)obj, stack};
    ctr__emit_at(t, CTR_EV_BLOCK, start, args);
    ctr__emit(t, CTR_EV_UNBLOCK, NULL);
}

CTR_WRAPPER_TEXT void ctr__wait_span(struct ctr_thread *t, enum ctr_reason reason, const void *obj,
                                     uint64_t start)
{
    if (CTR_UNLIKELY(is_unwrapped(reason)) || !ctr__write_begin_n(t, 2))
        return;
    write_span(t, reason, obj, start, ctr__stack_here(t));
    ctr__write_end(t);
}

CTR_WRAPPER_TEXT void ctr__release(struct ctr_thread *t, const void *obj)
{
    if (!ctr__write_begin(t))
        return;
    uint64_t args[2] = {(uintptr_t)obj, ctr__stack_here(t)};
    ctr__emit(t, CTR_EV_RELEASE, args);
    ctr__write_end(t);
}

CTR_WRAPPER_TEXT int ctr__io_begin(struct ctr_thread *t, uint64_t start, enum ctr_reason reason,
                                   int rules, int fd, uintptr_t frame)
{
    if (t->call_kind != CTR_CALL_NONE)
        return 0; /* a handler's call inside a marked one: the outer keeps it */
    if (CTR_UNLIKELY(is_unwrapped(reason)))
        return 0; /* as a call no wrapper sees: nothing to mark */
    /* The fields are a seqlock's data, io_start its sequence (0: no call).
     * release fence: the last call's clearing of io_start (ctr__io_end)
     * before the stores of this call's fields, so a reader whose field load
     * sees one of them also sees io_start changed when it reads it again
     * (pairs with the acquire fence in records.c, pending_calls). No
     * instruction on x86. The fields themselves are relaxed: see io_start
     * in struct ctr_thread (core/thread.h). */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&t->io_reason, (uint8_t)reason, memory_order_relaxed);
    atomic_store_explicit(&t->io_rules, (uint8_t)rules, memory_order_relaxed);
    atomic_store_explicit(&t->io_fd, fd, memory_order_relaxed);
    atomic_store_explicit(&t->io_pc, ctr__caller_pc(), memory_order_relaxed);
    t->call_obj = (uintptr_t)fd;
    t->call_frame = frame;
    t->call_kind = CTR_CALL_IO;
    /* release: the fields before the start (pairs with the acquire load of
     * io_start in records.c, pending_calls). */
    atomic_store_explicit(&t->io_start, start, memory_order_release);
    return 1;
}

/* The wait reason of t's marked I/O call: its NET_ variant on a socket. */
static enum ctr_reason io_reason(struct ctr_thread *t)
{
    /* relaxed: the owner reads the fields it wrote itself. */
    return ctr__io_reason(atomic_load_explicit(&t->io_reason, memory_order_relaxed),
                          atomic_load_explicit(&t->io_rules, memory_order_relaxed),
                          (int)t->call_obj);
}

/* Ends t's open call now; the call's frame chain is whole when `frame_ok`
 * (else its stack is the call site alone). */
static CTR_WRAPPER_TEXT void call_end(struct ctr_thread *t, int frame_ok)
{
    enum ctr_call_kind kind = t->call_kind;
    t->call_kind = CTR_CALL_NONE;
    if (kind == CTR_CALL_BLOCKED) {
        ctr__emit_one(t, CTR_EV_UNBLOCK, NULL);
        return;
    }
    /* relaxed: the owner reads its own fields (here and io_pc below); the
     * store of 0 is ordered as in ctr__io_end (wait.h). */
    uint64_t start = atomic_load_explicit(&t->io_start, memory_order_relaxed);
    atomic_store_explicit(&t->io_start, 0, memory_order_relaxed);
    if (kind != CTR_CALL_IO || !start || !ctr__io_long_enough(start))
        return;
    int saved = errno;
    /* relaxed: the owner's own field. */
    int rules = atomic_load_explicit(&t->io_rules, memory_order_relaxed);
    if (ctr__io_waited(rules, (int)t->call_obj, 0) && ctr__write_begin_n(t, 2)) {
        uintptr_t pc = atomic_load_explicit(&t->io_pc, memory_order_relaxed);
        uint32_t stack = frame_ok ? ctr__stack_at(t, t->call_frame)
                         : pc     ? ctr__intern(&ctr__stacks, &pc, sizeof(pc))
                                  : 0;
        write_span(t, io_reason(t), (const void *)t->call_obj, start, stack);
        ctr__write_end(t);
    }
    errno = saved;
}

CTR_WRAPPER_TEXT void ctr__call_jump(struct ctr_thread *t)
{
    call_end(t, 1);
}

CTR_WRAPPER_TEXT void ctr__call_abandon(struct ctr_thread *t)
{
    call_end(t, 0);
}

CTR_WRAPPER_TEXT void ctr__call_unwound_slow(struct ctr_call_guard *g)
{
    call_end(g->t, 1);
}

CTR_WRAPPER_TEXT int ctr__wait_traced(const struct ctr_waitop *op, struct ctr_call *c,
                                      const void *tag)
{
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return op->wait(c);
    if (op->try_) {
        int rc = op->try_(c);
        if (rc != EBUSY)
            return rc;
    }
    /* relaxed: the count is a hint for releasers (see pthread_rwlock_unlock). */
    if (op->waiting)
        atomic_fetch_add_explicit(op->waiting, 1, memory_order_relaxed);
    CTR_CALL_GUARD(g, t);
    int token = ctr__wait_begin(t, op->reason, tag, (uintptr_t)__builtin_frame_address(0));
    g.marked = token == CTR_WAIT_MARKED;
    int rc = op->wait(c);
    int saved = errno;
    ctr__wait_end(t, token);
    if (op->waiting) /* relaxed: as above */
        atomic_fetch_sub_explicit(op->waiting, 1, memory_order_relaxed);
    errno = saved;
    return rc;
}

CTR_WRAPPER_TEXT void ctr__note_release(const void *obj)
{
    struct ctr_thread *t = ctr__self_traced();
    if (t)
        ctr__release(t, obj);
}
