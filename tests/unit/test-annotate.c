/* SPDX-License-Identifier: MIT */
/* test-annotate.c - tasks, regions and logs as the trace records them: a task
 * handed to another thread and ended there, a child task, nested regions, a
 * region left open, logs (a long one cut at 1024 bytes, a formatted one),
 * and calls made while not tracing, which record nothing and return 0; and
 * names passed in buffers that change between calls. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "ctrace/trace.h"
#include "read/trace.h"

static trace_task_t handed;

static void *end_elsewhere(void *arg)
{
    (void)arg;
    trace_region_begin(handed, "finish");
    trace_log(handed, "status", "done on another thread");
    trace_region_end(handed, "finish");
    trace_task_end(handed);
    return NULL;
}

/* All events of `type` in the trace, in thread order. */
static size_t collect(const struct ctr_trace *tr, uint8_t type, const struct ctr_trace_event **out,
                      size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < tr->nthreads; i++)
        for (size_t k = 0; k < tr->threads[i].nevents; k++)
            if (tr->threads[i].events[k].type == type && n < max)
                out[n++] = &tr->threads[i].events[k];
    return n;
}

static void test_tasks_regions_logs(void **state)
{
    (void)state;
    char path[64];
    ctr_test_temp(path, sizeof(path), "annotate");
    assert_int_equal(trace_task_begin("before", 0), 0); /* not tracing: no task */
    assert_int_equal(trace_start(path), 0);

    trace_task_t req = trace_task_begin("request", 0);
    assert_true(req != 0);
    trace_task_t child = trace_task_begin("lookup", req);
    trace_region_begin(req, "outer");
    trace_region_begin(req, "inner");
    trace_logf(req, "debug", "key=%d", 42);
    trace_region_end(req, "inner");
    trace_region_end(req, "outer");
    trace_task_end(child);
    char big[3000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    trace_log(req, "big", big);
    handed = req;
    pthread_t th;
    pthread_create(&th, NULL, end_elsewhere, NULL);
    pthread_join(th, NULL);
    trace_region_begin(0, "left-open"); /* never ended */

    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    const struct ctr_trace_event *ev[16];
    assert_int_equal(collect(&tr, CTR_EV_TASK_BEGIN, ev, 16), 2);
    assert_true(ev[0]->args[0] == req && ev[0]->args[1] == 0);
    assert_string_equal(ctr_trace_string(&tr, ev[0]->args[2]), "request");
    assert_true(ev[1]->args[0] == child && ev[1]->args[1] == req);
    assert_int_equal(collect(&tr, CTR_EV_TASK_END, ev, 16), 2);
    assert_int_equal(collect(&tr, CTR_EV_REGION_BEGIN, ev, 16), 4);
    assert_string_equal(ctr_trace_string(&tr, ev[1]->args[1]), "inner");
    assert_int_equal(collect(&tr, CTR_EV_REGION_END, ev, 16), 3); /* one left open */
    size_t nlogs = collect(&tr, CTR_EV_LOG, ev, 16);
    assert_int_equal(nlogs, 3);
    size_t len;
    const char *msg = ctr_event_payload(&tr, ev[0], &len);
    assert_int_equal(len, 6);
    assert_memory_equal(msg, "key=42", 6);
    msg = ctr_event_payload(&tr, ev[1], &len);
    assert_int_equal(len, 1024); /* cut */
    assert_true(msg[0] == 'x' && msg[1023] == 'x');
    msg = ctr_event_payload(&tr, ev[2], &len);
    assert_memory_equal(msg, "done on another thread", len);
    assert_string_equal(ctr_trace_string(&tr, ev[2]->args[1]), "status");
    ctr_trace_free(&tr);
    assert_int_equal(trace_task_begin("after", 0), 0);
    unlink(path);
}

/* A thread remembers the names it used by address (annotate.c): a buffer
 * reused for other names, one shortened or lengthened in place, a name cut
 * at 256 bytes and one that differs only after that, each get the name
 * they hold when the call is made. */
static void test_names_in_reused_buffers(void **state)
{
    (void)state;
    char path[64];
    ctr_test_temp(path, sizeof(path), "names");
    assert_int_equal(trace_start(path), 0);
    char buf[400];
    static const char *const names[] = {"alpha", "beta", "alphabet", "alp", "alpha", "beta"};
    size_t nnames = sizeof(names) / sizeof(names[0]);
    for (size_t i = 0; i < nnames; i++) {
        strcpy(buf, names[i]);
        trace_region_begin(1, buf);
    }
    memset(buf, 'y', 300);
    buf[300] = 0;
    trace_region_begin(1, buf); /* cut at 256 */
    buf[280] = 'z';             /* the same first 256 bytes */
    trace_region_begin(1, buf);
    buf[10] = 'z';
    trace_region_begin(1, buf);

    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    const struct ctr_trace_event *ev[16];
    assert_int_equal(collect(&tr, CTR_EV_REGION_BEGIN, ev, 16), nnames + 3);
    for (size_t i = 0; i < nnames; i++)
        assert_string_equal(ctr_trace_string(&tr, ev[i]->args[1]), names[i]);
    const char *cut = ctr_trace_string(&tr, ev[nnames]->args[1]);
    assert_int_equal(strlen(cut), 256);
    assert_true(cut[0] == 'y' && cut[255] == 'y');
    assert_true(ev[nnames + 1]->args[1] == ev[nnames]->args[1]);
    const char *other = ctr_trace_string(&tr, ev[nnames + 2]->args[1]);
    assert_int_equal(strlen(other), 256);
    assert_true(other[10] == 'z');
    ctr_trace_free(&tr);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tasks_regions_logs),
        cmocka_unit_test(test_names_in_reused_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
