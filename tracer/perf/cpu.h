/* SPDX-License-Identifier: MIT */
/* cpu.h - CPU samples (cpu.c) and their stacks (cpu_unwind.c); a thread's
 * sampler is opened and closed through core/hooks.h. */
#ifndef CTR_CPU_H
#define CTR_CPU_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct ctr_thread;

/* ---------------------------------------------------------------------------
 * CPU samples (cpu.c, cpu_unwind.c)
 * ------------------------------------------------------------------------- */

/* A session begins (under the API lock, before it is published): samples
 * cpu_hz times a second of each thread's CPU time (0: none) with
 * perf_event, or with the timer when `timer`. flush_ms sizes the rings.
 * With `idle` (as for ctr__sched_session), the rings kept from an earlier
 * session at another rate or size are closed, to be opened anew. */
void ctr__cpu_session(unsigned cpu_hz, int timer, unsigned flush_ms, int idle);
/* The session is published: samplers for the threads alive now. */
void ctr__cpu_session_started(uint32_t epoch);
/* The session's epoch went to 0: the timers go (their signals may still
 * come, and find nothing to write). */
void ctr__cpu_session_ended(void);
/* Collector: stops t's perf sampler (the session ended). */
void ctr__cpu_disable(struct ctr_thread *t);
/* Collector: t's perf samples since the last drain, at or after since_ns,
 * each to on_sample with its time, stack id and CPU ns. */
void ctr__cpu_drain(struct ctr_thread *t, uint64_t since_ns,
                    void (*on_sample)(void *ctx, uint64_t ns, uint64_t stack, uint64_t cpu_ns),
                    void *ctx);
/* Whether this session samples; its SAMPLING record's fields. */
int ctr__cpu_sampling(uint64_t *sources, uint64_t *period_ns, uint64_t *lost);
/* Counts samples lost (any thread, signal handlers included). */
void ctr__cpu_lost(uint64_t n);
/* The program sets SIGPROF's action (the sigaction and signal wrappers):
 * the timer source gives SIGPROF up for good, and its timers go. */
void ctr__cpu_sigprof_yield(void);
/* What the program reads back of SIGPROF: SIG_DFL where the timer
 * source's handler stands in for it. */
void ctr__cpu_sigprof_hide(struct sigaction *old);

/* The stack of a sample: PCs, the interrupted instruction's plus one
 * first, from the registers and a copy of the stack (cpu_unwind.c). */
struct ctr_sample_regs {
    uint64_t ip, sp, bp;
    uint64_t regs[17]; /* the perf_event order of PERF_REG_X86_* up to R15 */
    int have_all;      /* regs[] holds every one of them */
};
/* Unwinds a perf sample in the collector: `stack` holds `len` bytes copied
 * from sp up. @return PCs into pcs[0..max). */
unsigned ctr__unwind_copy(const struct ctr_sample_regs *r, const uint8_t *stack, size_t len,
                          uintptr_t *pcs, unsigned max);
/* ctr__unwind_copy_guess_bp() : the same for a thread known by its
 * instruction and stack pointers alone (a thread blocked in the kernel:
 * collect/untraced.c). The frames of code built with a frame pointer need
 * it: each of the first few words above sp that could be a frame record
 * (its next word in code) is tried as one, and none, and the longest stack
 * is kept (a wrong guess ends the unwinding early or skips frames, so it is
 * never the longer). @return PCs into pcs[0..max). */
unsigned ctr__unwind_copy_guess_bp(uint64_t ip, uint64_t sp, const uint8_t *stack, size_t len,
                                   uintptr_t *pcs, unsigned max);

#endif /* CTR_CPU_H */
