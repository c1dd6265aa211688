/* SPDX-License-Identifier: MIT */
/* test-sessions.c - what stops, starts, thread ends and signal handlers may not
 * do to a trace or to the traced program (the write sections and the slot
 * hand-off of tracer/core/thread.c):
 *   - threads created and ending all the time, with a pool of 16 small chunks
 *     and 1 ms rounds: no crash (an ending thread once cleared the chunk
 *     pointer of its slot's next owner), an undamaged trace;
 *   - a stop while a thread is in the middle of an event (a signal handler
 *     holds it there): the stop waits for the event, which is in the trace;
 *   - a stop while a handler never lets the event finish: the stop gives up
 *     after its timeout, and the next session is whole anyway;
 *   - hundreds of short sessions while threads lock, log and do I/O: every
 *     trace undamaged;
 *   - a signal storm whose handler does traced I/O and locking while the
 *     thread it interrupts writes tasks, regions and logs: an undamaged
 *     trace, every annotation in it, and every event of the handler either
 *     in it or counted as dropped. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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
#include "read/trace.h"

static const char long_message[] =
    "a log message long enough that a signal often lands inside its copy: "
    "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz";

/* Counts thread id's events of `type` (all threads when id is 0). */
static size_t count_events(const struct ctr_trace *tr, uint64_t id, int type)
{
    size_t n = 0;
    for (size_t i = 0; i < tr->nthreads; i++)
        if (!id || tr->threads[i].id == id)
            for (size_t k = 0; k < tr->threads[i].nevents; k++)
                n += tr->threads[i].events[k].type == type;
    return n;
}

/* ---------------------------------------------------------------------------
 * Threads ending while others start, with a tiny pool
 * ------------------------------------------------------------------------- */

static pthread_mutex_t churn_lock = PTHREAD_MUTEX_INITIALIZER;

static void *short_lived(void *arg)
{
    (void)arg;
    for (int i = 0; i < 30; i++) {
        trace_task_t t = trace_task_begin("x", 0);
        pthread_mutex_lock(&churn_lock);
        pthread_mutex_unlock(&churn_lock);
        trace_task_end(t);
    }
    return NULL;
}

static void test_thread_churn_tiny_pool(void **state)
{
    (void)state;
    char path[64];
    ctr_test_temp(path, sizeof(path), "churn");
    /* Every 4th queued chunk kicks the collector, which then writes and
     * frees slots while threads end and start: the old race's window. */
    struct trace_options o = {
        .path = path, .chunk_bytes = 4096, .pool_bytes = 16 * 4096, .flush_ms = 1};
    assert_int_equal(trace_start_opts(&o), 0);
    uint64_t end = ctr_test_now_ns() + 3000000000ull, threads = 0;
    while (ctr_test_now_ns() < end) {
        pthread_t t[32];
        for (int i = 0; i < 32; i++)
            assert_int_equal(pthread_create(&t[i], NULL, short_lived, NULL), 0);
        for (int i = 0; i < 32; i++)
            pthread_join(t[i], NULL);
        threads += 32;
    }
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_true(tr.complete);
    /* Each thread's start and end were written or counted as dropped. */
    size_t ends = count_events(&tr, 0, CTR_EV_THREAD_END);
    assert_true(ends > 0 && ends <= threads);
    ctr_trace_free(&tr);
    unlink(path);
}

/* ---------------------------------------------------------------------------
 * A stop while a thread is in the middle of an event
 * ------------------------------------------------------------------------- */

static _Atomic int hold, in_handler, saw_section, writers_stop;
static _Atomic uint64_t logs_started;

/* Holds the thread it interrupted, possibly in the middle of an event, as
 * long as `hold` says; notes whether it interrupted a write section. */
static void holding_handler(int sig)
{
    (void)sig;
    struct ctr_thread *t = ctr__self;
    atomic_store(&saw_section, t && t != &ctr__thread_off &&
                                   atomic_load_explicit(&t->writing, memory_order_relaxed));
    atomic_store(&in_handler, 1);
    while (atomic_load(&hold))
        ; /* a spin: nothing else is async-signal-safe enough */
    atomic_store(&in_handler, 0);
}

/* Writes logs whose task argument is their sequence number, whether or not
 * tracing is on; logs_started is the number of calls begun. */
static void *log_writer(void *arg)
{
    (void)arg;
    for (uint64_t seq = 0; !atomic_load(&writers_stop); seq++) {
        atomic_store(&logs_started, seq + 1);
        trace_log(seq, "seq", long_message);
    }
    return NULL;
}

/* Waits until the writer has written a log in the session just started: a
 * call begun after trace_start returned has ended. */
static void until_logged_in_session(void)
{
    uint64_t begun = atomic_load(&logs_started);
    while (atomic_load(&logs_started) < begun + 3)
        sched_yield();
}

struct stopper {
    pthread_t th;
    _Atomic int done;
    int rc;
};

static void *run_stop(void *arg)
{
    struct stopper *s = arg;
    s->rc = trace_stop();
    atomic_store(&s->done, 1);
    return NULL;
}

/* Freezes `writer` in the holding handler; returns whether it was inside a
 * write section, and the logs begun so far in *started. */
static int freeze(pthread_t writer, uint64_t *started)
{
    atomic_store(&hold, 1);
    assert_int_equal(pthread_kill(writer, SIGUSR1), 0);
    while (!atomic_load(&in_handler))
        sched_yield();
    *started = atomic_load(&logs_started);
    return atomic_load(&saw_section);
}

static void thaw(void)
{
    atomic_store(&hold, 0);
    while (atomic_load(&in_handler))
        sched_yield();
}

/* The sequence numbers of the writer's logs in the trace: contiguous; the
 * last into *last. @return how many. */
static size_t logged_sequence(const struct ctr_trace *tr, uint64_t *last)
{
    size_t n = 0;
    uint64_t prev = 0;
    for (size_t i = 0; i < tr->nthreads; i++)
        for (size_t k = 0; k < tr->threads[i].nevents; k++) {
            const struct ctr_trace_event *e = &tr->threads[i].events[k];
            if (e->type != CTR_EV_LOG)
                continue;
            if (n > 0)
                assert_int_equal(e->args[0], prev + 1);
            prev = e->args[0];
            n++;
        }
    *last = prev;
    return n;
}

/* The holding handler on SIGUSR1 and a thread writing logs, for the tests
 * that freeze it; *old keeps the previous action. */
static pthread_t start_log_writer(struct sigaction *old)
{
    struct sigaction sa = {.sa_handler = holding_handler};
    sigaction(SIGUSR1, &sa, old);
    atomic_store(&writers_stop, 0);
    pthread_t writer;
    assert_int_equal(pthread_create(&writer, NULL, log_writer, NULL), 0);
    return writer;
}

static void end_log_writer(pthread_t writer, const struct sigaction *old)
{
    atomic_store(&writers_stop, 1);
    pthread_join(writer, NULL);
    sigaction(SIGUSR1, old, NULL);
}

static void test_stop_waits_for_event_in_progress(void **state)
{
    (void)state;
    struct sigaction old;
    pthread_t writer = start_log_writer(&old);
    char path[64];
    ctr_test_temp(path, sizeof(path), "inflight");
    int caught = 0, landed = 0;
    for (int round = 0; round < 400 && caught < 5; round++) {
        assert_int_equal(trace_start(path), 0);
        until_logged_in_session();
        uint64_t started;
        int in_section = freeze(writer, &started);
        struct stopper s = {.done = 0};
        assert_int_equal(pthread_create(&s.th, NULL, run_stop, &s), 0);
        if (in_section) {
            /* The stop waits as long as the event is half-written. */
            usleep(20000);
            assert_false(atomic_load(&s.done));
            caught++;
            thaw();
            pthread_join(s.th, NULL);
        } else {
            pthread_join(s.th, NULL); /* the writer logs nothing more before */
            thaw();
        }
        assert_int_equal(s.rc, 0);
        struct ctr_trace tr;
        ctr_test_read(path, &tr);
        uint64_t last;
        assert_true(logged_sequence(&tr, &last) > 0);
        /* The log being written when the handler came is in the trace if
         * its section had read the epoch before the stop (else it saw 0 and
         * wrote nothing); every earlier one is. */
        if (last + 2 < started || last >= started)
            fail_msg("round %d: last logged %llu, %llu begun", round, (unsigned long long)last,
                     (unsigned long long)started);
        landed += in_section && last == started - 1;
        ctr_trace_free(&tr);
    }
    assert_int_equal(caught, 5);
    assert_true(landed > 0); /* an event the stop waited for reached the trace */
    end_log_writer(writer, &old);
    unlink(path);
}

/* A handler that never lets the event finish (for longer than the stop
 * waits): the stop gives up and returns, the next session does not share
 * anything the stuck writer may still store into, and its trace is whole. */
static void *churn_logs(void *arg)
{
    uint64_t *n = arg;
    for (int i = 0; i < 20000; i++) {
        trace_task_t t = trace_task_begin("after", 0);
        trace_log(t, "c", long_message);
        trace_task_end(t);
    }
    *n = 20000;
    return NULL;
}

static void test_stop_gives_up_on_stuck_writer(void **state)
{
    (void)state;
    struct sigaction old;
    pthread_t writer = start_log_writer(&old);
    char first[64], second[64];
    ctr_test_temp(first, sizeof(first), "stuck1");
    ctr_test_temp(second, sizeof(second), "stuck2");
    struct trace_options o = {.path = first, .chunk_bytes = 4096, .pool_bytes = 64 * 4096};
    int stuck = 0;
    for (int round = 0; round < 200 && !stuck; round++) {
        assert_int_equal(trace_start_opts(&o), 0);
        until_logged_in_session();
        uint64_t started;
        if (!freeze(writer, &started)) {
            thaw();
            assert_int_equal(trace_stop(), 0);
            continue;
        }
        stuck = 1;
        uint64_t t0 = ctr_test_now_ns();
        assert_int_equal(trace_stop(), 0); /* returns while the writer is stuck */
        assert_true(atomic_load(&in_handler));
        assert_true(ctr_test_now_ns() - t0 >= 1000000000ull); /* it did wait */
    }
    assert_true(stuck);
    /* A new session while the old writer is still inside its event. */
    o.path = second;
    assert_int_equal(trace_start_opts(&o), 0);
    pthread_t other;
    uint64_t n = 0;
    assert_int_equal(pthread_create(&other, NULL, churn_logs, &n), 0);
    usleep(10000);
    thaw(); /* the old event completes, into the old session's pool */
    pthread_join(other, NULL);
    end_log_writer(writer, &old);
    struct ctr_trace tr;
    ctr_test_stop_and_read(second, &tr);
    assert_true(tr.complete);
    /* Everything the other thread wrote is there, or counted as dropped. */
    uint64_t dropped = 0;
    for (size_t i = 0; i < tr.nthreads; i++)
        dropped += tr.threads[i].dropped;
    assert_true(count_events(&tr, 0, CTR_EV_TASK_BEGIN) + dropped >= n);
    ctr_trace_free(&tr);
    unlink(first);
    unlink(second);
}

/* ---------------------------------------------------------------------------
 * Short sessions in a loop, threads running throughout
 * ------------------------------------------------------------------------- */

static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t loop_cond = PTHREAD_COND_INITIALIZER;

static void *busy(void *arg)
{
    int *p = arg;
    char c = 0;
    while (!atomic_load(&writers_stop)) {
        trace_task_t t = trace_task_begin("busy", 0);
        trace_region_begin(t, "r");
        pthread_mutex_lock(&loop_lock);
        pthread_cond_signal(&loop_cond);
        pthread_mutex_unlock(&loop_lock);
        trace_log(t, "c", long_message);
        if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
            abort();
        trace_region_end(t, "r");
        trace_task_end(t);
    }
    return NULL;
}

static void test_start_stop_loop_threads_running(void **state)
{
    (void)state;
    enum { THREADS = 4, ROUNDS = CTR_TEST_TSAN ? 30 : 300 };
    atomic_store(&writers_stop, 0);
    pthread_t th[THREADS];
    int pipes[THREADS][2];
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pipe(pipes[i]), 0);
        assert_int_equal(pthread_create(&th[i], NULL, busy, pipes[i]), 0);
    }
    char path[64];
    ctr_test_temp(path, sizeof(path), "loop");
    for (int r = 0; r < ROUNDS; r++) {
        struct trace_options o = {.path = path,
                                  .chunk_bytes = 4096,
                                  .pool_bytes = 16 * 4096,
                                  .flush_ms = 1,
                                  .io_min_ns = 1};
        assert_int_equal(trace_start_opts(&o), 0);
        usleep(r % 3 == 0 ? 0 : 1000);
        assert_int_equal(trace_stop(), 0);
        struct ctr_trace tr;
        ctr_test_read(path, &tr); /* undamaged */
        ctr_trace_free(&tr);
    }
    atomic_store(&writers_stop, 1);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        close(pipes[i][0]);
        close(pipes[i][1]);
    }
    unlink(path);
}

/* ---------------------------------------------------------------------------
 * A signal storm against a thread writing annotations
 * ------------------------------------------------------------------------- */

static int storm_fd;
static _Atomic int storm_lock_too;
static _Atomic uint64_t storm_handled;
static pthread_mutex_t storm_mutex = PTHREAD_MUTEX_INITIALIZER;

static void storm_handler(int sig)
{
    (void)sig;
    int saved = errno;
    char c = 'x';
    if (write(storm_fd, &c, 1) != 1) /* recorded: io_min_ns is 1 */
        abort();
    if (atomic_load(&storm_lock_too)) {
        pthread_mutex_lock(&storm_mutex);
        pthread_mutex_unlock(&storm_mutex);
    }
    atomic_fetch_add(&storm_handled, 1);
    errno = saved;
}

struct kicker {
    pthread_t target, th;
    _Atomic int stop;
};

static void *kick(void *arg)
{
    struct kicker *k = arg;
    struct timespec ts = {0, 20000}; /* every 20 us */
    while (!atomic_load(&k->stop)) {
        pthread_kill(k->target, SIGUSR2);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void *hold_storm_mutex(void *arg)
{
    struct kicker *k = arg;
    struct timespec ts = {0, 5000};
    while (!atomic_load(&k->stop)) {
        pthread_mutex_lock(&storm_mutex);
        nanosleep(&ts, NULL);
        pthread_mutex_unlock(&storm_mutex);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void storm(int lock_too)
{
    /* Enough loops for signals to land in them, not so many that the pool
     * could fill on a machine too busy for the collector to keep up (drops
     * at the very end of a trace have no LOST mark to count them by). */
    enum { MIN_LOOPS = 50000, MIN_HANDLED = 500, MAX_LOOPS = 300000 };
    struct sigaction sa = {.sa_handler = storm_handler, .sa_flags = SA_RESTART}, old;
    sigaction(SIGUSR2, &sa, &old);
    storm_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    assert_true(storm_fd >= 0);
    atomic_store(&storm_lock_too, lock_too);
    atomic_store(&storm_handled, 0);
    char path[64];
    ctr_test_temp(path, sizeof(path), "storm");
    struct trace_options o = {.path = path, .io_min_ns = 1};
    assert_int_equal(trace_start_opts(&o), 0);
    struct kicker k = {.target = pthread_self()};
    pthread_t holder;
    assert_int_equal(pthread_create(&k.th, NULL, kick, &k), 0);
    if (lock_too)
        assert_int_equal(pthread_create(&holder, NULL, hold_storm_mutex, &k), 0);
    /* Until enough signals came, unless the machine is too busy for that. */
    size_t loops = 0;
    while (loops < MIN_LOOPS || (atomic_load(&storm_handled) < MIN_HANDLED && loops < MAX_LOOPS)) {
        trace_task_t t = trace_task_begin("job", 0);
        trace_region_begin(t, "r");
        trace_log(t, "c", long_message);
        trace_region_end(t, "r");
        trace_task_end(t);
        loops++;
    }
    uint64_t me = ctr__self->id;
    atomic_store(&k.stop, 1);
    pthread_join(k.th, NULL);
    if (lock_too)
        pthread_join(holder, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr); /* undamaged */
    assert_true(tr.complete);
    struct ctr_thread_info *th = ctr_trace_thread(&tr, me);
    assert_non_null(th);
    /* The thread's own events are all there: only a handler's are refused. */
    assert_int_equal(th->lost, 0);
    assert_int_equal(count_events(&tr, me, CTR_EV_TASK_BEGIN), loops);
    assert_int_equal(count_events(&tr, me, CTR_EV_REGION_END), loops);
    assert_int_equal(count_events(&tr, me, CTR_EV_LOG), loops);
    uint64_t handled = atomic_load(&storm_handled);
    assert_true(handled > 0);
    if (!lock_too) {
        /* Each handled signal wrote one Block+Unblock pair, or counted both
         * as dropped. */
        size_t writes = 0;
        for (size_t k2 = 0; k2 < th->nevents; k2++) {
            const struct ctr_trace_event *e = &th->events[k2];
            writes += e->type == CTR_EV_BLOCK && e->args[0] == CTR_REASON_WRITE &&
                      e->args[1] == (uint64_t)storm_fd;
        }
        assert_int_equal(2 * writes + th->dropped, 2 * handled);
    }
    ctr_trace_free(&tr);
    close(storm_fd);
    sigaction(SIGUSR2, &old, NULL);
    unlink(path);
}

static void test_signal_storm_io(void **state)
{
    (void)state;
    storm(0);
}

static void test_signal_storm_io_and_locks(void **state)
{
    (void)state;
    storm(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_churn_tiny_pool),
        cmocka_unit_test(test_stop_waits_for_event_in_progress),
        cmocka_unit_test(test_stop_gives_up_on_stuck_writer),
        cmocka_unit_test(test_start_stop_loop_threads_running),
        cmocka_unit_test(test_signal_storm_io),
        cmocka_unit_test(test_signal_storm_io_and_locks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
