/* SPDX-License-Identifier: MIT */
/* test-abi.c - the library's ABI as a program built against another header
 * sees it (trace.h, "ABI"), through libctrace.so itself:
 *   - the version the library reports is the header's;
 *   - an "old" caller: options without the newest fields (LTTng, CPU
 *     samples), followed in memory by bytes that would be out of range if
 *     the library read them: it starts, traces and reads only its part; a
 *     flight recorder started with such options, too;
 *   - a "new" caller: structs with a field this library does not know: left
 *     zero they work, set they fail with -E2BIG and start nothing;
 *   - output structs larger than the library's get their extra fields
 *     zeroed, and smaller than the first layout are refused;
 *   - sizes below the first layout, and options out of range, are refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "ctrace/flightrec.h"
#include "ctrace/trace.h"
#include "read/trace.h"

/* struct trace_options as a header before LTTng and CPU samples had it. */
struct old_trace_options {
    const char *path;
    int fd;
    size_t chunk_bytes;
    size_t pool_bytes;
    unsigned flush_ms;
    int compression_level;
    unsigned stack_depth;
    unsigned io_min_ns;
    int sched_switches;
    size_t sched_ring_bytes;
};
_Static_assert(sizeof(struct old_trace_options) == TRACE_OPTIONS_SIZE_VER0,
               "the old layout is the first one the library takes");

/* An old caller's options in memory, and after them bytes that would make
 * every newer field invalid (cpu_hz 0xffffffff is out of range). */
union old_caller {
    struct old_trace_options o;
    unsigned char bytes[sizeof(struct trace_options) + 64];
};

static void old_caller_init(union old_caller *c, const char *path)
{
    memset(c->bytes, 0xff, sizeof(c->bytes));
    memset(&c->o, 0, sizeof(c->o));
    c->o.path = path;
    c->o.flush_ms = 10;
}

static void test_version(void **state)
{
    (void)state;
    assert_int_equal(ctrace_version(), CTRACE_VERSION_NUMBER);
    assert_string_equal(ctrace_version_string(), CTRACE_VERSION_STRING);
    char want[32];
    snprintf(want, sizeof(want), "%d.%d.%d", CTRACE_VERSION_MAJOR, CTRACE_VERSION_MINOR,
             CTRACE_VERSION_PATCH);
    assert_string_equal(CTRACE_VERSION_STRING, want);
    assert_true(CTRACE_ABI_VERSION >= 1);
}

static void test_old_caller_traces(void **state)
{
    (void)state;
    char path[64];
    ctr_test_temp(path, sizeof(path), "abi-old");
    union old_caller c;
    old_caller_init(&c, path);
    assert_int_equal(trace__start_opts((const struct trace_options *)&c.o, sizeof(c.o)), 0);
    assert_int_equal(trace_is_running(), 1);
    /* A short wait on the main thread, so that the trace has events. */
    usleep(20000);
    struct trace_counters n = {0};
    assert_int_equal(trace_get_counters(&n), 0);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_true(tr.nthreads >= 1);
    ctr_trace_free(&tr);
    unlink(path);
}

static void test_old_caller_flightrec(void **state)
{
    (void)state;
    union old_caller c;
    old_caller_init(&c, NULL);
    struct flightrec_config cfg = {.max_bytes = 1 << 20,
                                   .trace = (const struct trace_options *)&c.o};
    assert_int_equal(flightrec__start(&cfg, sizeof(cfg), sizeof(c.o)), 0);
    usleep(30000);
    char path[64];
    struct ctr_trace tr;
    ctr_test_dump_stop_read("abi-fr", path, &tr);
    assert_true(tr.nthreads >= 1);
    ctr_trace_free(&tr);
    unlink(path);
}

/* A struct from a newer header: the library's, then one more field. */
#define NEWER(type)           \
    struct {                  \
        type known;           \
        uint64_t newer_field; \
    }

static void test_new_caller(void **state)
{
    (void)state;
    char path[64];
    ctr_test_temp(path, sizeof(path), "abi-new");
    NEWER(struct trace_options) o = {.known = {.path = path}};
    assert_int_equal(trace__start_opts(&o.known, sizeof(o)), 0); /* unknown field zero */
    assert_int_equal(trace_stop(), 0);
    o.newer_field = 1;
    assert_int_equal(trace__start_opts(&o.known, sizeof(o)), -E2BIG);
    assert_int_equal(trace_is_running(), 0);

    NEWER(struct flightrec_config) cfg = {{0}, 0};
    cfg.newer_field = 7;
    assert_int_equal(flightrec__start(&cfg.known, sizeof(cfg), sizeof(struct trace_options)),
                     -E2BIG);
    assert_int_equal(flightrec_is_running(), 0);
    cfg.newer_field = 0;
    o.newer_field = 3;
    cfg.known.trace = &o.known;
    assert_int_equal(flightrec__start(&cfg.known, sizeof(cfg), sizeof(o)), -E2BIG);
    assert_int_equal(flightrec_is_running(), 0);
    o.newer_field = 0;
    assert_int_equal(flightrec__start(&cfg.known, sizeof(cfg), sizeof(o)), 0);

    NEWER(struct flightrec_trigger) t = {{.dir = "/tmp", .latency_ns = 1000}, 1};
    assert_int_equal(flightrec__trigger_latency(&t.known, sizeof(t)), -E2BIG);
    t.newer_field = 0;
    assert_int_equal(flightrec__trigger_latency(&t.known, sizeof(t)), 0);

    NEWER(struct flightrec_stats) st;
    memset(&st, 0xff, sizeof(st));
    assert_int_equal(flightrec__get_stats(&st.known, sizeof(st)), 0);
    assert_int_equal(st.newer_field, 0);
    assert_int_equal(st.known.dumps_failed, 0);
    assert_int_equal(flightrec_stop(), 0);

    NEWER(struct trace_counters) n;
    memset(&n, 0xff, sizeof(n));
    assert_int_equal(trace__get_counters(&n.known, sizeof(n)), 0);
    assert_int_equal(n.newer_field, 0);
    assert_true(n.known.chunks_flushed != UINT64_MAX);
    unlink(path);
}

static void test_refused(void **state)
{
    (void)state;
    struct trace_options o = {.path = "/nonexistent/never-created"};
    assert_int_equal(trace__start_opts(&o, TRACE_OPTIONS_SIZE_VER0 - 8), -EINVAL);
    assert_int_equal(trace__start_opts(NULL, sizeof(o)), -EINVAL);
    o.chunk_bytes = 3; /* out of range */
    assert_int_equal(trace_start_opts(&o), -EINVAL);
    struct flightrec_config cfg = {.trace = &o};
    assert_int_equal(flightrec_start(&cfg), -EINVAL);
    assert_int_equal(flightrec__start(&cfg, sizeof(cfg) - 8, sizeof(o)), -EINVAL);
    struct trace_counters n;
    assert_int_equal(trace__get_counters(&n, sizeof(n) - 8), -EINVAL);
    struct flightrec_stats st;
    assert_int_equal(flightrec__get_stats(&st, sizeof(st) - 8), -EINVAL);
    struct flightrec_trigger t = {.dir = "/tmp", .latency_ns = 1};
    assert_int_equal(flightrec__trigger_latency(&t, sizeof(t) - 8), -EINVAL);
    assert_int_equal(trace_is_running(), 0);
    assert_int_equal(flightrec_is_running(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_old_caller_traces),
        cmocka_unit_test(test_old_caller_flightrec),
        cmocka_unit_test(test_new_caller),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
