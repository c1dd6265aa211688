/* SPDX-License-Identifier: MIT */
/* testtime.h - the invariant of a thread's time (model/cpucheck.h) in the
 * ground-truth tests: for each thread of a trace read whole that has CPU
 * readings, the time the analyzer shows as running between its first and
 * last reading inside the trace (a thread registered in an earlier session
 * has its reading at registration from before) is the CPU time the kernel
 * counted between them, within 5% or 2 ms (less would be CPU time taken
 * for a wait: a wait recorded around work), and that no more than 10% or
 * 10 ms of it was off the CPU in no recorded wait (every wait of these
 * tests is wrapped and lasts 50 ms or more: more would be a wait no
 * wrapper saw). Needs cmocka and the
 * analyzer. */
#ifndef CTR_TESTTIME_H
#define CTR_TESTTIME_H

#include <stdint.h>
#include <stdlib.h>

#include "model/cpucheck.h"
#include "read/engine.h"
#include "read/state.h"
#include "read/trace.h"

struct ctr_test_running {
    const struct ctr_trace *t;
    uint64_t *ns; /* per thread: running within its first and last reading */
};

/* Thread th's first reading inside the trace (its index), or ncpu. */
static inline size_t ctr_test_first_reading(const struct ctr_trace *t,
                                            const struct ctr_thread_info *th)
{
    size_t k = 0;
    while (k < th->ncpu && th->cpu[k].ns < t->start_ns)
        k++;
    return k;
}

static void ctr_test_running_interval(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_test_running *r = ctx;
    size_t i = (size_t)(iv->thread - r->t->threads);
    const struct ctr_thread_info *th = &r->t->threads[i];
    size_t k = ctr_test_first_reading(r->t, th);
    if (iv->state != CTR_STATE_RUNNING || k + 1 >= th->ncpu)
        return;
    uint64_t lo = th->cpu[k].ns, hi = th->cpu[th->ncpu - 1].ns;
    uint64_t a = iv->start_ns > lo ? iv->start_ns : lo, b = iv->end_ns < hi ? iv->end_ns : hi;
    if (b > a)
        r->ns[i] += b - a;
}

/* Fails the test for the first thread whose running time is not its CPU
 * time (see the top), of those with two readings or more. */
static inline void ctr_test_assert_running_is_cpu(const struct ctr_trace *t)
{
    struct ctr_test_running r = {t, calloc(t->nthreads + 1, sizeof(uint64_t))};
    struct ctr_cpucheck *cpu = ctr_cpucheck_new(t);
    assert_non_null(r.ns);
    assert_non_null(cpu);
    ctr_cpucheck_keep(cpu);
    struct ctr_consumer c[2] = {{.ctx = &r, .interval = ctr_test_running_interval},
                                ctr_cpucheck_consumer(cpu)};
    assert_int_equal(ctr_trace_replay(t, c, 2, NULL), 0);
    assert_int_equal(ctr_cpucheck_finish(cpu), 0);
    for (size_t i = 0; i < t->nthreads; i++) {
        const struct ctr_thread_info *th = &t->threads[i];
        size_t k = ctr_test_first_reading(t, th);
        if (k + 1 >= th->ncpu)
            continue;
        const struct ctr_cpu_reading *first = &th->cpu[k], *last = &th->cpu[th->ncpu - 1];
        uint64_t q, off;
        ctr_cpucheck_split(cpu, (uint32_t)i, first->ns, last->ns, &q, &off);
        uint64_t shown = r.ns[i] - (q + off < r.ns[i] ? q + off : r.ns[i]);
        uint64_t kernel = last->cpu_ns - first->cpu_ns;
        uint64_t d = shown > kernel ? shown - kernel : kernel - shown;
        if (d * 20 > kernel && d > 2000000)
            fail_msg("thread %lld: running %.2f ms between its readings, its CPU time %.2f ms",
                     (long long)th->os_tid, shown / 1e6, kernel / 1e6);
        /* Every wait recorded: nothing was off the CPU unexplained, but
         * for what no test waits in (a sanitizer's runtime, the loader,
         * page faults): well under the tests' waits (50 ms and more). */
        if (off * 10 > kernel && off > 10000000)
            fail_msg("thread %lld: %.2f ms off-cpu in no recorded wait", (long long)th->os_tid,
                     off / 1e6);
    }
    ctr_cpucheck_free(cpu);
    free(r.ns);
}

#endif
