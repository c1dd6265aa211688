/* SPDX-License-Identifier: MIT */
/* clock.h - the tracer's clock: ticks (rdtsc or CLOCK_MONOTONIC) and their
 * calibration (clock.c). */
#ifndef CTR_CLOCK_H
#define CTR_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "core/common.h"

/* ---------------------------------------------------------------------------
 * Clock (clock.c)
 * ------------------------------------------------------------------------- */

/* 1: ticks are rdtsc cycles; 0: CLOCK_MONOTONIC ns. Chosen once per process
 * by ctr__clock_init (before any session is published) and never changed:
 * readers load it relaxed. */
extern _Atomic int ctr__clock_tsc;

/* Clock id (CLOCK_MONOTONIC, CLOCK_REALTIME) read now, in ns. */
uint64_t ctr__clock_ns(clockid_t id);
uint64_t ctr__ticks_slow(void); /* CLOCK_MONOTONIC in ns */
/* Chooses the tick source, once per process (later calls do nothing). */
void ctr__clock_init(void);
/* Ticks per nanosecond, measured once per process (1 ms): for thresholds
 * that must be in ticks from a session's first event. */
double ctr__clock_ticks_per_ns(void);
/* A (ticks, monotonic ns, realtime ns) triple read as close together as
 * possible: the calibration points of CLOCK records. */
void ctr__clock_sample(uint64_t *ticks, uint64_t *mono_ns, uint64_t *real_ns);

static inline uint64_t ctr__ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* relaxed: set once, before the first session's epoch is published
     * (ctr__clock_init, then the release in ctr__session_begin). */
    if (CTR_LIKELY(atomic_load_explicit(&ctr__clock_tsc, memory_order_relaxed))) {
        uint32_t lo, hi;
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#endif
    return ctr__ticks_slow();
}

#endif /* CTR_CLOCK_H */
