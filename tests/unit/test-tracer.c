/* SPDX-License-Identifier: MIT */
/* test-tracer.c - libctrace's buffers, hand-off and sessions, checked through
 * the file they produce:
 *   - several writer threads, nothing dropped: every event arrives exactly
 *     once and in order;
 *   - a pool far too small: every event is either in the file or counted as
 *     dropped, exactly, and Lost events mark the gaps;
 *   - events of threads that are idle or blocked at trace_stop still arrive;
 *   - time never runs backwards within a thread;
 *   - the chunks threads take fresh are mapped in ahead, by the collector;
 *   - API errors: double start, stop without start, bad options, a path that
 *     cannot be opened, a file that cannot grow (write error at stop). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "collect/collector.h"
#include "core/clock.h"
#include "core/emit.h"
#include "core/pool.h"
#include "core/session.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "read/load.h"

static char *temp_path(void)
{
    static char path[64];
    ctr_test_temp(path, sizeof(path), "tracer");
    return path;
}

/* Each writer emits Block events whose object is its sequence number. */
struct writer {
    pthread_t th;
    uint64_t id;
    uint64_t n;
};

static void *write_sequence(void *arg)
{
    struct writer *w = arg;
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return NULL;
    w->id = t->id;
    for (uint64_t i = 0; i < w->n; i++) {
        uint64_t args[3] = {CTR_REASON_MUTEX_LOCK, i, 0};
        ctr__emit_one(t, CTR_EV_BLOCK, args);
    }
    return NULL;
}

/* Checks thread w's Block objects are an increasing subsequence of 0..n-1
 * and returns how many there are. */
static uint64_t check_sequence(const struct ctr_trace *tr, const struct writer *w)
{
    struct ctr_thread_info *th = ctr_trace_thread(tr, w->id);
    assert_non_null(th);
    uint64_t got = 0, next = 0;
    for (size_t k = 0; k < th->nevents; k++) {
        const struct ctr_trace_event *e = &th->events[k];
        if (k > 0)
            assert_true(e->ns >= th->events[k - 1].ns); /* monotonic per thread */
        /* The writers' own Blocks have no stack; a real contended lock in
         * the same thread (idle_writer's) has one. */
        if (e->type != CTR_EV_BLOCK || e->args[2] != 0)
            continue;
        assert_true(e->args[1] >= next); /* no duplicate, no reordering */
        assert_true(e->args[1] < w->n);
        next = e->args[1] + 1;
        got++;
    }
    return got;
}

static void run_writers(struct writer *w, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&w[i].th, NULL, write_sequence, &w[i]), 0);
    for (int i = 0; i < n; i++)
        pthread_join(w[i].th, NULL);
}

/* One session in which n writers write `events` events each. */
static struct trace_counters trace_writers(const struct trace_options *o, struct writer *w, int n,
                                           uint64_t events)
{
    assert_int_equal(trace_start_opts(o), 0);
    for (int i = 0; i < n; i++)
        w[i] = (struct writer){.n = events};
    run_writers(w, n);
    assert_int_equal(trace_stop(), 0);
    struct trace_counters c;
    trace_get_counters(&c);
    return c;
}

static void test_handoff_no_loss(void **state)
{
    (void)state;
    enum { WRITERS = 6, EVENTS = 200000 };
    char *path = temp_path();
    /* Small chunks: many hand-offs. A pool big enough that nothing drops. */
    struct trace_options o = {
        .path = path, .chunk_bytes = 4096, .pool_bytes = 256u << 20, .flush_ms = 5};
    struct writer w[WRITERS];
    struct trace_counters c = trace_writers(&o, w, WRITERS, EVENTS);
    assert_int_equal(c.events_dropped, 0);
    assert_true(c.chunks_flushed > WRITERS * 10);

    struct ctr_trace tr;
    ctr_test_read(path, &tr);
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(check_sequence(&tr, &w[i]), EVENTS);
    ctr_trace_free(&tr);
    unlink(path);
}

/* A writer's minor page faults while it fills `chunks` fresh chunks. */
static void *fill_fresh_chunks(void *arg)
{
    long *faults = arg;
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return NULL;
    uint64_t args[3] = {CTR_REASON_MUTEX_LOCK, 0x7f0000001000ull, 0};
    ctr__emit_one(t, CTR_EV_BLOCK, args); /* registered, first chunk taken */
    struct rusage before, after;
    getrusage(RUSAGE_THREAD, &before);
    /* Four 64 KiB chunks of Block events (a dozen bytes each). */
    for (int i = 0; i < 4 * 65536 / 12; i++)
        ctr__emit_one(t, CTR_EV_BLOCK, args);
    getrusage(RUSAGE_THREAD, &after);
    *faults = after.ru_minflt - before.ru_minflt;
    return NULL;
}

/* The collector maps in the chunks threads will take fresh next
 * (ctr__pool_prefault): a thread that fills four of them after a round
 * takes none of their 64 page faults itself. */
static void test_fresh_chunks_mapped_in_ahead(void **state)
{
    (void)state;
    char *path = temp_path();
    struct trace_options o = {
        .path = path, .chunk_bytes = 64u << 10, .pool_bytes = 64u << 20, .flush_ms = 10};
    assert_int_equal(trace_start_opts(&o), 0);
    assert_int_equal(ctr__collector_sync_for(5000000000ull), 0);
    long faults = -1;
    pthread_t th;
    pthread_create(&th, NULL, fill_fresh_chunks, &faults);
    pthread_join(th, NULL);
    struct ctr_pool *p = atomic_load(&ctr__session.pool);
    int refused = p->populate_failed;
    assert_int_equal(trace_stop(), 0);
    print_message("faults while filling 4 fresh chunks: %ld%s\n", faults,
                  refused ? " (the kernel refused MADV_POPULATE_WRITE)" : "");
    assert_true(faults >= 0);
    /* Sanitizers fault in shadow memory for every store; an old kernel
     * cannot populate. */
    if (!CTR_TEST_TSAN && !CTR_TEST_ASAN && !refused)
        assert_true(faults < 16);
    unlink(path);
}

static void test_drops_are_counted_exactly(void **state)
{
    (void)state;
    enum { WRITERS = 4, EVENTS = 300000 };
    char *path = temp_path();
    /* 16 chunks for 4 threads that need hundreds each: most events drop. */
    struct trace_options o = {
        .path = path, .chunk_bytes = 4096, .pool_bytes = 16 * 4096, .flush_ms = 50};
    struct writer w[WRITERS];
    struct trace_counters c = trace_writers(&o, w, WRITERS, EVENTS);
    assert_true(c.events_dropped > 0);

    struct ctr_trace tr;
    ctr_test_read(path, &tr);
    uint64_t total_dropped = 0;
    for (int i = 0; i < WRITERS; i++) {
        uint64_t got = check_sequence(&tr, &w[i]);
        struct ctr_thread_info *th = ctr_trace_thread(&tr, w[i].id);
        /* Each writer also wrote ThreadStart and ThreadEnd; either may have
         * been dropped too. Every event is accounted for, exactly. */
        uint64_t written = EVENTS + 2;
        uint64_t read_all = 0;
        for (size_t k = 0; k < th->nevents; k++)
            read_all += th->events[k].type != CTR_EV_LOST;
        assert_int_equal(read_all + th->dropped, written);
        assert_true(got <= EVENTS);
        assert_true(th->lost <= th->dropped); /* gaps marked where known */
        total_dropped += th->dropped;
    }
    assert_true(tr.complete);
    assert_int_equal(tr.end_dropped, c.events_dropped);
    assert_int_equal(total_dropped, c.events_dropped);
    ctr_trace_free(&tr);
    unlink(path);
}

/* A thread that drops events in one session and stays alive, idle, through
 * the next: its old drops must not be reported in the new trace. */
static pthread_barrier_t phase;

static void *drop_then_idle(void *arg)
{
    write_sequence(arg);          /* session 1: drops */
    pthread_barrier_wait(&phase); /* main stops session 1, starts 2 */
    pthread_barrier_wait(&phase); /* main stops session 2 */
    return NULL;
}

static void test_drops_not_carried_over(void **state)
{
    (void)state;
    char *path = temp_path();
    struct trace_options o = {
        .path = path, .chunk_bytes = 4096, .pool_bytes = 4 * 4096, .flush_ms = 1000};
    assert_int_equal(trace_start_opts(&o), 0);
    pthread_barrier_init(&phase, NULL, 2);
    struct writer w = {.n = 100000};
    pthread_t th;
    pthread_create(&th, NULL, drop_then_idle, &w);
    usleep(200000); /* the writer is done (or dropping) well before this */
    assert_int_equal(trace_stop(), 0);
    struct trace_counters c;
    trace_get_counters(&c);
    assert_true(c.events_dropped > 0);
    pthread_barrier_wait(&phase);
    assert_int_equal(trace_start(path), 0);
    usleep(20000);
    assert_int_equal(trace_stop(), 0);
    pthread_barrier_wait(&phase);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&phase);
    trace_get_counters(&c);
    assert_int_equal(c.events_dropped, 0);
    struct ctr_trace tr;
    ctr_test_read(path, &tr);
    assert_int_equal(tr.end_dropped, 0);
    ctr_trace_free(&tr);
    unlink(path);
}

/* A thread that writes a few events, then sits blocked past trace_stop. */
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static int idle_ready, idle_release;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static void *idle_writer(void *arg)
{
    struct writer *w = arg;
    write_sequence(w);
    pthread_mutex_lock(&idle_lock);
    idle_ready++;
    pthread_cond_broadcast(&idle_cond);
    while (!idle_release)
        pthread_cond_wait(&idle_cond, &idle_lock);
    pthread_mutex_unlock(&idle_lock);
    return NULL;
}

static void *blocked_locker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&idle_lock);
    idle_ready++;
    pthread_cond_broadcast(&idle_cond);
    pthread_mutex_unlock(&idle_lock);
    pthread_mutex_lock(&held); /* waits until after trace_stop */
    pthread_mutex_unlock(&held);
    return NULL;
}

static void test_idle_threads_flushed_at_stop(void **state)
{
    (void)state;
    char *path = temp_path();
    /* A flush interval longer than the test: only trace_stop can flush. */
    struct trace_options o = {.path = path, .flush_ms = 60000};
    assert_int_equal(trace_start_opts(&o), 0);
    struct writer w = {.n = 10};
    pthread_t locker;
    idle_ready = idle_release = 0;
    pthread_mutex_lock(&held);
    assert_int_equal(pthread_create(&w.th, NULL, idle_writer, &w), 0);
    assert_int_equal(pthread_create(&locker, NULL, blocked_locker, NULL), 0);
    pthread_mutex_lock(&idle_lock);
    while (idle_ready < 2)
        pthread_cond_wait(&idle_cond, &idle_lock);
    pthread_mutex_unlock(&idle_lock);
    usleep(50000); /* let the locker reach its wait */
    assert_int_equal(trace_stop(), 0);

    pthread_mutex_unlock(&held);
    pthread_mutex_lock(&idle_lock);
    idle_release = 1;
    pthread_cond_broadcast(&idle_cond);
    pthread_mutex_unlock(&idle_lock);
    pthread_join(w.th, NULL);
    pthread_join(locker, NULL);

    struct ctr_trace tr;
    ctr_test_read(path, &tr);
    assert_int_equal(check_sequence(&tr, &w), 10);
    /* The locker's Block on `held` is in the file, its wait still open. */
    int found = 0;
    for (size_t i = 0; i < tr.nthreads; i++)
        for (size_t k = 0; k < tr.threads[i].nevents; k++) {
            const struct ctr_trace_event *e = &tr.threads[i].events[k];
            if (e->type == CTR_EV_BLOCK && e->args[1] == (uintptr_t)&held) {
                found = 1;
                assert_true(e->args[2] != 0); /* with a stack */
            }
        }
    assert_true(found);
    ctr_trace_free(&tr);
    unlink(path);
}

static void *tick_reader(void *arg)
{
    (void)arg;
    uint64_t prev = ctr__ticks();
    for (int i = 0; i < 2000000; i++) {
        uint64_t now = ctr__ticks();
        if (now < prev)
            return (void *)1;
        prev = now;
    }
    return NULL;
}

static void test_clock_monotonic_per_thread(void **state)
{
    (void)state;
    ctr__clock_init();
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, tick_reader, NULL);
    for (int i = 0; i < 3; i++) {
        void *r;
        pthread_join(th[i], &r);
        assert_null(r);
    }
}

static void test_api_errors(void **state)
{
    (void)state;
    assert_int_equal(trace_stop(), -ENOENT);
    assert_int_equal(trace_start(NULL), -EINVAL);
    assert_int_equal(trace_start("/nonexistent-dir/x/trace.bin"), -ENOENT);
    struct trace_options bad = {.path = "/tmp/x", .chunk_bytes = 2u << 20};
    assert_int_equal(trace_start_opts(&bad), -EINVAL);
    struct trace_options nofd = {0};
    assert_int_equal(trace_start_opts(&nofd), -EINVAL);
    char *path = temp_path();
    assert_int_equal(trace_start(path), 0);
    assert_true(trace_is_running());
    assert_int_equal(trace_start(path), -EBUSY);
    assert_int_equal(trace_stop(), 0);
    assert_false(trace_is_running());
    /* A full device fails at the header, before tracing starts. */
    assert_int_equal(trace_start("/dev/full"), -ENOSPC);
    assert_false(trace_is_running());
    unlink(path);
}

static void test_write_error_reported_at_stop(void **state)
{
    (void)state;
    char *path = temp_path();
    struct rlimit old, small = {.rlim_cur = 64 << 10, .rlim_max = RLIM_INFINITY};
    getrlimit(RLIMIT_FSIZE, &old);
    small.rlim_max = old.rlim_max;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    struct trace_options o = {.path = path, .flush_ms = 5};
    assert_int_equal(trace_start_opts(&o), 0);
    struct writer w[2] = {{.n = 2000000}, {.n = 2000000}};
    run_writers(w, 2);
    int rc = trace_stop();
    setrlimit(RLIMIT_FSIZE, &old);
    assert_int_equal(rc, -EFBIG);
    /* What made it to the file is a readable prefix. */
    struct ctr_trace tr;
    char err[256];
    assert_int_equal(ctr_trace_read(path, &tr, err, sizeof(err)), 0);
    assert_true(!tr.complete || tr.damage[0]);
    ctr_trace_free(&tr);
    unlink(path);
}

/* A child forked while tracing runs untraced (its collector is not there,
 * the file is the parent's), and the parent's trace goes on, whole. */
static void test_fork_child_untraced(void **state)
{
    (void)state;
    char *path = temp_path();
    assert_int_equal(trace_start(path), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        pthread_mutex_lock(&m); /* wrappers pass through in the child */
        pthread_mutex_unlock(&m);
        _exit(trace_is_running() || trace_stop() != -ENOENT ? 1 : 0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct writer w = {.n = 1000};
    write_sequence(&w);
    assert_int_equal(trace_stop(), 0);
    struct ctr_trace tr;
    ctr_test_read(path, &tr);
    assert_true(tr.complete);
    assert_int_equal(check_sequence(&tr, &w), 1000);
    ctr_trace_free(&tr);
    unlink(path);
}

/* Threads of the parent that keep the tracer busy (contended waits: stacks
 * interned, chunks filled) while the test forks. */
static pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int busy_stop;

static void *busy_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&busy_stop)) {
        pthread_mutex_lock(&busy_lock);
        sched_yield();
        pthread_mutex_unlock(&busy_lock);
    }
    return NULL;
}

static pthread_mutex_t child_lock = PTHREAD_MUTEX_INITIALIZER;

static void *child_waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&child_lock); /* held by the child's main thread */
    pthread_mutex_unlock(&child_lock);
    return NULL;
}

/* The child's side of test_fork_child_traces_anew: a session of its own
 * into path, in which one thread waits 20 ms for the lock main holds.
 * @return its exit status: 0 when trace_start and trace_stop succeeded. */
static int child_session(const char *path)
{
    if (trace_is_running() || trace_start(path) != 0)
        return 1;
    pthread_t th;
    pthread_mutex_lock(&child_lock);
    if (pthread_create(&th, NULL, child_waiter, NULL) != 0)
        return 2;
    struct timespec d = {0, 20 * 1000 * 1000};
    nanosleep(&d, NULL);
    pthread_mutex_unlock(&child_lock);
    pthread_join(th, NULL);
    return trace_stop() == 0 ? 0 : 3;
}

/* A child forked while the parent's threads trace can start a session of
 * its own, as a new process would: its trace holds its own two threads
 * (not the parent's others, which the fork left behind), the forking
 * thread under the child's pid, and its wait; the parent's trace goes on. */
static void test_fork_child_traces_anew(void **state)
{
    (void)state;
    if (CTR_TEST_TSAN)
        skip(); /* ThreadSanitizer refuses threads after a multi-threaded fork */
    char *path = temp_path();
    char child_path[64];
    ctr_test_temp(child_path, sizeof(child_path), "tracer-child");
    assert_int_equal(trace_start(path), 0);
    pthread_t busy[3];
    atomic_store(&busy_stop, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&busy[i], NULL, busy_main, NULL), 0);
    struct timespec d = {0, 10 * 1000 * 1000};
    nanosleep(&d, NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(child_session(child_path));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    atomic_store(&busy_stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(busy[i], NULL);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(trace_stop(), 0);
    struct ctr_trace tr;
    ctr_test_read(child_path, &tr);
    assert_true(tr.complete);
    assert_int_equal(tr.pid, pid);
    assert_int_equal(tr.nthreads, 2);
    int forker = 0, blocks = 0;
    for (size_t i = 0; i < tr.nthreads; i++) {
        forker += tr.threads[i].os_tid == pid;
        for (size_t k = 0; k < tr.threads[i].nevents; k++)
            blocks += tr.threads[i].events[k].type == CTR_EV_BLOCK &&
                      tr.threads[i].events[k].args[0] == CTR_REASON_MUTEX_LOCK &&
                      tr.threads[i].events[k].args[1] == (uintptr_t)&child_lock;
    }
    assert_int_equal(forker, 1);
    assert_int_equal(blocks, 1);
    ctr_trace_free(&tr);
    ctr_test_read(path, &tr);
    assert_true(tr.complete);
    assert_true(tr.nthreads >= 4); /* main and the busy threads */
    ctr_trace_free(&tr);
    unlink(path);
    unlink(child_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_errors),
        cmocka_unit_test(test_clock_monotonic_per_thread),
        cmocka_unit_test(test_handoff_no_loss),
        cmocka_unit_test(test_drops_are_counted_exactly),
        cmocka_unit_test(test_drops_not_carried_over),
        cmocka_unit_test(test_idle_threads_flushed_at_stop),
        cmocka_unit_test(test_write_error_reported_at_stop),
        cmocka_unit_test(test_fork_child_untraced),
        cmocka_unit_test(test_fork_child_traces_anew),
        cmocka_unit_test(test_fresh_chunks_mapped_in_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
