/* wait.c - how a wrapper records a wait or a release: the events and the
 * stack of the code that called the wrapper.
 *
 * These functions live in the wrapper section (CTR_WRAPPER_TEXT) like their
 * callers, so the stack walk skips them and everything above them up to the
 * user's call site, whatever the compiler inlined or tail-called. Only the
 * slow paths call them: a lock that must wait, an object that has waiters.
 *
 * While they write, the thread's nesting count is raised: a signal handler
 * that calls a wrapped function (write is async-signal-safe) then goes
 * straight to the real call instead of writing into the half-written event,
 * and so does any I/O the stack capture itself does (libunwind).
 */
#include "interpose.h"
#include "internal.h"

/* The signal fences keep the compiler from moving the event's stores out
 * of the raised section (a handler runs on this same thread). */
static inline void enter(struct ctr_thread *t)
{
    t->nesting++;
    atomic_signal_fence(memory_order_seq_cst);
}

static inline void leave(struct ctr_thread *t)
{
    atomic_signal_fence(memory_order_seq_cst);
    t->nesting--;
}

CTR_WRAPPER_TEXT void ctr__wait_begin(struct ctr_thread *t, enum ctr_reason reason,
                                      const void *obj)
{
    enter(t);
    uint64_t args[3] = {reason, (uintptr_t)obj, ctr__stack_here(t)};
    ctr__emit(t, CTR_EV_BLOCK, args);
    leave(t);
}

void ctr__wait_end(struct ctr_thread *t)
{
    enter(t);
    ctr__emit(t, CTR_EV_UNBLOCK, NULL);
    leave(t);
}

CTR_WRAPPER_TEXT void ctr__wait_span(struct ctr_thread *t, enum ctr_reason reason,
                                     const void *obj, uint64_t start)
{
    enter(t);
    uint64_t args[3] = {reason, (uintptr_t)obj, ctr__stack_here(t)};
    ctr__emit_at(t, CTR_EV_BLOCK, start, args);
    ctr__emit(t, CTR_EV_UNBLOCK, NULL);
    leave(t);
}

CTR_WRAPPER_TEXT void ctr__release(struct ctr_thread *t, const void *obj)
{
    enter(t);
    uint64_t args[2] = {(uintptr_t)obj, ctr__stack_here(t)};
    ctr__emit(t, CTR_EV_RELEASE, args);
    leave(t);
}
