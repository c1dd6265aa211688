/* SPDX-License-Identifier: MIT */
/* test-reader.c - robustness tests for the analyzer's reader (analyze/
 * read/: load.c, pipeline.c, gen.c, source.c): a real trace, every truncation of
 * it, thousands of corruptions of it, hand-made record streams for the
 * format rules that a real trace never exercises, and the same answers
 * from any number of decoding threads (run under TSan too).
 *
 * The group setup traces a small contended workload in this process (4 named
 * threads taking turns on one mutex) through the statically linked libctrace,
 * with a short flush interval so the file has several zstd frames. The tests
 * then hold the reader to its contract (read/trace.h): only an unreadable start is
 * fatal; anything after it yields a partial result plus a damage message that
 * names a file offset; no byte sequence crashes it. Every successful read is
 * also checked against the invariants analyses rely on (check_model).
 *
 * Run it under ASan+UBSan: most of what it finds, only a sanitizer sees.
 * Environment:
 *   CTR_TRACE_OUT=path        keep a copy of the generated trace (fuzz seeds)
 *   CTR_FUZZ_REGRESSIONS=dir  also read every file in dir (fuzzer finds)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#include <cmocka.h>

#include "ctrace/trace.h"
#include "read/pipeline.h"
#include "read/state.h"
#include "read/load.h"

#define NWORKERS 4
#define ROUNDS 20
/* Traces smaller than this are read at every prefix length. */
#ifndef PREFIX_ALL_BELOW
#define PREFIX_ALL_BELOW (64u << 10)
#endif
#define MAX_FRAMES 4096

/* The trace under test, made once by setup_trace(). */
static struct {
    uint8_t *data;
    size_t len;
    size_t frame_ends[MAX_FRAMES]; /* file offsets where a zstd frame ends */
    size_t nframes;
    struct ctr_trace intact;
} T;

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------- */

/* splitmix64: deterministic, so a failure names an input that reproduces. */
static uint64_t rnd_state = 0x5eed1234abcdULL;
static uint64_t rnd(void)
{
    uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The invariants every analysis may assume of a successful read, damaged or
 * not: tables sorted by id, every name resolved to a string, events of known
 * types in time order, totals that add up. */
static void check_model(const struct ctr_trace *t)
{
    uint64_t total = 0, by_type[CTR_EV_LIMIT] = {0};
    assert_non_null(t->exe);
    for (size_t i = 0; i < t->nthreads; i++) {
        const struct ctr_thread_info *th = &t->threads[i];
        if (i > 0)
            assert_true(t->threads[i - 1].id < th->id);
        assert_non_null(th->name);
        for (size_t j = 0; j < th->nevents; j++) {
            const struct ctr_trace_event *e = &th->events[j];
            assert_true(e->type > 0 && e->type < CTR_EV_LIMIT);
            assert_non_null(ctr_event_specs[e->type].name);
            if (j > 0)
                assert_true(th->events[j - 1].ns <= e->ns);
            by_type[e->type]++;
        }
        total += th->nevents;
        assert_ptr_equal(ctr_trace_thread(t, th->id), th);
    }
    assert_int_equal(total, t->nevents);
    assert_memory_equal(by_type, t->events_by_type, sizeof(by_type));
    for (size_t i = 0; i < t->nstacks; i++) {
        if (i > 0)
            assert_true(t->stacks[i - 1].id <= t->stacks[i].id);
        assert_true(t->stacks[i].n <= 1024);
        assert_non_null(t->stacks[i].pcs);
    }
    for (size_t i = 0; i < t->nstrings; i++) {
        if (i > 0)
            assert_true(t->strings[i - 1].id <= t->strings[i].id);
        assert_non_null(t->strings[i].s);
    }
    for (size_t i = 0; i < t->nmappings; i++) {
        assert_non_null(t->mappings[i].path);
        assert_true(t->mappings[i].build_id_len <= sizeof(t->mappings[i].build_id));
    }
    for (size_t i = 1; i < t->nclocks; i++)
        assert_true(t->clocks[i - 1].ticks < t->clocks[i].ticks &&
                    t->clocks[i - 1].mono_ns < t->clocks[i].mono_ns);
    if (t->nevents > 0)
        assert_true(t->start_ns <= t->end_ns);
    assert_true(memchr(t->damage, 0, sizeof(t->damage)) != NULL);
    assert_true(memchr(t->warning, 0, sizeof(t->warning)) != NULL);
    if (t->damage[0])
        assert_non_null(strstr(t->damage, "file offset"));
}

/* Reads len bytes from a private heap copy, so that ASan catches any read
 * past the end, and checks the model when the read succeeds. */
static int read_copy(const uint8_t *data, size_t len, struct ctr_trace *t, char *err, size_t errlen)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, data, len);
    err[0] = 0;
    int rc = ctr_trace_read_mem(copy, len, t, err, errlen);
    free(copy);
    if (rc == 0)
        check_model(t);
    return rc;
}

/* ---------------------------------------------------------------------------
 * The traced workload
 * ------------------------------------------------------------------------- */

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    char name[16];
    snprintf(name, sizeof(name), "worker-%d", (int)(intptr_t)arg);
    pthread_setname_np(pthread_self(), name);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&contended);
        /* Holding the lock for 1 ms makes the other three block on it. */
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        pthread_mutex_unlock(&contended);
    }
    return NULL;
}

static int setup_trace(void **state)
{
    (void)state;
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/test-reader-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    /* Small chunks and a 10 ms flush: several frames from ~100 ms of work. */
    struct trace_options o = {
        .fd = fd, .chunk_bytes = 4096, .pool_bytes = 1u << 20, .flush_ms = 10};
    int rc = trace_start_opts(&o);
    if (rc != 0) {
        fprintf(stderr, "trace_start_opts: %s\n", strerror(-rc));
        return -1;
    }
    pthread_t th[NWORKERS];
    for (int i = 0; i < NWORKERS; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0)
            return -1;
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(th[i], NULL);
    if ((rc = trace_stop()) != 0) {
        fprintf(stderr, "trace_stop: %s\n", strerror(-rc));
        return -1;
    }

    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0)
        return -1;
    T.len = (size_t)st.st_size;
    T.data = malloc(T.len);
    if (!T.data || pread(fd, T.data, T.len, 0) != (ssize_t)T.len)
        return -1;
    close(fd);

    /* Read it back through the path entry point, before deleting it. */
    char err[256] = "";
    rc = ctr_trace_read(path, &T.intact, err, sizeof(err));
    unlink(path);
    if (rc != 0) {
        fprintf(stderr, "ctr_trace_read: %s\n", err);
        return -1;
    }

    /* Frame boundaries, found independently of the reader. */
    for (size_t off = CTR_FILE_HEADER_LEN; off < T.len && T.nframes < MAX_FRAMES;) {
        size_t n = ZSTD_findFrameCompressedSize(T.data + off, T.len - off);
        if (ZSTD_isError(n))
            break;
        off += n;
        T.frame_ends[T.nframes++] = off;
    }

    const char *out = getenv("CTR_TRACE_OUT");
    if (out && *out) {
        FILE *f = fopen(out, "wb");
        if (!f || fwrite(T.data, 1, T.len, f) != T.len || fclose(f) != 0)
            fprintf(stderr, "CTR_TRACE_OUT=%s: could not write\n", out);
    }
    return 0;
}

static int teardown_trace(void **state)
{
    (void)state;
    ctr_trace_free(&T.intact);
    free(T.data);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------- */

static void test_intact(void **state)
{
    (void)state;
    const struct ctr_trace *t = &T.intact;
    print_message("trace: %zu bytes, %zu frames, %llu events, %zu threads, %zu stacks\n", T.len,
                  T.nframes, (unsigned long long)t->nevents, t->nthreads, t->nstacks);
    assert_string_equal(t->damage, "");
    assert_int_equal(t->complete, 1);
    assert_int_equal(t->file_bytes, T.len);
    assert_true(t->nthreads >= NWORKERS + 1); /* the workers and main */
    assert_true(t->events_by_type[CTR_EV_BLOCK] > 0);
    assert_true(t->nstacks > 0);
    assert_true(T.nframes >= 2);
    assert_int_equal(T.frame_ends[T.nframes - 1], T.len);
    check_model(t);

    int named = 0;
    for (size_t i = 0; i < t->nthreads; i++)
        named += strncmp(t->threads[i].name, "worker-", 7) == 0;
    assert_int_equal(named, NWORKERS);

    /* The memory entry point reads the same bytes the same way. */
    struct ctr_trace m;
    char err[256];
    assert_int_equal(read_copy(T.data, T.len, &m, err, sizeof(err)), 0);
    assert_int_equal(m.nevents, t->nevents);
    assert_int_equal(m.nthreads, t->nthreads);
    ctr_trace_free(&m);
}

/* Where a cut leaves a valid trace prefix (FORMAT.md §2: file = header
 * frame*): right after the header, and after any frame. */
static int is_frame_end(size_t len)
{
    if (len == CTR_FILE_HEADER_LEN)
        return 1;
    for (size_t i = 0; i < T.nframes; i++)
        if (T.frame_ends[i] == len)
            return 1;
    return 0;
}

static void check_prefix(size_t len, uint64_t *last_events, size_t *ndamaged)
{
    struct ctr_trace t;
    char err[256];
    int rc = read_copy(T.data, len, &t, err, sizeof(err));
    if (len < CTR_FILE_HEADER_LEN) {
        assert_true(rc < 0);
        assert_true(err[0] != 0);
        return;
    }
    if (rc != 0)
        fail_msg("prefix of %zu bytes: rc %d: %s", len, rc, err);
    if (len < T.len && !t.damage[0] && t.complete)
        fail_msg("prefix of %zu bytes reads as a complete, undamaged trace", len);
    /* A cut exactly between frames is what a failed write leaves (trace.h):
     * a clean, if incomplete, trace. */
    if (is_frame_end(len) && t.damage[0])
        fail_msg("prefix of %zu bytes ends a frame, yet: %s", len, t.damage);
    assert_true(t.nevents <= T.intact.nevents);
    /* More bytes never give fewer events: the decoded stream only grows. */
    if (t.nevents < *last_events)
        fail_msg("prefix of %zu bytes: %llu events, fewer than a shorter one's %llu (%s)", len,
                 (unsigned long long)t.nevents, (unsigned long long)*last_events, t.damage);
    *last_events = t.nevents;
    *ndamaged += t.damage[0] != 0;
    ctr_trace_free(&t);
}

static void test_prefixes(void **state)
{
    (void)state;
    uint64_t last = 0;
    size_t n = 0, damaged = 0;
    if (T.len < PREFIX_ALL_BELOW) {
        for (size_t len = 0; len <= T.len; len++, n++)
            check_prefix(len, &last, &damaged);
    } else {
        /* Evenly spaced lengths, plus a few bytes either side of every frame
         * boundary (where the frame bookkeeping changes). Lengths must be
         * visited in increasing order for the monotonicity check. */
        size_t step = T.len / 4000 + 1, fi = 0;
        for (size_t len = 0; len <= T.len; len++) {
            while (fi < T.nframes && T.frame_ends[fi] + 4 < len)
                fi++;
            int near = fi < T.nframes && len + 4 >= T.frame_ends[fi];
            if (len % step == 0 || near || len < 64 || len == T.len) {
                check_prefix(len, &last, &damaged);
                n++;
            }
        }
    }
    assert_int_equal(last, T.intact.nevents);
    print_message("prefixes: %zu lengths read, %zu with damage\n", n, damaged);
}

/* Counts reads that produced damage, and reads whose result holds an event
 * the intact trace does not have at that place: bytes of a frame that failed
 * its checksum, decoded as if they were data. */
struct corrupt_stats {
    size_t reads, damaged, foreign;
};

/* Whether t has an event (type and arguments; times depend on which clock
 * points were read) that is not the intact trace's event at that index. */
static int has_foreign_event(const struct ctr_trace *t)
{
    for (size_t i = 0; i < t->nthreads; i++) {
        const struct ctr_thread_info *th = &t->threads[i];
        const struct ctr_thread_info *ok = ctr_trace_thread(&T.intact, th->id);
        if (th->nevents > 0 && (!ok || th->nevents > ok->nevents))
            return 1;
        for (size_t j = 0; j < th->nevents; j++) {
            const struct ctr_trace_event *a = &th->events[j], *b = &ok->events[j];
            if (a->type != b->type)
                return 1;
            for (int k = 1; k < ctr_event_specs[a->type].nargs; k++)
                if (a->args[k - 1] != b->args[k - 1])
                    return 1;
        }
    }
    return 0;
}

static void check_corrupt(const uint8_t *buf, struct corrupt_stats *s)
{
    struct ctr_trace t;
    char err[256];
    int rc = read_copy(buf, T.len, &t, err, sizeof(err));
    s->reads++;
    /* The header is intact, so only running out of memory may fail. */
    assert_true(rc == 0 || rc == -ENOMEM);
    if (rc != 0)
        return;
    s->damaged += t.damage[0] != 0;
    s->foreign += has_foreign_event(&t);
    ctr_trace_free(&t);
}

static void test_corruption(void **state)
{
    (void)state;
    uint8_t *buf = malloc(T.len);
    assert_non_null(buf);
    memcpy(buf, T.data, T.len);
    size_t body = T.len - CTR_FILE_HEADER_LEN;
    assert_true(body > 0);

    struct corrupt_stats flips = {0}, splats = {0};
    for (int i = 0; i < 4000; i++) {
        size_t off = CTR_FILE_HEADER_LEN + (size_t)(rnd() % body);
        uint8_t x = (uint8_t)(rnd() % 255 + 1); /* never 0: always a change */
        buf[off] ^= x;
        check_corrupt(buf, &flips);
        buf[off] ^= x;
    }
    for (int i = 0; i < 64; i++) {
        size_t off = CTR_FILE_HEADER_LEN + (size_t)(rnd() % body);
        size_t n = 1 + (size_t)(rnd() % 64);
        if (n > T.len - off)
            n = T.len - off;
        for (size_t j = 0; j < n; j++)
            buf[off + j] = (uint8_t)rnd();
        check_corrupt(buf, &splats);
        memcpy(buf + off, T.data + off, n);
    }
    assert_memory_equal(buf, T.data, T.len);
    free(buf);
    print_message("flips: %zu reads, %zu with damage, %zu with foreign events\n", flips.reads,
                  flips.damaged, flips.foreign);
    print_message("splats: %zu reads, %zu with damage, %zu with foreign events\n", splats.reads,
                  splats.damaged, splats.foreign);
    /* Every frame carries a checksum: nearly every change is noticed. The
     * few that are not touch bytes zstd does not check (e.g. the checksum
     * flag of a frame header, or the unused bits of a block header). */
    assert_true(flips.damaged > flips.reads / 2);
    assert_true(splats.damaged > splats.reads / 2);
}

static void test_bad_header(void **state)
{
    (void)state;
    uint8_t h[64];
    struct ctr_trace t;
    char err[256];
    assert_true(T.len >= sizeof(h));

    memcpy(h, T.data, sizeof(h));
    h[1] ^= 0x20; /* "CTRACE" -> "cTRACE" */
    assert_true(read_copy(h, sizeof(h), &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "magic"));

    memcpy(h, T.data, sizeof(h));
    h[8] = 99; /* major version, little endian */
    h[9] = 0;
    assert_true(read_copy(h, sizeof(h), &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "version"));

    /* Only the major version breaks compatibility: a newer minor reads. */
    memcpy(h, T.data, sizeof(h));
    h[10] = 99;
    assert_int_equal(read_copy(h, sizeof(h), &t, err, sizeof(err)), 0);
    ctr_trace_free(&t);

    assert_true(read_copy(h, 0, &t, err, sizeof(err)) < 0);
    assert_true(err[0] != 0);
}

/* Damage messages name where in the file to look. */
static void test_damage_names_offset(void **state)
{
    (void)state;
    struct ctr_trace t;
    char err[256];
    /* Cut inside the second frame: the message names that frame. */
    assert_true(T.nframes >= 2);
    size_t cut = T.frame_ends[0] + (T.frame_ends[1] - T.frame_ends[0]) / 2;
    assert_int_equal(read_copy(T.data, cut, &t, err, sizeof(err)), 0);
    assert_true(t.damage[0] != 0);
    char want[64];
    snprintf(want, sizeof(want), "file offset %zu ", T.frame_ends[0]);
    if (!strstr(t.damage, want))
        fail_msg("expected \"%s\" in: %s", want, t.damage);
    ctr_trace_free(&t);
}

/* A trace file holding `stream` as its one zstd frame; *len gets its size. */
static uint8_t *make_file(const void *stream, size_t n, size_t *len)
{
    size_t cap = CTR_FILE_HEADER_LEN + ZSTD_compressBound(n);
    uint8_t *f = calloc(1, cap);
    assert_non_null(f);
    memcpy(f, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN);
    f[8] = CTR_VERSION_MAJOR;
    size_t z = ZSTD_compress(f + CTR_FILE_HEADER_LEN, cap - CTR_FILE_HEADER_LEN, stream, n, 1);
    assert_false(ZSTD_isError(z));
    *len = CTR_FILE_HEADER_LEN + z;
    return f;
}

/* Hand-made record streams for the rules of FORMAT.md §3-§4 that a real
 * trace never exercises. Varints below 128 are one byte, so most bytes read
 * as written: kind, length, then the body's fields. */
static const struct {
    const char *what;
    const char *stream;
    size_t len;
    int damaged;
    uint64_t nevents;
    uint64_t last_ns; /* if not 0: the time of the last event read */
} hostile[] = {
#define S(lit) lit, sizeof(lit) - 1
    {"unknown record kind is skipped",
     S("\x63\x03"
       "abc"
       "\x02\x01\x00"),
     0, 0, 0},
    {"body longer than its fields", S("\x02\x02\x00\x07"), 0, 0, 0},
    {"record longer than the stream", S("\x02\x05\x00"), 1, 0, 0},
    {"record length cut", S("\x02\x80"), 1, 0, 0},
    {"11-byte varint", S("\x02\x0b\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"), 1, 0, 0},
    {"unknown tick source", S("\x01\x05\x01\x07\x00\x00\x00"), 1, 0, 0},
    {"stack claims more frames than bytes", S("\x06\x03\x01\x64\x00"), 1, 0, 0},
    {"stack cut inside a frame", S("\x06\x05\x01\x03\x01\x80\x80"), 1, 0, 0},
    {"build-id longer than 64 bytes", S("\x08\x07\x01\x00\x01\x00\x00\x00\x41"), 1, 0, 0},
    {"mapping limit below start", S("\x08\x07\x01\x05\x01\x00\x00\x00\x00"), 1, 0, 0},
    /* BATCH thread 1, base 0: THREAD_END, then an unknown event type. */
    {"unknown event type", S("\x09\x06\x01\x00\x03\x00\x63\x00"), 1, 1, 0},
    /* BLOCK with wait reason 200 (a two-byte varint). */
    {"unknown wait reason", S("\x09\x08\x01\x00\x05\x00\xc8\x01\x00\x00"), 1, 0, 0},
    {"event cut", S("\x09\x05\x01\x00\x05\x00\x01"), 1, 0, 0},
    /* THREAD_NAME for a thread and a string that do not exist; BLOCK on a
     * stack that does not exist: kept, as after a truncation. */
    {"dangling ids", S("\x09\x0b\x01\x00\x04\x00\x09\x09\x05\x00\x01\x00\x07"), 0, 2, 0},
    /* TSC ticks; clock points (1 tick, 1 ns) and (2, 2^62 ns): an event at
     * tick 10 extrapolates past 2^64 ns, which must clamp, not overflow. */
    {"clock extrapolation past 2^64 ns",
     S("\x01\x05\x01\x01\x00\x00\x00"
       "\x04\x03\x01\x01\x00"
       "\x04\x0b\x02\x80\x80\x80\x80\x80\x80\x80\x80\x40\x00"
       "\x09\x04\x01\x0a\x03\x00"),
     0, 1, UINT64_MAX},
    /* Clock points in reverse and repeated: only increasing ones are used. */
    {"clock points out of order",
     S("\x01\x05\x01\x01\x00\x00\x00"
       "\x04\x03\x09\x09\x00"
       "\x04\x03\x05\x05\x00"
       "\x04\x03\x05\x05\x00"
       "\x04\x03\x07\x03\x00"
       "\x09\x04\x01\x00\x03\x00"),
     0, 1, 0},
/* PENDING (FORMAT.md §3.1): thread 1 (THREAD record) in read (25) on
 * fd 3 since tick 5, as generation 0 ends. */
#define T1 "\x07\x05\x01\x05\x00\x00\x00"
#define G0 "\x02\x01\x00" T1 "\x03\x01\x00"
#define P5 "\x0d\x05\x01\x05\x19\x03\x00"
    {"pending in the last generation of a cut trace: an open wait", S(G0 P5), 0, 1, 5},
    {"pending of an earlier generation: over", S(G0 P5 "\x02\x01\x01\x03\x01\x01"), 0, 0, 0},
    {"pending in a complete trace: the writer's own BLOCKs say it",
     S(G0 P5 "\x0b\x04\x00\x00\x00\x00"), 0, 0, 0},
    /* The thread's THREAD_END at tick 9 comes after the call's start. */
    {"pending before the thread's last event: returned", S(G0 "\x09\x04\x01\x09\x03\x00" P5), 0, 1,
     9},
    {"pending with an unknown reason: skipped", S(G0 "\x0d\x06\x01\x05\xc8\x01\x03\x00"), 0, 0, 0},
#undef P5
#undef G0
#undef T1
#undef S
};

static void test_hostile_streams(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
        size_t len;
        uint8_t *f = make_file(hostile[i].stream, hostile[i].len, &len);
        struct ctr_trace t;
        char err[256];
        int rc = read_copy(f, len, &t, err, sizeof(err));
        free(f);
        if (rc != 0)
            fail_msg("%s: rc %d: %s", hostile[i].what, rc, err);
        if ((t.damage[0] != 0) != hostile[i].damaged || t.nevents != hostile[i].nevents)
            fail_msg("%s: damage \"%s\", %llu events", hostile[i].what, t.damage,
                     (unsigned long long)t.nevents);
        if (hostile[i].last_ns && t.end_ns != hostile[i].last_ns)
            fail_msg("%s: last event at %llu ns", hostile[i].what, (unsigned long long)t.end_ns);
        ctr_trace_free(&t);
    }
}

/* A file that ends exactly where a frame ends is whole, even when the
 * decompressed stream exactly fills the reader's output buffer at that
 * moment. The first buffer is 4 x file size + 4096 bytes (load.c,
 * decompress()); find a one-STRING stream of just that size. */
static void test_stream_fills_buffer(void **state)
{
    (void)state;
    static uint8_t s[16384];
    for (size_t n = 4000; n < 12000; n++) {
        s[0] = CTR_REC_STRING;
        uint8_t *p = ctr_put_uvarint(s + 1, n + 1); /* body: id, then n bytes */
        *p++ = 1;
        memset(p, 'a', n);
        size_t slen = (size_t)(p + n - s), flen;
        uint8_t *f = make_file(s, slen, &flen);
        if (slen != 4 * flen + 4096) {
            free(f);
            continue;
        }
        struct ctr_trace t;
        char err[256];
        assert_int_equal(read_copy(f, flen, &t, err, sizeof(err)), 0);
        free(f);
        assert_string_equal(t.damage, "");
        assert_int_equal(t.nstrings, 1);
        assert_int_equal(strlen(t.strings[0].s), n);
        ctr_trace_free(&t);
        return;
    }
    print_message("no stream of the buffer's exact size with this zstd: not tested\n");
}

/* Every file in $CTR_FUZZ_REGRESSIONS (inputs the fuzzer once crashed on)
 * reads without crashing, through the path entry point. */
static void test_regressions(void **state)
{
    (void)state;
    const char *dir = getenv("CTR_FUZZ_REGRESSIONS");
    if (!dir || !*dir)
        skip();
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("CTR_FUZZ_REGRESSIONS=%s: %s", dir, strerror(errno));
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        struct ctr_trace t;
        char err[256] = "";
        int rc = ctr_trace_read(path, &t, err, sizeof(err));
        if (rc == 0) {
            check_model(&t);
            ctr_trace_free(&t);
        } else {
            assert_true(err[0] != 0);
        }
        n++;
    }
    closedir(d);
    print_message("regressions: %zu files read\n", n);
}

/* A digest of everything a pipeline run hands its consumers, in order. */
struct digest {
    const struct ctr_trace *t;
    uint64_t h, events, intervals, gaps;
};

static void mix(struct digest *d, uint64_t v)
{
    d->h = (d->h ^ v) * 0x100000001b3ull;
}

static void digest_event(void *ctx, const struct ctr_trace *t, uint32_t thread,
                         const struct ctr_trace_event *e)
{
    struct digest *d = ctx;
    mix(d, t->threads[thread].id);
    mix(d, e->ns);
    mix(d, e->type);
    for (int i = 0; i < CTR_MAX_ARGS - 1; i++)
        mix(d, e->args[i]);
    d->events++;
}

static void digest_interval(void *ctx, const struct ctr_interval *iv)
{
    struct digest *d = ctx;
    mix(d, iv->thread->id);
    mix(d, iv->state);
    mix(d, iv->start_ns);
    mix(d, iv->end_ns);
    mix(d, iv->reason);
    mix(d, iv->release ? iv->release->ns : 0);
    d->intervals++;
}

static void digest_gap(void *ctx, const struct ctr_trace *t, uint64_t from, uint64_t to)
{
    struct digest *d = ctx;
    (void)t;
    mix(d, from);
    mix(d, to);
    d->gaps++;
}

static struct digest digest_run(const uint8_t *data, size_t len, int jobs, char *damage,
                                size_t damage_len)
{
    struct ctr_source *src;
    struct ctr_trace t = {0};
    struct digest d = {&t, 0xcbf29ce484222325ull, 0, 0, 0};
    struct ctr_consumer c = {
        .ctx = &d, .event = digest_event, .interval = digest_interval, .gap = digest_gap};
    struct ctr_pipeline_opts o = {.jobs = jobs};
    char err[256];
    assert_int_equal(ctr_source_open_mem(data, len, &src, err, sizeof(err)), 0);
    assert_int_equal(ctr_analyze(src, &t, &c, 1, &o, err, sizeof(err)), 0);
    snprintf(damage, damage_len, "%s", t.damage);
    mix(&d, t.nevents);
    mix(&d, t.odd);
    mix(&d, t.end_ns);
    ctr_trace_free(&t);
    ctr_source_close(src);
    return d;
}

/* Workers only decode: what the consumers get is the same for any number of
 * them, on the trace and on damaged copies of it (where frames are skipped). */
static void test_jobs(void **state)
{
    (void)state;
    uint8_t *copy = malloc(T.len);
    assert_non_null(copy);
    uint64_t seed = 12345;
    for (int round = 0; round < 6; round++) {
        memcpy(copy, T.data, T.len);
        for (int flips = 0; round > 0 && flips < round; flips++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = CTR_FILE_HEADER_LEN + (size_t)(seed >> 33) % (T.len - CTR_FILE_HEADER_LEN);
            copy[at] ^= (uint8_t)(seed >> 13) | 1;
        }
        char d1[384], dn[384];
        struct digest one = digest_run(copy, T.len, 1, d1, sizeof(d1));
        if (round == 0)
            assert_int_equal(one.events, T.intact.nevents);
        for (int jobs = 2; jobs <= 8; jobs *= 2) {
            struct digest many = digest_run(copy, T.len, jobs, dn, sizeof(dn));
            if (many.h != one.h || many.events != one.events || many.intervals != one.intervals ||
                strcmp(d1, dn) != 0)
                fail_msg("round %d, -j %d: %llu events, %llu intervals, damage '%s'; -j 1: %llu, "
                         "%llu, '%s'",
                         round, jobs, (unsigned long long)many.events,
                         (unsigned long long)many.intervals, dn, (unsigned long long)one.events,
                         (unsigned long long)one.intervals, d1);
        }
    }
    free(copy);
}

/* The settled time (engine.h, state.h): what a consumer is told is settled
 * stays so. After settle(W), no interval ends before W, no part of a wait
 * decided as it ends (its runnable or running part) starts before W, and no
 * state begins before W but a thread's running from the trace's start. */
struct settled_check {
    const struct ctr_trace *t;
    uint64_t w, settles, checked;
    uint64_t *begun; /* per thread index: its last begin's start */
    size_t nbegun;
    const char *path;
};

static void settled_begin(void *ctx, const struct ctr_interval *iv)
{
    struct settled_check *c = ctx;
    size_t i = (size_t)(iv->thread - c->t->threads);
    assert_true(i < c->nbegun);
    c->begun[i] = iv->start_ns;
    if (iv->start_ns < c->w && iv->state != CTR_STATE_RUNNING)
        fail_msg("%s: a state begins at %llu, before the settled %llu", c->path,
                 (unsigned long long)iv->start_ns, (unsigned long long)c->w);
}

static void settled_interval(void *ctx, const struct ctr_interval *iv)
{
    struct settled_check *c = ctx;
    size_t i = (size_t)(iv->thread - c->t->threads);
    assert_true(i < c->nbegun);
    c->checked++;
    if (iv->end_ns < c->w)
        fail_msg("%s: an interval (state %d) ends at %llu, before the settled %llu", c->path,
                 iv->state, (unsigned long long)iv->end_ns, (unsigned long long)c->w);
    if (iv->start_ns != c->begun[i] && iv->start_ns < c->w)
        fail_msg("%s: a wait's part (state %d) starts at %llu, before the settled %llu", c->path,
                 iv->state, (unsigned long long)iv->start_ns, (unsigned long long)c->w);
}

static void settled_settle(void *ctx, uint64_t ns)
{
    struct settled_check *c = ctx;
    c->settles++;
    if (ns != UINT64_MAX && ns > c->w)
        c->w = ns;
}

static void test_settled(void **state)
{
    (void)state;
    const char *dir = getenv("CTR_GOLDEN");
    if (!dir)
        fail_msg("CTR_GOLDEN is not set (the golden traces' folder)");
    const char *names[] = {"epoll.bin",  "gateway.bin", "gateway-cut.bin", "waits-sched.bin",
                           "flight.bin", "gens.bin",    "killed.bin",      "flight-example.bin"};
    for (size_t k = 0; k < sizeof(names) / sizeof(*names); k++) {
        char path[4096], err[512];
        snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
        for (int jobs = 1; jobs <= 2; jobs++) {
            struct ctr_trace t = {0};
            struct settled_check c = {.t = &t, .path = path};
            c.nbegun = 1 << 16;
            c.begun = calloc(c.nbegun, sizeof(*c.begun));
            assert_non_null(c.begun);
            struct ctr_consumer cons = {.ctx = &c,
                                        .begin = settled_begin,
                                        .interval = settled_interval,
                                        .settle = settled_settle};
            struct ctr_source *src;
            struct ctr_pipeline_opts o = {.jobs = jobs};
            if (ctr_source_open(path, 0, &src, err, sizeof(err)) != 0)
                fail_msg("%s", err);
            assert_int_equal(ctr_analyze(src, &t, &cons, 1, &o, err, sizeof(err)), 0);
            assert_true(t.nthreads < c.nbegun);
            assert_true(c.settles > 0 && c.checked > 0);
            ctr_trace_free(&t);
            ctr_source_close(src);
            free(c.begun);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intact),
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_corruption),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_damage_names_offset),
        cmocka_unit_test(test_hostile_streams),
        cmocka_unit_test(test_stream_fills_buffer),
        cmocka_unit_test(test_jobs),
        cmocka_unit_test(test_settled),
        cmocka_unit_test(test_regressions),
    };
    return cmocka_run_group_tests(tests, setup_trace, teardown_trace);
}
