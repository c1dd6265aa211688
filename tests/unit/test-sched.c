/* SPDX-License-Identifier: MIT */
/* test-sched.c - ground truth for the sched profile from context switches:
 * more CPU-bound threads than cores, each measuring its own wall and CPU
 * time. A thread that is neither running nor waiting is runnable, so the
 * profile's preempted time must match the sum of (wall - CPU) within 10%.
 * Also checks that the trace says it recorded switches, and that the ring
 * size option is honoured: a ring too small for a flush's switches loses
 * some, counted in the trace; a big one loses none of the same. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "profile/profile.h"
#include "read/trace.h"

#define SPIN_NS (300 * 1000 * 1000ll)

static int64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct spinner {
    pthread_t th;
    int64_t wall, cpu;
};

static __attribute__((noinline)) void *spin_worker(void *arg)
{
    struct spinner *s = arg;
    int64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t x = 0;
    while (clock_ns(CLOCK_MONOTONIC) - w0 < SPIN_NS)
        for (int i = 0; i < 1000; i++)
            __asm__ volatile("" : "+r"(x) : "r"((uint64_t)i)); /* work the compiler keeps */
    s->wall = clock_ns(CLOCK_MONOTONIC) - w0;
    s->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    return NULL;
}

struct tally {
    int64_t preempted_at_worker, other;
};

static int tally(void *ctx, const struct ctr_pprof_frame *frames, size_t n, int64_t count,
                 int64_t delay_ns)
{
    (void)count;
    struct tally *t = ctx;
    if (n == 2 && strcmp(frames[0].function, "preempted") == 0 &&
        frames[1].pc == (uintptr_t)spin_worker)
        t->preempted_at_worker += delay_ns;
    else
        t->other += delay_ns;
    return 0;
}

static void test_preemption_matches_wall_minus_cpu(void **state)
{
    (void)state;
    enum { THREADS = 4 }; /* twice the cores of the machines this runs on */
    char path[64];
    ctr_test_temp(path, sizeof(path), "sched");
    struct trace_options o = {.path = path, .sched_switches = 1};
    assert_int_equal(trace_start_opts(&o), 0);
    struct spinner s[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&s[i].th, NULL, spin_worker, &s[i]), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(s[i].th, NULL);
    assert_int_equal(trace_stop(), 0);

    int64_t expect = 0;
    for (int i = 0; i < THREADS; i++)
        expect += s[i].wall - s[i].cpu;
    struct ctr_trace tr;
    ctr_test_read(path, &tr);
    if (!(tr.flags & CTR_INFO_SCHED_SWITCHES) || tr.events_by_type[CTR_EV_SWITCH_OUT] == 0)
        fail_msg("no context switches recorded (perf_event_open refused?)");
    struct tally t = {0, 0};
    assert_int_equal(ctr_profile_samples(&tr, CTR_PROFILE_SCHED, NULL, tally, &t), 0);
    print_message("expected runnable %.1f ms, profile %.1f ms preempted, %.1f ms other\n",
                  expect / 1e6, t.preempted_at_worker / 1e6, t.other / 1e6);
    /* The threads do not fit the cores: a good share of the time is spent
     * runnable, so 10% of it is a meaningful bound. */
    assert_true(expect > SPIN_NS / 2);
    assert_true(t.preempted_at_worker > expect * 9 / 10 &&
                t.preempted_at_worker < expect * 11 / 10);
    ctr_trace_free(&tr);
    unlink(path);
}

/* Two threads that wake each other through pipes `rounds` times: each
 * switches out and in once per round. Each notes its ring's size. */
struct pinger {
    int in, out, rounds, first;
    pthread_t th;
    size_t ring_bytes;
};

static void *ping_main(void *arg)
{
    struct pinger *p = arg;
    char c = 'p';
    for (int i = 0; i < p->rounds; i++) {
        if (!(p->first && i == 0))
            assert_int_equal(read(p->in, &c, 1), 1);
        assert_int_equal(write(p->out, &c, 1), 1);
    }
    if (p->first)
        assert_int_equal(read(p->in, &c, 1), 1); /* the other's last one */
    p->ring_bytes = ctr__self && ctr__self->sched_ring.meta ? ctr__self->sched_ring.bytes : 0;
    return NULL;
}

/* Traces `rounds` ping-pongs with a ring of ring_bytes, all within one
 * flush; fills *lost and *outs with the pingers' lost and recorded
 * switches out, and returns the ring size they had. */
static size_t ping_pong(size_t ring_bytes, int rounds, uint64_t *lost, uint64_t *outs)
{
    char path[64];
    ctr_test_temp(path, sizeof(path), "sched-ring");
    struct trace_options o = {
        .path = path, .sched_switches = 1, .sched_ring_bytes = ring_bytes, .flush_ms = 60000};
    assert_int_equal(trace_start_opts(&o), 0);
    int ab[2], ba[2];
    assert_int_equal(pipe(ab), 0);
    assert_int_equal(pipe(ba), 0);
    struct pinger p[2] = {{ba[0], ab[1], rounds, 1, 0, 0}, {ab[0], ba[1], rounds, 0, 0, 0}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&p[i].th, NULL, ping_main, &p[i]), 0);
    pthread_t handles[2] = {p[0].th, p[1].th};
    for (int i = 0; i < 2; i++)
        pthread_join(p[i].th, NULL);
    assert_int_equal(trace_stop(), 0);
    struct ctr_trace tr;
    ctr_test_read(path, &tr);
    if (!(tr.flags & CTR_INFO_SCHED_SWITCHES) || tr.end_sched_failed)
        fail_msg("context switches not recorded (perf_event_open refused?)");
    *lost = *outs = 0;
    for (size_t i = 0; i < tr.nthreads; i++) {
        const struct ctr_thread_info *th = &tr.threads[i];
        if (th->handle != (uint64_t)handles[0] && th->handle != (uint64_t)handles[1])
            continue;
        *lost += th->switches_lost;
        for (size_t k = 0; k < th->nevents; k++)
            *outs += th->events[k].type == CTR_EV_SWITCH_OUT;
    }
    ctr_trace_free(&tr);
    unlink(path);
    for (int i = 0; i < 2; i++)
        close(ab[i]), close(ba[i]);
    assert_int_equal(p[0].ring_bytes, p[1].ring_bytes);
    return p[0].ring_bytes;
}

static void test_ring_size_honoured(void **state)
{
    (void)state;
    enum { ROUNDS = 3000 }; /* 6000 switches a thread: 144 KB of records */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint64_t lost, outs;
    assert_int_equal(ping_pong(4096, ROUNDS, &lost, &outs), page + page);
    print_message("4 KiB ring: %llu switches out recorded, %llu switches lost\n",
                  (unsigned long long)outs, (unsigned long long)lost);
    assert_true(lost > 0); /* it overflowed, and the trace says so */
    assert_true(outs < ROUNDS);
    assert_int_equal(ping_pong(1u << 20, ROUNDS, &lost, &outs), page + (1u << 20));
    print_message("1 MiB ring: %llu switches out recorded, %llu switches lost\n",
                  (unsigned long long)outs, (unsigned long long)lost);
    assert_int_equal(lost, 0);
    assert_true(outs >= ROUNDS); /* in each round, at least one of them waited */
    /* Sizes are rounded up to a power of two. */
    assert_int_equal(ping_pong(3 << 12, 10, &lost, &outs), page + (4u << 12));
}

static void test_ring_size_checked(void **state)
{
    (void)state;
    char path[64];
    ctr_test_temp(path, sizeof(path), "sched-ring");
    struct trace_options o = {.path = path, .sched_switches = 1, .sched_ring_bytes = 4095};
    assert_int_equal(trace_start_opts(&o), -EINVAL);
    o.sched_ring_bytes = ((size_t)256 << 20) + 1;
    assert_int_equal(trace_start_opts(&o), -EINVAL);
    assert_int_equal(trace_is_running(), 0);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preemption_matches_wall_minus_cpu),
        cmocka_unit_test(test_ring_size_honoured),
        cmocka_unit_test(test_ring_size_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
