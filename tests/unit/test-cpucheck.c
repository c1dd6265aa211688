/* SPDX-License-Identifier: MIT */
/* test-cpucheck.c - the state machine's running time against the kernel's
 * CPU time (analyze/model/cpucheck.c), on readings and intervals made by
 * hand: what exceeds the CPU time between two readings leaves running, as
 * runnable up to the run-queue delay and as unattributed off-CPU time
 * beyond, a delay the kernel counted late explaining the span before; an
 * interval across a reading is split at it; the order in which
 * readings and intervals come does not matter; a thread's reading at
 * registration has a delay of 0; nothing moves where no readings bound the
 * running time, or where it is within the CPU time and the slack. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ctrace_format.h"
#include "model/cpucheck.h"
#include "read/state.h"

#define MS 1000000ull

static struct ctr_thread_info thread;
static struct ctr_trace trace = {.threads = &thread, .nthreads = 1};

static void reading(struct ctr_consumer *c, uint64_t ns, uint64_t cpu, uint64_t delay,
                    uint32_t flags)
{
    struct ctr_cpu_reading r = {ns, cpu, delay, flags};
    c->cputime(c->ctx, &trace, 0, &r);
}

static void running(struct ctr_consumer *c, uint64_t from, uint64_t to)
{
    struct ctr_interval iv = {
        .thread = &thread, .state = CTR_STATE_RUNNING, .start_ns = from, .end_ns = to};
    c->interval(c->ctx, &iv);
}

/* The check's verdict on thread 0 after everything settled. */
static struct ctr_cpu_moved verdict(struct ctr_cpucheck *cc, struct ctr_consumer *c)
{
    c->settle(c->ctx, UINT64_MAX);
    struct ctr_cpu_moved m;
    assert_int_equal(ctr_cpucheck_thread(cc, 0, &m), 0);
    ctr_cpucheck_free(cc);
    return m;
}

static void test_excess_split_by_delay(void **state)
{
    (void)state;
    struct ctr_cpucheck *cc = ctr_cpucheck_new(&trace);
    assert_non_null(cc);
    struct ctr_consumer c = ctr_cpucheck_consumer(cc);
    reading(&c, 0, 0, 0, CTR_CPUTIME_DELAY_KNOWN);
    reading(&c, 100 * MS, 40 * MS, 30 * MS, CTR_CPUTIME_DELAY_KNOWN);
    running(&c, 0, 100 * MS);
    struct ctr_cpu_moved m = verdict(cc, &c);
    assert_int_equal(m.runnable_ns, 30 * MS);
    assert_int_equal(m.offcpu_ns, 30 * MS);
    assert_int_equal(m.checked_ns, 100 * MS);
}

static void test_within_cpu_moves_nothing(void **state)
{
    (void)state;
    struct ctr_cpucheck *cc = ctr_cpucheck_new(&trace);
    struct ctr_consumer c = ctr_cpucheck_consumer(cc);
    reading(&c, 0, 0, 0, 0);
    reading(&c, 100 * MS, 60 * MS, 0, 0);
    running(&c, 10 * MS, 70 * MS + CTR_CPUCHECK_SLACK_NS / 2); /* within the slack */
    running(&c, 150 * MS, 300 * MS);                           /* after the last: unbounded */
    struct ctr_cpu_moved m = verdict(cc, &c);
    assert_int_equal(m.runnable_ns + m.offcpu_ns, 0);
}

/* Readings at 0, 100, 200 ms: all of the first span on the CPU, half of the
 * second; running from 50 to 200 ms, in two intervals, the first across the
 * reading at 100. No delay known: the excess is off-CPU, unattributed. */
static void straddle(int readings_first)
{
    struct ctr_cpucheck *cc = ctr_cpucheck_new(&trace);
    struct ctr_consumer c = ctr_cpucheck_consumer(cc);
    if (readings_first) { /* a trace read whole gives every reading first */
        reading(&c, 0, 0, 0, 0);
        reading(&c, 100 * MS, 100 * MS, 0, 0);
        reading(&c, 200 * MS, 150 * MS, 0, 0);
        running(&c, 50 * MS, 150 * MS);
        running(&c, 150 * MS, 200 * MS);
    } else { /* streaming: each reading before the intervals that end after it */
        reading(&c, 0, 0, 0, 0);
        reading(&c, 100 * MS, 100 * MS, 0, 0);
        c.settle(c.ctx, 90 * MS);
        reading(&c, 200 * MS, 150 * MS, 0, 0);
        running(&c, 50 * MS, 150 * MS);
        running(&c, 150 * MS, 200 * MS);
    }
    struct ctr_cpu_moved m = verdict(cc, &c);
    assert_int_equal(m.runnable_ns, 0);
    assert_int_equal(m.offcpu_ns, 50 * MS);
    assert_int_equal(m.checked_ns, 150 * MS);
}

static void test_interval_split_at_readings(void **state)
{
    (void)state;
    straddle(0);
    straddle(1);
}

/* A reading at registration has no delay: 0, so the next one's is the span's. */
static void test_registration_delay_is_zero(void **state)
{
    (void)state;
    struct ctr_cpucheck *cc = ctr_cpucheck_new(&trace);
    struct ctr_consumer c = ctr_cpucheck_consumer(cc);
    reading(&c, 0, 5 * MS, 0, CTR_CPUTIME_AT_START);
    running(&c, 0, 100 * MS);
    reading(&c, 100 * MS, 25 * MS, 40 * MS, CTR_CPUTIME_DELAY_KNOWN);
    struct ctr_cpu_moved m = verdict(cc, &c);
    assert_int_equal(m.runnable_ns, 40 * MS);
    assert_int_equal(m.offcpu_ns, 40 * MS);
}

/* A thread waiting for a CPU at a reading has that wait in the next
 * reading's delay (the kernel adds it when the thread runs again): the next
 * span's delay beyond its own excess explains the last span's off-CPU time
 * as runnable. */
static void test_late_delay_explains_the_span_before(void **state)
{
    (void)state;
    struct ctr_cpucheck *cc = ctr_cpucheck_new(&trace);
    struct ctr_consumer c = ctr_cpucheck_consumer(cc);
    reading(&c, 0, 0, 0, CTR_CPUTIME_DELAY_KNOWN);
    reading(&c, 100 * MS, 50 * MS, 10 * MS, CTR_CPUTIME_DELAY_KNOWN);
    reading(&c, 200 * MS, 150 * MS, 40 * MS, CTR_CPUTIME_DELAY_KNOWN);
    running(&c, 0, 200 * MS);
    struct ctr_cpu_moved m = verdict(cc, &c);
    assert_int_equal(m.runnable_ns, 40 * MS);
    assert_int_equal(m.offcpu_ns, 10 * MS);
}

/* A window the reading never settled past is judged at the finish. */
static void test_unsettled_window_judged(void **state)
{
    (void)state;
    struct ctr_cpucheck *cc = ctr_cpucheck_new(&trace);
    struct ctr_consumer c = ctr_cpucheck_consumer(cc);
    reading(&c, 0, 0, 0, 0);
    running(&c, 0, 100 * MS);
    reading(&c, 100 * MS, 10 * MS, 0, 0);
    struct ctr_cpu_moved m;
    assert_int_equal(ctr_cpucheck_thread(cc, 0, &m), 0);
    assert_int_equal(m.offcpu_ns, 0); /* not judged yet */
    assert_int_equal(ctr_cpucheck_finish(cc), 0);
    assert_int_equal(ctr_cpucheck_thread(cc, 0, &m), 0);
    assert_int_equal(m.offcpu_ns, 90 * MS);
    ctr_cpucheck_free(cc);
}

/* Kept verdicts, shared over each window's running time in proportion: a
 * part of the running time gets its part of the window's off-CPU and
 * runnable time (the late delay's change included); a window within its
 * CPU time gives nothing; the parts add up to the thread's total. */
static void test_split_in_proportion(void **state)
{
    (void)state;
    struct ctr_cpucheck *cc = ctr_cpucheck_new(&trace);
    ctr_cpucheck_keep(cc);
    struct ctr_consumer c = ctr_cpucheck_consumer(cc);
    reading(&c, 0, 0, 0, CTR_CPUTIME_DELAY_KNOWN);
    running(&c, 0, 100 * MS); /* 100 ms running, 20 of CPU: 80 moved */
    reading(&c, 100 * MS, 20 * MS, 0, CTR_CPUTIME_DELAY_KNOWN);
    running(&c, 100 * MS, 200 * MS); /* within its CPU time; its delay */
    reading(&c, 200 * MS, 120 * MS, 30 * MS, CTR_CPUTIME_DELAY_KNOWN); /* late: 30 runnable */
    running(&c, 200 * MS, 300 * MS); /* 100 ms running, 50 of CPU, no delay */
    reading(&c, 300 * MS, 170 * MS, 30 * MS, CTR_CPUTIME_DELAY_KNOWN);
    c.settle(c.ctx, 150 * MS);
    assert_int_equal(ctr_cpucheck_finish(cc), 0);
    uint64_t q, off;
    ctr_cpucheck_split(cc, 0, 0, 50 * MS, &q, &off); /* half of the first */
    assert_int_equal(q, 15 * MS);
    assert_int_equal(off, 25 * MS);
    ctr_cpucheck_split(cc, 0, 100 * MS, 200 * MS, &q, &off);
    assert_int_equal(q + off, 0);
    ctr_cpucheck_split(cc, 0, 250 * MS, 400 * MS, &q, &off); /* half of the third */
    assert_int_equal(q, 0);
    assert_int_equal(off, 25 * MS);
    ctr_cpucheck_split(cc, 0, 0, 300 * MS, &q, &off);
    struct ctr_cpu_moved m;
    assert_int_equal(ctr_cpucheck_thread(cc, 0, &m), 0);
    assert_int_equal(q, m.runnable_ns);
    assert_int_equal(off, m.offcpu_ns);
    assert_int_equal(m.runnable_ns + m.offcpu_ns, 130 * MS);
    ctr_cpucheck_free(cc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_excess_split_by_delay),
        cmocka_unit_test(test_within_cpu_moves_nothing),
        cmocka_unit_test(test_interval_split_at_readings),
        cmocka_unit_test(test_registration_delay_is_zero),
        cmocka_unit_test(test_late_delay_explains_the_span_before),
        cmocka_unit_test(test_unsettled_window_judged),
        cmocka_unit_test(test_split_in_proportion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
