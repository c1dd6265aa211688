/* collector.c - the collector thread: turns per-thread chunks into the trace
 * file, one generation per flush.
 *
 * Every flush_ms (or earlier when the queue of full chunks reaches a quarter
 * of the pool) the collector runs one round, which is one generation:
 *   1. snapshot each live slot's current chunk (acquire load of thread->cur);
 *   2. take every full chunk from the queue, oldest first, and write what of
 *      it is not yet in the file;
 *   3. write the committed prefix of each snapshot chunk still being filled
 *      (idle and blocked threads), remembering how far it got (chunk->taken);
 *   4. write what the tables gained since the last round: threads, mappings,
 *      strings, stacks (after the batches, so every id a batch uses is in
 *      this generation or an earlier one), drop counts and a CLOCK record;
 *   5. compress (zstd) and write; return the full chunks to the pool and the
 *      slots of exited threads to the slab.
 * Step 1 comes before step 2 so that a chunk filled in between is still
 * written in order: a thread pushes its full chunk before it publishes the
 * next one, so any chunk older than a snapshot is already in the queue.
 * Chunks and slots are recycled only at the end of the round, so no snapshot
 * can point at a chunk another thread has started to reuse.
 *
 * The collector itself is never traced: its ctr__self is the "off" slot.
 */
#include "frames.h"
#include "internal.h"
#include "interpose.h"
#include "maps.h"
#include "record.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Above this much buffered output a round writes a frame before going on, so
 * a burst never needs the whole pool twice over in memory. */
#define FRAME_TARGET (4u << 20)

struct emitted_map {
    uint64_t start, limit;
};

static struct collector {
    struct ctr_outbuf ev;  /* this generation's events: for every sink */
    struct ctr_outbuf tab; /* its table records: for the file only */
    struct ctr_outbuf *dst; /* where put_uv and friends write */
    uint32_t epoch;
    struct ctr_pool *pool; /* the session's (collector_start) */
    uint64_t gen;
    size_t stack_cursor, string_cursor;
    /* Per slot of the thread slab, grown as the slab's high mark grows. */
    uint32_t nslots;
    struct ctr_chunk **snap;
    uint64_t *known_id;   /* thread id whose THREAD record was written */
    uint64_t *reported;   /* drops already counted in total_dropped */
    /* Recycled at the end of the round. */
    struct ctr_chunk **done_chunks;
    size_t ndone, done_cap;
    uint64_t maps_version;
    struct emitted_map *maps;
    size_t nmaps, maps_cap;
    uint64_t total_dropped;
    /* Sinks as this thread runs them (the API's wishes are in ctr__session). */
    int file_on, file_first, fr_on;
    struct ctr_clock_sample last_clock; /* the previous generation's end */
} C;

/* ---------------------------------------------------------------------------
 * Records into the current buffer (record.h)
 * ------------------------------------------------------------------------- */

static void put_uv(uint64_t v) { ctr_out_uv(C.dst, v); }
static void put_bytes(const void *b, size_t n) { ctr_out_bytes(C.dst, b, n); }
static size_t rec_begin(uint8_t kind) { return ctr_rec_begin(C.dst, kind); }
static void rec_end(size_t body) { ctr_rec_end(C.dst, body); }
#define REC(kind, ...) CTR_REC(C.dst, kind, __VA_ARGS__)

/* ---------------------------------------------------------------------------
 * Frames to the sinks (the writing and compressing are sink.c's)
 * ------------------------------------------------------------------------- */

/* Compresses what the round has so far and hands it to the sinks: the file
 * gets events and tables in one frame, the flight recorder's window the
 * events alone (dumps carry whole tables of their own). */
static void flush_frame(void)
{
    const void *z;
    size_t zn;
    int file = C.file_on && !atomic_load_explicit(&ctr__session.write_error, memory_order_relaxed);
    if (C.ev.oom || C.tab.oom) {
        int zero = 0;
        atomic_compare_exchange_strong(&ctr__session.write_error, &zero, -ENOMEM);
    } else if (C.fr_on && C.ev.len &&
               ctr__sink_compress(&C.ev, NULL, &z, &zn) == 0) {
        ctr__fr_frame(z, zn);
        /* With no tables the same frame serves the file. */
        if (file && C.tab.len == 0)
            ctr__sink_write(z, zn), file = 0;
    }
    if (file && (C.ev.len || C.tab.len) && ctr__sink_compress(&C.ev, &C.tab, &z, &zn) == 0)
        ctr__sink_write(z, zn);
    C.ev.len = C.tab.len = 0;
    C.ev.oom = C.tab.oom = 0;
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
    uint64_t *k = realloc(C.known_id, cap * sizeof(*k));
    if (k)
        C.known_id = k;
    uint64_t *r = realloc(C.reported, cap * sizeof(*r));
    if (r)
        C.reported = r;
    if (!s || !k || !r)
        return -ENOMEM;
    memset(C.known_id + C.nslots, 0, (cap - C.nslots) * sizeof(*k));
    memset(C.reported + C.nslots, 0, (cap - C.nslots) * sizeof(*r));
    C.nslots = cap;
    return 0;
}

/* Raw bytes after which a round writes a frame before going on: small
 * enough for the flight recorder's window to hold several, compressed. */
static size_t frame_target(void)
{
    if (!C.fr_on)
        return FRAME_TARGET;
    size_t quarter = (size_t)(ctr__session.fr_max_bytes / 4);
    return quarter < (64u << 10) ? (64u << 10) : quarter < FRAME_TARGET ? quarter : FRAME_TARGET;
}

/* Writes the part of c committed since the last time as a BATCH record. */
static void write_chunk(struct ctr_chunk *c)
{
    /* acquire: pairs with the owner's release store after each event, so the
     * bytes up to pos are complete. */
    uint64_t commit = atomic_load_explicit(&c->commit, memory_order_acquire);
    uint32_t pos = (uint32_t)(commit & CTR_COMMIT_POS_MASK);
    if (pos <= c->taken)
        return;
    size_t b = rec_begin(CTR_REC_BATCH);
    put_uv(c->thread_id);
    put_uv(c->taken_ticks);
    put_bytes(c->data + c->taken, pos - c->taken);
    rec_end(b);
    if (C.fr_on)
        ctr__fr_observe(c->slot, c->thread_id, c->taken_ticks, c->data + c->taken, pos - c->taken);
    c->taken = pos;
    c->taken_ticks = c->base_ticks + (commit >> CTR_COMMIT_POS_BITS);
    atomic_fetch_add_explicit(&ctr__session.chunks_flushed, 1, memory_order_relaxed);
    if (C.ev.len >= frame_target())
        flush_frame();
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
    ctr__fr_forget(slot);
    C.known_id[slot] = 0;
    C.reported[slot] = 0;
    ctr__thread_free_slot(&ctr__threads.slab[slot]);
}

/* A THREAD record for the thread in slot, unless already written (force:
 * write it anyway, e.g. at its exit, so a window holding its last events
 * has its name). */
static void write_thread_record(uint32_t slot, int force)
{
    struct ctr_thread *t = &ctr__threads.slab[slot];
    if (C.known_id[slot] == t->id && !force)
        return;
    ctr__rec_thread(C.dst, t, ctr__fr_thread_name(slot, t->name_id));
    C.known_id[slot] = t->id;
}

/* The file's mappings: each once, however often the objects are rescanned. */
static void visit_map(void *ctx, const struct ctr_map_info *m)
{
    (void)ctx;
    for (size_t i = 0; i < C.nmaps; i++)
        if (C.maps[i].start == m->start && C.maps[i].limit == m->limit)
            return;
    if (C.nmaps == C.maps_cap) {
        size_t cap = C.maps_cap ? C.maps_cap * 2 : 64;
        struct emitted_map *e = realloc(C.maps, cap * sizeof(*e));
        if (!e)
            return;
        C.maps = e;
        C.maps_cap = cap;
    }
    C.maps[C.nmaps++] = (struct emitted_map){m->start, m->limit};
    ctr__rec_mapping(C.dst, C.nmaps, m);
}

/* Context switches of one thread, from its ring to a SWITCHES record
 * (FORMAT.md §3), begun at the first switch. */
struct switch_acc {
    uint64_t last_ns, lost;
    size_t body; /* where the record's body starts in C.ev, 0 until begun */
    uint64_t thread_id;
};

static void switches_event(struct switch_acc *a, uint8_t type, uint64_t ns, int nargs, uint64_t arg)
{
    if (!a->body) {
        a->body = rec_begin(CTR_REC_SWITCHES);
        put_uv(a->thread_id);
        put_uv(a->last_ns);
    }
    uint8_t ev[1 + 2 * CTR_VARINT_MAX], *p = ev;
    *p++ = type;
    p = ctr_put_uvarint(p, ns > a->last_ns ? ns - a->last_ns : 0);
    if (nargs)
        p = ctr_put_uvarint(p, arg);
    put_bytes(ev, (size_t)(p - ev));
    if (ns > a->last_ns)
        a->last_ns = ns;
}

static void on_switch(void *ctx, uint64_t ns, int out, int preempted)
{
    if (out)
        switches_event(ctx, CTR_EV_SWITCH_OUT, ns, 1, (uint64_t)preempted);
    else
        switches_event(ctx, CTR_EV_SWITCH_IN, ns, 0, 0);
}

static void on_switch_lost(void *ctx, uint64_t n)
{
    struct switch_acc *a = ctx;
    a->lost += n;
}

static void write_switches(struct ctr_thread *t)
{
    struct switch_acc a = {ctr__session.start_mono, 0, 0, t->id};
    ctr__sched_drain(t, ctr__session.start_mono, on_switch, on_switch_lost, &a);
    if (a.lost)
        switches_event(&a, CTR_EV_LOST, a.last_ns, 1, a.lost); /* the kernel's ring was full */
    if (a.body)
        rec_end(a.body);
}

static void write_clock(void)
{
    struct ctr_clock_sample c;
    ctr__clock_sample(&c.ticks, &c.mono, &c.real);
    ctr__rec_clock(C.dst, &c);
    C.last_clock = c;
    /* Now that two samples are some way apart, express the I/O threshold in
     * real ticks. */
    const struct ctr_session *s = &ctr__session;
    if (c.mono > s->start_mono + 1000000 && c.ticks > s->start_ticks) {
        double per_ns = (double)(c.ticks - s->start_ticks) / (double)(c.mono - s->start_mono);
        atomic_store_explicit(&ctr__session.io_min_ticks, (uint64_t)(s->io_min_ns * per_ns),
                              memory_order_relaxed);
    }
}

/* Brings the sinks in line with what the API wants, as a round starts. */
static void sinks_update(int final)
{
    int file = atomic_load_explicit(&ctr__session.file_want, memory_order_acquire);
    int fr = atomic_load_explicit(&ctr__session.fr_want, memory_order_acquire) && !final;
    if (file && !C.file_on) {
        /* A new file needs every table entry and every thread again. */
        C.file_on = C.file_first = 1;
        C.stack_cursor = C.string_cursor = 0;
        C.nmaps = 0;
        if (C.nslots)
            memset(C.known_id, 0, C.nslots * sizeof(*C.known_id));
    }
    if (fr && !C.fr_on)
        C.fr_on = 1;
    else if (!fr && C.fr_on) {
        ctr__fr_clear();
        C.fr_on = 0;
    }
}

/* A dump asked for by the latency trigger, once the round's generation is
 * in the window (flightrec_dump writes its own, from its caller's thread). */
static void serve_trigger(void)
{
    if (atomic_exchange_explicit(&ctr__session.trigger_pending, 0, memory_order_acq_rel) &&
        C.fr_on) {
        char path[4096 + 64];
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        uint64_t n = atomic_load(&ctr__session.dumps_written) + atomic_load(&ctr__session.dumps_failed);
        snprintf(path, sizeof(path), "%s/ctrace-%d-%lld-%llu.bin", ctr__session.trigger_dir,
                 (int)getpid(), (long long)now.tv_sec, (unsigned long long)n);
        int rc = ctr__fr_dump_file(
            ctr__real.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
        atomic_fetch_add(rc == 0 ? &ctr__session.dumps_written : &ctr__session.dumps_failed, 1);
    }
}

static void round_run(int final)
{
    /* acquire: pairs with the release bump of a request, so this round sees
     * what was asked (sinks, dumps). */
    uint32_t seen = atomic_load_explicit(&ctr__session.req_seq, memory_order_acquire);
    sinks_update(final);
    ctr__frames_refresh(0); /* code loaded or unloaded: what stack walks check */
    int file_closing = C.file_on && (final || !atomic_load(&ctr__session.file_want));
    C.dst = &C.ev;
    REC(CTR_REC_GEN_BEGIN, C.gen);
    if (C.fr_on)
        ctr__fr_gen_begin(C.gen, &C.last_clock);
    if (C.file_first) {
        ctr__rec_trace_info(&C.tab);
        ctr__rec_clock(&C.tab, &C.last_clock);
        C.file_first = 0;
    }

    /* 1. Snapshot the chunks being filled. */
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    if (high > ctr__threads.capacity)
        high = ctr__threads.capacity;
    if (grow_slots(high) != 0)
        high = C.nslots;
    for (uint32_t s = 0; s < high; s++) {
        struct ctr_thread *t = &ctr__threads.slab[s];
        C.snap[s] = NULL;
        if (atomic_load_explicit(&t->state, memory_order_acquire) == CTR_SLOT_FREE)
            continue;
        /* acquire: pairs with the owner's release in chunk_start. */
        struct ctr_chunk *c = atomic_load_explicit(&t->cur, memory_order_acquire);
        if (c && c->epoch == C.epoch && c->thread_id == t->id)
            C.snap[s] = c;
    }

    /* 2. Full chunks, oldest first. */
    uint32_t first = ctr_lfstack_take_all_fifo(&C.pool->full);
    for (uint32_t i = first; i != 0;) {
        struct ctr_chunk *c = ctr_lfstack_elem(&C.pool->full, i);
        i = ctr_lfstack_next(&C.pool->full, i);
        atomic_fetch_sub_explicit(&C.pool->full_count, 1, memory_order_relaxed);
        write_chunk(c);
        if (c->final && c->slot < C.nslots)
            write_thread_record(c->slot, 1);
        retire_chunk(c);
    }

    /* 3. What idle and busy threads have committed so far. */
    for (uint32_t s = 0; s < high; s++)
        if (C.snap[s] && !C.snap[s]->done)
            write_chunk(C.snap[s]);

    /* The end of the file: threads stuck in a call that may never return
     * are waiting, not running (before the tables: their stacks are new). */
    if (file_closing) {
        ctr_lock_acquire(&ctr__threads.reclaim);
        ctr__pending_io(&C.ev);
        ctr_lock_release(&ctr__threads.reclaim);
    }

    /* 4. Threads and counters; then, for the file, what the tables gained. */
    for (uint32_t s = 0; s < high; s++) {
        struct ctr_thread *t = &ctr__threads.slab[s];
        int state = atomic_load_explicit(&t->state, memory_order_acquire);
        if (state == CTR_SLOT_FREE)
            continue;
        write_thread_record(s, 0);
        uint64_t d = atomic_load_explicit(&t->dropped, memory_order_relaxed);
        if (d > C.reported[s]) {
            C.total_dropped += d - C.reported[s];
            C.reported[s] = d;
            REC(CTR_REC_DROPS, t->id, d);
        }
        if (ctr__session.sched) {
            write_switches(t);
            if (final)
                ctr__sched_disable(t);
        }
        /* Exited with no chunk to hand over: nothing more will come. */
        if (state == CTR_SLOT_ORPHANED)
            free_slot(s);
    }
    if (C.file_on) {
        C.dst = &C.tab;
        /* A process killed by a signal never closes its file: what each
         * thread is inside of now, in case this is the last generation
         * (before the tables: the call sites are new stacks). */
        if (!file_closing) {
            ctr_lock_acquire(&ctr__threads.reclaim);
            ctr__rec_pending(&C.tab);
            ctr_lock_release(&ctr__threads.reclaim);
        }
        uint64_t mv = ctr__maps_version();
        if (C.nmaps == 0 || mv != C.maps_version) {
            C.maps_version = mv;
            ctr__maps_scan(visit_map, NULL);
        }
        ctr__rec_strings(C.dst, &C.string_cursor, 0);
        ctr__rec_stacks(C.dst, &C.stack_cursor, 0);
        C.dst = &C.ev;
    }
    write_clock();
    REC(CTR_REC_GEN_END, C.gen);
    atomic_store_explicit(&ctr__session.events_dropped, C.total_dropped, memory_order_relaxed);
    if (file_closing) {
        C.dst = &C.tab;
        REC(CTR_REC_END, C.total_dropped,
            atomic_load_explicit(&ctr__stacks.overflows, memory_order_relaxed),
            atomic_load_explicit(&ctr__threads.unregistered, memory_order_relaxed),
            atomic_load_explicit(&ctr__session.sched_failed, memory_order_relaxed));
        C.dst = &C.ev;
    }
    flush_frame();
    if (C.fr_on)
        ctr__fr_gen_end(C.last_clock.mono);
    if (file_closing)
        C.file_on = 0;
    C.gen++;

    /* 5. Recycle. A final chunk's slot is free once its last batch is out. */
    for (size_t i = 0; i < C.ndone; i++) {
        struct ctr_chunk *c = C.done_chunks[i];
        if (c->final && c->slot < C.nslots)
            free_slot(c->slot);
        ctr__pool_put(C.pool, c);
    }
    C.ndone = 0;

    serve_trigger();
    /* release: everything this round did, before the waiters see the ack. */
    atomic_store_explicit(&ctr__session.ack_seq, seen, memory_order_release);
    syscall(SYS_futex, &ctr__session.ack_seq, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* ---------------------------------------------------------------------------
 * The thread
 * ------------------------------------------------------------------------- */

/* Held by the collector for each round, and by a thread that forks from
 * just before to just after the fork (ctr__collector_fork_prepare, _parent):
 * so a child never inherits a lock the collector held in the middle of a
 * round, above all its allocator's (GCC 12's AddressSanitizer allocator is
 * not fork-safe: a daemon's child hung in its first calloc). A fork may
 * wait for one round. */
static struct ctr_lock round_lock;

static void round_locked(int final)
{
    ctr_lock_acquire(&round_lock);
    round_run(final);
    ctr_lock_release(&round_lock);
}

void ctr__collector_fork_prepare(void)
{
    ctr_lock_acquire(&round_lock);
}

void ctr__collector_fork_parent(void)
{
    ctr_lock_release(&round_lock);
}

static void *collector_main(void *arg)
{
    (void)arg;
    ctr__self = &ctr__thread_off;
    /* release: the starter may go on (pairs with its acquire load). */
    atomic_store_explicit(&ctr__session.collector_up, 1, memory_order_release);
    syscall(SYS_futex, &ctr__session.collector_up, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    while (!atomic_load_explicit(&ctr__session.stopping, memory_order_acquire)) {
        struct timespec ts = {ctr__session.flush_ms / 1000,
                              (long)(ctr__session.flush_ms % 1000) * 1000000L};
        /* Sleeps until the timeout or a kick (wake != 0). */
        if (atomic_load_explicit(&ctr__session.wake, memory_order_acquire) == 0)
            syscall(SYS_futex, &ctr__session.wake, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
        atomic_store_explicit(&ctr__session.wake, 0, memory_order_relaxed);
        if (atomic_load_explicit(&ctr__session.stopping, memory_order_acquire))
            break;
        round_locked(0);
    }
    round_locked(1);
    return NULL;
}

int ctr__collector_sync_for(uint64_t timeout_ns)
{
    /* release: what the caller set up before, for the round that sees it. */
    uint32_t want = atomic_fetch_add_explicit(&ctr__session.req_seq, 1, memory_order_release) + 1;
    ctr__collector_kick();
    struct timespec now, end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += (time_t)(timeout_ns / 1000000000u);
    end.tv_nsec += (long)(timeout_ns % 1000000000u);
    if (end.tv_nsec >= 1000000000L)
        end.tv_sec++, end.tv_nsec -= 1000000000L;
    for (;;) {
        /* acquire: pairs with the round's release store of ack_seq. */
        uint32_t ack = atomic_load_explicit(&ctr__session.ack_seq, memory_order_acquire);
        if ((int32_t)(ack - want) >= 0)
            return 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        struct timespec left = {end.tv_sec - now.tv_sec, end.tv_nsec - now.tv_nsec};
        if (left.tv_nsec < 0)
            left.tv_sec--, left.tv_nsec += 1000000000L;
        if (left.tv_sec < 0)
            return -ETIMEDOUT;
        syscall(SYS_futex, &ctr__session.ack_seq, FUTEX_WAIT_PRIVATE, ack, &left, NULL, 0);
    }
}

void ctr__collector_sync(void)
{
    ctr__collector_sync_for(UINT64_MAX / 2);
}

void ctr__collector_kick(void)
{
    atomic_store_explicit(&ctr__session.wake, 1, memory_order_release);
    syscall(SYS_futex, &ctr__session.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void ctr__collector_forked(void)
{
    /* The collector thread is not in the child; a round it was running
     * left buffered records and chunks to recycle that are the parent's. */
    C.ev.len = C.tab.len = 0;
    C.ev.oom = C.tab.oom = 0;
    C.ndone = 0;
    C.file_on = C.file_first = C.fr_on = 0;
    atomic_store_explicit(&round_lock.word, 0, memory_order_relaxed); /* the forker's */
    atomic_store_explicit(&ctr__session.stopping, 0, memory_order_relaxed);
    atomic_store_explicit(&ctr__session.wake, 0, memory_order_relaxed);
}

/* pthread_create and pthread_join as the program would reach them: through
 * whatever interposes them before libctrace (ThreadSanitizer's and
 * AddressSanitizer's interceptors must see the collector thread, or they
 * crash on it), then through our wrappers, which pass the calls of a thread
 * marked internal straight to libc. */
typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*join_fn)(pthread_t, void **);

int ctr__collector_start(uint32_t epoch)
{
    ctr__stack_init(); /* libunwind's costly first call, before any wait */
    if (ctr__sink_begin(ctr__session.level) != 0)
        return -ENOMEM;
    C.epoch = epoch;
    C.pool = atomic_load_explicit(&ctr__session.pool, memory_order_relaxed);
    C.gen = 0;
    C.total_dropped = 0;
    C.file_on = C.fr_on = 0; /* the first round starts the sinks wanted */
    C.last_clock = (struct ctr_clock_sample){ctr__session.start_ticks, ctr__session.start_mono,
                                             ctr__session.start_real};
    if (C.nslots)
        memset(C.reported, 0, C.nslots * sizeof(*C.reported));
    atomic_store(&ctr__session.ack_seq, atomic_load(&ctr__session.req_seq));
    atomic_store(&ctr__session.stopping, 0);
    atomic_store(&ctr__session.wake, 0);
    atomic_store(&ctr__session.collector_up, 0);
    create_fn create;
    *(void **)&create = ctr__dlsym_real(RTLD_DEFAULT, "pthread_create");
    if (!create)
        create = ctr__real.pthread_create;
    /* Every signal blocked in the new thread (it inherits this mask): the
     * program's signals are for the program's threads (a sigwait thread,
     * a handler that must run where it expects). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    struct ctr_thread *saved = ctr__internal_begin();
    int rc = create(&ctr__session.collector, NULL, collector_main, NULL);
    ctr__internal_end(saved);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* The collector's start (its thread's set-up in libc and in a
     * sanitizer's runtime, which allocate) is over before the program goes
     * on: a program that forks at once (a daemon) must not catch it there
     * holding its allocator's lock, which the child would wait on for ever.
     * At most a second: a trace_start in a constructor that dlopen runs
     * holds the loader's lock, which the new thread's first access to our
     * thread-local data may want. acquire: pairs with the collector's
     * release store. */
    int saved_errno = errno;
    for (int i = 0; rc == 0 && i < 100; i++) {
        if (atomic_load_explicit(&ctr__session.collector_up, memory_order_acquire))
            break;
        struct timespec tick = {0, 10 * 1000 * 1000};
        syscall(SYS_futex, &ctr__session.collector_up, FUTEX_WAIT_PRIVATE, 0, &tick, NULL, 0);
    }
    errno = saved_errno;
    return -rc;
}

void ctr__collector_stop(void)
{
    atomic_store_explicit(&ctr__session.stopping, 1, memory_order_release);
    ctr__collector_kick();
    join_fn join;
    *(void **)&join = ctr__dlsym_real(RTLD_DEFAULT, "pthread_join");
    if (!join)
        join = ctr__real.pthread_join;
    struct ctr_thread *saved = ctr__internal_begin();
    join(ctr__session.collector, NULL);
    ctr__internal_end(saved);
}
