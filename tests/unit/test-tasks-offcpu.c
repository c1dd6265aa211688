/* SPDX-License-Identifier: MIT */
/* test-tasks-offcpu.c - a task's time is true: a worker's task blocks in a
 * wait no wrapper sees (hidden_syscall.h) and then computes. Held against the
 * kernel's CPU time (CPU_TIME readings, model/cpucheck.h), the task's
 * breakdown shows the hidden wait as off-cpu (its end may be runnable, on a
 * loaded machine), never as running: its running time is the CPU time the
 * worker measured itself, and `ctrace tasks` and `threads` say
 * off-cpu and warn; `ctrace why` says its running part was off-cpu. */
#include <pthread.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "testutil.h"

#include "ctrace/trace.h"
#include "hidden_syscall.h"
#include "model/tasks.h"
#include "model/threadtime.h"
#include "read/trace.h"
#include "report/tasks_report.h"
#include "report/threads.h"

#define MS 1000000ull
#define HIDDEN_MS 60

static char path[64];

static int setup(void **state)
{
    (void)state;
    return ctr_test_trace_begin(path, sizeof(path), "tasks-offcpu");
}

static int teardown(void **state)
{
    (void)state;
    return ctr_test_trace_end(path);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What the worker measured of its task. */
struct measured {
    trace_task_t task;
    uint64_t hidden_ns; /* around the hidden wait */
    uint64_t cpu_ns;    /* its CPU time over the task */
};

static void *worker(void *arg)
{
    struct measured *m = arg;
    uint64_t cpu0 = thread_cpu_ns();
    m->task = trace_task_begin("job", 0);
    uint64_t t0 = ctr_test_now_ns();
    ctr_test_hidden_sleep(HIDDEN_MS);
    m->hidden_ns = ctr_test_now_ns() - t0;
    /* Then 20 ms of work. */
    volatile uint64_t x = 0;
    while (ctr_test_now_ns() - t0 < m->hidden_ns + 20 * MS)
        x++;
    trace_task_end(m->task);
    m->cpu_ns = thread_cpu_ns() - cpu0;
    return NULL;
}

static char *text_of(int (*write)(const struct ctr_trace *, FILE *), const struct ctr_trace *tr)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(write(tr, f), 0);
    fclose(f);
    return buf;
}

static int write_tasks(const struct ctr_trace *tr, FILE *f)
{
    char err[256];
    struct ctr_tasks_opts o = {.n = 5};
    return ctr_tasks_write(tr, &o, f, err, sizeof(err));
}

static int write_threads(const struct ctr_trace *tr, FILE *f)
{
    char err[256];
    return ctr_threads_write(tr, 0, f, NULL, err, sizeof(err));
}

static void test_hidden_wait_in_a_task(void **state)
{
    (void)state;
    struct measured m = {0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, worker, &m), 0);
    pthread_join(th, NULL);

    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_true(tr.has_cpu_time);
    struct ctr_tasks ts;
    assert_int_equal(ctr_tasks_build(&tr, &ts), 0);
    const struct ctr_task *task = ctr_tasks_find(&ts, m.task);
    assert_non_null(task);
    struct ctr_task_breakdown b;
    const struct ctr_task *one[1] = {task};
    assert_int_equal(ctr_tasks_breakdown(&tr, &ts, one, 1, &b), 0);
    uint64_t run = b.times[CTR_TIME_RUNNING], off = b.times[CTR_TIME_OFFCPU],
             q = b.times[CTR_TIME_RUNNABLE];
    print_message("measured: hidden %.2f ms, CPU %.2f ms; task: running %.2f ms, runnable "
                  "%.2f ms, off-cpu %.2f ms\n",
                  m.hidden_ns / 1e6, m.cpu_ns / 1e6, run / 1e6, q / 1e6, off / 1e6);
    /* The hidden wait is off the CPU (or, its end, waiting for one). */
    assert_true(off + q + 2 * MS >= m.hidden_ns);
    assert_true(off >= m.hidden_ns / 10);
    assert_true(off <= m.hidden_ns + 2 * MS);
    /* Running is the CPU the kernel gave (5% or 2 ms). */
    uint64_t d = run > m.cpu_ns ? run - m.cpu_ns : m.cpu_ns - run;
    if (d * 20 > m.cpu_ns && d > 2 * MS)
        fail_msg("task running %.2f ms, its CPU time %.2f ms", run / 1e6, m.cpu_ns / 1e6);
    /* Nothing was lost: the kinds add up to the task's time. */
    uint64_t sum = 0;
    for (int k = 0; k < CTR_TIME_N; k++)
        sum += b.times[k];
    assert_true(sum <= ctr_task_latency(task) + MS && sum + MS >= ctr_task_latency(task));
    ctr_task_breakdowns_free(&b, 1);

    char *text = text_of(write_tasks, &tr);
    if (!strstr(text, ", off-cpu "))
        fail_msg("no off-cpu in `ctrace tasks`:\n%s", text);
    free(text);
    text = text_of(write_threads, &tr);
    if (!strstr(text, "off-cpu") || !strstr(text, "\nwarning: "))
        fail_msg("no off-cpu or no warning in `ctrace threads`:\n%s", text);
    free(text);
    ctr_tasks_free(&ts);
    ctr_trace_free(&tr);

    /* `ctrace why`: the task's own running, and the path's running part,
     * "(of which ... off-cpu N)". */
    char cmd[256], line[1024];
    snprintf(cmd, sizeof(cmd), "%s why -n 1 %s 2>&1", CTRACE_CLI, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int own = 0, part = 0;
    while (fgets(line, sizeof(line), p)) {
        print_message("%s", line);
        own |= strstr(line, "on its own thread") && strstr(line, "off-cpu ");
        part |= strstr(line, "running") && strstr(line, "(of which") && !strstr(line, "own");
    }
    assert_int_equal(pclose(p), 0);
    assert_true(own && part);
}

int main(void)
{
    setenv("DEBUGINFOD_URLS", "", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hidden_wait_in_a_task, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
