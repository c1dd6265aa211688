/* SPDX-License-Identifier: MIT */
/* threadtime.h - where each thread's time went, as `ctrace threads`, `tasks`
 * and `stats` show it: running, runnable (released or preempted, not yet
 * on a CPU), blocked by the class of the wait's reason (sync, net, syscall,
 * sleep), and off-CPU: modelled as running (no recorded wait held the
 * thread) but off the CPU by the kernel's count (model/cpucheck.h). The
 * state machine's running time is split only where CPU_TIME readings bound
 * it; a trace without readings has no off-CPU column, and says so.
 */
#ifndef CTR_THREADTIME_H
#define CTR_THREADTIME_H

#include <stddef.h>
#include <stdint.h>

#include "read/engine.h"
#include "read/state.h"
#include "read/trace.h"

enum ctr_time_kind {
    CTR_TIME_RUNNING,
    CTR_TIME_RUNNABLE,
    CTR_TIME_SYNC,
    CTR_TIME_NET,
    CTR_TIME_SYSCALL,
    CTR_TIME_SLEEP,
    CTR_TIME_OFFCPU, /* never an interval's own: moved from running */
    CTR_TIME_N
};

/* Column names: "running", "runnable", "sync", ..., "off-cpu". */
extern const char *const ctr_time_names[CTR_TIME_N];

/* ctr_time_kind_of() : the kind an interval's time counts as. */
enum ctr_time_kind ctr_time_kind_of(const struct ctr_interval *iv);

/* ctr_time_move() : moves of `times` (CTR_TIME_N entries) what the CPU check
 * took from running: runnable_ns to runnable, offcpu_ns to off-cpu, never
 * more than the running time there is. */
void ctr_time_move(uint64_t *times, uint64_t runnable_ns, uint64_t offcpu_ns);

/* A walk of the state machine that sums each thread's time by kind. */
struct ctr_threadtime;

/* ctr_threadtime_new() : a walk over trace t (the trace the pipeline fills,
 * or one read whole). @return NULL if out of memory. */
struct ctr_threadtime *ctr_threadtime_new(const struct ctr_trace *t);
void ctr_threadtime_free(struct ctr_threadtime *tt);
/* Its consumer (intervals, CPU readings, settle), for the engine. */
struct ctr_consumer ctr_threadtime_consumer(struct ctr_threadtime *tt);

/* The totals over all threads, after ctr_threadtime_finish(). */
struct ctr_time_totals {
    uint64_t times[CTR_TIME_N]; /* summed, with the check applied */
    uint64_t modelled_ns;       /* running time before the check */
    size_t nthreads;            /* threads with time */
    int checked;                /* the trace has CPU readings (an off-cpu column) */
};

/* ctr_threadtime_finish() : after the reading ended, applies the CPU check
 * to each thread of t (t->nthreads rows) and sums the totals.
 * @return 0 or -ENOMEM. */
int ctr_threadtime_finish(struct ctr_threadtime *tt, struct ctr_time_totals *tot);
/* After ctr_threadtime_finish(): thread index th's row (CTR_TIME_N). */
const uint64_t *ctr_threadtime_row(const struct ctr_threadtime *tt, uint32_t th);

#endif
