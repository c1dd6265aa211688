/* test-format.c - the wire-format table's invariants, varints, and a round
 * trip of every event type through the real writer and the real reader.
 *
 * The round trip is driven by ctr_event_specs itself, so an event added to
 * the table is covered without touching this file. */
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

#include "ctrace/trace.h"
#include "internal.h"
#include "reader.h"

/* Go's TestSpecs, for our table: every event is timed first, names exist,
 * argument kinds are known, an event has one stack at most, and the worst
 * case fits CTR_MAX_EVENT_BYTES. */
static void test_event_specs(void **state)
{
    (void)state;
    int defined = 0;
    for (int ty = 0; ty < CTR_EV_LIMIT; ty++) {
        const struct ctr_event_spec *s = &ctr_event_specs[ty];
        if (!s->name)
            continue;
        defined++;
        assert_true(ty > 0);
        assert_true(s->nargs >= 1 && s->nargs <= CTR_MAX_ARGS);
        assert_int_equal(s->args[0], CTR_ARG_TIME);
        int stacks = 0;
        for (int i = 1; i < s->nargs; i++) {
            assert_true(s->args[i] > CTR_ARG_TIME && s->args[i] <= CTR_ARG_LENGTH);
            /* Raw bytes follow the last argument only. */
            assert_true(s->args[i] != CTR_ARG_LENGTH || i == s->nargs - 1);
            stacks += s->args[i] == CTR_ARG_STACK;
        }
        /* One stack an event at most: the analyzer's decoder looks at one
         * (analyze/gen.c, stack_arg). */
        assert_true(stacks <= 1);
        assert_true(1 + s->nargs * CTR_VARINT_MAX <= CTR_MAX_EVENT_BYTES);
    }
    assert_int_equal(defined, CTR_EV_LIMIT - 1); /* ids are dense: no holes yet */
    for (int r = 1; r < CTR_REASON_LIMIT; r++) {
        assert_non_null(ctr_reason_specs[r].call);
        assert_true(ctr_reason_specs[r].wait_class >= CTR_CLASS_SYNC &&
                    ctr_reason_specs[r].wait_class <= CTR_CLASS_SLEEP);
    }
}

static void test_varints(void **state)
{
    (void)state;
    const uint64_t vals[] = {0, 1, 127, 128, 255, 16383, 16384, (1ull << 32) - 1, 1ull << 32,
                             (1ull << 63) - 1, 1ull << 63, UINT64_MAX};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        uint8_t buf[CTR_VARINT_MAX];
        uint8_t *end = ctr_put_uvarint(buf, vals[i]);
        uint64_t got = 0;
        size_t n = ctr_get_uvarint(buf, end, &got);
        assert_int_equal(n, (size_t)(end - buf));
        assert_true(got == vals[i]);
        /* Cut anywhere: the decoder must say so rather than read on. */
        for (uint8_t *cut = buf; cut < end; cut++)
            assert_int_equal(ctr_get_uvarint(buf, cut, &got), 0);
    }
    /* Eleven bytes, and a tenth byte with bits past 64: both rejected. */
    uint8_t too_long[11];
    memset(too_long, 0x80, sizeof(too_long));
    uint64_t v;
    assert_int_equal(ctr_get_uvarint(too_long, too_long + 11, &v), 0);
    uint8_t overflow[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    assert_int_equal(ctr_get_uvarint(overflow, overflow + 10, &v), 0);
    /* Non-minimal encodings are valid (records use them for lengths). */
    uint8_t padded[3] = {0x85, 0x80, 0x00};
    assert_int_equal(ctr_get_uvarint(padded, padded + 3, &v), 3);
    assert_true(v == 5);
    /* Against the format's rule byte by byte, on random bytes (every
     * length, continuation bits in every place, the word-at-a-time path
     * and the bytewise one): the same length and value, or the same 0. */
    uint64_t seed = 42;
    for (int round = 0; round < 200000; round++) {
        uint8_t bytes[12];
        for (size_t k = 0; k < sizeof(bytes); k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            bytes[k] = (uint8_t)(seed >> 56);
            if ((seed >> 20) % 4 == 0) /* more continuation bytes than chance gives */
                bytes[k] |= 0x80;
        }
        size_t len = (size_t)(seed >> 8) % (sizeof(bytes) + 1);
        uint64_t want = 0, got = 0;
        size_t want_n = 0;
        for (size_t k = 0; k < len && k < CTR_VARINT_MAX; k++) {
            want |= (uint64_t)(bytes[k] & 0x7f) << (7 * k);
            if (!(bytes[k] & 0x80)) {
                want_n = k == CTR_VARINT_MAX - 1 && bytes[k] > 1 ? 0 : k + 1;
                break;
            }
        }
        size_t n = ctr_get_uvarint(bytes, bytes + len, &got);
        assert_int_equal(n, want_n);
        if (n)
            assert_true(got == want);
    }
}

/* A value of the given kind that the reader will accept, and that takes
 * several varint bytes where the kind allows it. */
static uint64_t sample_arg(uint8_t kind, int i, uint64_t stack, uint64_t str, uint64_t thread)
{
    switch (kind) {
    case CTR_ARG_THREAD: return thread;
    case CTR_ARG_STACK: return stack;
    case CTR_ARG_STRING: return str;
    case CTR_ARG_REASON: return CTR_REASON_MUTEX_LOCK;
    case CTR_ARG_OBJECT: return 0x7ffd12345678ull + (uint64_t)i;
    case CTR_ARG_PC: return 0x555555554000ull + (uint64_t)i;
    case CTR_ARG_TASK: return 1000 + (uint64_t)i;
    case CTR_ARG_LENGTH: return 5; /* the round trip appends "hello" */
    default: return (1ull << 40) + (uint64_t)i;
    }
}

static void test_round_trip_every_event(void **state)
{
    (void)state;
    char path[64];
    ctr_test_temp(path, sizeof(path), "format");
    assert_int_equal(trace_start(path), 0);

    struct ctr_thread *t = ctr__self_traced();
    assert_non_null(t);
    uint64_t stack = ctr__stack_here(t);
    uint64_t str = ctr__intern(&ctr__strings, "round-trip", 10);
    assert_true(stack != 0 && str != 0);
    const int reps = 3; /* more than once, so deltas between events are used */
    for (int r = 0; r < reps; r++)
        for (int ty = 1; ty < CTR_EV_LIMIT; ty++) {
            uint64_t args[CTR_MAX_ARGS] = {0};
            for (int i = 1; i < ctr_event_specs[ty].nargs; i++)
                args[i - 1] = sample_arg(ctr_event_specs[ty].args[i], i, stack, str, t->id);
            const struct ctr_event_spec *sp = &ctr_event_specs[ty];
            int with_bytes = sp->args[sp->nargs - 1] == CTR_ARG_LENGTH;
            assert_true(ctr__write_begin(t));
            ctr__emit_payload(t, (uint8_t)ty, ctr__ticks(), args, "hello", with_bytes ? 5 : 0);
            ctr__write_end(t);
        }
    uint64_t my_id = t->id;
    assert_int_equal(trace_stop(), 0);

    struct ctr_trace tr;
    ctr_test_read(path, &tr);
    assert_true(tr.complete);
    struct ctr_thread_info *th = ctr_trace_thread(&tr, my_id);
    assert_non_null(th);
    assert_int_equal(th->nevents, (size_t)reps * (CTR_EV_LIMIT - 1));
    size_t k = 0;
    for (int r = 0; r < reps; r++)
        for (int ty = 1; ty < CTR_EV_LIMIT; ty++, k++) {
            const struct ctr_trace_event *e = &th->events[k];
            assert_int_equal(e->type, ty);
            for (int i = 1; i < ctr_event_specs[ty].nargs; i++)
                assert_true(e->args[i - 1] ==
                            sample_arg(ctr_event_specs[ty].args[i], i, stack, str, my_id));
            if (k > 0)
                assert_true(e->ns >= th->events[k - 1].ns);
            size_t len;
            const char *bytes = ctr_event_payload(&tr, e, &len);
            if (bytes) {
                assert_int_equal(len, 5);
                assert_memory_equal(bytes, "hello", 5);
            }
        }
    const struct ctr_stack_info *s = ctr_trace_stack(&tr, stack);
    assert_non_null(s);
    assert_true(s->n >= 1);
    assert_string_equal(ctr_trace_string(&tr, str), "round-trip");
    ctr_trace_free(&tr);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_specs),
        cmocka_unit_test(test_varints),
        cmocka_unit_test(test_round_trip_every_event),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
