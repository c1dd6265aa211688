/* SPDX-License-Identifier: MIT */
/* fuzz_bt2read.c - libFuzzer harness for the babeltrace2 plugin's reading
 * (tp/bt2read.c: ctrbt_open, ctrbt_next_frame, ctrbt_next).
 *
 * Each input is read twice, as fuzz_reader.c reads its: as a whole trace
 * file, and as a decompressed record stream that the harness puts in a
 * header and one zstd frame (mutated compressed bytes rarely get past
 * zstd's checksum). The reader takes a path, so the file is a memfd. What
 * babeltrace2 relies on is checked, and a violation aborts: every
 * tracepoint has a name (ctr_lttng_name), times never go back and stay
 * within what babeltrace2 counts from the epoch (an int64 of ns with the
 * clock's offset), an error has a message and stays.
 *
 * test-bt2read also runs every file of tests/fuzz/regressions and
 * tests/fuzz/corpus through LLVMFuzzerTestOneInput.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "bt2read.h"

#define CHECK(cond) ((cond) ? (void)0 : abort())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct state {
    struct ctrbt_reader *r;
    uint64_t last;
    size_t sent;
};

static void check_time(struct state *s)
{
    uint64_t t = ctrbt_time(s->r);
    int64_t off = ctrbt_clock_offset(s->r);
    CHECK(t >= s->last);
    CHECK(t <= (uint64_t)INT64_MAX - (off > 0 ? (uint64_t)off : 0));
    s->last = t;
    s->sent++;
}

static void on_event(void *ctx, uint64_t thread, uint64_t time, uint8_t type, int sched,
                     const uint64_t *args, const void *payload, uint32_t len)
{
    (void)thread, (void)time, (void)args;
    char buf[32];
    CHECK(ctr_lttng_name(type, sched, 0, buf) != NULL);
    CHECK(len <= CTR_MAX_EVENT_PAYLOAD && (len == 0 || payload != NULL));
    check_time(ctx);
}

static void on_record(void *ctx, uint8_t kind, const uint64_t *fields, const uint64_t *tail_u,
                      const void *tail_b, uint32_t tail_n)
{
    (void)fields, (void)tail_u, (void)tail_b, (void)tail_n;
    char buf[32];
    CHECK(ctr_lttng_name(0, 0, kind, buf) != NULL);
    CHECK(kind != CTR_REC_BATCH && kind != CTR_REC_SWITCHES);
    check_time(ctx);
}

/* Reads the file behind fd through, checking as it goes. */
static void read_through(int fd)
{
    char path[64], err[512];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    struct state s = {0};
    if (ctrbt_open(path, &s.r, err, sizeof(err)) != 0) {
        CHECK(err[0] != 0);
        return;
    }
    struct ctr_lttng_emitter e = {&s, on_event, on_record};
    int rc;
    while ((rc = ctrbt_next_frame(s.r, err, sizeof(err))) == 1)
        while (ctrbt_next(s.r, &e))
            ;
    CHECK(rc == 0 || (rc == -1 && err[0] != 0));
    CHECK(ctrbt_next_frame(s.r, err, sizeof(err)) == rc);
    CHECK(ctrbt_next(s.r, &e) == 0);
    ctrbt_close(s.r);
}

static void read_bytes(const void *a, size_t an, const void *b, size_t bn)
{
    int fd = memfd_create("fuzz_bt2read", MFD_CLOEXEC);
    CHECK(fd >= 0);
    CHECK(write(fd, a, an) == (ssize_t)an);
    CHECK(bn == 0 || write(fd, b, bn) == (ssize_t)bn);
    read_through(fd);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_bytes(data, size, NULL, 0);
    /* The stream in a frame of its own. */
    uint8_t header[CTR_FILE_HEADER_LEN] = {0};
    memcpy(header, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN);
    header[8] = CTR_VERSION_MAJOR;
    header[10] = CTR_VERSION_MINOR;
    size_t cap = ZSTD_compressBound(size);
    void *z = malloc(cap);
    CHECK(z != NULL);
    size_t zn = ZSTD_compress(z, cap, data, size, 1);
    CHECK(!ZSTD_isError(zn));
    read_bytes(header, sizeof(header), z, zn);
    free(z);
    return 0;
}
