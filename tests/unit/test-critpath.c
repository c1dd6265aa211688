/* SPDX-License-Identifier: MIT */
/* test-critpath.c - the critical path walk (model/critpath.h) on intervals
 * made by hand:
 *   - a chain across three threads: every link followed, each part on the
 *     right thread in the right state, the parts tiling the latency;
 *   - a releaser's time counts only within the wait it explains;
 *   - a lock's holders in turn during one wait (its releases) each explain
 *     their own span, from when they can have taken it: a holder's wait
 *     from before the release ahead of its own is not on the path, a
 *     wakee's time waiting for a CPU is; with regions, a holder's span
 *     starts no earlier than the region of its release;
 *   - time no interval covers is unknown, and said;
 *   - a thread's own release is no hop; a wait with no release stays its
 *     thread's;
 *   - a chain deeper than the walk follows is cut, and said;
 *   - intervals outside every window are not kept;
 *   - walked as the reading settles past a task's end (open intervals as
 *     they began), the history of tasks walked let go, and a task longer
 *     than the memory budget says it lost its start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctrace_format.h"
#include "model/critpath.h"
#include "model/regionline.h"
#include "read/state.h"

#define NTHREADS 600

static struct ctr_thread_info threads[NTHREADS];
static struct ctr_trace trace = {.threads = threads, .nthreads = NTHREADS};

struct fixture {
    struct ctr_cp_history *h;
    struct ctr_consumer c;
};

static void start(struct fixture *f, uint64_t begin, uint64_t end)
{
    struct ctr_cp_want w = {1, begin, end, 0};
    f->h = ctr_cp_history_new(&trace, &w, 1, 0, NULL, NULL);
    assert_non_null(f->h);
    f->c = ctr_cp_history_consumer(f->h);
}

static void running(struct fixture *f, uint32_t th, uint64_t a, uint64_t b)
{
    struct ctr_interval iv = {&threads[th], CTR_STATE_RUNNING, a, b, 0, 0, 0, NULL, 0};
    f->c.interval(f->c.ctx, &iv);
}

/* A wait [a, b] on object obj at stack, released at rel by thread rth
 * (rth < 0: no release), then runnable to c. */
static void wait_(struct fixture *f, uint32_t th, uint64_t a, uint64_t b, uint64_t c, int rth,
                  uint8_t reason, uint64_t obj, uint64_t stack)
{
    struct ctr_release r = {obj, b, stack + 1000, rth >= 0 ? &threads[rth] : NULL};
    struct ctr_interval iv = {&threads[th], CTR_STATE_BLOCKED,    a, b, reason, obj,
                              stack,        rth >= 0 ? &r : NULL, 0};
    f->c.interval(f->c.ctx, &iv);
    if (c > b) {
        iv.state = CTR_STATE_RUNNABLE;
        iv.start_ns = b;
        iv.end_ns = c;
        f->c.interval(f->c.ctx, &iv);
    }
}

static uint64_t sum(const struct ctr_cp_path *p, uint32_t th, uint8_t state)
{
    uint64_t s = 0;
    for (size_t i = 0; i < p->nseg; i++)
        if ((th == UINT32_MAX || p->seg[i].thread == th) && (!state || p->seg[i].state == state))
            s += p->seg[i].end_ns - p->seg[i].start_ns;
    return s;
}

/* Task on thread 0 from 100 to 1000: it runs to 200, waits on a lock to
 * 900 (released by thread 1), runnable to 950, runs to 1000. Thread 1 held
 * the lock: it ran to 300, waited on a condition to 800 (released by thread
 * 2), ran to 900 (its release). Thread 2 slept in a read from 50 to 700,
 * ran to 800 (its signal). */
static void test_chain_across_three_threads(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 100, 1000);
    running(&f, 2, 0, 50);
    wait_(&f, 2, 50, 700, 700, -1, CTR_REASON_READ, 0, 7);
    running(&f, 2, 700, 2000);
    running(&f, 1, 0, 300);
    wait_(&f, 1, 300, 800, 800, 2, CTR_REASON_COND_WAIT, 0xc, 5);
    running(&f, 1, 800, 2000);
    running(&f, 0, 0, 200);
    wait_(&f, 0, 200, 900, 950, 1, CTR_REASON_MUTEX_LOCK, 0x1, 3);
    running(&f, 0, 950, 2000);
    struct ctr_cp_path p;
    assert_int_equal(ctr_cp_walk(f.h, 1, 0, 100, 1000, &p), 0);
    assert_int_equal(sum(&p, UINT32_MAX, 0), 900); /* tiles the latency */
    assert_int_equal(p.unknown_ns, 0);
    assert_int_equal(sum(&p, 0, CTR_CP_RUNNING), 100 + 50);
    assert_int_equal(sum(&p, 0, CTR_CP_RUNNABLE), 50);
    /* The lock's wait [200, 900]: thread 1 ran [200, 300] and [800, 900],
     * and its condition wait [300, 800] is thread 2's: the read to 700,
     * running to 800. */
    assert_int_equal(sum(&p, 1, CTR_CP_RUNNING), 200);
    assert_int_equal(sum(&p, 1, CTR_CP_BLOCKED), 0);
    assert_int_equal(sum(&p, 2, CTR_CP_BLOCKED), 400);
    assert_int_equal(sum(&p, 2, CTR_CP_RUNNING), 100);
    assert_int_equal(p.nhop, 1);
    assert_int_equal(p.hop[0].releaser, 1);
    assert_int_equal(p.hop[0].start_ns, 200);
    assert_int_equal(p.hop[0].end_ns, 900);
    assert_int_equal(p.hop[0].release_stack, 1003);
    for (size_t i = 0; i < p.nseg; i++) {
        if (p.seg[i].thread == 2) {
            assert_int_equal(p.seg[i].hops, 2);
            assert_int_equal(p.seg[i].via, 0);
            if (p.seg[i].state == CTR_CP_BLOCKED)
                assert_int_equal(p.seg[i].reason, CTR_REASON_READ);
        }
        /* Thread 1's last running part ends at its release's stack. */
        if (p.seg[i].thread == 1 && p.seg[i].end_ns == 900)
            assert_int_equal(p.seg[i].stack_id, 1003);
    }
    ctr_cp_path_free(&p);
    ctr_cp_history_free(f.h);
}

static void release(struct fixture *f, uint32_t th, uint64_t ns, uint64_t obj, uint64_t stack)
{
    struct ctr_trace_event e = {.ns = ns, .type = CTR_EV_RELEASE, .args = {obj, stack}};
    f->c.event(f->c.ctx, &trace, th, &e);
}

/* A lock wait [100, 1000] during which thread 1 held the lock to 400 (its
 * release there woke nobody in time) and thread 2 later, to 1000: each
 * holder explains its own span, and thread 2's time before 400 (other
 * work) is not on the path, nor its wait after 400: it took the lock once
 * it ran again. */
static void test_lock_holders_in_turn(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 0, 1000);
    running(&f, 1, 0, 2000);
    running(&f, 2, 0, 300);
    wait_(&f, 2, 300, 600, 600, -1, CTR_REASON_EPOLL_WAIT, 0, 9); /* not holding */
    running(&f, 2, 600, 2000);
    release(&f, 1, 400, 0x1, 11);
    release(&f, 2, 1000, 0x1, 12);
    wait_(&f, 0, 100, 1000, 1000, 2, CTR_REASON_MUTEX_LOCK, 0x1, 3);
    struct ctr_cp_path p;
    assert_int_equal(ctr_cp_walk(f.h, 1, 0, 100, 1000, &p), 0);
    assert_int_equal(sum(&p, UINT32_MAX, 0), 900);
    assert_int_equal(sum(&p, 1, CTR_CP_RUNNING), 300); /* [100, 400] */
    assert_int_equal(sum(&p, 2, CTR_CP_RUNNING), 400); /* [600, 1000] */
    /* [400, 600]: thread 2 was in epoll_wait, so the lock was free or
     * someone's whose release was not recorded (glibc's lock word shows no
     * waiter to a barging unlock): the waiter's own, blocked on the lock,
     * not thread 2's. */
    assert_int_equal(sum(&p, 2, CTR_CP_BLOCKED), 0);
    assert_int_equal(sum(&p, 0, CTR_CP_BLOCKED), 200);
    for (size_t i = 0; i < p.nseg; i++)
        if (p.seg[i].thread == 0 && p.seg[i].state == CTR_CP_BLOCKED) {
            assert_int_equal(p.seg[i].start_ns, 400);
            assert_int_equal(p.seg[i].reason, CTR_REASON_MUTEX_LOCK);
            assert_int_equal(p.seg[i].hops, 0);
        }
    for (size_t i = 0; i < p.nseg; i++)
        if (p.seg[i].thread == 1)
            assert_int_equal(p.seg[i].stack_id, 11); /* up to its own release */
    ctr_cp_path_free(&p);
    ctr_cp_history_free(f.h);
}

/* A lock wait [100, 1000] whose holder released at 400, waking thread 2
 * (waiting on the same lock), which then waited for a CPU to 700 and held
 * the lock to 1000: the lock's handoff to a runnable thread is on the path,
 * as thread 2's runnable time. */
static void test_lock_handed_to_a_runnable_thread(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 0, 1000);
    running(&f, 1, 0, 2000);
    wait_(&f, 2, 50, 400, 700, 1, CTR_REASON_MUTEX_LOCK, 0x1, 5);
    running(&f, 2, 700, 2000);
    release(&f, 1, 400, 0x1, 11);
    release(&f, 2, 1000, 0x1, 12);
    wait_(&f, 0, 100, 1000, 1000, 2, CTR_REASON_MUTEX_LOCK, 0x1, 3);
    struct ctr_cp_path p;
    assert_int_equal(ctr_cp_walk(f.h, 1, 0, 100, 1000, &p), 0);
    assert_int_equal(sum(&p, UINT32_MAX, 0), 900);
    assert_int_equal(sum(&p, 1, CTR_CP_RUNNING), 300);  /* [100, 400] */
    assert_int_equal(sum(&p, 2, CTR_CP_RUNNABLE), 300); /* [400, 700] */
    assert_int_equal(sum(&p, 2, CTR_CP_RUNNING), 300);  /* [700, 1000] */
    assert_int_equal(sum(&p, 0, 0), 0);
    ctr_cp_path_free(&p);
    ctr_cp_history_free(f.h);
}

/* As in the handoff test, but thread 2 was running when thread 1 released
 * (at 400), and entered its region "lookup" at 800, releasing at 1000 in
 * it: with regions, it took the lock in that region, and [400, 800] is the
 * waiter's own (thread 2's other work is not on the path); without, it
 * cannot tell, and the span is thread 2's from 400. */
static void test_holder_from_its_region(void **state)
{
    (void)state;
    static struct ctr_region region = {
        .task = 7, .name = "lookup", .thread = 2, .start_ns = 800, .end_ns = 1100};
    struct ctr_tasks model = {.regions = &region, .nregions = 1};
    for (int with_regions = 0; with_regions < 2; with_regions++) {
        struct ctr_region_line *rl;
        assert_int_equal(ctr_region_line_new(&model, &rl), 0);
        struct fixture f;
        start(&f, 0, 1000);
        if (with_regions)
            ctr_cp_history_use_phases(f.h, ctr_region_line_phase, rl);
        running(&f, 1, 0, 2000);
        running(&f, 2, 0, 2000);
        release(&f, 1, 400, 0x1, 11);
        release(&f, 2, 1000, 0x1, 12);
        wait_(&f, 0, 100, 1000, 1000, 2, CTR_REASON_MUTEX_LOCK, 0x1, 3);
        struct ctr_cp_path p;
        assert_int_equal(ctr_cp_walk(f.h, 1, 0, 100, 1000, &p), 0);
        assert_int_equal(sum(&p, UINT32_MAX, 0), 900);
        assert_int_equal(sum(&p, 1, CTR_CP_RUNNING), 300);
        assert_int_equal(sum(&p, 2, CTR_CP_RUNNING), with_regions ? 200 : 600);
        assert_int_equal(sum(&p, 0, CTR_CP_BLOCKED), with_regions ? 400 : 0);
        ctr_cp_path_free(&p);
        ctr_cp_history_free(f.h);
        ctr_region_line_free(rl);
    }
}

/* Thread 1's history before the wait it explains is not on the path, and
 * time no interval covers is unknown. */
static void test_releaser_only_within_the_wait_and_unknown(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 0, 1000);
    running(&f, 1, 0, 900);   /* long work, before and during the wait */
    running(&f, 0, 400, 500); /* thread 0's first event at 400 */
    wait_(&f, 0, 500, 900, 900, 1, CTR_REASON_MUTEX_LOCK, 0x1, 3);
    running(&f, 0, 900, 1000);
    struct ctr_cp_path p;
    assert_int_equal(ctr_cp_walk(f.h, 1, 0, 100, 1000, &p), 0);
    assert_int_equal(sum(&p, UINT32_MAX, 0), 900);
    assert_int_equal(sum(&p, 1, 0), 400); /* [500, 900] only */
    assert_int_equal(p.unknown_ns, 300);  /* [100, 400] on thread 0 */
    assert_int_equal(sum(&p, 0, CTR_CP_UNKNOWN), 300);
    ctr_cp_path_free(&p);
    ctr_cp_history_free(f.h);
}

/* A self-release is no hop; a wait with no release stays its thread's. */
static void test_no_hop_without_another_releaser(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 0, 1000);
    wait_(&f, 0, 0, 400, 400, 0, CTR_REASON_SEM_WAIT, 0x5, 3);
    wait_(&f, 0, 400, 1000, 1000, -1, CTR_REASON_NANOSLEEP, 0, 4);
    struct ctr_cp_path p;
    assert_int_equal(ctr_cp_walk(f.h, 1, 0, 0, 1000, &p), 0);
    assert_int_equal(p.nhop, 0);
    assert_int_equal(sum(&p, 0, CTR_CP_BLOCKED), 1000);
    ctr_cp_path_free(&p);
    ctr_cp_history_free(f.h);
}

/* Each thread i waits [0, 1000] released by thread i+1: 599 hops, more
 * than the walk follows. */
static void test_deep_chain_cut(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 0, 1000);
    for (uint32_t i = 0; i + 1 < NTHREADS; i++)
        wait_(&f, i, 0, 1000, 1000, (int)i + 1, CTR_REASON_MUTEX_LOCK, 0x1, 3);
    running(&f, NTHREADS - 1, 0, 1000);
    struct ctr_cp_path p;
    assert_int_equal(ctr_cp_walk(f.h, 1, 0, 0, 1000, &p), 0);
    assert_true(p.cut);
    assert_int_equal(sum(&p, UINT32_MAX, 0), 1000);
    ctr_cp_path_free(&p);
    ctr_cp_history_free(f.h);
}

/* Outside every window, nothing is kept: the path is unknown there. */
static void test_outside_the_windows_not_kept(void **state)
{
    (void)state;
    struct fixture f;
    start(&f, 5000, 6000);
    running(&f, 0, 0, 1000);
    struct ctr_cp_path p;
    assert_int_equal(ctr_cp_walk(f.h, 1, 0, 0, 1000, &p), 0);
    assert_int_equal(p.unknown_ns, 1000);
    ctr_cp_path_free(&p);
    ctr_cp_history_free(f.h);
}

/* ---------------------------------------------------------------------------
 * Walking as the reading goes (a path function given)
 * ------------------------------------------------------------------------- */

struct taken {
    struct ctr_cp_path p[4];
    size_t index[4], n;
};

static int take(void *ctx, size_t index, struct ctr_cp_path *p)
{
    struct taken *tk = ctx;
    if (tk->n < 4) {
        tk->index[tk->n] = index;
        tk->p[tk->n++] = *p;
    } else {
        ctr_cp_path_free(p);
    }
    return 0;
}

static void begin_(struct fixture *f, uint32_t th, enum ctr_state state, uint64_t at,
                   uint8_t reason, uint64_t obj)
{
    struct ctr_interval iv = {&threads[th], state, at, 0, reason, obj, 3, NULL, 0};
    f->c.begin(f->c.ctx, &iv);
}

/* Task 7 on thread 0 from 100 to 500: it runs to 200, waits on a lock to
 * 400 (released by thread 1), then runs on: its last interval and thread
 * 1's only one are still open when the reading settles past 500, and the
 * walk uses them as they began. */
static void test_walked_as_the_reading_settles(void **state)
{
    (void)state;
    struct fixture f;
    struct taken tk = {0};
    struct ctr_cp_want w[] = {{9, 2000, 3000, 0}, {7, 100, 500, 0}};
    f.h = ctr_cp_history_new(&trace, w, 2, 0, take, &tk);
    assert_non_null(f.h);
    f.c = ctr_cp_history_consumer(f.h);
    begin_(&f, 0, CTR_STATE_RUNNING, 0, 0, 0);
    begin_(&f, 1, CTR_STATE_RUNNING, 0, 0, 0);
    running(&f, 0, 0, 200);
    begin_(&f, 0, CTR_STATE_BLOCKED, 200, CTR_REASON_MUTEX_LOCK, 0x1);
    release(&f, 1, 400, 0x1, 11);
    wait_(&f, 0, 200, 400, 400, 1, CTR_REASON_MUTEX_LOCK, 0x1, 3);
    begin_(&f, 0, CTR_STATE_RUNNING, 400, 0, 0);
    f.c.settle(f.c.ctx, 500); /* not past the end yet */
    assert_int_equal(tk.n, 0);
    f.c.settle(f.c.ctx, 501);
    assert_int_equal(tk.n, 1);
    assert_int_equal(tk.index[0], 1);
    struct ctr_cp_path *p = &tk.p[0];
    assert_int_equal(p->task, 7);
    assert_int_equal(sum(p, UINT32_MAX, 0), 400);
    assert_int_equal(p->unknown_ns, 0);
    assert_int_equal(sum(p, 0, CTR_CP_RUNNING), 100 + 100); /* [100, 200], [400, 500] */
    assert_int_equal(sum(p, 1, CTR_CP_RUNNING), 200);       /* [200, 400], still open */
    assert_int_equal(ctr_cp_history_left(f.h), 1);
    /* Nothing the task left needs is kept once pruned; the end walks it. */
    f.c.settle(f.c.ctx, UINT64_MAX);
    assert_int_equal(tk.n, 2);
    assert_int_equal(tk.p[1].task, 9);
    assert_int_equal(tk.p[1].unknown_ns, 0); /* thread 0 runs on, open */
    assert_int_equal(ctr_cp_history_left(f.h), 0);
    assert_int_equal(ctr_cp_history_error(f.h), 0);
    for (size_t i = 0; i < tk.n; i++)
        ctr_cp_path_free(&tk.p[i]);
    ctr_cp_history_free(f.h);
}

/* 20,000 short tasks one after another: what is kept stays bounded (the
 * history of tasks walked goes), and every one is walked whole. */
static void test_history_of_walked_tasks_goes(void **state)
{
    (void)state;
    enum { TASKS = 20000 };
    struct ctr_cp_want *w = calloc(TASKS, sizeof(*w));
    assert_non_null(w);
    for (uint32_t k = 0; k < TASKS; k++)
        w[k] = (struct ctr_cp_want){k + 1, k * 1000 + 100, k * 1000 + 900, 0};
    struct fixture f;
    struct taken tk = {0};
    f.h = ctr_cp_history_new(&trace, w, TASKS, 0, take, &tk);
    free(w);
    assert_non_null(f.h);
    f.c = ctr_cp_history_consumer(f.h);
    size_t most = 0;
    for (uint64_t k = 0; k < TASKS; k++) {
        for (uint64_t t = k * 1000; t < k * 1000 + 1000; t += 100)
            running(&f, 0, t, t + 100);
        f.c.settle(f.c.ctx, k * 1000 + 1000);
        if (ctr_cp_history_kept(f.h) > most)
            most = ctr_cp_history_kept(f.h);
    }
    f.c.settle(f.c.ctx, UINT64_MAX);
    assert_int_equal(ctr_cp_history_left(f.h), 0);
    assert_int_equal(ctr_cp_history_error(f.h), 0);
    /* 200,000 intervals went by; it keeps at most a few thousand. */
    assert_true(most < 20000 * 64);
    assert_int_equal(sum(&tk.p[3], UINT32_MAX, CTR_CP_RUNNING), 800);
    for (size_t i = 0; i < tk.n; i++)
        ctr_cp_path_free(&tk.p[i]);
    ctr_cp_history_free(f.h);
}

/* A task longer than the budget keeps: the oldest history goes, the path
 * says so, and its parts still tile the latency. */
static void test_budget_forgets_and_says_so(void **state)
{
    (void)state;
    struct fixture f;
    struct taken tk = {0};
    struct ctr_cp_want w = {1, 0, 2000000, 0};
    const size_t budget = 64 << 10;
    f.h = ctr_cp_history_new(&trace, &w, 1, budget, take, &tk);
    assert_non_null(f.h);
    f.c = ctr_cp_history_consumer(f.h);
    size_t most = 0;
    for (uint64_t t = 0; t < 2000000; t += 50) {
        running(&f, 0, t, t + 50);
        if (t % 25600 == 0)
            f.c.settle(f.c.ctx, t + 50);
        if (ctr_cp_history_kept(f.h) > most)
            most = ctr_cp_history_kept(f.h);
    }
    f.c.settle(f.c.ctx, UINT64_MAX);
    assert_int_equal(tk.n, 1);
    assert_true(tk.p[0].forgotten);
    assert_true(tk.p[0].unknown_ns > 0);
    assert_int_equal(sum(&tk.p[0], UINT32_MAX, 0), 2000000);
    assert_int_equal(sum(&tk.p[0], 0, CTR_CP_UNKNOWN), tk.p[0].unknown_ns);
    /* Within the budget, or the least a prune waits for, and a settle's worth. */
    assert_true(most < 2 * (budget > 4096 * 64 ? budget : 4096 * 64));
    ctr_cp_path_free(&tk.p[0]);
    ctr_cp_history_free(f.h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_across_three_threads),
        cmocka_unit_test(test_releaser_only_within_the_wait_and_unknown),
        cmocka_unit_test(test_lock_holders_in_turn),
        cmocka_unit_test(test_lock_handed_to_a_runnable_thread),
        cmocka_unit_test(test_holder_from_its_region),
        cmocka_unit_test(test_no_hop_without_another_releaser),
        cmocka_unit_test(test_deep_chain_cut),
        cmocka_unit_test(test_outside_the_windows_not_kept),
        cmocka_unit_test(test_walked_as_the_reading_settles),
        cmocka_unit_test(test_history_of_walked_tasks_goes),
        cmocka_unit_test(test_budget_forgets_and_says_so),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
