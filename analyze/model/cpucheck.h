/* SPDX-License-Identifier: MIT */
/* cpucheck.h - the state machine's running time held against the kernel's
 * count of each thread's CPU time (CPU_TIME records, format 1.4).
 *
 * The state machine calls a thread running whenever no recorded wait holds
 * it, so a wait no wrapper saw, or time preempted (without -sched), reads as
 * running. Between two readings of a thread's CPU clock, what it modelled as
 * running beyond the CPU time the kernel gave it (less a small error) was
 * off the CPU: as much of it as the kernel's run-queue delay says was
 * waiting for a CPU (runnable), the rest off-CPU time ctrace cannot name.
 * Nothing is taken from running where no readings bound it (before a
 * thread's first, after its last, a trace without them). A thread's first
 * reading is its own as it registered (CTR_CPUTIME_AT_START), whose
 * run-queue delay is taken as 0: the wait before it first ran, if any, is
 * counted in its first span, where it can only make runnable time larger
 * than it was, never beyond the span's excess.
 */
#ifndef CTR_CPUCHECK_H
#define CTR_CPUCHECK_H

#include <stdint.h>

#include "read/engine.h"
#include "read/trace.h"

/* The error allowed per span between readings: the readings' own time (a
 * clock read, half of it) and the tick conversion's. */
#define CTR_CPUCHECK_SLACK_NS 20000u
/* Above this share of the time modelled as running, unattributed off-CPU
 * time is worth a warning: a blocking call no wrapper sees. */
#define CTR_OFFCPU_WARN_PCT 3

struct ctr_cpucheck;

/* What the check moved out of a thread's running time. */
struct ctr_cpu_moved {
    uint64_t runnable_ns; /* waiting for a CPU, by the kernel's run-queue delay */
    uint64_t offcpu_ns;   /* off the CPU in no recorded wait: unattributed */
    uint64_t checked_ns;  /* running time that readings bounded */
};

/* ctr_cpucheck_new() : a check over trace t. @return NULL if out of memory. */
struct ctr_cpucheck *ctr_cpucheck_new(const struct ctr_trace *t);
void ctr_cpucheck_free(struct ctr_cpucheck *c);
/* Its consumer (intervals, readings, settle), for the engine. */
struct ctr_consumer ctr_cpucheck_consumer(struct ctr_cpucheck *c);
/* ctr_cpucheck_keep() : keep each window's verdict for ctr_cpucheck_split()
 * (before the reading; memory for the windows that moved time only). */
void ctr_cpucheck_keep(struct ctr_cpucheck *c);
/* ctr_cpucheck_finish() : after the reading ended, judges the windows it
 * never settled past (a reading that ended early). @return -1 if the check
 * ran out of memory (its figures are then short), else 0. */
int ctr_cpucheck_finish(struct ctr_cpucheck *c);
/* After ctr_cpucheck_finish(): thread index th's moved time (zeros if
 * none). @return -1 if the check ran out of memory, else 0. */
int ctr_cpucheck_thread(const struct ctr_cpucheck *c, uint32_t th, struct ctr_cpu_moved *out);
/* ctr_cpucheck_split() : of running time [from_ns, to_ns) on thread index
 * th, the part a kept window moved to runnable and to off-CPU. Where in a
 * window the thread was off the CPU is not known: each window's verdict is
 * shared over its running time in proportion (a task's share of a window is
 * its share of the window's running time). After ctr_cpucheck_finish(), on
 * a check with keep. */
void ctr_cpucheck_split(const struct ctr_cpucheck *c, uint32_t th, uint64_t from_ns, uint64_t to_ns,
                        uint64_t *runnable_ns, uint64_t *offcpu_ns);

#endif
