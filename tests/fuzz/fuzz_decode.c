/* SPDX-License-Identifier: MIT */
/* fuzz_decode.c - libFuzzer harness for the decoders in ctrace_format.h:
 * ctr_decode_record (+ ctr_decode_record_fields) and ctr_decode_event, the
 * entry points that every reader of the format shares (the analyzer's
 * reader, the flight recorder).
 *
 * The input is read as a record stream and, separately, as a batch's
 * events. Each decoder's contract is checked on what it accepts: nothing it
 * returns points outside the input, counts are bounded by the bytes that
 * hold them, arguments are in range, and an accepted event encodes back
 * (ctr_encode_event) to bytes that decode to the same event. A violation
 * aborts, so the fuzzer reports it like a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_format.h"

#define CHECK(cond) ((cond) ? (void)0 : abort())

static void records(const uint8_t *p, const uint8_t *end)
{
    struct ctr_record rec;
    size_t len;
    while ((len = ctr_decode_record(p, end, &rec)) > 0) {
        CHECK(len <= (size_t)(end - p) && rec.body > p && rec.body <= rec.end &&
              rec.end == p + len);
        struct ctr_record_fields f;
        if (ctr_decode_record_fields(&rec, &f) == 0) {
            const struct ctr_record_spec *s = &ctr_record_specs[rec.kind];
            CHECK(s->name != NULL);
            CHECK(rec.body <= f.tail && f.tail <= f.tail_end && f.tail_end <= rec.end);
            if (s->tail == CTR_ARG_LENGTH)
                CHECK(f.v[s->nfields] == (uint64_t)(f.tail_end - f.tail));
            if (s->tail == CTR_ARG_UVARINTS)
                CHECK(f.v[s->nfields] <= (uint64_t)(f.tail_end - f.tail));
            for (int i = s->nfields + 1; i < CTR_MAX_FIELDS + 1; i++)
                CHECK(f.v[i] == 0);
        }
        p += len;
    }
}

static void events(const uint8_t *p, const uint8_t *end)
{
    struct ctr_event ev;
    size_t used;
    while ((used = ctr_decode_event(p, end, &ev)) > 0) {
        CHECK(used <= (size_t)(end - p));
        CHECK(ev.type > 0 && ev.type < CTR_EV_LIMIT && ctr_event_specs[ev.type].name);
        const struct ctr_event_spec *s = &ctr_event_specs[ev.type];
        CHECK(ev.nargs == s->nargs);
        for (int i = 0; i < CTR_MAX_ARGS; i++)
            CHECK(i < ev.nargs ? ctr_arg_in_range(s->args[i], ev.args[i]) : ev.args[i] == 0);
        if (ev.payload) {
            CHECK(ev.payload > p && ev.payload + ev.payload_len == p + used);
            CHECK(ev.payload_len <= CTR_MAX_EVENT_PAYLOAD);
        } else {
            CHECK(ev.payload_len == 0);
        }
        uint8_t buf[CTR_MAX_EVENT_BYTES + CTR_MAX_EVENT_PAYLOAD];
        uint8_t *e = ctr_encode_event(buf, ev.type, ev.args[0], ev.args + 1);
        memcpy(e, ev.payload ? (const void *)ev.payload : "", ev.payload_len);
        e += ev.payload_len;
        struct ctr_event again;
        CHECK(ctr_decode_event(buf, e, &again) == (size_t)(e - buf));
        CHECK(again.type == ev.type && memcmp(again.args, ev.args, sizeof(ev.args)) == 0 &&
              again.payload_len == ev.payload_len &&
              memcmp(again.payload ? (const void *)again.payload : "",
                     ev.payload ? (const void *)ev.payload : "", ev.payload_len) == 0);
        p += used;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    records(data, data + size);
    events(data, data + size);
    return 0;
}
