/* SPDX-License-Identifier: MIT */
/* test-format.c - the wire-format table's invariants, varints, a round
 * trip of every event type through the real writer and the real reader,
 * and the LTTng tracepoints' table (ctrace_lttng.h) against the format's.
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

#include "core/clock.h"
#include "core/emit.h"
#include "core/intern.h"
#include "core/stack.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "ctrace_lttng.h"
#include "read/trace.h"

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
         * (analyze/read/gen.c, stack_arg). */
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
    const uint64_t vals[] = {0,          1,
                             127,        128,
                             255,        16383,
                             16384,      (1ull << 32) - 1,
                             1ull << 32, (1ull << 63) - 1,
                             1ull << 63, UINT64_MAX};
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
    case CTR_ARG_THREAD:
        return thread;
    case CTR_ARG_STACK:
        return stack;
    case CTR_ARG_STRING:
        return str;
    case CTR_ARG_REASON:
        return CTR_REASON_MUTEX_LOCK;
    case CTR_ARG_OBJECT:
        return 0x7ffd12345678ull + (uint64_t)i;
    case CTR_ARG_PC:
        return 0x555555554000ull + (uint64_t)i;
    case CTR_ARG_TASK:
        return 1000 + (uint64_t)i;
    case CTR_ARG_LENGTH:
        return 5; /* the round trip appends "hello" */
    default:
        return (1ull << 40) + (uint64_t)i;
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

/* The shape an ARG of kind `kind` must have: the wait reason an
 * enumeration, addresses and flags in hexadecimal, the rest decimal. */
static uint8_t lttng_shape_of(uint8_t kind)
{
    switch (kind) {
    case CTR_ARG_REASON:
        return CTR_LTTNG_REASON;
    case CTR_ARG_OBJECT:
    case CTR_ARG_PC:
    case CTR_ARG_FLAGS:
    case CTR_ARG_ADDR:
    case CTR_ARG_OFFSET:
        return CTR_LTTNG_X;
    default:
        return CTR_LTTNG_U;
    }
}

/* The row of tracepoint `name`, or NULL. */
static const struct ctr_lttng_tracepoint *lttng_row(const char *name)
{
    const struct ctr_lttng_tracepoint *found = NULL;
    for (size_t i = 0; i < CTR_LTTNG_NTRACEPOINTS; i++)
        if (strcmp(ctr_lttng_tracepoints[i].name, name) == 0) {
            assert_null(found); /* names are unique */
            found = &ctr_lttng_tracepoints[i];
        }
    return found;
}

/* CTR_LTTNG_TRACEPOINTS against the format: a row for every tracepoint
 * that ctr_lttng_name() names (every event type, both ways for a LOST;
 * every record kind but BATCH and SWITCHES), named as it says, its ARGs
 * the spec's arguments or fields in order with the shapes their kinds
 * call for, and a tail exactly where the spec has one. */
static void test_lttng_table(void **state)
{
    (void)state;
    char buf[32];
    int seen[CTR_LTTNG_NTRACEPOINTS] = {0};
    for (uint8_t ty = 1; ty < CTR_EV_LIMIT; ty++)
        for (int sched = 0; sched < 2; sched++) {
            const struct ctr_lttng_tracepoint *tp = lttng_row(ctr_lttng_name(ty, sched, 0, buf));
            assert_non_null(tp);
            assert_int_equal(tp->type, ty);
            assert_int_equal(tp->kind, 0);
            seen[tp - ctr_lttng_tracepoints] = 1;
            const struct ctr_event_spec *s = &ctr_event_specs[ty];
            int has_len = s->args[s->nargs - 1] == CTR_ARG_LENGTH;
            const struct ctr_lttng_member *m = tp->members;
            assert_string_equal(m[0].name, "thread");
            assert_int_equal(m[0].src, CTR_LTTNG_SRC_THREAD);
            assert_string_equal(m[1].name, tp->sched ? "ns" : "ticks");
            assert_int_equal(m[1].src, CTR_LTTNG_SRC_TIME);
            int i = 0;
            for (; i < s->nargs - 1 - has_len; i++) {
                assert_non_null(m[2 + i].name);
                assert_int_equal(m[2 + i].src, i);
                assert_int_equal(m[2 + i].shape, lttng_shape_of(s->args[i + 1]));
            }
            if (has_len) {
                assert_int_equal(m[2 + i].src, CTR_LTTNG_SRC_TAIL);
                assert_int_equal(m[2 + i].shape, CTR_LTTNG_TEXT);
                i++;
            }
            assert_null(m[2 + i].name);
        }
    for (uint8_t k = 1; k < CTR_REC_LIMIT; k++) {
        const struct ctr_record_spec *s = &ctr_record_specs[k];
        if (!s->name || s->tail == CTR_ARG_EVENTS)
            continue;
        const struct ctr_lttng_tracepoint *tp = lttng_row(ctr_lttng_name(0, 0, k, buf));
        assert_non_null(tp);
        assert_int_equal(tp->kind, k);
        assert_int_equal(tp->type, 0);
        seen[tp - ctr_lttng_tracepoints] = 1;
        const struct ctr_lttng_member *m = tp->members;
        int i = 0;
        for (; i < s->nfields; i++) {
            assert_non_null(m[i].name);
            assert_int_equal(m[i].src, i);
            assert_int_equal(m[i].shape, lttng_shape_of(s->fields[i]));
        }
        if (s->tail != CTR_ARG_NONE) {
            assert_int_equal(m[i].src, CTR_LTTNG_SRC_TAIL);
            assert_int_equal(m[i].shape, s->tail == CTR_ARG_UVARINTS ? CTR_LTTNG_HEX64
                                         : s->tail == CTR_ARG_LENGTH ? CTR_LTTNG_HEX8
                                                                     : CTR_LTTNG_TEXT);
            i++;
        }
        assert_null(m[i].name);
    }
    for (size_t i = 0; i < CTR_LTTNG_NTRACEPOINTS; i++)
        assert_true(seen[i]); /* no row that ctr_lttng_name never names */
}

/* What ctr_lttng_transcribe() sends, as text, one line per call. */
static void tx_event(void *ctx, uint64_t thread, uint64_t time, uint8_t type, int sched,
                     const uint64_t *args, const void *payload, uint32_t len)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 1024 - n, "ev %d/%d t%llu @%llu a%llu,%llu '%.*s'\n", type, sched,
             (unsigned long long)thread, (unsigned long long)time, (unsigned long long)args[0],
             (unsigned long long)args[1], (int)len, payload ? (const char *)payload : "");
}

static void tx_record(void *ctx, uint8_t kind, const uint64_t *fields, const uint64_t *tail_u,
                      const void *tail_b, uint32_t tail_n)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 1024 - n, "rec %d f%llu n%u u%llu b'%.*s'\n", kind,
             (unsigned long long)fields[0], tail_n,
             tail_n && tail_u && kind == CTR_REC_STACK ? (unsigned long long)tail_u[tail_n - 1]
                                                       : 0ull,
             kind == CTR_REC_STRING ? (int)tail_n : 0,
             kind == CTR_REC_STRING ? (const char *)tail_b : "");
}

/* Appends record `kind` with `body` (n bytes) at p; returns the end. */
static uint8_t *put_rec(uint8_t *p, uint8_t kind, const uint8_t *body, size_t n)
{
    *p++ = kind;
    p = ctr_put_uvarint(p, n);
    memcpy(p, body, n);
    return p + n;
}

/* ctr_lttng_transcribe over records made by hand: a BATCH's events at
 * their summed times (only with batches), a SWITCHES record's as sched, a
 * STACK's and a STRING's tails, an unknown kind skipped; damage after
 * what came before was sent. */
static void test_lttng_transcribe(void **state)
{
    (void)state;
    uint8_t buf[256], body[64], *p = buf, *q;
    /* BATCH: thread 7, base 100; BLOCK +5 (MUTEX_LOCK, 0x10, stack 3); LOG +2 "hi" */
    q = body;
    q = ctr_put_uvarint(q, 7);
    q = ctr_put_uvarint(q, 100);
    q = ctr_encode_event(q, CTR_EV_BLOCK, 5, (uint64_t[]){CTR_REASON_MUTEX_LOCK, 0x10, 3});
    q = ctr_encode_event(q, CTR_EV_LOG, 2, (uint64_t[]){1, 2, 2});
    memcpy(q, "hi", 2);
    q += 2;
    p = put_rec(p, CTR_REC_BATCH, body, (size_t)(q - body));
    /* SWITCHES: thread 7, base 1000; LOST +1 count 4 */
    q = body;
    q = ctr_put_uvarint(q, 7);
    q = ctr_put_uvarint(q, 1000);
    q = ctr_encode_event(q, CTR_EV_LOST, 1, (uint64_t[]){4});
    p = put_rec(p, CTR_REC_SWITCHES, body, (size_t)(q - body));
    /* STACK 9: two addresses; a kind from a later version; STRING 5 "ab" */
    p = put_rec(p, CTR_REC_STACK, (const uint8_t[]){9, 2, 0x11, 0x22}, 4);
    p = put_rec(p, 200, (const uint8_t[]){1, 2, 3}, 3);
    p = put_rec(p, CTR_REC_STRING, (const uint8_t[]){5, 'a', 'b'}, 3);
    char out[1024] = "";
    struct ctr_lttng_emitter e = {out, tx_event, tx_record};
    assert_int_equal(ctr_lttng_transcribe(buf, p, 1, &e), 0);
    assert_string_equal(out, "ev 5/0 t7 @105 a1,16 ''\n"
                             "ev 15/0 t7 @107 a1,2 'hi'\n"
                             "ev 7/1 t7 @1001 a4,0 ''\n"
                             "rec 6 f9 n2 u34 b''\n"
                             "rec 5 f5 n2 u0 b'ab'\n");
    out[0] = 0;
    assert_int_equal(ctr_lttng_transcribe(buf, p, 0, &e), 0); /* no batches */
    assert_string_equal(out, "ev 7/1 t7 @1001 a4,0 ''\n"
                             "rec 6 f9 n2 u34 b''\n"
                             "rec 5 f5 n2 u0 b'ab'\n");
    /* A STACK whose count claims more addresses than its body holds. */
    p = put_rec(p, CTR_REC_STACK, (const uint8_t[]){9, 5, 0x11}, 3);
    out[0] = 0;
    assert_int_equal(ctr_lttng_transcribe(buf, p, 0, &e), -1);
    assert_string_equal(out, "ev 7/1 t7 @1001 a4,0 ''\n"
                             "rec 6 f9 n2 u34 b''\n"
                             "rec 5 f5 n2 u0 b'ab'\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_specs),
        cmocka_unit_test(test_varints),
        cmocka_unit_test(test_round_trip_every_event),
        cmocka_unit_test(test_lttng_table),
        cmocka_unit_test(test_lttng_transcribe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
