/* SPDX-License-Identifier: MIT */
/* test-tasks.c - ground truth for the analyses that read a trace in the
 * user's terms: `ctrace tasks` (latencies, breakdowns, region times, logs,
 * the -type/-latmin filters, the -tsv table), the profile filters (-task,
 * -region, -latmin) and `ctrace threads`' leak finder. Programs make tasks
 * out of sleeps and mutex waits and time every span themselves (a loaded
 * machine oversleeps: the nominal lengths are never the reference); the
 * analyses must agree with those measurements within 10% or 2 ms,
 * whichever is larger.
 *
 * A mutex wait: a holder thread takes the mutex, says so, waits for "go",
 * then holds it `ms` more; the waiter says "go", locks, and times it all. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "ctrace/trace.h"
#include "profile/profile.h"
#include "read/trace.h"
#include "model/tasks.h"
#include "report/tasks_report.h"
#include "profile/text.h"
#include "report/threads.h"

#define MS 1000000ull

static char path[64];

/* Sleeps ms milliseconds; returns how long that took. */
static uint64_t sleep_ms(int ms)
{
    uint64_t t0 = ctr_test_now_ns();
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    return ctr_test_now_ns() - t0;
}

/* Within 10% or 2 ms of want, whichever is larger. */
static int near(uint64_t got, uint64_t want)
{
    uint64_t tol = want / 10 > 2 * MS ? want / 10 : 2 * MS;
    return got + tol >= want && got <= want + tol;
}

#define assert_near(got, want)                                                               \
    do {                                                                                     \
        uint64_t g_ = (got), w_ = (want);                                                    \
        if (!near(g_, w_))                                                                   \
            fail_msg("%s = %.2f ms, want %.2f ms (10%% or 2 ms)", #got, g_ / 1e6, w_ / 1e6); \
    } while (0)

/* A sleep of `ms` the trace saw: at least what was asked (nanosleep never
 * returns sooner), and no more than the test measured around the call,
 * within 2 ms. What the test measured also holds the wait to run again
 * after the wake-up, which on a loaded machine is milliseconds: it bounds
 * the trace's sleep from above only. */
#define assert_slept(got, ms, measured)                                                \
    do {                                                                               \
        uint64_t g_ = (got), m_ = (measured), lo_ = (MS * (ms)) - MS / 2;              \
        if (g_ < lo_ || g_ > m_ + 2 * MS)                                              \
            fail_msg("%s = %.2f ms, want %d ms to %.2f ms", #got, g_ / 1e6, (int)(ms), \
                     (m_ + 2 * MS) / 1e6);                                             \
    } while (0)

static int setup(void **state)
{
    (void)state;
    return ctr_test_trace_begin(path, sizeof(path), "tasks");
}

static int teardown(void **state)
{
    (void)state;
    return ctr_test_trace_end(path);
}

/* ---------------------------------------------------------------------------
 * Waits of a known length
 * ------------------------------------------------------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

struct hold {
    int ms;           /* how long the mutex is held after "go" */
    int end_after_ms; /* with end_task: end it this long after "go" */
    trace_task_t end_task;
    _Atomic uint64_t ended_at; /* when the holder ended end_task */
    _Atomic int held, go;
    _Atomic uint64_t unlock_at; /* when the holder began its unlock */
    pthread_t th;
    _Atomic pid_t waiter_tid;
    /* When the holder saw the waiter asleep in its lock; holding begins
     * there, since a loaded machine may preempt the waiter between its call
     * and its wait, which is no wait. */
    _Atomic uint64_t seen_asleep_at;
    /* Measured by the waiter: when it called lock; the wait's sync time,
     * which ends at the release: at least from when the holder saw it
     * asleep to the unlock, at most the lock and join calls' whole time (a
     * woken thread's wait for a CPU is runnable, not sync). */
    uint64_t lock_called;
    struct sync_bounds {
        uint64_t lo, hi;
    } sync;
};

static void *holder_main(void *arg)
{
    struct hold *h = arg;
    pthread_mutex_lock(&mu);
    atomic_store(&h->held, 1);
    while (!atomic_load(&h->go))
        sched_yield();
    ctr_test_until_asleep(atomic_load(&h->waiter_tid));
    atomic_store(&h->seen_asleep_at, ctr_test_now_ns());
    if (h->end_task) {
        sleep_ms(h->end_after_ms);
        trace_task_end(h->end_task);
        atomic_store(&h->ended_at, ctr_test_now_ns());
        sleep_ms(h->ms - h->end_after_ms);
    } else {
        sleep_ms(h->ms);
    }
    atomic_store(&h->unlock_at, ctr_test_now_ns());
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void hold_start(struct hold *h, int ms)
{
    h->ms = ms;
    atomic_store(&h->held, 0);
    atomic_store(&h->go, 0);
    assert_int_equal(pthread_create(&h->th, NULL, holder_main, h), 0);
    while (!atomic_load(&h->held))
        sched_yield();
}

/* Waits for the mutex that h holds (about h->ms), timing it into h. */
static void hold_wait(struct hold *h)
{
    atomic_store(&h->waiter_tid, ctr_test_tid());
    atomic_store(&h->go, 1);
    h->lock_called = ctr_test_now_ns();
    pthread_mutex_lock(&mu);
    uint64_t locked = ctr_test_now_ns();
    pthread_mutex_unlock(&mu);
    uint64_t unlocked = ctr_test_now_ns();
    pthread_join(h->th, NULL);
    h->sync.lo = atomic_load(&h->unlock_at) - atomic_load(&h->seen_asleep_at);
    h->sync.hi = (locked - h->lock_called) + (ctr_test_now_ns() - unlocked);
}

static struct sync_bounds sync_sum(struct sync_bounds a, struct sync_bounds b)
{
    return (struct sync_bounds){a.lo + b.lo, a.hi + b.hi};
}

/* A sync time within its measured bounds (10% or 2 ms beyond them). */
#define assert_sync(got, bounds)                                                        \
    do {                                                                                \
        uint64_t g_ = (got);                                                            \
        struct sync_bounds b_ = (bounds);                                               \
        if (!near(g_, b_.lo) && !near(g_, b_.hi) && (g_ < b_.lo || g_ > b_.hi))         \
            fail_msg("%s = %.2f ms, measured between %.2f and %.2f ms", #got, g_ / 1e6, \
                     b_.lo / 1e6, b_.hi / 1e6);                                         \
    } while (0)

/* ---------------------------------------------------------------------------
 * Reading the results
 * ------------------------------------------------------------------------- */

static const struct ctr_task *task_of(const struct ctr_tasks *ts, trace_task_t id)
{
    const struct ctr_task *t = ctr_tasks_find(ts, id);
    if (!t)
        fail_msg("task %llu not in the trace", (unsigned long long)id);
    return t;
}

static struct ctr_task_breakdown breakdown(const struct ctr_trace *tr, const struct ctr_tasks *ts,
                                           const struct ctr_task *task)
{
    struct ctr_task_breakdown b;
    const struct ctr_task *one[1] = {task};
    assert_int_equal(ctr_tasks_breakdown(tr, ts, one, 1, &b), 0);
    return b;
}

/* The time of task's regions named `name`, and how many there are. */
static uint64_t region_time(const struct ctr_tasks *ts, const struct ctr_task *task,
                            const char *name, size_t *count)
{
    uint64_t ns = 0;
    size_t n = 0;
    for (size_t r = task->region0; r < task->region0 + task->nregions; r++)
        if (strcmp(ts->regions[r].name, name) == 0) {
            ns += ts->regions[r].end_ns - ts->regions[r].start_ns;
            n++;
        }
    if (count)
        *count = n;
    return ns;
}

/* What ctr_tasks_write / ctr_threads_write print, as a string (free it). */
static char *tasks_text(const struct ctr_trace *tr, const struct ctr_tasks_opts *o)
{
    char *buf = NULL, err[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(ctr_tasks_write(tr, o, f, err, sizeof(err)), 0);
    fclose(f);
    return buf;
}

static char *threads_text(const struct ctr_trace *tr, int tsv)
{
    char *buf = NULL, err[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(ctr_threads_write(tr, tsv, f, NULL, err, sizeof(err)), 0);
    fclose(f);
    return buf;
}

static void assert_contains(const char *text, const char *what)
{
    if (!strstr(text, what))
        fail_msg("no \"%s\" in:\n%s", what, text);
}

/* ---------------------------------------------------------------------------
 * Tasks: latencies, breakdowns, regions, logs
 * ------------------------------------------------------------------------- */

/* An annotated interval as the test measured it: outside, from before its
 * begin call to after its end call returned; inside, from after the begin
 * call returned to before the end call. The trace's span of it must lie
 * between the two, whatever the machine's load. */
struct span {
    uint64_t b0, b1, e0, e1;
};

#define SPAN_BEGIN(s, call)          \
    do {                             \
        (s)->b0 = ctr_test_now_ns(); \
        call;                        \
        (s)->b1 = ctr_test_now_ns(); \
    } while (0)
#define SPAN_END(s, call)            \
    do {                             \
        (s)->e0 = ctr_test_now_ns(); \
        call;                        \
        (s)->e1 = ctr_test_now_ns(); \
    } while (0)

/* The clock the trace converts its ticks to and the test's agree within
 * microseconds: this much slack covers it. */
#define SPAN_SLACK (200 * 1000ull)

#define assert_span(got, s)                                                                        \
    do {                                                                                           \
        uint64_t g_ = (got), lo_ = (s)->e0 - (s)->b1, hi_ = (s)->e1 - (s)->b0;                     \
        if (g_ + SPAN_SLACK < lo_ || g_ > hi_ + SPAN_SLACK)                                        \
            fail_msg("%s = %.3f ms, measured between %.3f and %.3f ms", #got, g_ / 1e6, lo_ / 1e6, \
                     hi_ / 1e6);                                                                   \
    } while (0)

static trace_task_t handed;
/* Measured by the threads handed a task: its region and sleep, and the
 * task's span (begun by the test's thread, ended by the other). */
static struct span handed_region, handed_task;
static uint64_t handed_sleep_ns;

static void *work_on_handed(void *arg)
{
    (void)arg;
    SPAN_BEGIN(&handed_region, trace_region_begin(handed, "work"));
    handed_sleep_ns = sleep_ms(30);
    trace_log(handed, "status", "done\non another thread");
    SPAN_END(&handed_region, trace_region_end(handed, "work"));
    SPAN_END(&handed_task, trace_task_end(handed));
    return NULL;
}

static void *end_handed_later(void *arg)
{
    (void)arg;
    sleep_ms(15);
    SPAN_END(&handed_task, trace_task_end(handed));
    sleep_ms(10);
    return NULL;
}

static void test_tasks(void **state)
{
    (void)state;
    struct hold h = {0};

    /* A: a request with a child task, then nested regions holding a 50 ms
     * mutex wait and a 20 ms sleep, and a log. Every span timed here. */
    struct span sa, schild, shandle, slock, snap;
    trace_task_t a, child;
    SPAN_BEGIN(&sa, a = trace_task_begin("request", 0));
    SPAN_BEGIN(&schild, child = trace_task_begin("lookup", a));
    trace_region_begin(child, "probe");
    uint64_t probe_sleep = sleep_ms(5);
    trace_region_end(child, "probe");
    SPAN_END(&schild, trace_task_end(child));
    hold_start(&h, 50);
    SPAN_BEGIN(&shandle, trace_region_begin(a, "handle"));
    SPAN_BEGIN(&slock, trace_region_begin(a, "lock"));
    hold_wait(&h);
    SPAN_END(&slock, trace_region_end(a, "lock"));
    trace_logf(a, "cache", "miss on %s", "k1");
    SPAN_BEGIN(&snap, trace_region_begin(a, "nap"));
    uint64_t nap_sleep = sleep_ms(20);
    SPAN_END(&snap, trace_region_end(a, "nap"));
    SPAN_END(&shandle, trace_region_end(a, "handle"));
    SPAN_END(&sa, trace_task_end(a));

    /* B: begun here, worked on and ended by another thread. */
    pthread_t th;
    SPAN_BEGIN(&handed_task, handed = trace_task_begin("request", 0));
    trace_task_t b = handed;
    assert_int_equal(pthread_create(&th, NULL, work_on_handed, NULL), 0);
    pthread_join(th, NULL);
    struct span sb = handed_task;

    /* C: no regions, ended here: this thread's 40 ms. */
    struct span sc;
    trace_task_t c;
    SPAN_BEGIN(&sc, c = trace_task_begin("batch", 0));
    uint64_t c_sleep = sleep_ms(40);
    SPAN_END(&sc, trace_task_end(c));

    /* D: no regions, ended by another thread after 15 ms while this one
     * waits in a join: this thread's time until the end, all sync. */
    SPAN_BEGIN(&handed_task, handed = trace_task_begin("batch", 0));
    trace_task_t d = handed;
    assert_int_equal(pthread_create(&th, NULL, end_handed_later, NULL), 0);
    pthread_join(th, NULL);
    struct span sd = handed_task;

    /* E: never ended, with a region never ended. And ends of nothing. */
    trace_task_t e = trace_task_begin("stuck", 0);
    trace_region_begin(e, "forever");
    trace_task_end((trace_task_t)1 << 40);
    trace_region_end(0, "nope");
    uint64_t e_sleep = sleep_ms(10);

    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct ctr_tasks ts;
    assert_int_equal(ctr_tasks_build(&tr, &ts), 0);
    assert_int_equal(ts.ntasks, 6);
    assert_int_equal(ts.ends_without_begin, 1);
    assert_int_equal(ts.region_ends_without_begin, 1);
    assert_int_equal(ts.open_regions, 1);

    const struct ctr_task *ta = task_of(&ts, a), *tc = task_of(&ts, child);
    assert_string_equal(ta->type, "request");
    assert_true(ta->ended && ta->end_thread == ta->begin_thread);
    assert_span(ctr_task_latency(ta), &sa);
    struct ctr_task_breakdown bd = breakdown(&tr, &ts, ta);
    assert_sync(bd.times[CTR_TIME_SYNC], h.sync);
    assert_slept(bd.times[CTR_TIME_SLEEP], 20, nap_sleep);
    assert_int_equal(bd.nthreads, 1);
    assert_true(bd.times[CTR_TIME_NET] == 0 && bd.times[CTR_TIME_SYSCALL] == 0);
    size_t n;
    assert_span(region_time(&ts, ta, "handle", &n), &shandle);
    assert_int_equal(n, 1);
    assert_span(region_time(&ts, ta, "lock", NULL), &slock);
    assert_span(region_time(&ts, ta, "nap", NULL), &snap);
    assert_int_equal(region_time(&ts, ta, "probe", &n), 0); /* the child's, not A's */
    for (size_t r = ta->region0; r < ta->region0 + ta->nregions; r++)
        assert_int_equal(ts.regions[r].depth, strcmp(ts.regions[r].name, "handle") ? 1 : 0);
    assert_int_equal(ta->nlogs, 1);
    assert_string_equal(ts.logs[ta->log0].category, "cache");
    assert_int_equal(ts.logs[ta->log0].len, 10);
    assert_memory_equal(ts.logs[ta->log0].msg, "miss on k1", 10);

    assert_true(tc->parent == a);
    assert_span(ctr_task_latency(tc), &schild);
    assert_slept(breakdown(&tr, &ts, tc).times[CTR_TIME_SLEEP], 5, probe_sleep);

    const struct ctr_task *tb = task_of(&ts, b);
    assert_true(tb->ended && tb->end_thread != tb->begin_thread);
    assert_span(ctr_task_latency(tb), &sb);
    bd = breakdown(&tr, &ts, tb);
    assert_slept(bd.times[CTR_TIME_SLEEP], 30, handed_sleep_ns); /* the worker's region */
    assert_int_equal(bd.nthreads, 1);
    assert_span(region_time(&ts, tb, "work", NULL), &handed_region);

    const struct ctr_task *tc2 = task_of(&ts, c);
    assert_int_equal(tc2->nregions, 0);
    assert_span(ctr_task_latency(tc2), &sc);
    assert_slept(breakdown(&tr, &ts, tc2).times[CTR_TIME_SLEEP], 40, c_sleep);

    const struct ctr_task *td = task_of(&ts, d);
    assert_true(td->end_thread != td->begin_thread);
    assert_span(ctr_task_latency(td), &sd);
    bd = breakdown(&tr, &ts, td);
    /* the join, up to the end */
    assert_span(bd.times[CTR_TIME_SYNC] + bd.times[CTR_TIME_RUNNING] + bd.times[CTR_TIME_RUNNABLE] +
                    bd.times[CTR_TIME_OFFCPU],
                &sd);
    assert_int_equal(bd.times[CTR_TIME_SLEEP], 0); /* the ender's sleep is not its */

    const struct ctr_task *te = task_of(&ts, e);
    assert_false(te->ended);
    assert_true(te->end_ns == tr.end_ns && ctr_task_latency(te) >= e_sleep);
    assert_int_equal(te->nregions, 1);
    assert_true(ts.regions[te->region0].open && ts.regions[te->region0].end_ns == tr.end_ns);

    /* The text: every task listed, the parent named, logs escaped. */
    struct ctr_tasks_opts o = {.n = 10};
    char *text = tasks_text(&tr, &o);
    char want[128];
    assert_contains(text, "6 tasks of 4 types: 5 ended, 1 open");
    snprintf(want, sizeof(want), "task %llu lookup: ", (unsigned long long)child);
    assert_contains(text, want);
    snprintf(want, sizeof(want), ", parent %llu (request)\n", (unsigned long long)a);
    assert_contains(text, want);
    assert_contains(text, "open at the end of the trace: 1 task");
    assert_contains(text, "stuck: open, ");
    assert_contains(text, "(left open)");
    assert_contains(text, "status: done\\non another thread");
    assert_contains(text, "ignored: 1 task ends without a begin");
    free(text);
    ctr_tasks_free(&ts);
    ctr_trace_free(&tr);
}

/* ---------------------------------------------------------------------------
 * Tasks: percentiles, the -tsv table, -type and -latmin
 * ------------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

struct row {
    char type[32];
    unsigned long long count, p50, p90, p99, max;
};

static size_t parse_tsv(const char *text, struct row *rows, size_t max)
{
    size_t n = 0;
    assert_true(text[0] == '#');
    for (const char *l = strchr(text, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
        assert_true(n < max);
        struct row *r = &rows[n++];
        assert_int_equal(sscanf(l + 1, "%31[^\t]\t%llu\t%llu\t%llu\t%llu\t%llu", r->type, &r->count,
                                &r->p50, &r->p90, &r->p99, &r->max),
                         6);
    }
    return n;
}

/* The durations of the tasks of `type` as their events in tr say (begin to
 * end, by task id), in the order they began: what the analysis of tasks
 * must aggregate. */
static size_t traced_durations(const struct ctr_trace *tr, const char *type, uint64_t *out,
                               size_t max)
{
    struct open_task {
        uint64_t id, begin;
    } open[16];
    size_t nopen = 0, n = 0;
    for (size_t i = 0; i < tr->nthreads; i++)
        for (size_t e = 0; e < tr->threads[i].nevents; e++) {
            const struct ctr_trace_event *ev = &tr->threads[i].events[e];
            const char *name =
                ev->type == CTR_EV_TASK_BEGIN ? ctr_trace_string(tr, ev->args[2]) : NULL;
            if (name && strcmp(name, type) == 0 && nopen < 16)
                open[nopen++] = (struct open_task){ev->args[0], ev->ns};
            for (size_t k = 0; ev->type == CTR_EV_TASK_END && k < nopen; k++)
                if (open[k].id == ev->args[0] && n < max)
                    out[n++] = ev->ns - open[k].begin;
        }
    return n;
}

static void test_tasks_tsv_and_filters(void **state)
{
    (void)state;
    /* Each task's duration lies between what it asked to sleep (a lower
     * bound: nanosleep never returns early) and what this thread measured
     * around it (a loaded machine oversleeps, and preempts between the
     * clock read and the task's event). */
    uint64_t fast[10], slow[2];
    for (int i = 1; i <= 10; i++) { /* fast: about 3, 6, ... 30 ms */
        uint64_t t0 = ctr_test_now_ns();
        trace_task_t t = trace_task_begin("fast", 0);
        sleep_ms(3 * i);
        trace_task_end(t);
        fast[i - 1] = ctr_test_now_ns() - t0;
    }
    for (int i = 0; i < 2; i++) {
        uint64_t t0 = ctr_test_now_ns();
        trace_task_t t = trace_task_begin("slow", 0);
        sleep_ms(50);
        trace_task_end(t);
        slow[i] = ctr_test_now_ns() - t0;
    }
    trace_task_begin("only-open", 0);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    uint64_t fast_d[10], slow_d[2];
    assert_int_equal(traced_durations(&tr, "fast", fast_d, 10), 10);
    assert_int_equal(traced_durations(&tr, "slow", slow_d, 2), 2);
    for (int i = 0; i < 10; i++)
        if (fast_d[i] < (uint64_t)(3 * (i + 1)) * MS || fast_d[i] > fast[i] + MS / 10)
            fail_msg("fast task %d traced %.3f ms, slept %d ms, measured %.3f ms", i,
                     fast_d[i] / 1e6, 3 * (i + 1), fast[i] / 1e6);
    for (int i = 0; i < 2; i++)
        assert_true(slow_d[i] >= 50 * MS && slow_d[i] <= slow[i] + MS / 10);
    qsort(fast_d, 10, sizeof(fast_d[0]), cmp_u64);

    struct row rows[8];
    struct ctr_tasks_opts o = {.tsv = 1, .n = 5};
    char *text = tasks_text(&tr, &o);
    assert_int_equal(strncmp(text, "# type\tcount\tp50_ns\tp90_ns\tp99_ns\tmax_ns\n", 41), 0);
    assert_int_equal(parse_tsv(text, rows, 8), 3); /* by name: fast, only-open, slow */
    free(text);
    assert_string_equal(rows[0].type, "fast");
    assert_int_equal(rows[0].count, 10);
    assert_near(rows[0].p50, fast_d[4]); /* nearest rank: the 5th of 10 */
    assert_near(rows[0].p90, fast_d[8]);
    assert_near(rows[0].p99, fast_d[9]);
    assert_near(rows[0].max, fast_d[9]);
    assert_string_equal(rows[1].type, "only-open");
    assert_true(rows[1].count == 0 && rows[1].max == 0);
    assert_string_equal(rows[2].type, "slow");
    assert_int_equal(rows[2].count, 2);
    assert_near(rows[2].p50, slow_d[0] < slow_d[1] ? slow_d[0] : slow_d[1]);

    o.type = "slow";
    text = tasks_text(&tr, &o);
    assert_int_equal(parse_tsv(text, rows, 8), 1);
    assert_string_equal(rows[0].type, "slow");
    free(text);

    /* -latmin lists the slow ones only; with -type, only that type's. The
     * table above it is the whole type's. */
    int over40 = 2, over22 = 0; /* from the traced latencies, as above */
    for (int i = 0; i < 10; i++) {
        over40 += fast_d[i] >= 40 * MS;
        over22 += fast_d[i] >= 22500000;
    }
    char want[128];
    o = (struct ctr_tasks_opts){.latmin_ns = 40 * MS, .n = 5};
    text = tasks_text(&tr, &o);
    snprintf(want, sizeof(want),
             "slowest %d of %d tasks at least 40.0ms long:", over40 < 5 ? over40 : 5, over40);
    assert_contains(text, want);
    free(text);
    o = (struct ctr_tasks_opts){.type = "fast", .latmin_ns = 22500000, .n = 2};
    text = tasks_text(&tr, &o);
    snprintf(want, sizeof(want),
             "slowest 2 of %d tasks of type fast at least 22.5ms long:", over22);
    assert_contains(text, want);
    assert_true(strstr(text, "\nslow ") == NULL);
    assert_true(strstr(text, "\nfast ") != NULL);
    free(text);
    o = (struct ctr_tasks_opts){.type = "none", .n = 5};
    text = tasks_text(&tr, &o);
    assert_contains(text, "no tasks of type none in the trace");
    free(text);
    ctr_trace_free(&tr);
}

static void test_parse_duration(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t ns;
    } good[] = {{"0", 0},
                {"200ns", 200},
                {"500us", 500000},
                {"500µs", 500000},
                {"30ms", 30000000},
                {"1.5s", 1500000000},
                {"2s", 2 * 1000 * MS},
                {"1m30s", 90000 * MS},
                {"1h", 3600000 * MS},
                {".5ms", 500000},
                {"1.ms", 1000000},
                {"0.000000001s", 1}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        uint64_t ns = 12345;
        if (ctr_parse_duration(good[i].s, &ns) != 0 || ns != good[i].ns)
            fail_msg("'%s' -> %llu, want %llu", good[i].s, (unsigned long long)ns,
                     (unsigned long long)good[i].ns);
    }
    static const char *const bad[] = {"",   "5",  "5x",  "-1s", "+1s", "1.2.3s",
                                      ".s", "ms", "1 s", "1s ", "s1",  "1e3ms"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint64_t ns;
        if (ctr_parse_duration(bad[i], &ns) != -EINVAL)
            fail_msg("'%s' accepted", bad[i]);
    }
    uint64_t ns;
    assert_int_equal(ctr_parse_duration("999999999999h", &ns), -ERANGE);
}

/* ---------------------------------------------------------------------------
 * Profiles restricted to tasks, regions and latencies
 * ------------------------------------------------------------------------- */

struct sum {
    int64_t delay, max;
    int64_t count;
};

static int sum_sample(void *ctx, const struct ctr_pprof_frame *frames, size_t n, int64_t count,
                      int64_t delay_ns)
{
    (void)frames, (void)n;
    struct sum *s = ctx;
    s->delay += delay_ns;
    s->count += count;
    if (delay_ns > s->max)
        s->max = delay_ns;
    return 0;
}

static struct sum sync_profile(const struct ctr_trace *tr, const struct ctr_profile_filter *f)
{
    struct sum s = {0, 0, 0};
    assert_int_equal(ctr_profile_samples(tr, CTR_PROFILE_SYNC, f, sum_sample, &s), 0);
    return s;
}

static void test_profile_filters(void **state)
{
    (void)state;
    struct hold h = {0};
    /* 50 ms inside region "inside" of task "t1"; then 30 ms in no task. */
    uint64_t t1_0 = ctr_test_now_ns();
    trace_task_t t1 = trace_task_begin("t1", 0);
    hold_start(&h, 50);
    trace_region_begin(t1, "inside");
    hold_wait(&h);
    struct sync_bounds inside_sync = h.sync;
    trace_region_end(t1, "inside");
    trace_task_end(t1);
    uint64_t t1_ns = ctr_test_now_ns() - t1_0;
    hold_start(&h, 30);
    hold_wait(&h);
    struct sync_bounds outside_sync = h.sync;
    /* "clip": a task with no region, ended by the holder 20 ms into this
     * thread's 60 ms wait: only those 20 ms are the task's. */
    uint64_t clip0 = ctr_test_now_ns();
    h.end_task = trace_task_begin("clip", 0);
    h.end_after_ms = 20;
    hold_start(&h, 60);
    hold_wait(&h);
    struct sync_bounds clip_sync = h.sync;
    uint64_t clip_ns = atomic_load(&h.ended_at) - clip0;
    /* its part of the wait, between these bounds */
    struct sync_bounds clip_part = {atomic_load(&h.ended_at) - atomic_load(&h.seen_asleep_at),
                                    atomic_load(&h.ended_at) - h.lock_called};

    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct sum all = sync_profile(&tr, NULL);
    assert_sync((uint64_t)all.delay, sync_sum(sync_sum(inside_sync, outside_sync), clip_sync));

    struct ctr_profile_filter f = {.region = "inside"};
    struct sum s = sync_profile(&tr, &f);
    assert_sync((uint64_t)s.delay, inside_sync);
    assert_true(s.max <= s.delay); /* not the 60 ms wait, which is outside */
    assert_int_equal(ctr_profile_filter_check(&tr, &f, NULL), 0);

    f = (struct ctr_profile_filter){.task = "t1"};
    assert_sync((uint64_t)sync_profile(&tr, &f).delay, inside_sync);
    f = (struct ctr_profile_filter){.task = "t1", .region = "inside"};
    assert_sync((uint64_t)sync_profile(&tr, &f).delay, inside_sync);
    f = (struct ctr_profile_filter){.task = "clip", .region = "inside"};
    assert_int_equal(sync_profile(&tr, &f).delay, 0);

    /* Slower than a threshold between clip's latency (about 20 ms) and
     * t1's (about 50): t1's waits only. */
    assert_true(clip_ns < t1_ns);
    f = (struct ctr_profile_filter){.latmin_ns = clip_ns + (t1_ns - clip_ns) / 2};
    assert_sync((uint64_t)sync_profile(&tr, &f).delay, inside_sync);
    f = (struct ctr_profile_filter){.latmin_ns = 10 * 1000 * MS};
    assert_int_equal(sync_profile(&tr, &f).count, 0);
    assert_int_equal(ctr_profile_filter_check(&tr, &f, NULL), 1);

    /* Clipped: one wait, counted once, with the task's part of it. */
    f = (struct ctr_profile_filter){.task = "clip"};
    s = sync_profile(&tr, &f);
    assert_int_equal(s.count, 1);
    assert_sync((uint64_t)s.delay, clip_part);

    f = (struct ctr_profile_filter){.region = "nope"};
    assert_int_equal(sync_profile(&tr, &f).count, 0);
    assert_int_equal(ctr_profile_filter_check(&tr, &f, NULL), 1);
    f = (struct ctr_profile_filter){.task = "nope", .region = "nope"};
    assert_int_equal(ctr_profile_filter_check(&tr, &f, NULL), 2);
    ctr_trace_free(&tr);
}

/* ---------------------------------------------------------------------------
 * Threads: the leak finder
 * ------------------------------------------------------------------------- */

static pthread_mutex_t leak_mu = PTHREAD_MUTEX_INITIALIZER;
static sem_t leak_sem;
static int leak_pipe[2];
static _Atomic int arrived;
static _Atomic pid_t arrived_tids[16];

/* Counts the calling thread as arrived, remembering its kernel id. */
static void arrive(void)
{
    int i = atomic_fetch_add(&arrived, 1);
    if (i < 16)
        atomic_store(&arrived_tids[i], ctr_test_tid());
}

/* Waits until the n threads that arrived are asleep in the kernel (their
 * blocking call: they do nothing else after arriving); returns when. */
static uint64_t until_all_blocked(int n)
{
    while (atomic_load(&arrived) < n)
        sched_yield();
    for (int i = 0; i < n; i++)
        ctr_test_until_asleep(atomic_load(&arrived_tids[i]));
    return ctr_test_now_ns();
}
static _Atomic int mutex_line, write_line; /* written by every leaking thread */

static void *leak_on_mutex(void *arg)
{
    char name[16];
    snprintf(name, sizeof(name), "leak-mutex-%d", (int)(intptr_t)arg);
    pthread_setname_np(pthread_self(), name);
    arrive();
    /* clang-format off */
    atomic_store(&mutex_line, __LINE__); pthread_mutex_lock(&leak_mu); /* the blocking call's line */
    /* clang-format on */
    pthread_mutex_unlock(&leak_mu);
    return NULL;
}

static void *leak_on_sem(void *arg)
{
    (void)arg;
    arrive();
    sem_wait(&leak_sem);
    return NULL;
}

static void *leak_on_write(void *arg)
{
    (void)arg;
    static char buf[4096];
    arrive();
    ssize_t n;
    /* clang-format off */
    atomic_store(&write_line, __LINE__); n = write(leak_pipe[1], buf, sizeof(buf)); /* the pipe is full */
    /* clang-format on */
    (void)n;
    return NULL;
}

static struct ctr_leak_group *group_of(struct ctr_leak_group *g, size_t n, const char *call)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ctr_reason_specs[g[i].reason].call, call) == 0)
            return &g[i];
    return NULL;
}

static void test_leaks(void **state)
{
    (void)state;
    enum { MUTEX_LEAKS = 3, SEM_LEAKS = 2 };
    pthread_t th[MUTEX_LEAKS + SEM_LEAKS];
    atomic_store(&arrived, 0);
    assert_int_equal(sem_init(&leak_sem, 0, 0), 0);
    pthread_mutex_lock(&leak_mu);
    for (int i = 0; i < MUTEX_LEAKS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, leak_on_mutex, (void *)(intptr_t)i), 0);
    for (int i = 0; i < SEM_LEAKS; i++)
        assert_int_equal(pthread_create(&th[MUTEX_LEAKS + i], NULL, leak_on_sem, NULL), 0);
    uint64_t blocked = until_all_blocked(MUTEX_LEAKS + SEM_LEAKS);
    sleep_ms(30);
    uint64_t blocked_for = ctr_test_now_ns() - blocked; /* at least */

    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    pthread_mutex_unlock(&leak_mu);
    for (int i = 0; i < SEM_LEAKS; i++)
        sem_post(&leak_sem);
    for (int i = 0; i < MUTEX_LEAKS + SEM_LEAKS; i++)
        pthread_join(th[i], NULL);
    sem_destroy(&leak_sem);

    struct ctr_leak_group *g;
    size_t n;
    assert_int_equal(ctr_threads_leaks(&tr, &g, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(g[0].count, MUTEX_LEAKS); /* largest first */
    assert_string_equal(ctr_reason_specs[g[0].reason].call, "pthread_mutex_lock");
    assert_true(g[0].same_object && g[0].longest_ns >= blocked_for);
    assert_int_equal(g[1].count, SEM_LEAKS);
    assert_string_equal(ctr_reason_specs[g[1].reason].call, "sem_wait");
    ctr_threads_leaks_free(g, n);

    /* -tsv: count, call, innermost function, file:line. */
    char *text = threads_text(&tr, 1);
    char want[128];
    assert_int_equal(strncmp(text, "# count\tcall\tfunction\tfile:line\n", 32), 0);
    snprintf(want, sizeof(want), "\n3\tpthread_mutex_lock\tleak_on_mutex\t");
    assert_contains(text, want);
    snprintf(want, sizeof(want), "test-tasks.c:%d\n2\tsem_wait\tleak_on_sem\t", mutex_line);
    assert_contains(text, want);
    free(text);

    /* The text: the start functions' table and the groups' stacks. */
    text = threads_text(&tr, 0);
    assert_contains(text, "blocked at the end of the trace (leaked?): 5 threads in 2 groups");
    assert_contains(text, "      3  pthread_mutex_lock, blocked up to ");
    assert_contains(text, "(leak-mutex-");
    assert_contains(text, "(running at trace start)\n");
    const char *row = strstr(text, "\n      3 ");
    assert_non_null(row);
    const char *eol = strchr(row + 1, '\n');
    const char *fn = strstr(row, "leak_on_mutex (");
    assert_true(fn && fn < eol); /* 3 threads started in leak_on_mutex */
    free(text);
    ctr_trace_free(&tr);
}

/* Threads blocked for good in write() to a full pipe: the writer records an
 * I/O call still in progress at the end as a wait at its call site
 * (FORMAT.md §4), and the leak finder groups them there. */
static void test_leak_on_pipe_write(void **state)
{
    (void)state;
    enum { WRITERS = 2 };
    pthread_t th[WRITERS];
    atomic_store(&arrived, 0);
    assert_int_equal(pipe(leak_pipe), 0);
    int fl = fcntl(leak_pipe[1], F_GETFL);
    fcntl(leak_pipe[1], F_SETFL, fl | O_NONBLOCK);
    char buf[4096] = {0};
    while (write(leak_pipe[1], buf, sizeof(buf)) > 0)
        ;
    fcntl(leak_pipe[1], F_SETFL, fl);
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, leak_on_write, NULL), 0);
    until_all_blocked(WRITERS);
    sleep_ms(30);

    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    fcntl(leak_pipe[0], F_SETFL, fcntl(leak_pipe[0], F_GETFL) | O_NONBLOCK);
    int joined[WRITERS] = {0};
    for (int done = 0; done < WRITERS;) { /* drain until both writers are through */
        while (read(leak_pipe[0], buf, sizeof(buf)) > 0)
            ;
        for (int i = 0; i < WRITERS; i++)
            if (!joined[i] && pthread_tryjoin_np(th[i], NULL) == 0) {
                joined[i] = 1;
                done++;
            }
        sleep_ms(1);
    }
    close(leak_pipe[0]);
    close(leak_pipe[1]);

    struct ctr_leak_group *g;
    size_t n;
    assert_int_equal(ctr_threads_leaks(&tr, &g, &n), 0);
    struct ctr_leak_group *w = group_of(g, n, "write");
    if (!w)
        fail_msg("no thread blocked in write at the end of the trace");
    assert_int_equal(w->count, WRITERS);
    assert_true(w->same_object && w->object == (uint64_t)leak_pipe[1]);
    ctr_threads_leaks_free(g, n);
    char *text = threads_text(&tr, 1);
    char want[128];
    snprintf(want, sizeof(want), "\n%d\twrite\tleak_on_write\t", WRITERS);
    assert_contains(text, want);
    snprintf(want, sizeof(want), "test-tasks.c:%d\n", write_line);
    assert_contains(text, want);
    free(text);
    ctr_trace_free(&tr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tasks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tasks_tsv_and_filters, setup, teardown),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test_setup_teardown(test_profile_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leaks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leak_on_pipe_write, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
