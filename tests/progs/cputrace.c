/* SPDX-License-Identifier: MIT */
/* cputrace.c - writes the synthetic CPU-sampled trace of cputrace.h: one
 * generation holding the tables, the threads' events, their CPU samples and
 * a SAMPLING record, then END, in one zstd frame after the file header.
 * Times are CLOCK_MONOTONIC ns (tick source 0), so what is written is what
 * the reader must give back. */
#include "cputrace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "core/maps.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "ctrace_record.h"

/* ---------------------------------------------------------------------------
 * The code the samples are in: distinct bodies, so that no two fold into
 * one address, each long enough to hold the offsets taken below.
 * ------------------------------------------------------------------------- */

static volatile unsigned sink;

__attribute__((noinline)) void cpu_regcomp(void)
{
    for (unsigned i = 0; i < 64; i++)
        sink += i * 3u;
}

__attribute__((noinline)) void cpu_redact(void)
{
    for (unsigned i = 0; i < 64; i++)
        sink ^= i * 5u;
    cpu_regcomp();
}

__attribute__((noinline)) void cpu_hash(void)
{
    for (unsigned i = 0; i < 64; i++)
        sink = sink * 31u + i;
}

__attribute__((noinline)) void cpu_spin(void)
{
    for (unsigned i = 0; i < 64; i++)
        sink += 7u;
}

__attribute__((noinline)) void cpu_worker(void)
{
    for (unsigned i = 0; i < 64; i++)
        sink -= i;
    cpu_redact();
    cpu_hash();
}

__attribute__((noinline)) void cpu_main(void)
{
    for (unsigned i = 0; i < 64; i++)
        sink |= i;
    cpu_spin();
}

/* A sample's innermost PC is the interrupted instruction + 1 (§4.1); a
 * caller's is a return address. Both point a little into the function. */
#define AT(fn, off) ((uintptr_t)(void (*)(void))(fn) + (off))
#define LEAF(fn) AT(fn, 9)
#define CALLER(fn) AT(fn, 17)

/* ---------------------------------------------------------------------------
 * The scenario
 * ------------------------------------------------------------------------- */

#define MS 1000000ull
#define T0 (1000 * MS) /* CLOCK_MONOTONIC at the trace's start */

enum { STR_EXE = 1, STR_MAIN, STR_WORKER, STR_REQUEST, STR_PARSE, STR_HASH, STR_MAP0 = 100 };
enum { STACK_REGCOMP = 1, STACK_HASH, STACK_SPIN_WORKER, STACK_SPIN_MAIN };

struct ev {
    uint64_t ms;
    uint8_t type;
    uint64_t args[3];
};

/* clang-format off */
#define SAMPLE(ms, stack) {ms, CTR_EV_CPU_SAMPLE, {stack, CPU_PERIOD_NS}}
#define END_OF_LIST {0, 0, {0}}
/* clang-format on */

static const struct ev thread1[] = {SAMPLE(50, STACK_SPIN_MAIN), SAMPLE(60, STACK_SPIN_MAIN),
                                    END_OF_LIST};

static const struct ev thread2[] = {
    {1, CTR_EV_THREAD_START, {1, 0}}, /* args[1]: the start routine, filled in below */
    {100, CTR_EV_TASK_BEGIN, {1, 0, STR_REQUEST}},
    {100, CTR_EV_REGION_BEGIN, {1, STR_PARSE}},
    SAMPLE(110, STACK_REGCOMP),
    SAMPLE(120, STACK_REGCOMP),
    SAMPLE(130, STACK_REGCOMP),
    SAMPLE(140, STACK_REGCOMP),
    SAMPLE(150, STACK_REGCOMP),
    SAMPLE(160, STACK_REGCOMP),
    SAMPLE(170, STACK_REGCOMP),
    SAMPLE(180, STACK_REGCOMP),
    SAMPLE(190, STACK_REGCOMP),
    SAMPLE(200, STACK_REGCOMP),
    SAMPLE(210, STACK_REGCOMP),
    SAMPLE(220, STACK_REGCOMP),
    SAMPLE(230, STACK_REGCOMP),
    SAMPLE(240, STACK_REGCOMP),
    SAMPLE(250, STACK_REGCOMP),
    {250, CTR_EV_REGION_END, {1, STR_PARSE}},
    {250, CTR_EV_REGION_BEGIN, {1, STR_HASH}},
    SAMPLE(260, STACK_HASH),
    SAMPLE(270, STACK_HASH),
    SAMPLE(280, STACK_HASH),
    SAMPLE(290, STACK_HASH),
    SAMPLE(300, STACK_HASH),
    SAMPLE(310, STACK_HASH),
    SAMPLE(320, STACK_HASH),
    SAMPLE(330, STACK_HASH),
    SAMPLE(340, STACK_HASH),
    {350, CTR_EV_CPU_SAMPLE, {STACK_HASH, 2 * CPU_PERIOD_NS}}, /* the timer expired twice */
    {350, CTR_EV_REGION_END, {1, STR_HASH}},
    {350, CTR_EV_TASK_END, {1}},
    SAMPLE(410, STACK_SPIN_WORKER),
    SAMPLE(420, STACK_SPIN_WORKER),
    SAMPLE(430, STACK_SPIN_WORKER),
    SAMPLE(440, STACK_SPIN_WORKER),
    SAMPLE(450, STACK_SPIN_WORKER),
    {500, CTR_EV_THREAD_END, {0}},
    END_OF_LIST};

static const struct ev thread3[] = {
    {1, CTR_EV_THREAD_START, {1, 0}}, {100, CTR_EV_TASK_BEGIN, {2, 0, STR_REQUEST}},
    SAMPLE(110, STACK_HASH),          SAMPLE(120, STACK_HASH),
    {120, CTR_EV_TASK_END, {2}},      SAMPLE(200, STACK_SPIN_WORKER),
    SAMPLE(210, STACK_SPIN_WORKER),   SAMPLE(220, STACK_SPIN_WORKER),
    {500, CTR_EV_THREAD_END, {0}},    END_OF_LIST};

/* ---------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------- */

struct events {
    uint8_t b[4096];
    size_t n;
    uint64_t last_ns;
};

static void put(struct events *e, const struct ev *v, const uint64_t *args)
{
    uint64_t ns = T0 + v->ms * MS;
    e->n = (size_t)(ctr_encode_event(e->b + e->n, v->type, ns - e->last_ns, args) - e->b);
    e->last_ns = ns;
}

/* A thread's events: its BATCH, and for perf_event its samples in a
 * SWITCHES record, each timed from T0. */
static void put_thread(struct ctr_outbuf *o, uint64_t id, const struct ev *list,
                       enum cpu_trace_source source)
{
    struct events batch = {.last_ns = T0}, switches = {.last_ns = T0};
    for (const struct ev *v = list; v->type; v++) {
        uint64_t args[3] = {v->args[0], v->args[1], v->args[2]};
        if (v->type == CTR_EV_THREAD_START)
            args[1] = AT(cpu_worker, 0);
        if (v->type != CTR_EV_CPU_SAMPLE)
            put(&batch, v, args);
        else if (source == CPU_TRACE_PERF)
            put(&switches, v, args);
        else if (source == CPU_TRACE_TIMER)
            put(&batch, v, args);
    }
    if (batch.n)
        CTR_REC_PUT_BYTES(o, BATCH, batch.b, batch.n, id, T0);
    if (switches.n)
        CTR_REC_PUT_BYTES(o, SWITCHES, switches.b, switches.n, id, T0);
}

static void put_string(struct ctr_outbuf *o, uint64_t id, const char *s)
{
    CTR_REC_PUT_BYTES(o, STRING, s, strlen(s), id);
}

struct maps_ctx {
    struct ctr_outbuf *o;
    uint64_t n;
};

static void put_mapping(void *arg, const struct ctr_map_info *m)
{
    struct maps_ctx *c = arg;
    uint64_t id = ++c->n;
    put_string(c->o, STR_MAP0 + id, m->path);
    CTR_REC_PUT_BYTES(c->o, MAPPING, m->build_id, m->build_id_len, id, m->start, m->limit,
                      m->file_offset, m->bias, STR_MAP0 + id);
}

static void put_tables(struct ctr_outbuf *o)
{
    put_string(o, STR_EXE, "cpu-trace");
    put_string(o, STR_MAIN, "main");
    put_string(o, STR_WORKER, "worker");
    put_string(o, STR_REQUEST, "request");
    put_string(o, STR_PARSE, "parse");
    put_string(o, STR_HASH, "hash");
    struct maps_ctx mc = {o, 0};
    ctr__maps_scan(put_mapping, &mc);
    const uintptr_t regcomp[] = {LEAF(cpu_regcomp), CALLER(cpu_redact), CALLER(cpu_worker)};
    const uintptr_t hash[] = {LEAF(cpu_hash), CALLER(cpu_worker)};
    const uintptr_t spin_worker[] = {LEAF(cpu_spin), CALLER(cpu_worker)};
    const uintptr_t spin_main[] = {LEAF(cpu_spin), CALLER(cpu_main)};
    CTR_REC_PUT_UVARINTS(o, STACK, regcomp, 3, STACK_REGCOMP);
    CTR_REC_PUT_UVARINTS(o, STACK, hash, 2, STACK_HASH);
    CTR_REC_PUT_UVARINTS(o, STACK, spin_worker, 2, STACK_SPIN_WORKER);
    CTR_REC_PUT_UVARINTS(o, STACK, spin_main, 2, STACK_SPIN_MAIN);
    CTR_REC_PUT(o, THREAD, 1, 4000, 0, STR_MAIN, 0x7f0000001000);
    CTR_REC_PUT(o, THREAD, 2, 4001, 1, STR_WORKER, 0x7f0000002000);
    CTR_REC_PUT(o, THREAD, 3, 4002, 1, STR_WORKER, 0x7f0000003000);
}

int cpu_trace_write(const char *path, enum cpu_trace_source source, uint64_t lost)
{
    struct ctr_outbuf o = {0};
    CTR_REC_PUT(&o, GEN_BEGIN, 0);
    CTR_REC_PUT(&o, TRACE_INFO, 4000, CTR_TICKS_MONOTONIC_NS, CTR_INFO_STACKS_FRAME_POINTER,
                STR_EXE, 20000);
    CTR_REC_PUT(&o, CLOCK, T0, T0, 1700000000000000000ull);
    put_tables(&o);
    if (source != CPU_TRACE_NONE)
        CTR_REC_PUT(&o, SAMPLING, source, CPU_PERIOD_NS, lost);
    put_thread(&o, 1, thread1, source);
    put_thread(&o, 2, thread2, source);
    put_thread(&o, 3, thread3, source);
    CTR_REC_PUT(&o, CLOCK, T0 + 600 * MS, T0 + 600 * MS, 1700000000000000000ull + 600 * MS);
    CTR_REC_PUT(&o, GEN_END, 0);
    CTR_REC_PUT(&o, END, 0, 0, 0, 0);
    if (o.oom) {
        free(o.p);
        errno = ENOMEM;
        return -1;
    }
    size_t cap = ZSTD_compressBound(o.len);
    uint8_t *z = malloc(cap);
    size_t zn = z ? ZSTD_compress(z, cap, o.p, o.len, 3) : 0;
    free(o.p);
    if (!z || ZSTD_isError(zn)) {
        free(z);
        errno = ENOMEM;
        return -1;
    }
    uint8_t header[CTR_FILE_HEADER_LEN] = {0};
    memcpy(header, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN);
    header[8] = CTR_VERSION_MAJOR;
    header[10] = CTR_VERSION_MINOR;
    FILE *f = fopen(path, "wb");
    int ok =
        f && fwrite(header, 1, sizeof(header), f) == sizeof(header) && fwrite(z, 1, zn, f) == zn;
    if (f && fclose(f) != 0)
        ok = 0;
    free(z);
    return ok ? 0 : -1;
}
