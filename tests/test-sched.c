/* test-sched.c - ground truth for the sched profile from context switches:
 * more CPU-bound threads than cores, each measuring its own wall and CPU
 * time. A thread that is neither running nor waiting is runnable, so the
 * profile's preempted time must match the sum of (wall - CPU) within 10%.
 * Also checks that the trace says it recorded switches. */
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

#include "ctrace/trace.h"
#include "profile.h"
#include "reader.h"

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
    assert_true(t.preempted_at_worker > expect * 9 / 10 && t.preempted_at_worker < expect * 11 / 10);
    ctr_trace_free(&tr);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preemption_matches_wall_minus_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
