/* wait.c - how a wrapper records a wait or a release: the events and the
 * stack of the code that called the wrapper.
 *
 * These functions live in the wrapper section (CTR_WRAPPER_TEXT) like their
 * callers, so the stack walk skips them and everything above them up to the
 * user's call site, whatever the compiler inlined or tail-called. Only the
 * slow paths call them: a lock that must wait, an object that has waiters.
 */
#include "interpose.h"
#include "internal.h"

CTR_WRAPPER_TEXT void ctr__wait_begin(struct ctr_thread *t, enum ctr_reason reason,
                                      const void *obj)
{
    uint64_t args[3] = {reason, (uintptr_t)obj, ctr__stack_here(t)};
    ctr__emit(t, CTR_EV_BLOCK, args);
}

void ctr__wait_end(struct ctr_thread *t)
{
    ctr__emit(t, CTR_EV_UNBLOCK, NULL);
}

CTR_WRAPPER_TEXT void ctr__wait_span(struct ctr_thread *t, enum ctr_reason reason,
                                     const void *obj, uint64_t start)
{
    uint64_t args[3] = {reason, (uintptr_t)obj, ctr__stack_here(t)};
    ctr__emit_at(t, CTR_EV_BLOCK, start, args);
    ctr__emit(t, CTR_EV_UNBLOCK, NULL);
}

CTR_WRAPPER_TEXT void ctr__release(struct ctr_thread *t, const void *obj)
{
    uint64_t args[2] = {(uintptr_t)obj, ctr__stack_here(t)};
    ctr__emit(t, CTR_EV_RELEASE, args);
}
