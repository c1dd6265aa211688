/* SPDX-License-Identifier: MIT */
/* test-states.c - the state machine's reading of context switches
 * (analyze/read/state.c, FORMAT.md §4.2), on events made by hand: a
 * preemption is runnable; a plain switch-out that was no preemption changes
 * nothing (only the writer knows whether a wait holds the thread: the
 * CPU-time check catches what none does); a SWITCH_WAIT, a switch-out the
 * writer found in no recorded wait, is a wait as it names it (`untraced
 * wait` when it could not) until the switch-in, never running; a recorded
 * wait whose BLOCK comes after it (written late) takes over without being
 * counted as out of place. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ctrace_format.h"
#include "read/state.h"

static struct ctr_thread_info thread = {.id = 1};
static struct ctr_trace trace = {.threads = &thread, .nthreads = 1};

#define MAXIV 16
struct seen {
    struct ctr_interval iv[MAXIV];
    size_t n;
};

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct seen *s = ctx;
    assert_true(s->n < MAXIV);
    s->iv[s->n] = *iv;
    s->iv[s->n].release = NULL;
    s->n++;
}

static void feed(struct ctr_states *m, uint64_t ns, uint8_t type, uint64_t a0, uint64_t a1,
                 uint64_t a2)
{
    struct ctr_trace_event e = {.ns = ns, .type = type, .args = {a0, a1, a2}};
    assert_int_equal(ctr_states_event(m, 0, &e), 0);
}

/* The intervals of one thread that starts at 0 and is fed `run`. */
static struct seen walk(void (*run)(struct ctr_states *m), uint64_t *odd)
{
    static struct seen s;
    memset(&s, 0, sizeof(s));
    struct ctr_states *m = ctr_states_new(&trace, on_interval, NULL, &s);
    assert_non_null(m);
    feed(m, 0, CTR_EV_THREAD_START, 0, 0, 0);
    run(m);
    *odd = ctr_states_finish(m);
    ctr_states_free(m);
    return s;
}

static void assert_iv(const struct ctr_interval *iv, enum ctr_state st, uint64_t a, uint64_t b,
                      uint8_t reason)
{
    assert_int_equal(iv->state, st);
    assert_int_equal(iv->start_ns, a);
    assert_int_equal(iv->end_ns, b);
    if (st != CTR_STATE_RUNNING)
        assert_int_equal(iv->reason, reason);
}

static void preempted_then_blocked(struct ctr_states *m)
{
    feed(m, 10, CTR_EV_SWITCH_OUT, 1, 0, 0); /* preempted */
    feed(m, 20, CTR_EV_SWITCH_IN, 0, 0, 0);
    feed(m, 25, CTR_EV_SWITCH_OUT, 0, 0, 0); /* blocked: whether in a wait, unknown */
    feed(m, 27, CTR_EV_SWITCH_IN, 0, 0, 0);
    feed(m, 30, CTR_EV_SWITCH_WAIT, CTR_REASON_UNTRACED, 0, 0); /* in none */
    feed(m, 70, CTR_EV_SWITCH_IN, 0, 0, 0);
    feed(m, 80, CTR_EV_THREAD_END, 0, 0, 0);
}

static void test_untraced_wait(void **state)
{
    (void)state;
    uint64_t odd;
    struct seen s = walk(preempted_then_blocked, &odd);
    assert_int_equal(odd, 0);
    assert_int_equal(s.n, 5);
    assert_iv(&s.iv[0], CTR_STATE_RUNNING, 0, 10, 0);
    assert_iv(&s.iv[1], CTR_STATE_RUNNABLE, 10, 20, 0);
    assert_iv(&s.iv[2], CTR_STATE_RUNNING, 20, 30, 0);
    assert_iv(&s.iv[3], CTR_STATE_BLOCKED, 30, 70, CTR_REASON_UNTRACED);
    assert_int_equal(s.iv[3].stack_id, 0);
    assert_iv(&s.iv[4], CTR_STATE_RUNNING, 70, 80, 0);
}

static void named_wait(struct ctr_states *m)
{
    feed(m, 30, CTR_EV_SWITCH_WAIT, CTR_REASON_FLOCK, 7, 42);
    feed(m, 90, CTR_EV_SWITCH_IN, 0, 0, 0);
    feed(m, 95, CTR_EV_THREAD_END, 0, 0, 0);
}

static void test_named_wait(void **state)
{
    (void)state;
    uint64_t odd;
    struct seen s = walk(named_wait, &odd);
    assert_int_equal(odd, 0);
    assert_int_equal(s.n, 3);
    assert_iv(&s.iv[1], CTR_STATE_BLOCKED, 30, 90, CTR_REASON_FLOCK);
    assert_int_equal(s.iv[1].object, 7);
    assert_int_equal(s.iv[1].stack_id, 42);
    assert_iv(&s.iv[2], CTR_STATE_RUNNING, 90, 95, 0);
}

static void inside_a_recorded_wait(struct ctr_states *m)
{
    feed(m, 10, CTR_EV_BLOCK, CTR_REASON_MUTEX_LOCK, 0x1000, 5);
    feed(m, 12, CTR_EV_SWITCH_OUT, 0, 0, 0);
    feed(m, 40, CTR_EV_SWITCH_IN, 0, 0, 0);
    feed(m, 41, CTR_EV_UNBLOCK, 0, 0, 0);
    feed(m, 50, CTR_EV_THREAD_END, 0, 0, 0);
}

static void test_inside_a_recorded_wait(void **state)
{
    (void)state;
    uint64_t odd;
    struct seen s = walk(inside_a_recorded_wait, &odd);
    assert_int_equal(odd, 0);
    /* Running, the mutex wait up to its switch-in, running after. */
    assert_iv(&s.iv[1], CTR_STATE_BLOCKED, 10, 40, CTR_REASON_MUTEX_LOCK);
    for (size_t i = 0; i < s.n; i++)
        assert_int_not_equal(s.iv[i].reason, CTR_REASON_UNTRACED);
}

static void block_written_late(struct ctr_states *m)
{
    feed(m, 30, CTR_EV_SWITCH_WAIT, CTR_REASON_UNTRACED, 0, 0);
    feed(m, 30, CTR_EV_BLOCK, CTR_REASON_READ, 3, 0); /* its start, clamped */
    feed(m, 60, CTR_EV_SWITCH_IN, 0, 0, 0);
    feed(m, 61, CTR_EV_UNBLOCK, 0, 0, 0);
    feed(m, 70, CTR_EV_THREAD_END, 0, 0, 0);
}

static void test_recorded_wait_takes_over(void **state)
{
    (void)state;
    uint64_t odd;
    struct seen s = walk(block_written_late, &odd);
    assert_int_equal(odd, 0);
    size_t k = 0;
    while (k < s.n && s.iv[k].reason != CTR_REASON_READ)
        k++;
    assert_true(k < s.n);
    assert_iv(&s.iv[k], CTR_STATE_BLOCKED, 30, 60, CTR_REASON_READ);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_untraced_wait),
        cmocka_unit_test(test_named_wait),
        cmocka_unit_test(test_inside_a_recorded_wait),
        cmocka_unit_test(test_recorded_wait_takes_over),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
