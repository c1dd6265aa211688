/* SPDX-License-Identifier: MIT */
/* test-codec.c - the format's writers and decoders against each other and
 * against the bytes the format specifies: the table-driven record writer
 * (format/ctrace_record.h), the event encoder and the record and event decoders
 * (ctrace_format.h), and the reader's loading of every record kind.
 *
 * The tables drive the checks where they can: every record kind and event
 * type in them must be covered here, so one added to the format fails until
 * it is. The wrong-count compile checks are tests/unit/record_count.sh's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "collect/records.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "ctrace_record.h"
#include "read/load.h"

/* ---------------------------------------------------------------------------
 * The tables' own invariants (Go's TestSpecs)
 * ------------------------------------------------------------------------- */

static int is_tail(uint8_t kind)
{
    return kind == CTR_ARG_NONE || kind == CTR_ARG_LENGTH || kind == CTR_ARG_UVARINTS ||
           kind == CTR_ARG_BYTES || kind == CTR_ARG_EVENTS;
}

static void test_record_specs(void **state)
{
    (void)state;
    for (int k = 1; k < CTR_REC_LIMIT; k++) {
        const struct ctr_record_spec *s = &ctr_record_specs[k];
        assert_non_null(s->name); /* ids are dense: no holes yet */
        assert_true(s->nfields >= 1 && s->nfields <= CTR_MAX_FIELDS);
        /* Fields are plain uvarints: no delta (records are not timed
         * relative to each other) and nothing that only a tail can be. */
        for (int i = 0; i < s->nfields; i++)
            assert_true(s->fields[i] > CTR_ARG_TIME && s->fields[i] < CTR_ARG_UVARINTS &&
                        s->fields[i] != CTR_ARG_LENGTH);
        for (int i = s->nfields; i < CTR_MAX_FIELDS; i++)
            assert_int_equal(s->fields[i], CTR_ARG_NONE);
        assert_true(is_tail(s->tail));
    }
    /* Kinds agree with names: a table record's id is of its own kind, and
     * the records of a thread's events say whose. */
    assert_int_equal(ctr_record_specs[CTR_REC_STRING].fields[0], CTR_ARG_STRING);
    assert_int_equal(ctr_record_specs[CTR_REC_STACK].fields[0], CTR_ARG_STACK);
    assert_int_equal(ctr_record_specs[CTR_REC_THREAD].fields[0], CTR_ARG_THREAD);
    assert_int_equal(ctr_record_specs[CTR_REC_MAPPING].fields[0], CTR_ARG_MAPPING);
    const uint8_t with_events[] = {CTR_REC_BATCH, CTR_REC_SWITCHES};
    for (size_t i = 0; i < sizeof(with_events); i++) {
        const struct ctr_record_spec *s = &ctr_record_specs[with_events[i]];
        assert_int_equal(s->tail, CTR_ARG_EVENTS);
        assert_int_equal(s->fields[0], CTR_ARG_THREAD);
    }
    assert_int_equal(ctr_record_specs[CTR_REC_PENDING].fields[2], CTR_ARG_REASON);
    /* The compile-time constants are the table's. */
    assert_int_equal(CTR_REC_MAPPING_NFIELDS, ctr_record_specs[CTR_REC_MAPPING].nfields);
    assert_int_equal(CTR_REC_STACK_TAIL, ctr_record_specs[CTR_REC_STACK].tail);
}

static void test_reason_releases(void **state)
{
    (void)state;
    for (int r = 1; r < CTR_REASON_LIMIT; r++) {
        const struct ctr_reason_spec *s = &ctr_reason_specs[r];
        /* Only sync waits are released by another thread's call; of those,
         * only spin locks record no RELEASE (an unlock cannot see waiters). */
        int released = s->wait_class == CTR_CLASS_SYNC && r != CTR_REASON_SPIN_LOCK;
        if (released != (s->release != NULL))
            fail_msg("reason %d (%s): release %s", r, s->call, s->release ? s->release : "NULL");
    }
    assert_string_equal(ctr_reason_specs[CTR_REASON_MUTEX_TIMEDLOCK].release,
                        "pthread_mutex_unlock");
    assert_string_equal(ctr_reason_specs[CTR_REASON_SEM_WAIT].release, "sem_post");
}

/* ---------------------------------------------------------------------------
 * Exact bytes: what the writers put on the wire (FORMAT.md §3, §4). A
 * record's length is the writer's 3-byte non-minimal varint. Values below
 * 128 are one byte each, so the bytes read as the fields.
 * ------------------------------------------------------------------------- */

#define S(lit) lit, sizeof(lit) - 1

static void expect_bytes(struct ctr_outbuf *o, const char *what, const char *want, size_t n)
{
    assert_false(o->oom);
    if (o->len != n || memcmp(o->p, want, n) != 0) {
        char got[256] = "";
        for (size_t i = 0; i < o->len && i < 64; i++)
            snprintf(got + strlen(got), sizeof(got) - strlen(got), "%02x ", o->p[i]);
        fail_msg("%s: %zu bytes: %s", what, o->len, got);
    }
    o->len = 0;
}

static void test_wire_bytes(void **state)
{
    (void)state;
    struct ctr_outbuf o = {0};
    const uintptr_t pcs[] = {7, 8};
    uint8_t sw[] = {CTR_EV_SWITCH_IN, 0};

    CTR_REC_PUT(&o, TRACE_INFO, 1, 0, 1, 2, 3);
    expect_bytes(&o, "TRACE_INFO", S("\x01\x85\x80\x00\x01\x00\x01\x02\x03"));
    CTR_REC_PUT(&o, GEN_BEGIN, 4);
    expect_bytes(&o, "GEN_BEGIN", S("\x02\x81\x80\x00\x04"));
    CTR_REC_PUT(&o, GEN_END, 4);
    expect_bytes(&o, "GEN_END", S("\x03\x81\x80\x00\x04"));
    CTR_REC_PUT(&o, CLOCK, 1, 2, 3);
    expect_bytes(&o, "CLOCK", S("\x04\x83\x80\x00\x01\x02\x03"));
    CTR_REC_PUT_BYTES(&o, STRING, "ab", 2, 5);
    expect_bytes(&o, "STRING",
                 S("\x05\x83\x80\x00\x05"
                   "ab"));
    CTR_REC_PUT_UVARINTS(&o, STACK, pcs, 2, 6);
    expect_bytes(&o, "STACK", S("\x06\x84\x80\x00\x06\x02\x07\x08"));
    CTR_REC_PUT(&o, THREAD, 1, 2, 3, 4, 5);
    expect_bytes(&o, "THREAD", S("\x07\x85\x80\x00\x01\x02\x03\x04\x05"));
    CTR_REC_PUT_BYTES(&o, MAPPING, "\xaa\xbb", 2, 1, 2, 3, 4, 5, 6);
    expect_bytes(&o, "MAPPING", S("\x08\x89\x80\x00\x01\x02\x03\x04\x05\x06\x02\xaa\xbb"));
    CTR_REC_PUT_BYTES(&o, BATCH, "\x06\x00", 2, 1, 2);
    expect_bytes(&o, "BATCH", S("\x09\x84\x80\x00\x01\x02\x06\x00"));
    CTR_REC_PUT(&o, DROPS, 1, 9);
    expect_bytes(&o, "DROPS", S("\x0a\x82\x80\x00\x01\x09"));
    CTR_REC_PUT(&o, END, 1, 2, 3, 4);
    expect_bytes(&o, "END", S("\x0b\x84\x80\x00\x01\x02\x03\x04"));
    size_t body = CTR_REC_OPEN(&o, SWITCHES, 1, 2);
    ctr_out_bytes(&o, sw, sizeof(sw));
    ctr_rec_end(&o, body);
    expect_bytes(&o, "SWITCHES", S("\x0c\x84\x80\x00\x01\x02\x0a\x00"));
    CTR_REC_PUT(&o, PENDING, 1, 2, CTR_REASON_READ, 4, 5);
    expect_bytes(&o, "PENDING", S("\x0d\x85\x80\x00\x01\x02\x19\x04\x05"));
    CTR_REC_PUT(&o, WAITING, 1, 2, CTR_REASON_READ, 4, 5);
    expect_bytes(&o, "WAITING", S("\x0e\x85\x80\x00\x01\x02\x19\x04\x05"));
    /* The same through tables.c, the tracer's own writers. */
    ctr__rec_clock(&o, &(struct ctr_clock_sample){1, 2, 3});
    expect_bytes(&o, "ctr__rec_clock", S("\x04\x83\x80\x00\x01\x02\x03"));
    struct ctr_thread t = {.id = 1, .os_tid = 2, .parent_id = 3, .handle = (pthread_t)5};
    ctr__rec_thread(&o, &t, 4);
    expect_bytes(&o, "ctr__rec_thread", S("\x07\x85\x80\x00\x01\x02\x03\x04\x05"));
    /* BLOCK(dt 0, mutex lock, object 0x80, stack 3) in a batch of its own. */
    ctr__rec_block(&o, 1, 2, CTR_REASON_MUTEX_LOCK, 0x80, 3);
    expect_bytes(&o, "ctr__rec_block",
                 S("\x09\x88\x80\x00\x01\x02"
                   "\x05\x00\x01\x80\x01\x03"));
    free(o.p);
}

/* ---------------------------------------------------------------------------
 * Records: written by the table-driven writer, decoded by the shared
 * decoders, and read by the reader, every kind
 * ------------------------------------------------------------------------- */

/* The values of one trace: big enough that most take several varint bytes. */
static const uint64_t info[] = {4242, CTR_TICKS_MONOTONIC_NS,
                                CTR_INFO_STACKS_FRAME_POINTER | CTR_INFO_SCHED_SWITCHES, 7, 20000};
static const uint64_t clock0[] = {1000000, 1000000, 1700000000000000000ull};
static const uint64_t clock1[] = {9000000, 9000000, 1700000000008000000ull};
static const uint64_t gen[] = {0};
static const uint64_t str_exe[] = {7}, str_name[] = {8};
static const char exe[] = "/usr/bin/prog", name[] = "worker";
static const uint64_t stack[] = {3};
static const uintptr_t pcs[] = {0x555555554123, 0x7f0012345678, 0x401000};
static const uint64_t thread1[] = {1, 4243, 0, 8, 0x7f00deadb000};
static const uint64_t thread2[] = {2, 4244, 1, 0, 0x7f00deadc000};
static const uint64_t mapping[] = {1, 0x555555554000, 0x555555560000, 0x1000, 0x555555553000, 7};
static const uint8_t build_id[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
static const uint64_t batch[] = {1, 2000000};
static const uint64_t drops[] = {1, 17};
static const uint64_t switches[] = {1, 2000100};
static const uint64_t pending[] = {2, 3000000, CTR_REASON_READ, 5, 3};
/* Thread 3 waits since before the trace (ticks before clock0). */
static const uint64_t waiting[] = {3, 500000, CTR_REASON_COND_WAIT, 0x7ffd0040, 3};
static const uint64_t end[] = {17, 2, 3, 4};
static const uint64_t sampling[] = {CTR_CPU_PERF, 10000000, 5};
/* thread 1 had run 3 ms and waited 1 ms for a CPU at 5 ms (ticks are ns). */
static const uint64_t cputime[] = {1, 5000000, 3000000, 1000000, CTR_CPUTIME_DELAY_KNOWN};

/* What one record must decode to. */
struct expect {
    uint8_t kind;
    const uint64_t *v; /* its fields */
    const void *tail;  /* LENGTH, BYTES, EVENTS: the bytes; UVARINTS: uintptr_t[] */
    size_t tail_len;   /* bytes, or the UVARINTS' count */
};

struct stream {
    struct ctr_outbuf o;
    struct expect want[32];
    size_t n;
    uint8_t events[256], switches[64]; /* the batch's and the switches' event bytes */
    size_t nevents, nswitches;
};

static void want(struct stream *s, uint8_t kind, const uint64_t *v, const void *tail, size_t len)
{
    assert_true(s->n < sizeof(s->want) / sizeof(s->want[0]));
    s->want[s->n++] = (struct expect){kind, v, tail, len};
}

/* Appends event `type` with time delta dt and args after it (and `payload`
 * for a LENGTH) to buf at *n. */
static void put_event(uint8_t *buf, size_t *n, uint8_t type, uint64_t dt, const uint64_t *args,
                      const char *payload)
{
    uint8_t *p = ctr_encode_event(buf + *n, type, dt, args);
    if (payload) {
        memcpy(p, payload, strlen(payload));
        p += strlen(payload);
    }
    *n = (size_t)(p - buf);
}

/* A trace holding every record kind: a generation with the tables, one
 * batch, one thread's switches and drops, thread 3 waiting as it begins,
 * then a PENDING for thread 2, and END if `complete`. */
static void write_trace(struct stream *s, int complete)
{
    struct ctr_outbuf *o = &s->o;
    put_event(s->events, &s->nevents, CTR_EV_BLOCK, 0,
              (const uint64_t[]){CTR_REASON_MUTEX_LOCK, 0x7ffd0000, 3}, NULL);
    put_event(s->events, &s->nevents, CTR_EV_UNBLOCK, 500, NULL, NULL);
    put_event(s->events, &s->nevents, CTR_EV_LOG, 10, (const uint64_t[]){0, 8, 2}, "hi");
    put_event(s->switches, &s->nswitches, CTR_EV_SWITCH_OUT, 0, (const uint64_t[]){1}, NULL);
    put_event(s->switches, &s->nswitches, CTR_EV_SWITCH_IN, 300, NULL, NULL);

    CTR_REC_PUT(o, TRACE_INFO, info[0], info[1], info[2], info[3], info[4]);
    want(s, CTR_REC_TRACE_INFO, info, NULL, 0);
    CTR_REC_PUT(o, CLOCK, clock0[0], clock0[1], clock0[2]);
    want(s, CTR_REC_CLOCK, clock0, NULL, 0);
    CTR_REC_PUT(o, GEN_BEGIN, gen[0]);
    want(s, CTR_REC_GEN_BEGIN, gen, NULL, 0);
    CTR_REC_PUT_BYTES(o, BATCH, s->events, s->nevents, batch[0], batch[1]);
    want(s, CTR_REC_BATCH, batch, s->events, s->nevents);
    size_t body = CTR_REC_OPEN(o, SWITCHES, switches[0], switches[1]);
    ctr_out_bytes(o, s->switches, s->nswitches);
    ctr_rec_end(o, body);
    want(s, CTR_REC_SWITCHES, switches, s->switches, s->nswitches);
    CTR_REC_PUT(o, THREAD, thread1[0], thread1[1], thread1[2], thread1[3], thread1[4]);
    want(s, CTR_REC_THREAD, thread1, NULL, 0);
    CTR_REC_PUT(o, THREAD, thread2[0], thread2[1], thread2[2], thread2[3], thread2[4]);
    want(s, CTR_REC_THREAD, thread2, NULL, 0);
    CTR_REC_PUT(o, DROPS, drops[0], drops[1]);
    want(s, CTR_REC_DROPS, drops, NULL, 0);
    CTR_REC_PUT(o, WAITING, waiting[0], waiting[1], waiting[2], waiting[3], waiting[4]);
    want(s, CTR_REC_WAITING, waiting, NULL, 0);
    CTR_REC_PUT_BYTES(o, MAPPING, build_id, sizeof(build_id), mapping[0], mapping[1], mapping[2],
                      mapping[3], mapping[4], mapping[5]);
    want(s, CTR_REC_MAPPING, mapping, build_id, sizeof(build_id));
    CTR_REC_PUT_BYTES(o, STRING, exe, strlen(exe), str_exe[0]);
    want(s, CTR_REC_STRING, str_exe, exe, strlen(exe));
    CTR_REC_PUT_BYTES(o, STRING, name, strlen(name), str_name[0]);
    want(s, CTR_REC_STRING, str_name, name, strlen(name));
    CTR_REC_PUT_UVARINTS(o, STACK, pcs, 3, stack[0]);
    want(s, CTR_REC_STACK, stack, pcs, 3);
    CTR_REC_PUT(o, CLOCK, clock1[0], clock1[1], clock1[2]);
    want(s, CTR_REC_CLOCK, clock1, NULL, 0);
    CTR_REC_PUT(o, GEN_END, gen[0]);
    want(s, CTR_REC_GEN_END, gen, NULL, 0);
    CTR_REC_PUT(o, PENDING, pending[0], pending[1], pending[2], pending[3], pending[4]);
    want(s, CTR_REC_PENDING, pending, NULL, 0);
    CTR_REC_PUT(o, SAMPLING, sampling[0], sampling[1], sampling[2]);
    want(s, CTR_REC_SAMPLING, sampling, NULL, 0);
    CTR_REC_PUT(o, CPU_TIME, cputime[0], cputime[1], cputime[2], cputime[3], cputime[4]);
    want(s, CTR_REC_CPU_TIME, cputime, NULL, 0);
    if (complete) {
        CTR_REC_PUT(o, END, end[0], end[1], end[2], end[3]);
        want(s, CTR_REC_END, end, NULL, 0);
    }
    assert_false(o->oom);
}

/* Every record of the stream decodes to what was written, through the
 * decoders that the reader uses; and every kind in the table was written. */
static void test_record_round_trip(void **state)
{
    (void)state;
    struct stream s = {0};
    write_trace(&s, 1);
    const uint8_t *p = s.o.p, *stop = s.o.p + s.o.len;
    int seen[CTR_REC_LIMIT] = {0};
    for (size_t i = 0; i < s.n; i++) {
        const struct expect *w = &s.want[i];
        const struct ctr_record_spec *spec = &ctr_record_specs[w->kind];
        struct ctr_record rec = {0};
        size_t len = ctr_decode_record(p, stop, &rec);
        assert_true(len > 0);
        assert_int_equal(rec.kind, w->kind);
        assert_ptr_equal(rec.end, p + len);
        struct ctr_record_fields f;
        assert_int_equal(ctr_decode_record_fields(&rec, &f), 0);
        for (int k = 0; k < spec->nfields; k++)
            if (f.v[k] != w->v[k])
                fail_msg("%s field %d: %llu, want %llu", spec->name, k, (unsigned long long)f.v[k],
                         (unsigned long long)w->v[k]);
        switch (spec->tail) {
        case CTR_ARG_NONE:
            assert_ptr_equal(f.tail, f.tail_end); /* nothing left over */
            break;
        case CTR_ARG_UVARINTS: {
            assert_int_equal(f.v[spec->nfields], w->tail_len);
            const uint8_t *q = f.tail;
            for (size_t k = 0; k < w->tail_len; k++) {
                uint64_t pc;
                size_t used = ctr_get_uvarint(q, f.tail_end, &pc);
                assert_true(used > 0);
                assert_true(pc == ((const uintptr_t *)w->tail)[k]);
                q += used;
            }
            assert_ptr_equal(q, f.tail_end);
            break;
        }
        case CTR_ARG_LENGTH:
            assert_int_equal(f.v[spec->nfields], w->tail_len);
            /* the bytes, as for the rest of the body */
            __attribute__((fallthrough));
        default:
            assert_int_equal(f.tail_end - f.tail, w->tail_len);
            assert_memory_equal(f.tail, w->tail, w->tail_len);
            assert_ptr_equal(f.tail_end, rec.end);
        }
        seen[w->kind] = 1;
        p += len;
    }
    assert_ptr_equal(p, stop);
    for (int k = 1; k < CTR_REC_LIMIT; k++)
        if (!seen[k])
            fail_msg("record %s is not in the round trip", ctr_record_specs[k].name);
    free(s.o.p);
}

/* The stream as a trace file: a header and one zstd frame. */
static int read_stream(const struct stream *s, struct ctr_trace *t)
{
    size_t cap = CTR_FILE_HEADER_LEN + ZSTD_compressBound(s->o.len);
    uint8_t *f = calloc(1, cap);
    assert_non_null(f);
    memcpy(f, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN);
    f[8] = CTR_VERSION_MAJOR;
    size_t z =
        ZSTD_compress(f + CTR_FILE_HEADER_LEN, cap - CTR_FILE_HEADER_LEN, s->o.p, s->o.len, 1);
    assert_false(ZSTD_isError(z));
    char err[256];
    int rc = ctr_trace_read_mem(f, CTR_FILE_HEADER_LEN + z, t, err, sizeof(err));
    free(f);
    if (rc != 0)
        fail_msg("%s", err);
    assert_string_equal(t->damage, "");
    return rc;
}

/* What the reader made of every record kind is what was written. */
static void test_reader_loads_every_record(void **state)
{
    (void)state;
    for (int complete = 0; complete < 2; complete++) {
        struct stream s = {0};
        write_trace(&s, complete);
        struct ctr_trace t;
        read_stream(&s, &t);
        /* TRACE_INFO, GEN_BEGIN, CLOCK */
        assert_int_equal(t.pid, info[0]);
        assert_int_equal(t.tick_source, info[1]);
        assert_int_equal(t.flags, info[2]);
        assert_string_equal(t.exe, exe);
        assert_int_equal(t.io_min_ns, info[4]);
        assert_int_equal(t.generations, 1);
        /* SAMPLING */
        assert_true(t.cpu_source == sampling[0] && t.cpu_period_ns == sampling[1] &&
                    t.cpu_lost == sampling[2]);
        assert_int_equal(t.nclocks, 2);
        assert_true(t.clocks[1].ticks == clock1[0] && t.clocks[1].mono_ns == clock1[1] &&
                    t.clocks[1].real_ns == clock1[2]);
        assert_true(t.start_real_ns == clock0[2]);
        /* STRING, STACK, MAPPING */
        assert_string_equal(ctr_trace_string(&t, str_name[0]), name);
        const struct ctr_stack_info *st = ctr_trace_stack(&t, stack[0]);
        assert_non_null(st);
        assert_int_equal(st->n, 3);
        for (int i = 0; i < 3; i++)
            assert_true(st->pcs[i] == pcs[i]);
        assert_int_equal(t.nmappings, 1);
        const struct ctr_mapping_info *m = &t.mappings[0];
        assert_true(m->id == mapping[0] && m->start == mapping[1] && m->limit == mapping[2] &&
                    m->file_offset == mapping[3] && m->bias == mapping[4]);
        assert_string_equal(m->path, exe);
        assert_int_equal(m->build_id_len, sizeof(build_id));
        assert_memory_equal(m->build_id, build_id, sizeof(build_id));
        /* THREAD, DROPS */
        struct ctr_thread_info *th = ctr_trace_thread(&t, thread1[0]);
        assert_non_null(th);
        assert_true(th->os_tid == (int64_t)thread1[1] && th->parent_id == thread1[2] &&
                    th->handle == thread1[4]);
        assert_string_equal(th->name, name);
        assert_int_equal(th->dropped, drops[1]);
        /* CPU_TIME */
        assert_true(t.has_cpu_time);
        assert_int_equal(th->ncpu, 1);
        assert_true(th->cpu[0].ns == cputime[1] && th->cpu[0].cpu_ns == cputime[2] &&
                    th->cpu[0].delay_ns == cputime[3] && th->cpu[0].flags == cputime[4]);
        struct ctr_thread_info *th2 = ctr_trace_thread(&t, thread2[0]);
        assert_non_null(th2);
        assert_true(th2->os_tid == (int64_t)thread2[1] && th2->parent_id == thread2[2] &&
                    th2->handle == thread2[4]);
        assert_string_equal(th2->name, "");
        /* BATCH and SWITCHES: thread 1's events, merged by time (ticks are
         * nanoseconds here). */
        assert_int_equal(th->nevents, 5);
        assert_int_equal(th->nswitches, 2);
        const struct ctr_trace_event *e = th->events;
        assert_int_equal(e[0].type, CTR_EV_BLOCK);
        assert_true(e[0].ns == batch[1] && e[0].args[0] == CTR_REASON_MUTEX_LOCK &&
                    e[0].args[1] == 0x7ffd0000 && e[0].args[2] == 3);
        assert_int_equal(e[1].type, CTR_EV_SWITCH_OUT);
        assert_true(e[1].ns == switches[1] && e[1].args[0] == 1);
        assert_int_equal(e[2].type, CTR_EV_SWITCH_IN);
        assert_true(e[2].ns == switches[1] + 300);
        assert_int_equal(e[3].type, CTR_EV_UNBLOCK);
        assert_true(e[3].ns == batch[1] + 500);
        assert_int_equal(e[4].type, CTR_EV_LOG);
        size_t len;
        const char *msg = ctr_event_payload(&t, &e[4], &len);
        assert_int_equal(len, 2);
        assert_memory_equal(msg, "hi", 2);
        /* WAITING: thread 3 blocked from the trace's start (its wait began
         * before it), before any event of its own. */
        struct ctr_thread_info *th3 = ctr_trace_thread(&t, waiting[0]);
        assert_non_null(th3);
        assert_int_equal(th3->nevents, 1);
        assert_int_equal(th3->events[0].type, CTR_EV_BLOCK);
        assert_true(th3->events[0].ns == clock0[1] && th3->events[0].args[0] == waiting[2] &&
                    th3->events[0].args[1] == waiting[3] && th3->events[0].args[2] == waiting[4]);
        /* PENDING: in a cut trace, thread 2's open wait; in a complete one,
         * ignored (FORMAT.md §3.1). END: its totals. */
        assert_int_equal(t.complete, complete);
        if (complete) {
            assert_int_equal(th2->nevents, 0);
            assert_true(t.end_dropped == end[0] && t.end_stack_overflows == end[1] &&
                        t.end_untraced == end[2] && t.end_sched_failed == end[3]);
        } else {
            assert_int_equal(th2->nevents, 1);
            assert_int_equal(th2->events[0].type, CTR_EV_BLOCK);
            assert_true(th2->events[0].ns == pending[1] && th2->events[0].args[0] == pending[2] &&
                        th2->events[0].args[1] == pending[3] &&
                        th2->events[0].args[2] == pending[4]);
        }
        ctr_trace_free(&t);
        free(s.o.p);
    }
}

/* Damaged records: the header decoder and the field decoder each say so. */
static void test_record_damage(void **state)
{
    (void)state;
    struct ctr_record rec;
    struct ctr_record_fields f;
    const uint8_t thread[] = {CTR_REC_THREAD, 5, 1, 2, 3, 4, 5};
    assert_int_equal(ctr_decode_record(thread, thread, &rec), 0);     /* empty */
    assert_int_equal(ctr_decode_record(thread, thread + 1, &rec), 0); /* no length */
    for (size_t cut = 2; cut < sizeof(thread); cut++)                 /* body cut */
        assert_int_equal(ctr_decode_record(thread, thread + cut, &rec), 0);
    assert_int_equal(ctr_decode_record(thread, thread + sizeof(thread), &rec), sizeof(thread));
    /* An 11-byte length. */
    const uint8_t long_len[] = {2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0};
    assert_int_equal(ctr_decode_record(long_len, long_len + sizeof(long_len), &rec), 0);

    /* A THREAD body that holds fewer fields than the table: field 3 is cut. */
    const uint8_t short_thread[] = {CTR_REC_THREAD, 4, 1, 2, 3, 0x80};
    assert_true(ctr_decode_record(short_thread, short_thread + sizeof(short_thread), &rec) > 0);
    assert_int_equal(ctr_decode_record_fields(&rec, &f), -1 - 3);
    /* A STACK that claims more addresses than its body has bytes. */
    const uint8_t big_stack[] = {CTR_REC_STACK, 3, 1, 100, 0};
    assert_true(ctr_decode_record(big_stack, big_stack + sizeof(big_stack), &rec) > 0);
    assert_int_equal(ctr_decode_record_fields(&rec, &f), -1 - 1);
    /* A MAPPING whose build-id runs past its body. */
    const uint8_t big_map[] = {CTR_REC_MAPPING, 8, 1, 0, 1, 0, 0, 0, 2, 0xaa};
    assert_true(ctr_decode_record(big_map, big_map + sizeof(big_map), &rec) > 0);
    assert_int_equal(ctr_decode_record_fields(&rec, &f), -1 - 6);
    /* A kind without a spec is not decoded (a reader skips it). */
    const uint8_t unknown[] = {99, 1, 0};
    assert_true(ctr_decode_record(unknown, unknown + sizeof(unknown), &rec) > 0);
    assert_int_equal(ctr_decode_record_fields(&rec, &f), -1);
    /* A body longer than its fields: the rest is left for the reader to
     * ignore (FORMAT.md §3). */
    const uint8_t longer[] = {CTR_REC_GEN_END, 3, 1, 7, 7};
    assert_true(ctr_decode_record(longer, longer + sizeof(longer), &rec) > 0);
    assert_int_equal(ctr_decode_record_fields(&rec, &f), 0);
    assert_int_equal(f.v[0], 1);
    assert_int_equal(f.tail_end - f.tail, 2);
}

/* ---------------------------------------------------------------------------
 * Events: the encoder and the decoder, every type
 * ------------------------------------------------------------------------- */

/* A valid value of each kind, of several varint bytes where it can be. */
static uint64_t sample(uint8_t kind, int i)
{
    switch (kind) {
    case CTR_ARG_REASON:
        return CTR_REASON_SIGSUSPEND;
    case CTR_ARG_LENGTH:
        return 5;
    case CTR_ARG_COUNT:
        return 1;
    default:
        return (1ull << (7 * i + 20)) + (uint64_t)i;
    }
}

/* Encodes event `type` with sample arguments (and "hello" after a LENGTH)
 * into buf; returns its length, and its arguments (time delta first) in args. */
static size_t encode_sample(uint8_t type, uint8_t *buf, uint64_t args[CTR_MAX_ARGS])
{
    const struct ctr_event_spec *spec = &ctr_event_specs[type];
    memset(args, 0, CTR_MAX_ARGS * sizeof(args[0]));
    args[0] = 123456789;
    for (int i = 1; i < spec->nargs; i++)
        args[i] = sample(spec->args[i], i);
    uint8_t *p = ctr_encode_event(buf, type, args[0], args + 1);
    assert_true(p - buf <= CTR_MAX_EVENT_BYTES);
    if (spec->args[spec->nargs - 1] == CTR_ARG_LENGTH) {
        memcpy(p, "hello", 5);
        p += 5;
    }
    return (size_t)(p - buf);
}

static void test_event_round_trip(void **state)
{
    (void)state;
    uint8_t all[CTR_EV_LIMIT * (CTR_MAX_EVENT_BYTES + 5)];
    size_t nall = 0;
    for (int ty = 1; ty < CTR_EV_LIMIT; ty++) {
        uint8_t *buf = all + nall;
        uint64_t args[CTR_MAX_ARGS];
        size_t n = encode_sample((uint8_t)ty, buf, args);
        struct ctr_event ev;
        memset(&ev, 0xee, sizeof(ev)); /* the decoder must set every field */
        assert_int_equal(ctr_decode_event(buf, buf + n, &ev), n);
        assert_int_equal(ev.type, ty);
        assert_int_equal(ev.nargs, ctr_event_specs[ty].nargs);
        assert_memory_equal(ev.args, args, sizeof(args)); /* 0 past nargs */
        const struct ctr_event_spec *spec = &ctr_event_specs[ty];
        if (spec->args[spec->nargs - 1] == CTR_ARG_LENGTH) {
            assert_ptr_equal(ev.payload, buf + n - 5);
            assert_int_equal(ev.payload_len, 5);
        } else {
            assert_null(ev.payload);
            assert_int_equal(ev.payload_len, 0);
        }
        /* Re-encoding what was decoded gives the same bytes. */
        uint8_t again[CTR_MAX_EVENT_BYTES];
        uint8_t *again_end = ctr_encode_event(again, ev.type, ev.args[0], ev.args + 1);
        assert_memory_equal(again, buf, (size_t)(again_end - again));
        nall += n;
    }
    /* Back to back, each event ends where the next begins. */
    const uint8_t *p = all;
    for (int ty = 1; ty < CTR_EV_LIMIT; ty++) {
        struct ctr_event ev;
        size_t used = ctr_decode_event(p, all + nall, &ev);
        assert_true(used > 0);
        assert_int_equal(ev.type, ty);
        p += used;
    }
    assert_ptr_equal(p, all + nall);
    /* The exact bytes of one: BLOCK(dt 0, mutex lock, object 0x80, stack 3). */
    uint8_t block[CTR_MAX_EVENT_BYTES];
    uint8_t *e = ctr_encode_event(block, CTR_EV_BLOCK, 0,
                                  (const uint64_t[]){CTR_REASON_MUTEX_LOCK, 0x80, 3});
    assert_int_equal(e - block, 6);
    assert_memory_equal(block, "\x05\x00\x01\x80\x01\x03", 6);
}

static void test_event_damage(void **state)
{
    (void)state;
    struct ctr_event ev;
    /* Cut anywhere, every event is damage: a varint or a payload cut. */
    for (int ty = 1; ty < CTR_EV_LIMIT; ty++) {
        uint8_t buf[CTR_MAX_EVENT_BYTES + 5];
        uint64_t args[CTR_MAX_ARGS];
        size_t n = encode_sample((uint8_t)ty, buf, args);
        for (size_t cut = 0; cut < n; cut++)
            if (ctr_decode_event(buf, buf + cut, &ev) != 0)
                fail_msg("%s cut at %zu of %zu bytes decodes", ctr_event_specs[ty].name, cut, n);
    }
    /* Unknown types. */
    const uint8_t types[] = {0, CTR_EV_LIMIT, 0xff};
    for (size_t i = 0; i < sizeof(types); i++) {
        const uint8_t unknown[] = {types[i], 0, 0, 0, 0, 0};
        assert_int_equal(ctr_decode_event(unknown, unknown + sizeof(unknown), &ev), 0);
    }
    /* A varint over 64 bits, and one of eleven bytes. */
    const uint8_t over[] = {CTR_EV_UNBLOCK, 0xff, 0xff, 0xff, 0xff, 0xff,
                            0xff,           0xff, 0xff, 0xff, 0x02};
    assert_int_equal(ctr_decode_event(over, over + sizeof(over), &ev), 0);
    const uint8_t eleven[] = {CTR_EV_UNBLOCK, 0x80, 0x80, 0x80, 0x80, 0x80,
                              0x80,           0x80, 0x80, 0x80, 0x80, 0x00};
    assert_int_equal(ctr_decode_event(eleven, eleven + sizeof(eleven), &ev), 0);
    /* Wait reasons the table does not have: 0, the limit, 200. */
    const uint64_t reasons[] = {0, CTR_REASON_LIMIT, 200};
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
        uint8_t block[16] = {CTR_EV_BLOCK, 0};
        uint8_t *stop = ctr_put_uvarint(block + 2, reasons[i]);
        *stop++ = 1;
        *stop++ = 0;
        assert_int_equal(ctr_decode_event(block, stop, &ev), 0);
    }
    const uint8_t good_block[] = {CTR_EV_BLOCK, 0, CTR_REASON_SIGSUSPEND, 1, 0};
    assert_int_equal(ctr_decode_event(good_block, good_block + sizeof(good_block), &ev), 5);
    /* A LENGTH past the stop, and one over CTR_MAX_EVENT_PAYLOAD. */
    const uint8_t log_past[] = {CTR_EV_LOG, 0, 0, 0, 4, 'a', 'b', 'c'};
    assert_int_equal(ctr_decode_event(log_past, log_past + sizeof(log_past), &ev), 0);
    static uint8_t log_big[8 + CTR_MAX_EVENT_PAYLOAD + 1] = {CTR_EV_LOG, 0, 0, 0};
    uint8_t *p = ctr_put_uvarint(log_big + 4, CTR_MAX_EVENT_PAYLOAD + 1);
    size_t n = (size_t)(p - log_big) + CTR_MAX_EVENT_PAYLOAD + 1;
    assert_true(n <= sizeof(log_big));
    assert_int_equal(ctr_decode_event(log_big, log_big + n, &ev), 0);
    p = ctr_put_uvarint(log_big + 4, CTR_MAX_EVENT_PAYLOAD);
    n = (size_t)(p - log_big) + CTR_MAX_EVENT_PAYLOAD;
    assert_int_equal(ctr_decode_event(log_big, log_big + n, &ev), n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_specs),
        cmocka_unit_test(test_reason_releases),
        cmocka_unit_test(test_wire_bytes),
        cmocka_unit_test(test_record_round_trip),
        cmocka_unit_test(test_reader_loads_every_record),
        cmocka_unit_test(test_record_damage),
        cmocka_unit_test(test_event_round_trip),
        cmocka_unit_test(test_event_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
