/* SPDX-License-Identifier: MIT */
/* cputime.h - each thread's CPU time and time waiting for a CPU, as the
 * kernel counts them (cputime.c): what lets the analyzer tell a thread that
 * ran from one that was off the CPU where no wrapper saw a wait. */
#ifndef CTR_CPUTIME_H
#define CTR_CPUTIME_H

#include <stdint.h>
#include <time.h>

struct ctr_thread;

/* The CPU-time clock of thread tid of this process (the kernel's
 * MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)): readable by any thread of the
 * process while tid lives, as CLOCK_THREAD_CPUTIME_ID is by tid itself. */
static inline clockid_t ctr__thread_cpu_clock(int tid)
{
    return (clockid_t)((~(unsigned)tid << 3) | 4u | 2u);
}

/* One reading: at `ticks`, the thread had run `cpu_ns` and waited for a CPU
 * `delay_ns` (when flags has CTR_CPUTIME_DELAY_KNOWN) since it began. */
struct ctr_cputime {
    uint64_t ticks, cpu_ns, delay_ns;
    uint32_t flags;
};

/* Collector: t's reading now (live: `exited` 0) or as it ended (`exited`
 * 1). @return 0, or -1 when there is none (the thread is gone, or ended
 * before the fields were set). */
int ctr__cputime_read(const struct ctr_thread *t, int exited, struct ctr_cputime *c);
/* Collector: t's reading as it registered. @return 0, or -1 if none. */
int ctr__cputime_started(const struct ctr_thread *t, struct ctr_cputime *c);

#endif /* CTR_CPUTIME_H */
