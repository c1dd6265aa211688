/* SPDX-License-Identifier: MIT */
/* test-bt2read.c - the reading behind the babeltrace2 plugin (tp/bt2read.c)
 * on trace files made by hand, record by record: the order and the times it
 * hands tracepoints out in (records at the CLOCK before them, events at
 * their ticks interpolated between the CLOCK records, or their ticks when
 * those are nanoseconds, never earlier than the one before across frames),
 * what the first frame fixes (the clock offset, the pid), and damage: a
 * record that does not decode, a file cut inside a frame, bytes that are no
 * frame, a file that is no trace; and the fuzz harness (fuzz_bt2read.c)
 * over the fuzz seeds and regressions. babeltrace.sh runs the plugin
 * itself. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include <cmocka.h>

#include "bt2read.h"
#include "ctrace_format.h"
#include "ctrace_lttng.h"

/* ---- Making files ---- */

struct bytes {
    uint8_t p[4096];
    size_t n;
};

static void put(struct bytes *b, const void *d, size_t n)
{
    assert_true(b->n + n <= sizeof(b->p));
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put_uv(struct bytes *b, uint64_t v)
{
    uint8_t tmp[CTR_VARINT_MAX];
    put(b, tmp, (size_t)(ctr_put_uvarint(tmp, v) - tmp));
}

/* Record `kind` with fields v[0..n-1] and then `tail` (its bytes as they
 * are: a BATCH's events, a STACK's count and addresses). */
static void rec(struct bytes *b, uint8_t kind, const uint64_t *v, int n, const struct bytes *tail)
{
    struct bytes body = {.n = 0};
    for (int i = 0; i < n; i++)
        put_uv(&body, v[i]);
    if (tail)
        put(&body, tail->p, tail->n);
    put(b, &kind, 1);
    put_uv(b, body.n);
    put(b, body.p, body.n);
}

#define REC(b, kind, ...)                             \
    rec(b, CTR_REC_##kind, (uint64_t[]){__VA_ARGS__}, \
        (int)(sizeof((uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t)), NULL)

/* A BATCH (or SWITCHES) of thread th from `base`: events {type, delta,
 * the arguments after it}. */
static void batch(struct bytes *b, uint8_t kind, uint64_t th, uint64_t base, int nev,
                  const uint64_t (*ev)[2 + CTR_MAX_ARGS])
{
    struct bytes evs = {.n = 0};
    for (int i = 0; i < nev; i++) {
        uint8_t tmp[CTR_MAX_EVENT_BYTES];
        put(&evs, tmp,
            (size_t)(ctr_encode_event(tmp, (uint8_t)ev[i][0], ev[i][1], &ev[i][2]) - tmp));
    }
    rec(b, kind, (uint64_t[]){th, base}, 2, &evs);
}

/* A file: the header, then each frame compressed. Returns its path. */
static char *write_file(const struct bytes *frames, int nframes, size_t cut_at)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/ctrace-bt2read-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    uint8_t out[8192];
    size_t n = 0;
    memcpy(out, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN);
    memcpy(out + 8, (uint8_t[]){CTR_VERSION_MAJOR, 0, CTR_VERSION_MINOR, 0, 0, 0, 0, 0}, 8);
    n = CTR_FILE_HEADER_LEN;
    for (int i = 0; i < nframes; i++) {
        size_t z = ZSTD_compress(out + n, sizeof(out) - n, frames[i].p, frames[i].n, 1);
        assert_false(ZSTD_isError(z));
        n += z;
    }
    if (cut_at && cut_at < n)
        n = cut_at;
    assert_int_equal(write(fd, out, n), (ssize_t)n);
    close(fd);
    return path;
}

/* ---- Reading them: each tracepoint as a line "NAME@NS t=TIME" ---- */

struct seen {
    struct ctrbt_reader *r;
    char text[2048];
};

static void seen_event(void *ctx, uint64_t thread, uint64_t time, uint8_t type, int sched,
                       const uint64_t *args, const void *payload, uint32_t len)
{
    (void)thread, (void)args, (void)payload, (void)len;
    struct seen *s = ctx;
    char buf[32];
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof(s->text) - n, "%s@%llu t=%llu\n",
             ctr_lttng_name(type, sched, 0, buf), (unsigned long long)ctrbt_time(s->r),
             (unsigned long long)time);
}

static void seen_record(void *ctx, uint8_t kind, const uint64_t *fields, const uint64_t *tail_u,
                        const void *tail_b, uint32_t tail_n)
{
    (void)fields, (void)tail_u, (void)tail_b, (void)tail_n;
    struct seen *s = ctx;
    char buf[32];
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof(s->text) - n, "%s@%llu\n", ctr_lttng_name(0, 0, kind, buf),
             (unsigned long long)ctrbt_time(s->r));
}

/* Reads the file at path whole: what each frame gave ("--" after each),
 * and the error that ended it, if any. */
static void read_all(const char *path, struct seen *s, char *err, size_t errlen)
{
    char e[512];
    s->text[0] = 0;
    err[0] = 0;
    assert_int_equal(ctrbt_open(path, &s->r, e, sizeof(e)), 0);
    unlink(path); /* read on through the open descriptor */
    struct ctr_lttng_emitter em = {s, seen_event, seen_record};
    int rc;
    while ((rc = ctrbt_next_frame(s->r, e, sizeof(e))) == 1) {
        while (ctrbt_next(s->r, &em))
            ;
        strcat(s->text, "--\n");
    }
    if (rc < 0)
        snprintf(err, errlen, "%s", e);
    assert_int_equal(ctrbt_next_frame(s->r, e, sizeof(e)), rc < 0 ? -1 : 0); /* it stays so */
}

/* One generation on TSC ticks: CLOCKs (1000 ticks, 5000 ns) and (3000,
 * 6000), so an event's ns is 5000 + (ticks - 1000) / 2. */
static void generation(struct bytes *f)
{
    REC(f, GEN_BEGIN, 0);
    REC(f, TRACE_INFO, 42, CTR_TICKS_TSC, 0, 0, 0);
    REC(f, CLOCK, 1000, 5000, 1000005000);
    batch(f, CTR_REC_BATCH, 1, 1100, 2,
          (const uint64_t[][2 + CTR_MAX_ARGS]){{CTR_EV_BLOCK, 0, CTR_REASON_MUTEX_LOCK, 0x10, 3},
                                               {CTR_EV_UNBLOCK, 400}});
    batch(f, CTR_REC_BATCH, 2, 1200, 1,
          (const uint64_t[][2 + CTR_MAX_ARGS]){{CTR_EV_RELEASE, 0, 0x10, 0}});
    batch(f, CTR_REC_SWITCHES, 2, 5060, 1,
          (const uint64_t[][2 + CTR_MAX_ARGS]){{CTR_EV_SWITCH_OUT, 0, 1}});
    rec(f, CTR_REC_STACK, (uint64_t[]){3}, 1, &(struct bytes){{1, 0x40}, 2});
    REC(f, CLOCK, 3000, 6000, 1000006000);
    REC(f, GEN_END, 0);
    REC(f, PENDING, 1, 2900, CTR_REASON_READ, 3, 3);
}

static void test_order_and_times(void **state)
{
    (void)state;
    struct bytes f = {.n = 0};
    generation(&f);
    struct seen s;
    char err[512];
    read_all(write_file(&f, 1, 0), &s, err, sizeof(err));
    assert_string_equal(err, "");
    /* The stack (after the batches in the file) opens the generation with
     * its tables; the switch at its own ns; PENDING after GEN_END. */
    assert_string_equal(s.text, "gen_begin@5000\n"
                                "trace_info@5000\n"
                                "clock@5000\n"
                                "stack@5000\n"
                                "block@5050 t=1100\n"
                                "switch_out@5060 t=5060\n"
                                "release@5100 t=1200\n"
                                "unblock@5250 t=1500\n"
                                "clock@6000\n"
                                "gen_end@6000\n"
                                "pending@6000\n"
                                "--\n");
    assert_int_equal(ctrbt_clock_offset(s.r), 1000000000);
    assert_int_equal(ctrbt_pid(s.r), 42);
    ctrbt_close(s.r);
}

/* A second frame whose events a thread held back from before the first
 * frame's end: moved up to it, never earlier. Its own CLOCK pair gives the
 * rest (7000 + (ticks - 3000) / 2 for ticks past 3000, by the last frame's
 * CLOCK and its own). */
static void test_never_backwards(void **state)
{
    (void)state;
    struct bytes f[2] = {{.n = 0}, {.n = 0}};
    generation(&f[0]);
    REC(&f[1], GEN_BEGIN, 1);
    REC(&f[1], CLOCK, 3100, 7000, 1000007000);
    batch(&f[1], CTR_REC_BATCH, 1, 2000, 2,
          (const uint64_t[][2 + CTR_MAX_ARGS]){{CTR_EV_BLOCK, 0, CTR_REASON_MUTEX_LOCK, 0x10, 3},
                                               {CTR_EV_UNBLOCK, 1300}});
    REC(&f[1], CLOCK, 3300, 7100, 1000007100);
    REC(&f[1], GEN_END, 1);
    struct seen s;
    char err[512];
    read_all(write_file(f, 2, 0), &s, err, sizeof(err));
    assert_string_equal(err, "");
    const char *second = strstr(s.text, "--\n") + 3;
    /* block at ticks 2000 (5500 ns) held back: at the last time, 6000;
     * unblock at 3300: the closing CLOCK's 7100. */
    assert_string_equal(second, "block@6000 t=2000\n"
                                "gen_begin@7000\n"
                                "clock@7000\n"
                                "unblock@7100 t=3300\n"
                                "clock@7100\n"
                                "gen_end@7100\n"
                                "--\n");
    assert_int_equal(ctrbt_clock_offset(s.r), 1000000000); /* the first frame's */
    ctrbt_close(s.r);
}

/* tick_source 0: ticks are the nanoseconds, whatever CLOCKs say. */
static void test_ticks_are_ns(void **state)
{
    (void)state;
    struct bytes f = {.n = 0};
    REC(&f, TRACE_INFO, 7, CTR_TICKS_MONOTONIC_NS, 0, 0, 0);
    REC(&f, CLOCK, 1000, 1000, 2000);
    batch(&f, CTR_REC_BATCH, 1, 1500, 1, (const uint64_t[][2 + CTR_MAX_ARGS]){{CTR_EV_UNBLOCK, 0}});
    REC(&f, CLOCK, 2000, 3000, 4000);
    struct seen s;
    char err[512];
    read_all(write_file(&f, 1, 0), &s, err, sizeof(err));
    assert_string_equal(s.text,
                        "trace_info@1000\nclock@1000\nunblock@1500 t=1500\nclock@3000\n--\n");
    assert_int_equal(ctrbt_clock_offset(s.r), 1000);
    ctrbt_close(s.r);
}

/* A record that does not decode: what came before it is handed out, then
 * the error names the file, the frame and the byte. */
static void test_damaged_record(void **state)
{
    (void)state;
    struct bytes f = {.n = 0};
    REC(&f, GEN_BEGIN, 0);
    REC(&f, CLOCK, 1000, 5000, 6000);
    put(&f, (uint8_t[]){CTR_REC_GEN_END, 5, 0}, 3); /* a body longer than the frame */
    struct seen s;
    char err[512], want[128];
    const char *path = write_file(&f, 1, 0);
    read_all(path, &s, err, sizeof(err));
    assert_string_equal(s.text, "gen_begin@5000\nclock@5000\n--\n");
    assert_non_null(strstr(err, path));
    snprintf(want, sizeof(want), "the frame at byte 16 is damaged at byte %zu of its %zu", f.n - 3,
             f.n);
    assert_non_null(strstr(err, want));
    ctrbt_close(s.r);
}

/* A file cut inside its second frame, or with bytes that are no frame. */
static void test_cut_and_garbage(void **state)
{
    (void)state;
    struct bytes f[2] = {{.n = 0}, {.n = 0}};
    generation(&f[0]);
    generation(&f[1]);
    uint8_t z[8192];
    size_t first = ZSTD_compress(z, sizeof(z), f[0].p, f[0].n, 1); /* as write_file does */
    struct seen s;
    char err[512], want[128];
    const char *path = write_file(f, 2, CTR_FILE_HEADER_LEN + first + 10);
    read_all(path, &s, err, sizeof(err));
    assert_non_null(strstr(s.text, "gen_end@6000\npending@6000\n--\n")); /* the first frame whole */
    snprintf(want, sizeof(want),
             "the file ends inside the frame at byte %zu (cut short at %zu bytes)",
             CTR_FILE_HEADER_LEN + first, CTR_FILE_HEADER_LEN + first + 10);
    assert_non_null(strstr(err, want));
    ctrbt_close(s.r);

    struct bytes junk = {.n = 0};
    put(&junk, "not a frame at all", 18);
    path = write_file(&junk, 0, 0);
    FILE *fp = fopen(path, "ab");
    assert_non_null(fp);
    fwrite(junk.p, 1, junk.n, fp);
    fclose(fp);
    read_all(path, &s, err, sizeof(err));
    assert_string_equal(s.text, "");
    assert_non_null(strstr(err, "the frame at byte 16 is damaged"));
    ctrbt_close(s.r);
}

/* Files that are not traces: refused at opening, not claimed. */
static void test_not_traces(void **state)
{
    (void)state;
    char err[512];
    struct ctrbt_reader *r;
    assert_int_equal(ctrbt_open("/nonexistent/trace.bin", &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/nonexistent/trace.bin: No such file"));
    assert_false(ctrbt_is_trace("/nonexistent/trace.bin"));
    assert_false(ctrbt_is_trace("/proc/self/exe"));
    assert_int_equal(ctrbt_open("/proc/self/exe", &r, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "not a ctrace trace"));
    assert_false(ctrbt_is_trace("/tmp")); /* a directory */

    const char *path = write_file(NULL, 0, 0);
    assert_true(ctrbt_is_trace(path));
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, 8, SEEK_SET);
    fputc(CTR_VERSION_MAJOR + 1, fp); /* a major version this reader does not know */
    fclose(fp);
    assert_int_equal(ctrbt_open(path, &r, err, sizeof(err)), -1);
    char want[64];
    snprintf(want, sizeof(want), "format version %d.%d, which this reader", CTR_VERSION_MAJOR + 1,
             CTR_VERSION_MINOR);
    assert_non_null(strstr(err, want));
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every file of the directories in $CTR_FUZZ_DIRS (':'-separated: the
 * fuzzers' seeds and the inputs that once crashed a reader) through the
 * harness, which aborts where the reading breaks what babeltrace2 needs. */
static void test_fuzz_inputs(void **state)
{
    (void)state;
    const char *dirs = getenv("CTR_FUZZ_DIRS");
    if (!dirs)
        skip();
    char list[4096];
    snprintf(list, sizeof(list), "%s", dirs);
    int files = 0;
    for (char *save = NULL, *dir = strtok_r(list, ":", &save); dir;
         dir = strtok_r(NULL, ":", &save)) {
        DIR *d = opendir(dir);
        if (!d)
            fail_msg("CTR_FUZZ_DIRS: %s: %s", dir, strerror(errno));
        for (struct dirent *de; (de = readdir(d));) {
            if (de->d_name[0] == '.')
                continue;
            char path[4096 + 256];
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            FILE *fp = fopen(path, "rb");
            assert_non_null(fp);
            static uint8_t buf[1 << 20];
            size_t n = fread(buf, 1, sizeof(buf), fp);
            fclose(fp);
            LLVMFuzzerTestOneInput(buf, n);
            files++;
        }
        closedir(d);
    }
    assert_true(files > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_times), cmocka_unit_test(test_never_backwards),
        cmocka_unit_test(test_ticks_are_ns),    cmocka_unit_test(test_damaged_record),
        cmocka_unit_test(test_cut_and_garbage), cmocka_unit_test(test_not_traces),
        cmocka_unit_test(test_fuzz_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
