/* stack.c - captures the calling thread's stack as raw PCs by walking frame
 * pointers, and interns it to a stack id.
 *
 * The walk trusts nothing it reads: each frame pointer must lie above the
 * previous one (stacks grow down), inside [current frame, top of the thread's
 * stack), and be 8-byte aligned; a zero return address ends the walk. So a
 * caller compiled without frame pointers yields a short stack, never a crash.
 * Frames that return into the wrapper layer (CTR_WRAPPER_TEXT) are skipped
 * while they lead, so the first PC is the user's call site whether or not
 * the compiler inlined or tail-called the wrappers.
 * About 14 ns for 10 frames here; only contended waits pay it.
 */
#include "interpose.h"
#include "internal.h"

__attribute__((noinline)) uint32_t ctr__stack_here(struct ctr_thread *t)
{
    uintptr_t pcs[CTR_STACK_MAX];
    unsigned max = ctr__session.stack_depth;
    unsigned n = 0;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    uintptr_t lo = fp;
    uintptr_t hi = t->stack_hi;
    /* Leading frames that return into the wrapper layer are the tracer's. */
    int leading = 1;
    if (hi == 0)
        return 0; /* stack bounds unknown: a stackless event beats a fault */
    while (n < max) {
        if (fp < lo || fp > hi - 2 * sizeof(uintptr_t) || (fp & (sizeof(uintptr_t) - 1)))
            break;
        const uintptr_t *frame = (const uintptr_t *)fp;
        uintptr_t next = frame[0], ret = frame[1];
        if (ret == 0)
            break;
        int in_wrappers =
            ret >= (uintptr_t)__start_ctrace_text && ret < (uintptr_t)__stop_ctrace_text;
        if (!(leading && in_wrappers)) {
            leading = 0;
            pcs[n++] = ret;
        }
        if (next <= fp)
            break;
        fp = next;
    }
    if (n == 0)
        return 0;
    return ctr__intern(&ctr__stacks, pcs, n * (uint32_t)sizeof(uintptr_t));
}
