/* SPDX-License-Identifier: MIT */
/* wait.h - the waits and I/O calls the wrappers record, and the guard that
 * ends a call a cancellation unwinds through (wait.c). */
#ifndef CTR_WAIT_H
#define CTR_WAIT_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/common.h"
#include "core/thread.h"
#include "ctrace_format.h"

/* ---------------------------------------------------------------------------
 * Waits, for the wrappers (wait.c). Each captures the stack of the code that
 * called the wrapper, so each must be called from CTR_WRAPPER_TEXT code.
 *
 * A wrapper inside the real call of a wait or an I/O call holds an open call
 * mark (call_kind, call_frame: its own frame). The trace hears the end of
 * the call however it ends: the wrapper clears the mark when the real call
 * returns; a cancellation unwinds through the wrapper's CTR_CALL_GUARD,
 * whose cleanup ends the call then; a longjmp out of a signal handler ends
 * it in the longjmp wrapper (interpose.c) when the jump leaves the wrapper's
 * frame; the thread's end ends whatever is left.
 * ------------------------------------------------------------------------- */

/* What ctr__wait_begin did, for ctr__wait_end. */
enum { CTR_WAIT_NONE = 0, CTR_WAIT_MARKED, CTR_WAIT_NESTED };

/* Block(reason, obj, stack) now: t starts a wait that may be long, in the
 * wrapper whose frame is `frame`, which holds the mark from now on unless
 * t's mark was already set. @return a CTR_WAIT_* token for ctr__wait_end
 * (CTR_WAIT_NONE: nothing written). */
int ctr__wait_begin(struct ctr_thread *t, enum ctr_reason reason, const void *obj, uintptr_t frame);
/* Unblock now, if ctr__wait_begin wrote the Block (token): the wait is over. */
void ctr__wait_end(struct ctr_thread *t, int token);
/* A wait that is only known once over (a call that may or may not have
 * blocked): Block at `start` ticks, Unblock now. */
void ctr__wait_span(struct ctr_thread *t, enum ctr_reason reason, const void *obj, uint64_t start);
/* Release(obj, stack) now: t let go of obj while other threads waited on it. */
void ctr__release(struct ctr_thread *t, const void *obj);

/* Marks t as inside I/O call `reason` on fd, under `rules`, since `start`,
 * in the wrapper whose frame is `frame`, unless t's mark is already set (a
 * signal handler's call inside another). @return 1 if marked: end with
 * ctr__io_end. */
int ctr__io_begin(struct ctr_thread *t, uint64_t start, enum ctr_reason reason, int rules, int fd,
                  uintptr_t frame);

/* ctr__io_end() : the marked I/O call returned. */
static inline void ctr__io_end(struct ctr_thread *t)
{
    /* relaxed: the next call's fields are ordered after this by the
     * release fence in ctr__io_begin (see io_start in struct ctr_thread). */
    atomic_store_explicit(&t->io_start, 0, memory_order_relaxed);
    t->call_kind = CTR_CALL_NONE;
}

/* A wrapper's guard of its open call: `marked` once it set the mark. */
struct ctr_call_guard {
    struct ctr_thread *t;
    int marked;
};
/* Ends the guarded call: a cancellation unwinds through its wrapper. */
void ctr__call_unwound_slow(struct ctr_call_guard *g);

/* The guard's cleanup: runs when the wrapper's scope ends, normally (the
 * mark is cleared by then: a load and a branch) or because a cancellation
 * unwinds through it. */
static inline void ctr__call_unwound(struct ctr_call_guard *g)
{
    /* marked: this wrapper set the mark (a nested handler's wrapper did
     * not); still set: the call did not come back through the wrapper. */
    if (CTR_UNLIKELY(g->marked && g->t->call_kind != CTR_CALL_NONE))
        ctr__call_unwound_slow(g);
}

/* CTR_CALL_GUARD(name, t) : declares, in a wrapper around a real call, the
 * guard whose cleanup ends t's open call if the call is cancelled (the
 * wrapper files are built with -fexceptions so that cleanups run during a
 * cancellation's unwinding; a normal return costs a load and a branch). */
#define CTR_CALL_GUARD(name, thread) \
    struct ctr_call_guard name __attribute__((cleanup(ctr__call_unwound))) = {(thread), 0}

#endif /* CTR_WAIT_H */
