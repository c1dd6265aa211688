/* SPDX-License-Identifier: MIT */
/* fuzz_reader.c - libFuzzer harness for ctr_trace_read_mem (analyze/read/load.c).
 *
 * Each input is read twice:
 *   1. as a whole trace file, which exercises the header checks and the zstd
 *      framing (pass 1 of the reader);
 *   2. as the decompressed record stream: the harness puts a valid header and
 *      one zstd frame around it. Mutating compressed, checksummed bytes almost
 *      never gets past zstd, so without this the record and event decoders
 *      (passes 2 and 3) would see only the seeds' own bytes.
 * After each successful read the invariants analyses rely on are checked
 * (sorted tables, known event types in time order, totals that add up); a
 * violation aborts, so the fuzzer reports it like a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "read/load.h"

#define CHECK(cond) ((cond) ? (void)0 : abort())

static void check_model(const struct ctr_trace *t)
{
    uint64_t total = 0;
    CHECK(t->exe != NULL);
    for (size_t i = 0; i < t->nthreads; i++) {
        const struct ctr_thread_info *th = &t->threads[i];
        CHECK(i == 0 || t->threads[i - 1].id < th->id);
        CHECK(th->name != NULL);
        for (size_t j = 0; j < th->nevents; j++) {
            uint8_t type = th->events[j].type;
            CHECK(type > 0 && type < CTR_EV_LIMIT && ctr_event_specs[type].name);
            CHECK(j == 0 || th->events[j - 1].ns <= th->events[j].ns);
        }
        total += th->nevents;
    }
    CHECK(total == t->nevents);
    for (size_t i = 0; i < t->nstrings; i++)
        CHECK(t->strings[i].s != NULL);
    for (size_t i = 0; i < t->nmappings; i++)
        CHECK(t->mappings[i].path != NULL);
    CHECK(memchr(t->damage, 0, sizeof(t->damage)) != NULL);
    CHECK(!t->damage[0] || strstr(t->damage, "file offset") != NULL);
}

static void read_one(const uint8_t *data, size_t size)
{
    struct ctr_trace t;
    char err[256];
    if (ctr_trace_read_mem(data, size, &t, err, sizeof(err)) == 0) {
        check_model(&t);
        ctr_trace_free(&t);
    } else {
        CHECK(err[0] != 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_one(data, size);

    size_t cap = CTR_FILE_HEADER_LEN + ZSTD_compressBound(size);
    uint8_t *file = malloc(cap);
    if (!file)
        return 0;
    memset(file, 0, CTR_FILE_HEADER_LEN);
    memcpy(file, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN);
    file[8] = CTR_VERSION_MAJOR;
    size_t z = ZSTD_compress(file + CTR_FILE_HEADER_LEN, cap - CTR_FILE_HEADER_LEN, data, size, 1);
    if (!ZSTD_isError(z))
        read_one(file, CTR_FILE_HEADER_LEN + z);
    free(file);
    return 0;
}
