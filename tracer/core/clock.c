/* SPDX-License-Identifier: MIT */
/* clock.c - the tracer's time source: the TSC where it is invariant (one rdtsc,
 * about 11 ns here), CLOCK_MONOTONIC otherwise.
 *
 * The tracer never converts ticks to nanoseconds itself. The collector writes
 * CLOCK records, (ticks, monotonic ns, realtime ns) triples taken at the start
 * and at every flush, and the analyzer interpolates between them, which also
 * absorbs any slow drift of the TSC rate against CLOCK_MONOTONIC.
 */

#include "core/clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

_Atomic int ctr__clock_tsc;

uint64_t ctr__clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ctr__ticks_slow(void)
{
    return ctr__clock_ns(CLOCK_MONOTONIC);
}

void ctr__clock_init(void)
{
    /* Once: threads of a stopped session may still read ticks while the
     * next one starts, and a process's ticks must stay of one kind. Under
     * the API lock, so no two threads get here at once. */
    static int chosen;
    if (chosen)
        return;
    chosen = 1;
    /* CTRACE_CLOCK=monotonic forces the portable clock (for tests, or a TSC
     * the hypervisor misreports as invariant). */
    const char *force = getenv("CTRACE_CLOCK");
    if (force && strcmp(force, "monotonic") == 0)
        return;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    /* CPUID 0x80000007 EDX bit 8: invariant TSC, constant rate in every
     * P-/C-state, so ticks are comparable across time and across CPUs. */
    if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000007 &&
        __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)))
        /* relaxed: published with the session's epoch (release). */
        atomic_store_explicit(&ctr__clock_tsc, 1, memory_order_relaxed);
#endif
}

double ctr__clock_ticks_per_ns(void)
{
    /* A first estimate, for thresholds kept in ticks (the analyzer converts
     * with the CLOCK records, not with this): once per process, over 1 ms. */
    static double rate;
    /* relaxed: set by ctr__clock_init, earlier under the same API lock. */
    if (!atomic_load_explicit(&ctr__clock_tsc, memory_order_relaxed))
        return 1.0;
    if (rate == 0) {
        uint64_t t0, m0, r0, t1, m1, r1;
        ctr__clock_sample(&t0, &m0, &r0);
        do
            ctr__clock_sample(&t1, &m1, &r1);
        while (m1 - m0 < 1000000);
        rate = (double)(t1 - t0) / (double)(m1 - m0);
    }
    return rate;
}

void ctr__clock_sample(uint64_t *ticks, uint64_t *mono_ns, uint64_t *real_ns)
{
    /* Bracket the clock_gettime between two tick reads and keep the tightest
     * of a few tries: an interrupt in the middle would skew the pair. */
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = ctr__ticks();
        uint64_t m = ctr__clock_ns(CLOCK_MONOTONIC);
        uint64_t t1 = ctr__ticks();
        if (t1 - t0 < best) {
            best = t1 - t0;
            *ticks = t0 + (t1 - t0) / 2;
            *mono_ns = m;
        }
    }
    *real_ns = ctr__clock_ns(CLOCK_REALTIME);
}
