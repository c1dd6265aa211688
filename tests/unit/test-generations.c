/* SPDX-License-Identifier: MIT */
/* test-generations.c - every generation stands alone (FORMAT.md §3.1), and
 * the sink seam (tracer/collect/sink.h) lets an output start at any of them.
 *
 * A real trace (threads contending a mutex, one blocked for the whole run,
 * one renamed midway, tasks, regions and logs) and a flight recorder's dump
 * of the same run are cut at every frame boundary (a dump's frame is one
 * generation, a file's several); each cut, read alone, must resolve every
 * stack, string, mapping and thread name its events use, and must know the
 * thread that was already blocked when it begins. The file cut after any
 * generation reads whole up to there. A sink of the test's own, attached while the trace runs, gets
 * generations that make a complete trace by themselves.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "ctrace/flightrec.h"
#include "collect/face.h"
#include "collect/records.h"
#include "collect/sink.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "ctrace_record.h"
#include "read/load.h"
#include "testutil.h"

#define MS 1000000ull

/* ---------------------------------------------------------------------------
 * The workload
 * ------------------------------------------------------------------------- */

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t never = PTHREAD_MUTEX_INITIALIZER; /* held by main throughout */
static atomic_int stop, renamed;
static _Atomic pid_t stuck_tid;

static void *contender(void *arg)
{
    pthread_setname_np(pthread_self(), (const char *)arg);
    for (int i = 0; !atomic_load(&stop); i++) {
        trace_task_t task = trace_task_begin("gen-request", 0);
        trace_region_begin(task, "gen-critical");
        pthread_mutex_lock(&contended);
        usleep(200);
        pthread_mutex_unlock(&contended);
        trace_region_end(task, "gen-critical");
        trace_logf(task, "gen-log", "request %d", i);
        trace_task_end(task);
        if (i == 20 && strcmp(arg, "gen-a") == 0) {
            pthread_setname_np(pthread_self(), "gen-renamed");
            atomic_store(&renamed, 1);
        }
    }
    return NULL;
}

static void *stuck(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "gen-stuck");
    atomic_store(&stuck_tid, ctr_test_tid());
    pthread_mutex_lock(&never); /* until main lets it go, after the trace */
    pthread_mutex_unlock(&never);
    return NULL;
}

void *ctr_test_idle_start(void *arg); /* lib-gens.c */

struct workload {
    pthread_t threads[3];
};

static void workload_start(struct workload *w)
{
    atomic_store(&stop, 0);
    atomic_store(&renamed, 0);
    atomic_store(&stuck_tid, 0);
    pthread_mutex_lock(&never);
    assert_int_equal(pthread_create(&w->threads[0], NULL, stuck, NULL), 0);
    assert_int_equal(pthread_create(&w->threads[1], NULL, contender, "gen-a"), 0);
    assert_int_equal(pthread_create(&w->threads[2], NULL, contender, "gen-b"), 0);
}

/* Stops the contenders, once one was renamed; the stuck thread stays
 * blocked until the end. Then a thread that starts in lib-gens and never
 * waits: no stack of its generation is in that object, only its start. */
static void workload_stop_contenders(struct workload *w)
{
    while (!atomic_load(&renamed))
        usleep(1000);
    atomic_store(&stop, 1);
    pthread_join(w->threads[1], NULL);
    pthread_join(w->threads[2], NULL);
    pthread_t idle;
    assert_int_equal(pthread_create(&idle, NULL, ctr_test_idle_start, NULL), 0);
    pthread_join(idle, NULL);
    usleep(30 * 1000); /* a few generations: the idle thread's is a cut of its own */
}

static void workload_end(struct workload *w)
{
    pthread_mutex_unlock(&never);
    pthread_join(w->threads[0], NULL);
}

/* ---------------------------------------------------------------------------
 * Cutting a trace at its generations
 * ------------------------------------------------------------------------- */

struct file {
    uint8_t *data;
    size_t len;
};

static struct file slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    struct file b = {0};
    size_t cap = 0;
    for (;;) {
        if (b.len == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            b.data = realloc(b.data, cap);
            assert_non_null(b.data);
        }
        size_t n = fread(b.data + b.len, 1, cap - b.len, f);
        if (n == 0)
            break;
        b.len += n;
    }
    fclose(f);
    return b;
}

/* The first byte of the zstd frame at p: the kind of its first record. */
static int first_record_kind(const uint8_t *p, size_t n)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    uint8_t first = 0;
    ZSTD_inBuffer in = {p, n, 0};
    ZSTD_outBuffer out = {&first, 1, 0};
    while (out.pos == 0 && in.pos < in.size)
        if (ZSTD_isError(ZSTD_decompressStream(d, &out, &in)))
            break;
    ZSTD_freeDCtx(d);
    return out.pos ? first : -1;
}

/* The file offsets of the frames that begin a generation. */
static size_t generation_starts(const struct file *f, size_t *starts, size_t cap)
{
    size_t n = 0;
    for (size_t off = CTR_FILE_HEADER_LEN; off < f->len;) {
        size_t len = ZSTD_findFrameCompressedSize(f->data + off, f->len - off);
        assert_false(ZSTD_isError(len));
        if (first_record_kind(f->data + off, len) == CTR_REC_GEN_BEGIN && n < cap)
            starts[n++] = off;
        off += len;
    }
    return n;
}

/* Whether a mapping of t holds code address pc. */
static int mapped(const struct ctr_trace *t, uint64_t pc)
{
    for (size_t i = 0; i < t->nmappings; i++)
        if (pc >= t->mappings[i].start && pc < t->mappings[i].limit)
            return 1;
    return 0;
}

/* What every cut must hold: whatever its events use, resolved. */
static void check_cut(const struct file *f, size_t from, const char *what)
{
    size_t len = CTR_FILE_HEADER_LEN + (f->len - from);
    uint8_t *cut = malloc(len);
    assert_non_null(cut);
    memcpy(cut, f->data, CTR_FILE_HEADER_LEN);
    memcpy(cut + CTR_FILE_HEADER_LEN, f->data + from, f->len - from);
    struct ctr_trace t;
    char err[256];
    if (ctr_trace_read_mem(cut, len, &t, err, sizeof(err)) != 0)
        fail_msg("%s cut at %zu: %s", what, from, err);
    if (t.damage[0] || t.warning[0])
        fail_msg("%s cut at %zu: %s%s", what, from, t.damage, t.warning);
    assert_true(t.complete);
    assert_true(t.exe[0] != 0);
    assert_true(t.nmappings > 0);
    for (size_t i = 0; i < t.nmappings; i++)
        assert_true(t.mappings[i].path[0] != 0);
    int stuck_blocked = 0;
    for (size_t i = 0; i < t.nthreads; i++) {
        const struct ctr_thread_info *th = &t.threads[i];
        if (!th->nevents)
            continue;
        /* A THREAD record for every thread with events, and its name. */
        if (th->os_tid == 0 || th->name[0] == 0)
            fail_msg("%s cut at %zu: thread %llu has %zu events but no record or name", what, from,
                     (unsigned long long)th->id, th->nevents);
        if (strcmp(th->name, "gen-a") == 0)
            fail_msg("%s cut at %zu: the renamed thread has its old name", what, from);
        for (size_t e = 0; e < th->nevents; e++) {
            const struct ctr_trace_event *ev = &th->events[e];
            const struct ctr_event_spec *spec = &ctr_event_specs[ev->type];
            for (unsigned a = 1; a < spec->nargs; a++) {
                uint64_t v = ev->args[a - 1];
                if (spec->args[a] == CTR_ARG_STRING && v && !ctr_trace_string(&t, v))
                    fail_msg("%s cut at %zu: %s refers to string %llu, not in the cut", what, from,
                             spec->name, (unsigned long long)v);
                if (spec->args[a] == CTR_ARG_STACK && v && !ctr_trace_stack(&t, v))
                    fail_msg("%s cut at %zu: %s refers to stack %llu, not in the cut", what, from,
                             spec->name, (unsigned long long)v);
                /* Code to symbolize: in a mapping of the cut. */
                if (spec->args[a] == CTR_ARG_PC && !mapped(&t, v))
                    fail_msg("%s cut at %zu: %s's code address %#llx is in no mapping of the cut",
                             what, from, spec->name, (unsigned long long)v);
                const struct ctr_stack_info *st =
                    spec->args[a] == CTR_ARG_STACK && v ? ctr_trace_stack(&t, v) : NULL;
                for (uint32_t k = 0; st && k < st->n; k++)
                    if (!mapped(&t, st->pcs[k] - 1))
                        fail_msg("%s cut at %zu: stack %llu's frame %u (%#llx) is in no mapping "
                                 "of the cut",
                                 what, from, (unsigned long long)v, k,
                                 (unsigned long long)st->pcs[k]);
            }
            if (strcmp(th->name, "gen-stuck") == 0 && ev->type == CTR_EV_BLOCK &&
                ev->args[0] == CTR_REASON_MUTEX_LOCK && ev->args[2])
                stuck_blocked = 1;
        }
    }
    /* Blocked since before most cuts began: known from WAITING. */
    if (!stuck_blocked)
        fail_msg("%s cut at %zu: the thread blocked for the whole run is not blocked", what, from);
    ctr_trace_free(&t);
    free(cut);
}

static size_t check_every_cut(const char *path, const char *what)
{
    struct file f = slurp(path);
    size_t starts[4096];
    size_t n = generation_starts(&f, starts, 4096);
    for (size_t i = 0; i < n; i++)
        check_cut(&f, starts[i], what);
    free(f.data);
    return n;
}

/* The trace's file keeps a frame open across generations and flushes it at
 * the end of each (FORMAT.md §2): cut the file at every block boundary of
 * its frames. Where the writer flushed (whole generations before the cut)
 * the prefix reads as a trace without END and nothing damaged; at a block
 * boundary inside a generation, as damage there; one byte further, as
 * damage. @return the clean cuts that hold events. */
static size_t check_every_flush(const char *path)
{
    struct file f = slurp(path);
    size_t clean = 0;
    for (size_t off = CTR_FILE_HEADER_LEN; off < f.len;) {
        size_t len = ZSTD_findFrameCompressedSize(f.data + off, f.len - off);
        assert_false(ZSTD_isError(len));
        for (size_t k = 6; k < len; k++) {
            if (!ctr_frame_cut_at_flush(f.data + off, k))
                continue;
            for (size_t more = 0; more < 2; more++) {
                struct ctr_trace t;
                char err[256];
                if (ctr_trace_read_mem(f.data, off + k + more, &t, err, sizeof(err)) != 0)
                    fail_msg("cut at %zu: %s", off + k + more, err);
                size_t events = 0;
                for (size_t i = 0; i < t.nthreads; i++)
                    events += t.threads[i].nevents;
                if (more && !t.damage[0])
                    fail_msg("cut at %zu, inside a block: no damage said", off + k + more);
                if (!more && t.damage[0] && !strstr(t.damage, "middle of a generation"))
                    fail_msg("cut at %zu, after a block: %s", off + k, t.damage);
                if (!more && !t.damage[0]) {
                    assert_false(t.complete);
                    clean += events > 0; /* the first generations may hold none yet */
                }
                ctr_trace_free(&t);
            }
        }
        off += len;
    }
    free(f.data);
    return clean;
}

/* Until the stuck thread sleeps in its lock (so its Block is written). */
static void until_stuck(void)
{
    while (!atomic_load(&stuck_tid))
        usleep(1000);
    ctr_test_until_asleep(atomic_load(&stuck_tid));
}

static void test_trace_cut_at_every_generation(void **state)
{
    (void)state;
    char path[64], dump[64];
    ctr_test_temp(path, sizeof(path), "gens");
    ctr_test_temp(dump, sizeof(dump), "gens-dump");
    struct trace_options o = {.path = path, .flush_ms = 10};
    assert_int_equal(trace_start_opts(&o), 0);
    struct flightrec_config c = {.min_age_ns = 150 * MS};
    assert_int_equal(flightrec_start(&c), 0);
    struct workload w;
    workload_start(&w);
    until_stuck();
    usleep(300 * 1000);
    workload_stop_contenders(&w);
    assert_int_equal(flightrec_dump(dump), 0);
    assert_int_equal(flightrec_stop(), 0);
    assert_int_equal(trace_stop(), 0);
    workload_end(&w);

    /* The file's frames hold several generations each; the dump's, one. */
    size_t frames = check_every_cut(path, "trace");
    size_t flushes = check_every_flush(path);
    size_t dump_gens = check_every_cut(dump, "dump");
    print_message("trace: %zu frames, %zu flushed generations read as a prefix; dump: %zu "
                  "generations, each cut read alone\n",
                  frames, flushes, dump_gens);
    assert_true(frames >= 2);
    assert_true(flushes >= 10);
    assert_true(dump_gens >= 3);
    unlink(path);
    unlink(dump);
}

/* ---------------------------------------------------------------------------
 * A sink of the test's own
 * ------------------------------------------------------------------------- */

static struct test_sink {
    struct ctr_sink sink;
    struct ctr_outbuf file; /* header, frames, trailer */
    uint64_t gens_begun, batch_bytes, first_gen;
    /* Counted by the collector, read by the test while it runs: release
     * here pairs with the test's acquire in until_sink_saw(). */
    _Atomic uint64_t gens_ended;
    int detached, trailer_rc;
} S;

static void ts_gen_begin(struct ctr_sink *s, uint64_t gen, const struct ctr_clock_sample *start)
{
    (void)s;
    (void)start;
    if (S.gens_begun++ == 0)
        S.first_gen = gen;
}

static void ts_batch(struct ctr_sink *s, const struct ctr_sink_batch *b)
{
    (void)s;
    S.batch_bytes += b->len;
}

static void ts_frame(struct ctr_sink *s, const void *z, size_t n)
{
    (void)s;
    ctr_out_bytes(&S.file, z, n);
}

static void ts_gen_end(struct ctr_sink *s, const struct ctr_gen_summary *g)
{
    (void)s;
    (void)g;
    atomic_fetch_add_explicit(&S.gens_ended, 1, memory_order_release);
}

/* Waits until the sink has seen n generations end (a loaded machine may run
 * the collector late: no nominal sleep is long enough), at most 30 s. */
static void until_sink_saw(uint64_t n)
{
    for (int i = 0; i < 30000 && atomic_load_explicit(&S.gens_ended, memory_order_acquire) < n; i++)
        usleep(1000);
}

static int ts_append(void *ctx, const void *frame, size_t n)
{
    ctr_out_bytes(ctx, frame, n);
    return 0;
}

static void ts_detached(struct ctr_sink *s)
{
    (void)s;
    /* What ends a complete trace, as any sink that writes one adds it. */
    S.trailer_rc = ctr__sink_trailer(ts_append, &S.file);
    S.detached = 1;
}

static const struct ctr_sink_ops test_ops = {
    .gen_begin = ts_gen_begin,
    .batch = ts_batch,
    .frame = ts_frame,
    .gen_end = ts_gen_end,
    .detached = ts_detached,
};

static void test_sink_attached_mid_trace(void **state)
{
    (void)state;
    char path[64];
    ctr_test_temp(path, sizeof(path), "gens-sink");
    struct trace_options o = {.path = path, .flush_ms = 10};
    assert_int_equal(trace_start_opts(&o), 0);
    struct workload w;
    workload_start(&w);
    until_stuck();
    usleep(100 * 1000); /* the trace is some generations in */

    S = (struct test_sink){.sink = {.ops = &test_ops}};
    uint8_t h[CTR_FILE_HEADER_LEN];
    ctr__file_header(h);
    ctr_out_bytes(&S.file, h, sizeof(h));
    ctr__api_lock();
    assert_int_equal(ctr__sink_attach(&S.sink, &o), 0);
    assert_int_equal(ctr__sink_attach(&S.sink, &o), -EBUSY);
    ctr__api_unlock();
    until_sink_saw(3);
    ctr__api_lock();
    assert_int_equal(ctr__sink_detach(&S.sink), 0);
    assert_int_equal(ctr__sink_detach(&S.sink), -ENOENT);
    ctr__api_unlock();
    assert_true(S.detached);
    assert_int_equal(S.trailer_rc, 0);
    assert_true(trace_is_running()); /* the file goes on without it */
    workload_stop_contenders(&w);
    assert_int_equal(trace_stop(), 0);
    workload_end(&w);

    uint64_t ended = atomic_load_explicit(&S.gens_ended, memory_order_acquire);
    print_message("sink: generations %llu to %llu, %llu batch bytes\n",
                  (unsigned long long)S.first_gen, (unsigned long long)(S.first_gen + ended - 1),
                  (unsigned long long)S.batch_bytes);
    assert_true(S.first_gen > 0);
    assert_int_equal(S.gens_begun, ended);
    assert_true(ended >= 3);
    assert_false(S.file.oom);
    /* What the sink got is a complete trace on its own, whose batches are
     * the ones its batch callback saw (and the trailer's, none here: no
     * call was in progress). */
    struct ctr_trace t;
    char err[256];
    assert_int_equal(ctr_trace_read_mem(S.file.p, S.file.len, &t, err, sizeof(err)), 0);
    assert_string_equal(t.damage, "");
    assert_string_equal(t.warning, "");
    assert_true(t.complete);
    assert_int_equal(t.generations, ended);
    assert_int_equal(t.batch_bytes, S.batch_bytes);
    ctr_trace_free(&t);
    struct file f = {S.file.p, S.file.len};
    check_cut(&f, CTR_FILE_HEADER_LEN, "sink");
    free(S.file.p);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_cut_at_every_generation),
        cmocka_unit_test(test_sink_attached_mid_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
