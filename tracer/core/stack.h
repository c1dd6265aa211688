/* SPDX-License-Identifier: MIT */
/* stack.h - the stacks of the calling code and of signals and samples, as
 * interned ids (stack.c). */
#ifndef CTR_STACK_H
#define CTR_STACK_H

#include <stdint.h>

struct ctr_thread;

/* ---------------------------------------------------------------------------
 * Stacks (stack.c)
 * ------------------------------------------------------------------------- */

/* CTR_STACK_MAX, the most frames of a stack, is stack_depth's max in the
 * options table (ctrace_options.h). */

/* Code in this section is the tracer's own wrapper layer: stack captures skip
 * the frames that return into it, so a stack starts at the user's call site
 * however the compiler inlined or tail-called the wrappers. */
#define CTR_WRAPPER_TEXT __attribute__((section("ctrace_text"), noinline))
extern const char __start_ctrace_text[] __attribute__((visibility("hidden")));
extern const char __stop_ctrace_text[] __attribute__((visibility("hidden")));

/* The id of the calling code's stack: return addresses from the innermost
 * one outside the wrapper layer (CTR_WRAPPER_TEXT, above) outward.
 * Must be called from CTR_WRAPPER_TEXT code. */
uint32_t ctr__stack_here(struct ctr_thread *t);
/* The id of the stack whose innermost frame is `frame` (a frame address of
 * the calling thread's stack, still whole): frame pointers only, wrapper
 * frames skipped as above. */
uint32_t ctr__stack_at(struct ctr_thread *t, uintptr_t frame);
/* The return address of the innermost frame outside the wrapper layer: the
 * user's call site, for a few nanoseconds (no interning). */
uintptr_t ctr__caller_pc(void);
/* Chooses the session's unwinding methods (CTRACE_UNWIND) and warms up
 * libunwind if they include it. Called at trace start, before the session is
 * published. */
void ctr__stack_init(void);
/* The TRACE_INFO flags (CTR_INFO_STACKS_*) of the session's methods. */
uint32_t ctr__stack_info(void);
/* In a forked child (alone): the code ranges to be remade; and libunwind is
 * not used again if a thread of the parent was inside it at the fork (its
 * locks may be held for ever). */
void ctr__stack_forked(void);

/* The id of the stack a signal interrupted on the calling thread, from its
 * handler's ucontext (stack.c). Async-signal-safe. */
uint32_t ctr__stack_signal(struct ctr_thread *t, const void *ucontext);
/* Interns PCs as a stack id (0 for none). */
uint32_t ctr__stack_intern(const uintptr_t *pcs, unsigned n);
/* Whether libunwind is the session's (CTRACE_UNWIND is not fp). */
int ctr__stack_uses_dwarf(void);

#endif /* CTR_STACK_H */
