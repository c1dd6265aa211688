/* SPDX-License-Identifier: MIT */
/* test-flightrec.c - the flight recorder: its memory bound under an event
 * storm, its time span, what a dump contains (names, stacks, a thread
 * blocked since before the window), concurrent dumps while every thread
 * writes, the latency trigger, and running beside trace_start. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "ctrace/flightrec.h"
#include "collect/collector.h"
#include "core/emit.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "read/state.h"

#define MS (1000 * 1000ull)

/* ---------------------------------------------------------------------------
 * Writers: threads that write synthetic events as fast as they can
 * ------------------------------------------------------------------------- */

static _Atomic int writers_stop;

static void *storm_writer(void *arg)
{
    uint64_t *written = arg;
    char name[16];
    snprintf(name, sizeof(name), "storm-%p", arg);
    pthread_setname_np(pthread_self(), "storm");
    struct ctr_thread *t = ctr__self_traced();
    uint64_t n = 0;
    while (t && !atomic_load_explicit(&writers_stop, memory_order_relaxed)) {
        for (int i = 0; i < 1000; i++) {
            uint64_t args[3] = {CTR_REASON_MUTEX_LOCK, n + (uint64_t)i, 0};
            if (ctr__write_begin(t)) {
                ctr__emit(t, CTR_EV_BLOCK, args);
                ctr__emit(t, CTR_EV_UNBLOCK, NULL);
                ctr__write_end(t);
            }
        }
        n += 2000;
        usleep(50); /* let the collector in now and then */
    }
    *written = n;
    return NULL;
}

struct storm {
    pthread_t th[4];
    uint64_t written[4];
    int n;
};

static void storm_start(struct storm *s, int n)
{
    atomic_store(&writers_stop, 0);
    s->n = n;
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&s->th[i], NULL, storm_writer, &s->written[i]), 0);
}

static uint64_t storm_stop(struct storm *s)
{
    atomic_store(&writers_stop, 1);
    uint64_t total = 0;
    for (int i = 0; i < s->n; i++) {
        pthread_join(s->th[i], NULL);
        total += s->written[i];
    }
    return total;
}

/* ---------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------- */

static void test_memory_bound_under_storm(void **state)
{
    (void)state;
    const uint64_t max = 1u << 20;
    struct flightrec_config c = {.min_age_ns = 10000 * MS, .max_bytes = max};
    assert_int_equal(flightrec_start(&c), 0);
    struct storm s;
    storm_start(&s, 4);
    uint64_t peak = 0;
    /* 1.5 s, sampled every 10 ms, and on until the storm filled half the
     * window (a loaded machine writes fewer events: at most 30 s). */
    for (int i = 0; i < 150 || (peak <= max / 2 && i < 3000); i++) {
        struct flightrec_stats st;
        assert_int_equal(flightrec_get_stats(&st), 0);
        if (st.window_bytes > peak)
            peak = st.window_bytes;
        usleep(10000);
    }
    uint64_t events = storm_stop(&s);
    print_message("storm: %.1f M events, window peak %llu bytes of %llu\n", events / 1e6,
                  (unsigned long long)peak, (unsigned long long)max);
    assert_true(peak <= max);
    assert_true(peak > max / 2); /* the storm did fill it */
    char path[64];
    struct ctr_trace tr;
    ctr_test_dump_stop_read("fr-storm", path, &tr);
    assert_true(tr.complete);
    assert_true(tr.nevents > 0);
    ctr_trace_free(&tr);
    unlink(path);
}

static void test_window_spans_min_age(void **state)
{
    (void)state;
    struct flightrec_config c = {.min_age_ns = 300 * MS, .max_bytes = 64u << 20};
    struct trace_options o = {.flush_ms = 20};
    c.trace = &o;
    uint64_t t0 = ctr_test_now_ns();
    assert_int_equal(flightrec_start(&c), 0);
    struct storm s;
    storm_start(&s, 1);
    usleep(800 * 1000);
    /* The oldest generations go once the rest spans min_age: the window
     * becomes shorter than the time recorded. A loaded machine's
     * generations are longer (0.6 s seen under TSan), so that may take
     * more than 0.8 s: the storm goes on until it is seen, 10 s at most.
     * Each look first lets the collector catch up with what was written
     * (a round or more behind there). */
    struct flightrec_stats st;
    uint64_t recorded = 0;
    for (int i = 0; i < 100; i++) {
        ctr__collector_sync();
        flightrec_get_stats(&st);
        recorded = ctr_test_now_ns() - t0;
        if (st.window_span_ns + 100 * MS < recorded)
            break;
        usleep(100 * 1000);
    }
    storm_stop(&s);
    print_message("window: %.0f ms of %.0f recorded, in %llu generations, %llu bytes\n",
                  st.window_span_ns / 1e6, recorded / 1e6, (unsigned long long)st.generations,
                  (unsigned long long)st.window_bytes);
    assert_true(st.window_span_ns >= 300 * MS);
    assert_true(st.window_span_ns + 100 * MS < recorded); /* old generations did go */
    char path[64];
    struct ctr_trace tr;
    ctr_test_dump_stop_read("fr-span", path, &tr);
    assert_true(tr.end_ns - tr.start_ns >= 300 * MS);
    ctr_trace_free(&tr);
    unlink(path);
}

/* A thread blocked on a mutex since long before the window. */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static __attribute__((noinline)) void *blocked_forever(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "stuck-waiter");
    pthread_mutex_lock(&held); /* until the test lets it go */
    pthread_mutex_unlock(&held);
    return NULL;
}

struct find_blocked {
    const struct ctr_thread_info *th;
    int open_mutex_wait;
    uint64_t start_ns, stack_id;
};

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct find_blocked *f = ctx;
    if (iv->thread == f->th && iv->state == CTR_STATE_BLOCKED && iv->open &&
        iv->reason == CTR_REASON_MUTEX_LOCK) {
        f->open_mutex_wait = 1;
        f->start_ns = iv->start_ns;
        f->stack_id = iv->stack_id;
    }
}

static void test_dump_has_names_stacks_and_old_waits(void **state)
{
    (void)state;
    /* A small window that the storm fills fast: the waiter's Block is long
     * gone from it by the time of the dump. */
    struct trace_options o = {.flush_ms = 20};
    struct flightrec_config c = {.min_age_ns = 100 * MS, .max_bytes = 256u << 10, .trace = &o};
    assert_int_equal(flightrec_start(&c), 0);
    pthread_mutex_lock(&held);
    pthread_t waiter;
    pthread_create(&waiter, NULL, blocked_forever, NULL);
    usleep(100 * 1000);
    struct storm s;
    storm_start(&s, 2);
    usleep(700 * 1000);
    storm_stop(&s);
    char path[64];
    ctr_test_temp(path, sizeof(path), "fr-dump");
    assert_int_equal(flightrec_dump(path), 0);
    pthread_mutex_unlock(&held);
    pthread_join(waiter, NULL);
    assert_int_equal(flightrec_stop(), 0);

    struct ctr_trace tr;
    ctr_test_read(path, &tr);
    assert_true(tr.complete);
    const struct ctr_thread_info *stuck = NULL;
    int storms = 0;
    for (size_t i = 0; i < tr.nthreads; i++) {
        if (strcmp(tr.threads[i].name, "stuck-waiter") == 0)
            stuck = &tr.threads[i];
        storms += strcmp(tr.threads[i].name, "storm") == 0;
    }
    if (!stuck || storms < 1)
        for (size_t i = 0; i < tr.nthreads; i++)
            print_message("thread %llu: '%s', %zu events\n", (unsigned long long)tr.threads[i].id,
                          tr.threads[i].name, tr.threads[i].nevents);
    assert_non_null(stuck);
    assert_true(storms >= 1);
    /* Blocked from the window's start (its real start is older), with the
     * stack of the lock call. */
    struct find_blocked f = {stuck, 0, 0, 0};
    ctr_state_walk(&tr, on_interval, &f);
    assert_true(f.open_mutex_wait);
    /* The window starts at its first generation's clock point (batches in
     * it may carry a few events from just before). */
    assert_true(tr.nclocks > 0);
    uint64_t window_start = tr.clocks[0].mono_ns;
    int64_t off = (int64_t)f.start_ns - (int64_t)window_start;
    if (off < -(int64_t)MS || off > (int64_t)MS) {
        ctr_trace_free(&tr);
        fail_msg("the old wait starts %.3f ms from the window's start", off / 1e6);
    }
    const struct ctr_stack_info *st = ctr_trace_stack(&tr, f.stack_id);
    assert_non_null(st);
    assert_true(st->pcs[0] > (uintptr_t)blocked_forever &&
                st->pcs[0] < (uintptr_t)blocked_forever + 256);
    ctr_trace_free(&tr);
    unlink(path);
}

/* CPU samples are events like any other: the window keeps them, from
 * either source, with the burner's own stack. */
static volatile unsigned long burn_sink;

static __attribute__((noinline)) void burn_cpu(double ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 100000; i++)
            burn_sink += (unsigned long)i * 7;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

static void *burner(void *arg)
{
    (void)arg;
    burn_cpu(200);
    return NULL;
}

static void window_keeps_samples(int timer, unsigned hz)
{
    struct trace_options o = {.flush_ms = 20, .cpu_hz = hz, .cpu_timer = timer};
    struct flightrec_config c = {.min_age_ns = 2000 * MS, .trace = &o};
    assert_int_equal(flightrec_start(&c), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, burner, NULL), 0);
    pthread_join(th, NULL);
    char path[64];
    struct ctr_trace tr;
    ctr_test_dump_stop_read("fr-cpu", path, &tr);
    assert_int_equal(tr.cpu_source, timer ? CTR_CPU_TIMER : CTR_CPU_PERF);
    assert_int_equal(tr.cpu_period_ns, 1000 * MS / hz);
    size_t samples = 0, in_burner = 0;
    uint64_t cpu_ns = 0;
    for (size_t i = 0; i < tr.nthreads; i++)
        for (size_t k = 0; k < tr.threads[i].nevents; k++) {
            const struct ctr_trace_event *e = &tr.threads[i].events[k];
            if (e->type != CTR_EV_CPU_SAMPLE)
                continue;
            samples++;
            cpu_ns += e->args[1];
            /* The burner's stack: its call of burn_cpu (whose own code, under
             * a sanitizer, calls the runtime's at every access). */
            const struct ctr_stack_info *st = ctr_trace_stack(&tr, e->args[0]);
            int called = 0;
            for (size_t f = 0; st && f < st->n; f++)
                called |= st->pcs[f] > (uintptr_t)burner && st->pcs[f] <= (uintptr_t)burner + 512;
            in_burner += called;
        }
    print_message("%s: %zu samples, %zu in burner, %.1f ms\n", timer ? "timer" : "perf", samples,
                  in_burner, cpu_ns / 1e6);
    /* 200 ms at 250 Hz: about 50, all but a few under burner's call (the
     * rest in the clock call burn_cpu makes, some of them cut short). On
     * a loaded machine a timer's ticks coalesce (16 of 50 seen under
     * ASan): a sample then weighs the time since the last one, and the
     * total (cpu_ns, below) is what must hold. */
    assert_true(samples >= hz / 50);
    /* By frame pointers alone (CTRACE_UNWIND=fp, as the TSan run has it)
     * a sample in code without them (TSan's runtime, called at every
     * access of burn_cpu's) can lose its callers: some, not most. */
    const char *unwind = getenv("CTRACE_UNWIND");
    if (unwind && strcmp(unwind, "fp") == 0)
        assert_true(in_burner > 0);
    else
        assert_true(in_burner * 2 >= samples);
    assert_true(cpu_ns >= 100 * MS && cpu_ns <= 300 * MS);
    ctr_trace_free(&tr);
    unlink(path);
}

static void test_window_keeps_cpu_samples(void **state)
{
    (void)state;
    window_keeps_samples(0, 250);
    window_keeps_samples(1, 250);
    /* Another rate: the rings this thread kept from the first session are
     * closed as the session starts, and opened anew at the rate. */
    window_keeps_samples(0, 500);
}

/* Several threads dump at once while others write. Each reads back every
 * dump it wrote, which is most of the test's time: under TSan, where
 * reading runs 10 times slower, each dumps fewer times (still together). */
enum { DUMPERS = 3, DUMPS_EACH = CTR_TEST_TSAN ? 2 : 8 };
static _Atomic int dumps_ok, dumps_busy;

static void *dumper(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < DUMPS_EACH; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/tmp/ctrace-fr-conc-%d-%d-%d.bin", (int)getpid(), id, i);
        int rc = flightrec_dump(path);
        if (rc == 0) {
            struct ctr_trace tr;
            char err[256];
            if (ctr_trace_read(path, &tr, err, sizeof(err)) == 0 && !tr.damage[0] && tr.complete)
                atomic_fetch_add(&dumps_ok, 1);
            ctr_trace_free(&tr);
            unlink(path);
        } else if (rc == -EBUSY) {
            atomic_fetch_add(&dumps_busy, 1);
        }
        usleep(5000);
    }
    return NULL;
}

static void test_concurrent_dumps(void **state)
{
    (void)state;
    struct flightrec_config c = {.min_age_ns = 200 * MS, .max_bytes = 1u << 20};
    assert_int_equal(flightrec_start(&c), 0);
    struct storm s;
    storm_start(&s, 2);
    atomic_store(&dumps_ok, 0);
    atomic_store(&dumps_busy, 0);
    pthread_t d[DUMPERS];
    for (int i = 0; i < DUMPERS; i++)
        pthread_create(&d[i], NULL, dumper, (void *)(intptr_t)i);
    for (int i = 0; i < DUMPERS; i++)
        pthread_join(d[i], NULL);
    storm_stop(&s);
    assert_int_equal(flightrec_stop(), 0);
    print_message("concurrent dumps: %d written and readable, %d told busy\n",
                  atomic_load(&dumps_ok), atomic_load(&dumps_busy));
    /* Every call either wrote a readable dump or was told another ran. */
    assert_int_equal(atomic_load(&dumps_ok) + atomic_load(&dumps_busy), DUMPERS * DUMPS_EACH);
    assert_true(atomic_load(&dumps_ok) > 0);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void test_latency_trigger(void **state)
{
    (void)state;
    char dir[] = "/tmp/ctrace-fr-trig-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct flightrec_trigger bad = {.dir = dir};
    struct flightrec_trigger t = {.dir = dir, .latency_ns = 30 * MS, .min_interval_ns = 10000 * MS};
    assert_int_equal(flightrec_trigger_latency(&t), -ENOENT); /* not running */
    assert_int_equal(flightrec_start(NULL), 0);
    assert_int_equal(flightrec_trigger_latency(&bad), -EINVAL); /* no threshold */
    assert_int_equal(flightrec_trigger_latency(&t), 0);
    assert_int_equal(flightrec_latency(10 * MS), 0);
    assert_int_equal(flightrec_latency(40 * MS), 1);
    assert_int_equal(flightrec_latency(50 * MS), 0); /* rate-limited */
    for (int i = 0; i < 300 && count_files(dir) == 0; i++)
        usleep(10000);
    struct flightrec_stats st;
    flightrec_get_stats(&st);
    assert_int_equal(st.triggers_limited, 1);
    assert_int_equal(flightrec_stop(), 0);
    assert_int_equal(count_files(dir), 1);
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        struct ctr_trace tr;
        ctr_test_read(path, &tr);
        assert_true(tr.complete);
        ctr_trace_free(&tr);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void test_beside_trace_start(void **state)
{
    (void)state;
    char file[64], dump[64];
    ctr_test_temp(file, sizeof(file), "fr-file");
    ctr_test_temp(dump, sizeof(dump), "fr-both");
    assert_int_equal(flightrec_dump(dump), -ENOENT);
    assert_int_equal(trace_start(file), 0);
    assert_int_equal(flightrec_start(NULL), 0);
    assert_int_equal(flightrec_start(NULL), -EBUSY);
    struct storm s;
    storm_start(&s, 1);
    usleep(200 * 1000);
    storm_stop(&s);
    assert_int_equal(flightrec_dump(dump), 0);
    assert_int_equal(trace_stop(), 0); /* the recorder goes on */
    assert_true(flightrec_is_running());
    assert_int_equal(flightrec_dump(dump), 0);
    assert_int_equal(flightrec_stop(), 0);
    assert_int_equal(flightrec_stop(), -ENOENT);
    struct ctr_trace tr;
    ctr_test_read(file, &tr);
    assert_true(tr.complete && tr.nevents > 0);
    ctr_trace_free(&tr);
    ctr_test_read(dump, &tr);
    assert_true(tr.complete && tr.nevents > 0);
    ctr_trace_free(&tr);
    /* And the other order: the recorder first, a file meanwhile. */
    assert_int_equal(flightrec_start(NULL), 0);
    assert_int_equal(trace_start(file), 0);
    storm_start(&s, 1);
    usleep(100 * 1000);
    storm_stop(&s);
    assert_int_equal(flightrec_stop(), 0);
    assert_int_equal(trace_stop(), 0);
    ctr_test_read(file, &tr);
    assert_true(tr.complete && tr.nevents > 0);
    ctr_trace_free(&tr);
    unlink(file);
    unlink(dump);
}

/* After a failed test: leave nothing running for the next one. */
static int teardown(void **state)
{
    (void)state;
    atomic_store(&writers_stop, 1);
    if (flightrec_is_running())
        flightrec_stop();
    if (trace_is_running())
        trace_stop();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_memory_bound_under_storm, teardown),
        cmocka_unit_test_teardown(test_window_spans_min_age, teardown),
        cmocka_unit_test_teardown(test_dump_has_names_stacks_and_old_waits, teardown),
        cmocka_unit_test_teardown(test_concurrent_dumps, teardown),
        cmocka_unit_test_teardown(test_window_keeps_cpu_samples, teardown),
        cmocka_unit_test_teardown(test_latency_trigger, teardown),
        cmocka_unit_test_teardown(test_beside_trace_start, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
