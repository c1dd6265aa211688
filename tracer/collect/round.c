/* SPDX-License-Identifier: MIT */
/* round.c - the collector's round: turns per-thread chunks into
 * generations, and hands each to the sinks (sink.h). The thread that runs
 * the rounds, and when, is collector.c's.
 *
 * Every flush_ms (or earlier when the queue of full chunks reaches a quarter
 * of the pool) the collector runs one round, which is one generation:
 *   1. snapshot each live slot's current chunk (acquire load of thread->cur);
 *   2. take every full chunk from the queue, oldest first, and write what of
 *      it is not yet written;
 *   3. write the committed prefix of each snapshot chunk still being filled
 *      (idle and blocked threads), remembering how far it got (chunk->taken);
 *   4. close the generation: what makes it stand alone (genstate.c: the
 *      threads, every mapping, the stacks and strings its events use, the
 *      threads inside a wait as it began), drop counts, context switches,
 *      CLOCK; hand its records to the sinks, and compress them into one
 *      frame for those that keep frames;
 *   5. return the full chunks to the pool and the slots of exited threads
 *      to the slab.
 * Step 1 comes before step 2 so that a chunk filled in between is still
 * written in order: a thread pushes its full chunk before it publishes the
 * next one, so any chunk older than a snapshot is already in the queue.
 * Chunks and slots are recycled only at the end of the round, so no snapshot
 * can point at a chunk another thread has started to reuse.
 *
 * In a burst, when the records buffered exceed what a sink wants in one
 * frame, the round closes its generation early and goes on in a new one:
 * every frame is one whole generation, which a sink can keep or drop alone.
 * The sinks see each generation as it is made: gen_begin, each batch, its
 * frame, gen_end. A sink attached since the last round starts with the
 * round's first generation; one whose detach was asked for gets the round's
 * generations as its last, then `detached`.
 *
 * The collector itself is never traced: its ctr__self is the "off" slot.
 */
#include "collect/round.h"

#include "collect/genstate.h"
#include "collect/records.h"
#include "collect/sink.h"
#include "collect/untraced.h"
#include "core/clock.h"
#include "core/fdclass.h"
#include "core/hooks.h"
#include "core/lfstack.h"
#include "core/perfring.h"
#include "core/pool.h"
#include "core/real.h"
#include "core/retaddr.h"
#include "core/session.h"
#include "core/thread.h"
#include "ctrace_format.h"
#include "ctrace_record.h"
#include "perf/cpu.h"
#include "perf/cputime.h"
#include "perf/sched.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Above this much buffered output a round closes its generation and goes on
 * in a new one, so a burst never needs the whole pool twice over in memory
 * (unless a sink asks for smaller frames: frame_bytes). */
#define FRAME_TARGET (4u << 20)

static struct collector {
    struct ctr_outbuf out;  /* this generation's records */
    struct ctr_outbuf post; /* what follows its GEN_END (PENDING) */
    struct ctr_zstream z;
    uint32_t epoch;
    struct ctr_pool *pool; /* the session's (collector_start) */
    uint64_t gen;
    /* The sinks this round feeds, and whether each gets its last one. */
    struct ctr_sink *sinks[CTR_SINKS_MAX];
    int leaving[CTR_SINKS_MAX];
    unsigned nsinks;
    size_t frame_bytes; /* the smallest frame a sink wants, or FRAME_TARGET */
    int want_frames;    /* a sink keeps frames (ops->frame) */
    /* Per slot of the thread slab, grown as the slab's high mark grows. */
    uint32_t nslots;
    struct ctr_chunk **snap;
    uint64_t *reported;   /* drops already counted in total_dropped */
    uint8_t *cpu_started; /* the thread's reading at registration is written */
    /* Recycled at the end of the round. */
    struct ctr_chunk **done_chunks;
    size_t ndone, done_cap;
    uint64_t total_dropped;
    struct ctr_clock_sample last_clock; /* the previous generation's end */
    struct ctr_clock_sample gen_start;  /* the current one's start */
    int final;                          /* the round is the session's last */
    uint64_t period_ns;                 /* the session's flush_ms, read under the round lock */
    uint32_t high;                      /* slots the round looks at */
} C;

/* ---------------------------------------------------------------------------
 * To the sinks
 * ------------------------------------------------------------------------- */

/* Compresses what the round has so far into one frame for the sinks. */
static void cut_frame(void)
{
    const void *z;
    size_t zn;
    if (C.out.len && !C.out.oom)
        for (unsigned i = 0; i < C.nsinks; i++)
            if (C.sinks[i]->ops->records)
                C.sinks[i]->ops->records(C.sinks[i], C.out.p, C.out.len);
    /* Compressed only for a sink that keeps frames (the flight recorder):
     * the file compresses its own stream. */
    if (C.want_frames && C.out.len && !C.out.oom && ctr__zstream_frame(&C.z, &C.out, &z, &zn) == 0)
        for (unsigned i = 0; i < C.nsinks; i++)
            if (C.sinks[i]->ops->frame)
                C.sinks[i]->ops->frame(C.sinks[i], z, zn);
    /* Out of memory: the frame is lost to every sink, the next one starts
     * clean (a reader reports the gap as missing stacks or events). */
    C.out.len = 0;
    C.out.oom = 0;
}

static void to_sinks_batch(uint8_t kind, uint64_t thread_id, uint64_t base, const uint8_t *p,
                           size_t n)
{
    struct ctr_sink_batch b = {kind, thread_id, base, p, n};
    for (unsigned i = 0; i < C.nsinks; i++)
        if (C.sinks[i]->ops->batch)
            C.sinks[i]->ops->batch(C.sinks[i], &b);
}

/* The sinks this round feeds: those wanted now; the frame size they ask;
 * whether any keeps frames. */
static void sinks_take(int final)
{
    C.nsinks = ctr__sinks_wanted(C.sinks);
    C.frame_bytes = FRAME_TARGET;
    C.want_frames = 0;
    for (unsigned i = 0; i < C.nsinks; i++) {
        C.leaving[i] = final || ctr__sink_leaving(C.sinks[i]);
        C.want_frames |= C.sinks[i]->ops->frame != NULL;
        size_t f = C.sinks[i]->frame_bytes;
        if (f && f < C.frame_bytes)
            C.frame_bytes = f;
    }
}

/* ---------------------------------------------------------------------------
 * One round
 * ------------------------------------------------------------------------- */

static int grow_slots(uint32_t n)
{
    if (n <= C.nslots)
        return 0;
    uint32_t cap = C.nslots ? C.nslots : 64;
    while (cap < n)
        cap *= 2;
    struct ctr_chunk **s = realloc(C.snap, cap * sizeof(*s));
    if (s)
        C.snap = s;
    uint64_t *r = realloc(C.reported, cap * sizeof(*r));
    if (r)
        C.reported = r;
    uint8_t *st = realloc(C.cpu_started, cap);
    if (st)
        C.cpu_started = st;
    if (!s || !r || !st)
        return -ENOMEM;
    memset(C.reported + C.nslots, 0, (cap - C.nslots) * sizeof(*r));
    memset(C.cpu_started + C.nslots, 0, cap - C.nslots);
    C.nslots = cap;
    return 0;
}

static void gen_open(void);
static void gen_close(int last);

/* Writes the part of c committed since the last time as a BATCH record. */
static void write_chunk(struct ctr_chunk *c)
{
    /* acquire: pairs with the owner's release store after each event
     * (ctr__emit_payload, core/emit.h), so the bytes up to pos are complete. */
    uint64_t commit = atomic_load_explicit(&c->commit, memory_order_acquire);
    uint32_t pos = (uint32_t)(commit & CTR_COMMIT_POS_MASK);
    if (pos <= c->taken)
        return;
    const uint8_t *p = c->data + c->taken;
    size_t n = pos - c->taken;
    CTR_REC_PUT_BYTES(&C.out, BATCH, p, n, c->thread_id, c->taken_ticks);
    ctr__gen_observe(c->slot, c->thread_id, c->taken_ticks, p, n);
    to_sinks_batch(CTR_REC_BATCH, c->thread_id, c->taken_ticks, p, n);
    c->taken = pos;
    c->taken_ticks = c->base_ticks + (commit >> CTR_COMMIT_POS_BITS);
    /* relaxed: a counter read only for statistics (filesink.c). */
    atomic_fetch_add_explicit(&ctr__session.chunks_flushed, 1, memory_order_relaxed);
    /* A burst: the generation ends here and the round goes on in a new one,
     * so that every frame is a whole generation, which a sink can keep or
     * drop alone (a flight recorder's window smaller than one round). */
    if (C.out.len >= C.frame_bytes) {
        gen_close(0);
        gen_open();
    }
}

static void retire_chunk(struct ctr_chunk *c)
{
    c->done = 1;
    if (C.ndone == C.done_cap) {
        size_t cap = C.done_cap ? C.done_cap * 2 : 256;
        struct ctr_chunk **d = realloc(C.done_chunks, cap * sizeof(*d));
        if (!d) {
            ctr__pool_put(C.pool, c); /* cannot defer: recycle now */
            return;
        }
        C.done_chunks = d;
        C.done_cap = cap;
    }
    C.done_chunks[C.ndone++] = c;
}

static void free_slot(uint32_t slot)
{
    /* The ended thread's perf rings, read for the last time this round:
     * unmapping one costs tens of microseconds (100 and more for a CPU
     * sampler's), better here than in the next thread's start, which takes
     * the slot (ctr__thread_register closes what is left). */
    struct ctr_thread *t = ctr__thread_slot(slot);
    ctr__perf_close(&t->sched_ring);
    ctr__cpu_close(t);
    ctr__gen_forget(slot);
    C.reported[slot] = 0;
    C.cpu_started[slot] = 0;
    ctr__thread_free_slot(t);
}

/* What the kernel recorded for one thread (context switches, CPU samples),
 * from its rings to a SWITCHES record (FORMAT.md §3): events encoded as in
 * a batch, with ns deltas, in time order across the rings. */
struct perf_entry {
    uint64_t ns;
    uint8_t type;
    uint64_t args[3];
};

static struct {
    struct perf_entry *e; /* this thread's, reused */
    size_t n, cap;
    int oom;
    uint64_t lost;        /* switches the ring could not take */
    struct ctr_outbuf ev; /* the encoded events; reused */
} PE;

static void perf_entry(uint64_t ns, uint8_t type, uint64_t a0, uint64_t a1)
{
    if (PE.n == PE.cap) {
        size_t cap = PE.cap ? 2 * PE.cap : 256;
        struct perf_entry *p = realloc(PE.e, cap * sizeof(*p));
        if (!p) {
            PE.oom = 1;
            return;
        }
        PE.e = p;
        PE.cap = cap;
    }
    PE.e[PE.n++] = (struct perf_entry){ns, type, {a0, a1, 0}};
}

static void on_switch(void *ctx, uint64_t ns, int out, int preempted)
{
    (void)ctx;
    perf_entry(ns, out ? CTR_EV_SWITCH_OUT : CTR_EV_SWITCH_IN, (uint64_t)preempted, 0);
}

static void on_switch_lost(void *ctx, uint64_t n)
{
    (void)ctx;
    PE.lost += n;
}

static void on_sample(void *ctx, uint64_t ns, uint64_t stack, uint64_t cpu_ns)
{
    (void)ctx;
    ctr__gen_need_stack(stack);
    perf_entry(ns, CTR_EV_CPU_SAMPLE, stack, cpu_ns);
}

/* Each ring is in time order; the two merge by time, switches first at a
 * tie (an insertion sort: the runs interleave little). */
static void perf_sort(void)
{
    for (size_t i = 1; i < PE.n; i++) {
        struct perf_entry x = PE.e[i];
        size_t k = i;
        while (k > 0 && PE.e[k - 1].ns > x.ns) {
            PE.e[k] = PE.e[k - 1];
            k--;
        }
        PE.e[k] = x;
    }
}

/* A switch-out that was no preemption, the last of the thread in slot s
 * and in no recorded wait, becomes a SWITCH_WAIT when the thread is still
 * in it: what it waits in, named (untraced.c, FORMAT.md §4.2). */
static void name_untraced(uint32_t s, struct ctr_thread *t)
{
    struct ctr_untraced u;
    struct perf_entry *last = PE.n ? &PE.e[PE.n - 1] : NULL;
    if (!last || last->type != CTR_EV_SWITCH_OUT || last->args[0] ||
        ctr__gen_thread_blocked(s, t->id) || ctr__untraced_name(t, &u) != 0)
        return;
    if (u.stack)
        ctr__gen_need_stack(u.stack);
    *last = (struct perf_entry){last->ns, CTR_EV_SWITCH_WAIT, {u.reason, u.object, u.stack}};
}

/* @return whether it wrote any. */
static int write_perf(uint32_t s, struct ctr_thread *t)
{
    uint64_t base = ctr__session.start_mono, last = base;
    PE.n = 0;
    PE.lost = 0;
    PE.oom = 0;
    PE.ev.len = 0;
    if (ctr__session.sched) {
        ctr__sched_drain(t, base, on_switch, on_switch_lost, NULL);
        name_untraced(s, t);
    }
    if (ctr__session.cpu_hz)
        ctr__cpu_drain(t, base, on_sample, NULL);
    perf_sort();
    if (PE.lost) /* the kernel's switch ring was full */
        perf_entry(PE.n ? PE.e[PE.n - 1].ns : base, CTR_EV_LOST, PE.lost, 0);
    for (size_t i = 0; i < PE.n; i++) {
        uint8_t ev[CTR_MAX_EVENT_BYTES];
        const struct perf_entry *x = &PE.e[i];
        uint8_t *end = ctr_encode_event(ev, x->type, x->ns > last ? x->ns - last : 0, x->args);
        ctr_out_bytes(&PE.ev, ev, (size_t)(end - ev));
        if (x->ns > last)
            last = x->ns;
    }
    int wrote = PE.ev.len && !PE.ev.oom && !PE.oom;
    if (wrote) {
        CTR_REC_PUT_BYTES(&C.out, SWITCHES, PE.ev.p, PE.ev.len, t->id, base);
        to_sinks_batch(CTR_REC_SWITCHES, t->id, base, PE.ev.p, PE.ev.len);
    }
    PE.ev.oom = 0;
    return wrote;
}

/* The CPU_TIME records of the thread in slot s: its reading at
 * registration, the first time; then one read now, or as it ended. */
static void write_cputime(uint32_t s, const struct ctr_thread *t, int ended)
{
    struct ctr_cputime c;
    if (!C.cpu_started[s] && ctr__cputime_started(t, &c) == 0) {
        CTR_REC_PUT(&C.out, CPU_TIME, t->id, c.ticks, c.cpu_ns, c.delay_ns, c.flags);
        C.cpu_started[s] = 1;
    }
    if (ctr__cputime_read(t, ended, &c) == 0)
        CTR_REC_PUT(&C.out, CPU_TIME, t->id, c.ticks, c.cpu_ns, c.delay_ns, c.flags);
    ctr__gen_thread_seen(s, t->id);
}

static void write_clock(void)
{
    struct ctr_clock_sample c;
    ctr__clock_sample(&c.ticks, &c.mono, &c.real);
    ctr__rec_clock(&C.out, &c);
    C.last_clock = c;
    /* Now that two samples are some way apart, express the I/O threshold in
     * real ticks. */
    const struct ctr_session *s = &ctr__session;
    if (c.mono > s->start_mono + 1000000 && c.ticks > s->start_ticks) {
        double per_ns = (double)(c.ticks - s->start_ticks) / (double)(c.mono - s->start_mono);
        /* relaxed: a threshold on its own; a wrapper that reads the older
         * value misjudges one call at most. */
        atomic_store_explicit(&ctr__session.io_min_ticks, (uint64_t)(s->io_min_ns * per_ns),
                              memory_order_relaxed);
    }
}

/* Opens a generation that starts where the last one ended. */
static void gen_open(void)
{
    ctr__gen_begin();
    for (unsigned i = 0; i < C.nsinks; i++)
        if (C.sinks[i]->ops->gen_begin)
            C.sinks[i]->ops->gen_begin(C.sinks[i], C.gen, &C.last_clock);
    C.gen_start = C.last_clock;
    CTR_REC_PUT(&C.out, GEN_BEGIN, C.gen);
    ctr__gen_need_string(ctr__rec_trace_info(&C.out));
    ctr__rec_clock(&C.out, &C.gen_start);
}

/* Closes the generation: what makes it stand alone, its end, its frame to
 * the sinks. `last`: the round's last one, which also carries the threads'
 * drop counts and switches, and frees the slots of threads that ended. */
static void gen_close(int last)
{
    /* A process killed by a signal never ends its trace: what each thread
     * is inside of now, in case this is the last generation (FORMAT.md
     * §3.1); their threads and call sites are records the tables below
     * must hold. */
    if (last && !C.final)
        ctr__rec_pending(&C.post, ctr__gen_pending_noted);
    for (uint32_t s = 0; s < C.high; s++) {
        struct ctr_thread *t = ctr__thread_at(s);
        /* acquire: pairs with the release stores of the state in
         * ctr__thread_register and ctr__thread_exit (thread.c), so the
         * slot's fields are the owner's. */
        int state = t ? atomic_load_explicit(&t->state, memory_order_acquire) : CTR_SLOT_FREE;
        if (state == CTR_SLOT_FREE)
            continue;
        if (last) {
            /* relaxed: a counter; nothing is published with it. */
            uint64_t d = atomic_load_explicit(&t->dropped, memory_order_relaxed);
            if (d > C.reported[s]) {
                C.total_dropped += d - C.reported[s];
                C.reported[s] = d;
                CTR_REC_PUT(&C.out, DROPS, t->id, d);
                ctr__gen_thread_seen(s, t->id);
            }
        }
        /* Every generation has the switches up to its end, not only a
         * round's last: a reader that goes generation by generation
         * (analyze/read/pipeline.c) needs a thread's switches no later than the
         * generation after its events. */
        if (ctr__session.sched || ctr__session.cpu_hz) {
            if (write_perf(s, t))
                ctr__gen_thread_seen(s, t->id);
            if (last && C.final) {
                ctr__sched_disable(t);
                ctr__cpu_disable(t);
            }
        }
        /* Its CPU time, once a round, if it may have run in it: it had
         * events, or is in no recorded wait; or it ended (its own reading;
         * its slot goes at the round's end, or just below). */
        if (last && (state != CTR_SLOT_LIVE || ctr__gen_thread_in(s, t->id) ||
                     !ctr__gen_thread_blocked(s, t->id)))
            write_cputime(s, t, state != CTR_SLOT_LIVE);
        /* A thread with records in the generation (live, or ended with its
         * last batch in this round: its slot is freed at the round's end). */
        if (ctr__gen_thread_in(s, t->id)) {
            uint32_t name = ctr__gen_thread_name(s, t->id, t->name_id);
            ctr__gen_need_string(name);
            ctr__rec_thread(&C.out, t, name);
        }
        /* Exited with no chunk to hand over: nothing more will come. */
        if (last && state == CTR_SLOT_ORPHANED)
            free_slot(s);
    }
    uint64_t sources, period, lost;
    if (ctr__cpu_sampling(&sources, &period, &lost))
        CTR_REC_PUT(&C.out, SAMPLING, sources, period, lost);
    ctr__gen_write_mappings(&C.out);
    ctr__gen_write_tables(&C.out);
    write_clock();
    CTR_REC_PUT(&C.out, GEN_END, C.gen);
    ctr_out_bytes(&C.out, C.post.p, C.post.len);
    C.out.oom |= C.post.oom;
    C.post.len = 0;
    C.post.oom = 0;
    /* relaxed: a count read only for trailers and statistics. */
    atomic_store_explicit(&ctr__session.events_dropped, C.total_dropped, memory_order_relaxed);
    cut_frame();
    struct ctr_gen_summary sum = {C.gen, C.gen_start, C.last_clock, NULL, 0};
    sum.nopen_waits = ctr__gen_open_waits(&sum.open_waits);
    for (unsigned i = 0; i < C.nsinks; i++)
        if (C.sinks[i]->ops->gen_end)
            C.sinks[i]->ops->gen_end(C.sinks[i], &sum);
    C.gen++;
}

/* Tells the threads waiting in ctr__collector_sync_for that the requests
 * up to `seen` are served. */
void ctr__round_ack(uint32_t seen)
{
    /* release: everything the round did, before the waiters see the ack
     * (pairs with the acquire load in ctr__collector_sync_for). */
    atomic_store_explicit(&ctr__session.ack_seq, seen, memory_order_release);
    ctr__real.syscall(SYS_futex, &ctr__session.ack_seq, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL,
                      0);
}

void ctr__round_run(int final)
{
    /* acquire: pairs with the release bump of a request in
     * ctr__collector_sync_for, so this round sees what was asked (sinks
     * attached or leaving). */
    uint32_t seen = atomic_load_explicit(&ctr__session.req_seq, memory_order_acquire);
    C.final = final;
    sinks_take(final);
    ctr__frames_refresh(0); /* code loaded or unloaded: what stack walks check */

    /* 1. Snapshot the chunks being filled. acquire on high: more than needed
     * (slot_get's add, thread.c, is relaxed); acquire on the state: as in
     * gen_close. */
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    if (high > ctr__threads.capacity)
        high = ctr__threads.capacity;
    if (grow_slots(high) != 0)
        high = C.nslots;
    C.high = high;
    for (uint32_t s = 0; s < high; s++) {
        struct ctr_thread *t = ctr__thread_at(s);
        C.snap[s] = NULL;
        if (!t || atomic_load_explicit(&t->state, memory_order_acquire) == CTR_SLOT_FREE)
            continue;
        /* acquire: pairs with the owner's release stores of cur in
         * chunk_start and chunk_detach (thread.c). */
        struct ctr_chunk *c = atomic_load_explicit(&t->cur, memory_order_acquire);
        if (c && c->epoch == C.epoch && c->thread_id == t->id)
            C.snap[s] = c;
    }
    gen_open();

    /* 2. Full chunks, oldest first. */
    uint32_t first = ctr_lfstack_take_all_fifo(&C.pool->full);
    for (uint32_t i = first; i != 0;) {
        struct ctr_chunk *c = ctr_lfstack_elem(&C.pool->full, i);
        i = ctr_lfstack_next(&C.pool->full, i);
        /* relaxed: a count for queue_chunk's kick; the chunks come through
         * the queue's own acquire. */
        atomic_fetch_sub_explicit(&C.pool->full_count, 1, memory_order_relaxed);
        write_chunk(c);
        retire_chunk(c);
    }

    /* 3. What idle and busy threads have committed so far. */
    for (uint32_t s = 0; s < high; s++)
        if (C.snap[s] && !C.snap[s]->done)
            write_chunk(C.snap[s]);

    /* 4. The generation's end. */
    gen_close(1);
    for (unsigned i = 0; i < C.nsinks; i++)
        if (C.leaving[i]) {
            if (C.sinks[i]->ops->detached)
                C.sinks[i]->ops->detached(C.sinks[i]);
            ctr__sink_remove(C.sinks[i]);
        }

    /* 5. Recycle. A final chunk's slot is free once its last batch is out. */
    for (size_t i = 0; i < C.ndone; i++) {
        struct ctr_chunk *c = C.done_chunks[i];
        if (c->final && c->slot < C.nslots)
            free_slot(c->slot);
        ctr__pool_put(C.pool, c);
    }
    C.ndone = 0;
    ctr__pool_prefault(C.pool);
    ctr__fd_period_tick();
    ctr__round_ack(seen);
}

/* ---------------------------------------------------------------------------
 * The session, as the collector's thread sets it up and ends it
 * ------------------------------------------------------------------------- */

int ctr__round_open(int level)
{
    return ctr__zstream_open(&C.z, level) != 0 ? -ENOMEM : 0;
}

void ctr__round_session(uint32_t epoch)
{
    /* relaxed: stored by this thread in ctr__session_begin (API lock held). */
    C.pool = atomic_load_explicit(&ctr__session.pool, memory_order_relaxed);
    C.gen = 0;
    C.total_dropped = 0;
    ctr__gen_session();
    C.last_clock = (struct ctr_clock_sample){ctr__session.start_ticks, ctr__session.start_mono,
                                             ctr__session.start_real};
    if (C.nslots) {
        memset(C.reported, 0, C.nslots * sizeof(*C.reported));
        /* A thread still live from an earlier session: its reading at
         * registration comes before this one began, and bounds nothing
         * wrongly (a longer span, with no running time before the start). */
        memset(C.cpu_started, 0, C.nslots);
    }
    /* relaxed: no thread waits on acks now (the API lock is held); the
     * collector sees it through the round lock or its creation. */
    atomic_store_explicit(&ctr__session.ack_seq,
                          atomic_load_explicit(&ctr__session.req_seq, memory_order_relaxed),
                          memory_order_relaxed);
    C.period_ns = (uint64_t)ctr__session.flush_ms * 1000000u;
    C.epoch = epoch;
}

uint32_t ctr__round_epoch(void)
{
    return C.epoch;
}

uint64_t ctr__round_period(void)
{
    return C.epoch ? C.period_ns : 0;
}

void ctr__round_prefault(void)
{
    ctr__pool_prefault(C.pool);
}

void ctr__round_stop(void)
{
    C.epoch = 0;
}

void ctr__round_forked(void)
{
    /* The collector thread is not in the child; a round it was running
     * left buffered records and chunks to recycle that are the parent's. */
    C.out.len = C.post.len = 0;
    C.out.oom = C.post.oom = 0;
    C.ndone = 0;
    C.nsinks = 0;
    ctr__gen_forked();
    C.epoch = 0;
}
