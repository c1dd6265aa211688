/* SPDX-License-Identifier: MIT */
/* test-ctf-rebuild.c - the LTTng round trip without LTTng: each golden trace
 * (tests/data/golden, real traces of every kind: waits with context switches, a
 * flight recorder's window, a killed program's, a damaged one) is
 * transcribed into tracepoints (ctr_lttng_transcribe, as tracer/sinks/lttng.c and
 * the babeltrace2 plugin do), rebuilt into frames (analyze/read/ctf_rebuild.c, as
 * an LTTng trace is read back), and read again: the same threads, with the
 * same events at the same times, as the original. Also: one process of two
 * is picked out, two are merged with their ids apart, and two without -pid
 * are refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "read/ctf.h"
#include "read/ctf_rebuild.h"
#include "ctrace_format.h"
#include "ctrace_lttng.h"
#include "read/load.h"
#include "read/source.h"

/* The rebuilt trace, as a file in memory: the header, then the frames. */
struct out {
    uint8_t *p;
    size_t len;
};

static void out_put(struct out *o, const void *d, size_t n)
{
    o->p = realloc(o->p, o->len + n);
    assert_non_null(o->p);
    memcpy(o->p + o->len, d, n);
    o->len += n;
}

struct feed {
    struct ctr_rebuild *rb;
    uint64_t pid, pos;
};

static void feed_event(void *ctx, uint64_t thread, uint64_t time, uint8_t type, int sched,
                       const uint64_t *args, const void *payload, uint32_t len)
{
    struct feed *f = ctx;
    uint64_t v[CTR_MAX_ARGS + 2] = {thread, time};
    const struct ctr_event_spec *s = &ctr_event_specs[type];
    for (int i = 1; i < s->nargs; i++)
        v[i + 1] = args[i - 1];
    uint64_t what = (uint64_t)(sched ? CTR_TP_SCHED : CTR_TP_EVENT) << 16 | type;
    ctr_rebuild_point(f->rb, what, f->pid, v, s->nargs + 1, payload, len, ++f->pos);
}

static void feed_record(void *ctx, uint8_t kind, const uint64_t *fields, const uint64_t *tail_u,
                        const void *tail_b, uint32_t tail_n)
{
    struct feed *f = ctx;
    const struct ctr_record_spec *s = &ctr_record_specs[kind];
    uint64_t v[CTR_MAX_FIELDS + 1];
    memcpy(v, fields, sizeof(v));
    uint8_t seq[CTR_LTTNG_MAX_PCS * 8];
    size_t n = 0;
    if (s->tail == CTR_ARG_UVARINTS) {
        n = (size_t)tail_n * 8;
        memcpy(seq, tail_u, n);
    }
    const uint8_t *b = s->tail == CTR_ARG_UVARINTS ? seq : tail_b;
    if (s->tail != CTR_ARG_UVARINTS)
        n = tail_n;
    ctr_rebuild_point(f->rb, (uint64_t)CTR_TP_RECORD << 16 | kind, f->pid, v, s->nfields, b, n,
                      ++f->pos);
}

/* Feeds the trace at path, as process pid, into rb. */
static void feed_trace(struct ctr_rebuild *rb, const char *path, uint64_t pid)
{
    struct ctr_source *src;
    char err[256];
    assert_int_equal(ctr_source_open(path, 0, &src, err, sizeof(err)), 0);
    struct feed f = {rb, pid, 0};
    struct ctr_lttng_emitter e = {&f, feed_event, feed_record};
    struct ctr_frame fr;
    ZSTD_DCtx *dz = ZSTD_createDCtx();
    size_t cap = 1 << 20;
    uint8_t *raw = malloc(cap);
    while (ctr_source_next(src, &fr) == 1) {
        /* The writer streams its frames: their size is not in them. */
        ZSTD_DCtx_reset(dz, ZSTD_reset_session_only);
        ZSTD_inBuffer in = {fr.data, fr.len, 0};
        ZSTD_outBuffer out = {raw, cap, 0};
        size_t rc;
        do {
            if (out.pos == out.size) {
                raw = realloc(raw, cap *= 2);
                out.dst = raw;
                out.size = cap;
            }
            rc = ZSTD_decompressStream(dz, &out, &in);
        } while (!ZSTD_isError(rc) && rc != 0 && (in.pos < in.size || out.pos == out.size));
        if (!ZSTD_isError(rc))
            ctr_lttng_transcribe(raw, raw + out.pos, 1, &e); /* damage: what came before */
        free(fr.data);
    }
    free(raw);
    ZSTD_freeDCtx(dz);
    ctr_source_close(src);
}

static void take_all(struct ctr_rebuild *rb, struct out *o)
{
    struct ctr_frame fr;
    while (ctr_rebuild_take(rb, &fr)) {
        out_put(o, fr.data, fr.len);
        free(fr.data);
    }
}

static struct out rebuilt_file(void)
{
    struct out o = {0};
    uint8_t h[CTR_FILE_HEADER_LEN] = {0};
    memcpy(h, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN);
    h[8] = CTR_VERSION_MAJOR;
    h[10] = CTR_VERSION_MINOR;
    out_put(&o, h, sizeof(h));
    return o;
}

static void read_mem(const struct out *o, struct ctr_trace *t)
{
    char err[256];
    assert_int_equal(ctr_trace_read_mem(o->p, o->len, t, err, sizeof(err)), 0);
}

/* The same threads with the same events (type, time, arguments). */
static void assert_same_events(const struct ctr_trace *a, const struct ctr_trace *b)
{
    assert_int_equal(a->nevents, b->nevents);
    for (int k = 0; k < CTR_EV_LIMIT; k++)
        assert_int_equal(a->events_by_type[k], b->events_by_type[k]);
    assert_int_equal(a->nthreads, b->nthreads);
    for (size_t i = 0; i < a->nthreads; i++) {
        const struct ctr_thread_info *x = &a->threads[i], *y = &b->threads[i];
        assert_int_equal(x->id, y->id);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->nevents, y->nevents);
        for (size_t e = 0; e < x->nevents; e++) {
            assert_int_equal(x->events[e].type, y->events[e].type);
            assert_int_equal(x->events[e].ns, y->events[e].ns);
            assert_memory_equal(x->events[e].args, y->events[e].args, sizeof(x->events[e].args));
        }
    }
}

static char golden_path[512];

static const char *golden(const char *name)
{
    const char *dir = getenv("CTR_GOLDEN");
    snprintf(golden_path, sizeof(golden_path), "%s/%s", dir ? dir : "golden", name);
    return golden_path;
}

static void test_round_trip(void **state)
{
    (void)state;
    static const char *const traces[] = {
        "waits-sched.bin", "gateway.bin", "flight.bin", "flight-example.bin",
        "killed.bin",      "epoll.bin",   "gens.bin"};
    for (size_t i = 0; i < sizeof(traces) / sizeof(traces[0]); i++) {
        print_message("%s\n", traces[i]);
        struct ctr_trace orig, back;
        char err[256];
        assert_int_equal(ctr_trace_read(golden(traces[i]), &orig, err, sizeof(err)), 0);
        struct ctr_rebuild *rb = ctr_rebuild_new(0);
        assert_non_null(rb);
        struct out o = rebuilt_file();
        feed_trace(rb, golden(traces[i]), 0);
        ctr_rebuild_finish(rb, 0);
        take_all(rb, &o);
        int amb;
        assert_string_equal(ctr_rebuild_error(rb, &amb), "");
        read_mem(&o, &back);
        const char *dump = getenv("CTR_REBUILD_DUMP"); /* to look at it with ctrace */
        if (dump) {
            FILE *df = fopen(dump, "wb");
            if (df) {
                fwrite(o.p, 1, o.len, df);
                fclose(df);
            }
        }
        assert_int_equal(orig.complete, back.complete);
        assert_int_equal(orig.pid, back.pid);
        assert_same_events(&orig, &back);
        ctr_trace_free(&orig);
        ctr_trace_free(&back);
        ctr_rebuild_free(rb);
        free(o.p);
    }
}

/* Two processes' tracepoints, one after the other (as two per-process
 * traces would be read): picked, merged, or refused. */
static void feed_two(struct ctr_rebuild *rb)
{
    feed_trace(rb, golden("waits-sched.bin"), 111);
    feed_trace(rb, golden("gateway.bin"), 222);
    ctr_rebuild_finish(rb, 0);
}

static void test_processes(void **state)
{
    (void)state;
    struct ctr_trace a, b, one, all;
    char err[256];
    assert_int_equal(ctr_trace_read(golden("waits-sched.bin"), &a, err, sizeof(err)), 0);
    assert_int_equal(ctr_trace_read(golden("gateway.bin"), &b, err, sizeof(err)), 0);

    /* -pid 222: the gateway's, as it is. */
    struct ctr_rebuild *rb = ctr_rebuild_new(222);
    struct out o = rebuilt_file();
    feed_two(rb);
    take_all(rb, &o);
    read_mem(&o, &one);
    assert_same_events(&b, &one);
    ctr_trace_free(&one);
    ctr_rebuild_free(rb);
    free(o.p);

    /* -pid all: both, every thread apart, one END. */
    rb = ctr_rebuild_new(CTR_CTF_ALL);
    o = rebuilt_file();
    feed_two(rb);
    take_all(rb, &o);
    read_mem(&o, &all);
    assert_int_equal(all.nthreads, a.nthreads + b.nthreads);
    assert_int_equal(all.nevents, a.nevents + b.nevents);
    for (int k = 0; k < CTR_EV_LIMIT; k++)
        assert_int_equal(all.events_by_type[k], a.events_by_type[k] + b.events_by_type[k]);
    assert_int_equal(all.generations, a.generations + b.generations);
    assert_true(all.complete);
    assert_string_equal(all.damage, "");
    ctr_trace_free(&all);
    ctr_rebuild_free(rb);
    free(o.p);

    /* Neither chosen: refused, naming both. */
    rb = ctr_rebuild_new(0);
    feed_two(rb);
    int amb = 0;
    assert_non_null(strstr(ctr_rebuild_error(rb, &amb), "pids 111 and 222"));
    assert_true(amb);
    ctr_rebuild_free(rb);
    ctr_trace_free(&a);
    ctr_trace_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_processes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
