/* SPDX-License-Identifier: MIT */
/* lttng.c - libctrace's events sent to LTTng-UST, as the `ctrace`
 * tracepoints (tp/), instead of the trace file or as well as it.
 *
 * Asked for by trace_options.lttng (CTRACE_LTTNG=1, `ctrace run -lttng`),
 * it loads the provider library with dlopen (a program that does not ask
 * never loads lttng-ust) and attaches a sink that takes events inline
 * (sink.h): each thread sends its events itself as it writes them
 * (ctr__lttng_event, from ctr__emit_payload), so LTTng's timestamp, CPU and
 * context are the event's own, next to the program's tracepoints and the
 * kernel's. What only the collector knows goes from the collector: each
 * generation's records (threads, mappings, clocks, drops, calls in
 * progress, context switches) and the trailer, transcribed by
 * ctr_lttng_transcribe (ctrace_lttng.h). A new stack or string is sent once
 * by the thread that adds it to its table (ctr__lttng_entry), and the whole
 * tables again whenever a session starts to record the provider's events
 * (a session created after the program started has them too).
 *
 * LTTng's own threads (its listener threads, started as the provider
 * loads) are never traced: the load runs as a tracer call-out, and threads
 * created there are untraced for life (interpose.c). A tracepoint call is a
 * call-out too, so what lttng-ust calls (a wake-up write) is not traced.
 */
#include "sinks/lttng.h"

#include "collect/face.h"
#include "collect/genstate.h"
#include "collect/records.h"
#include "collect/sink.h"
#include "core/hooks.h"
#include "core/intern.h"
#include "core/session.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "ctrace_lttng.h"
#include "ctrace_options.h"
#include "ctrace_record.h"
#include "sinks/filesink.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The provider's table, once loaded (never unloaded). Stored under the API
 * lock (release); writers load it (acquire) for the table's contents. */
static _Atomic(const struct ctr_lttng_ops *) lttng_ops;

static struct {
    struct ctr_sink sink;
    /* Collector-only: the tables were sent once; a session recorded them
     * at the last generation's start. */
    int tables_sent, recording;
} L;

/* ---------------------------------------------------------------------------
 * Loading the provider (API lock held)
 * ------------------------------------------------------------------------- */

static const struct ctr_lttng_ops *try_load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h)
        return NULL;
    const struct ctr_lttng_ops *o = dlsym(h, CTR_LTTNG_OPS_SYMBOL);
    return o && o->abi == CTR_LTTNG_ABI ? o : NULL;
}

/* The provider from CTRACE_LTTNG_PROVIDER if set; else beside libctrace
 * (an installation), in the build tree's tp/ (libctrace in tracer/), or
 * wherever the loader finds it. */
static const struct ctr_lttng_ops *load_provider(void)
{
    const char *env = getenv(CTR_LTTNG_LIBRARY_ENV);
    if (env && *env)
        return try_load(env);
    Dl_info info;
    char dir[PATH_MAX], path[PATH_MAX + 64];
    if (dladdr((void *)load_provider, &info) && info.dli_fname &&
        strlen(info.dli_fname) < sizeof(dir)) {
        strcpy(dir, info.dli_fname);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = 0;
            static const char *const places[] = {"", "/../tp"};
            for (unsigned i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
                snprintf(path, sizeof(path), "%s%s/%s", dir, places[i], CTR_LTTNG_LIBRARY);
                const struct ctr_lttng_ops *o = try_load(path);
                if (o)
                    return o;
            }
        }
    }
    return try_load(CTR_LTTNG_LIBRARY);
}

/* ---------------------------------------------------------------------------
 * What threads send
 * ------------------------------------------------------------------------- */

void ctr__lttng_event(struct ctr_thread *t, uint8_t type, uint64_t now, const uint64_t *args,
                      const void *payload, size_t len)
{
    /* acquire: pairs with the release store in ctr__lttng_start. */
    const struct ctr_lttng_ops *o = atomic_load_explicit(&lttng_ops, memory_order_acquire);
    if (!o)
        return;
    int saved_errno = errno;
    t->internal++; /* what lttng-ust calls is not traced */
    o->event(t->id, now, type, 0, args, payload, (uint32_t)len);
    t->internal--;
    errno = saved_errno;
}

static void send_entry(const struct ctr_lttng_ops *o, const struct ctr_intern *table,
                       const struct ctr_intern_entry *e)
{
    uint64_t id = e->id;
    if (table == &ctr__stacks) {
        uint64_t pcs[CTR_STACK_MAX];
        uint32_t n = e->len / (uint32_t)sizeof(uintptr_t);
        if (n > CTR_STACK_MAX)
            n = CTR_STACK_MAX;
        for (uint32_t i = 0; i < n; i++) {
            uintptr_t pc;
            memcpy(&pc, e->bytes + i * sizeof(pc), sizeof(pc));
            pcs[i] = pc;
        }
        o->record(CTR_REC_STACK, &id, pcs, NULL, n);
    } else {
        o->record(CTR_REC_STRING, &id, NULL, e->bytes, e->len);
    }
}

void ctr__lttng_entry(const struct ctr_intern *table, const struct ctr_intern_entry *e)
{
    /* acquire: as in ctr__lttng_event. */
    const struct ctr_lttng_ops *o = atomic_load_explicit(&lttng_ops, memory_order_acquire);
    if (!o)
        return;
    int saved_errno = errno;
    struct ctr_thread *saved = ctr__internal_begin();
    send_entry(o, table, e);
    ctr__internal_end(saved);
    errno = saved_errno;
}

/* ---------------------------------------------------------------------------
 * The sink (collector thread)
 * ------------------------------------------------------------------------- */

static void send_table(const struct ctr_lttng_ops *o, const struct ctr_intern *table)
{
    /* relaxed: ids below next_id were handed out; an entry not yet
     * published reads as NULL and is sent by its inserter. */
    uint32_t n = atomic_load_explicit(&table->next_id, memory_order_relaxed);
    for (uint32_t id = 1; id < n; id++) {
        const struct ctr_intern_entry *e = ctr__intern_entry(table, id);
        if (e)
            send_entry(o, table, e);
    }
}

static void emit_event(void *ctx, uint64_t thread, uint64_t time, uint8_t type, int sched,
                       const uint64_t *args, const void *payload, uint32_t len)
{
    ((const struct ctr_lttng_ops *)ctx)->event(thread, time, type, sched, args, payload, len);
}

static void emit_record(void *ctx, uint8_t kind, const uint64_t *fields, const uint64_t *tail_u,
                        const void *tail_b, uint32_t tail_n)
{
    ((const struct ctr_lttng_ops *)ctx)->record(kind, fields, tail_u, tail_b, tail_n);
}

static void transcribe(const uint8_t *raw, size_t n, int batches)
{
    /* relaxed: as in on_gen_begin. */
    const struct ctr_lttng_ops *o = atomic_load_explicit(&lttng_ops, memory_order_relaxed);
    struct ctr_lttng_emitter e = {(void *)o, emit_event, emit_record};
    ctr_lttng_transcribe(raw, raw + n, batches, &e); /* our own bytes: no damage */
}

static void on_gen_begin(struct ctr_sink *s, uint64_t gen, const struct ctr_clock_sample *start)
{
    (void)s, (void)gen, (void)start;
    /* relaxed: this thread's own store in ctr__lttng_start came first. */
    const struct ctr_lttng_ops *o = atomic_load_explicit(&lttng_ops, memory_order_relaxed);
    int recording = o->recording();
    if (!L.tables_sent || (recording && !L.recording)) {
        send_table(o, &ctr__strings);
        send_table(o, &ctr__stacks);
        L.tables_sent = 1;
    }
    L.recording = recording;
    /* The generation names only the mappings of the stacks in its own
     * batches, which LTTng's events are not: all of them, every time (a
     * few dozen records, where a session may start at any generation). */
    struct ctr_outbuf maps = {0};
    ctr__gen_write_all_mappings(&maps);
    if (!maps.oom)
        transcribe(maps.p, maps.len, 0);
    free(maps.p);
}

/* A generation's batches went inline, event by event: the rest of it. */
static void on_records(struct ctr_sink *s, const uint8_t *raw, size_t n)
{
    (void)s;
    transcribe(raw, n, 0);
}

/* The trailer: its batches (the calls still in progress) are the
 * collector's, sent by nobody else. */
static void on_detached(struct ctr_sink *s)
{
    (void)s;
    struct ctr_outbuf o = {0};
    /* relaxed: a count the collector stored itself. */
    ctr__rec_trailer(&o, atomic_load_explicit(&ctr__session.events_dropped, memory_order_relaxed));
    if (!o.oom)
        transcribe(o.p, o.len, 1);
    free(o.p);
}

static const struct ctr_sink_ops lttng_sink_ops = {
    .gen_begin = on_gen_begin,
    .records = on_records,
    .detached = on_detached,
};

/* At exit, before LTTng-UST's destructors tear it down (a library loaded
 * after libctrace is finalized before it, and atexit handlers run before
 * any): the trace stops there, LTTng and file together, as libctrace's own
 * destructor would stop it later. */
static void stop_at_exit(void)
{
    ctr__trace_stop_at_exit();
}

int ctr__lttng_start(const struct trace_options *o)
{
    /* relaxed: stored only here, under the API lock. */
    if (!atomic_load_explicit(&lttng_ops, memory_order_relaxed)) {
        /* The tracer's thread-exit key before LTTng-UST's: a thread's exit
         * runs ctrace's destructor first, which leaves the thread untraced
         * (thread.c), so LTTng's own (its RCU reader's unregistration, under
         * its registry lock) never sends an event into LTTng from inside
         * LTTng, where it would wait on that lock forever. */
        int rc = ctr__init();
        if (rc != 0)
            return rc;
        struct ctr_thread *saved = ctr__internal_begin();
        const struct ctr_lttng_ops *ops = load_provider();
        ctr__internal_end(saved);
        if (!ops)
            return -ELIBACC;
        atexit(stop_at_exit);
        /* release: the provider's table before any writer uses it. */
        atomic_store_explicit(&lttng_ops, ops, memory_order_release);
    }
    L.sink.ops = &lttng_sink_ops;
    L.sink.name = "lttng";
    L.sink.inline_events = 1;
    L.tables_sent = 0;
    L.recording = 0;
    return ctr__sink_attach(&L.sink, o);
}

struct ctr_sink *ctr__lttng_sink(void)
{
    return &L.sink;
}
