/* SPDX-License-Identifier: MIT */
/* internal.h - libctrace's private structures and the functions its files share.
 *
 * The moving parts (the file format they produce is format/FORMAT.md):
 *   - ctr_thread: one per traced thread, in a slab that is never unmapped.
 *     Its owner writes events into its current ctr_chunk with plain stores,
 *     inside a write section (see "Write sections" below).
 *   - ctr_chunk: fixed-size buffers from the session's pool. A full chunk goes
 *     to the collector through a lock-free queue; the collector also copies the
 *     committed prefix of chunks that are still being filled (idle threads).
 *   - ctr_intern: insert-only, lock-free tables (stacks, strings).
 *   - the collector thread turns all of that into generations (collector.c,
 *     genstate.c, with the records of records.c) and hands them to the sinks
 *     attached to it (sink.h): the trace file (filesink.c), the flight
 *     recorder (flightrec/, which tracer/ never calls); the tracer's own
 *     descriptors are kept apart (fdguard.c).
 * Internal non-static functions and globals carry the ctr__ prefix; types are
 * ctr_ (they never leave the library).
 */
#ifndef CTR_INTERNAL_H
#define CTR_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "ctrace_options.h"
#include "core/lfstack.h"
#include "core/perfring.h"
#include "core/lock.h"

#define CTR_LIKELY(x) __builtin_expect(!!(x), 1)
#define CTR_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CTR_EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------------------
 * Clock (clock.c)
 * ------------------------------------------------------------------------- */

/* 1: ticks are rdtsc cycles; 0: CLOCK_MONOTONIC ns. Chosen once per process
 * by ctr__clock_init (before any session is published) and never changed:
 * readers load it relaxed. */
extern _Atomic int ctr__clock_tsc;

/* Clock id (CLOCK_MONOTONIC, CLOCK_REALTIME) read now, in ns. */
uint64_t ctr__clock_ns(clockid_t id);
uint64_t ctr__ticks_slow(void); /* CLOCK_MONOTONIC in ns */
/* Chooses the tick source, once per process (later calls do nothing). */
void ctr__clock_init(void);
/* Ticks per nanosecond, measured once per process (1 ms): for thresholds
 * that must be in ticks from a session's first event. */
double ctr__clock_ticks_per_ns(void);
/* A (ticks, monotonic ns, realtime ns) triple read as close together as
 * possible: the calibration points of CLOCK records. */
void ctr__clock_sample(uint64_t *ticks, uint64_t *mono_ns, uint64_t *real_ns);

static inline uint64_t ctr__ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* relaxed: set once, before the first session's epoch is published
     * (ctr__clock_init, then the release in ctr__session_begin). */
    if (CTR_LIKELY(atomic_load_explicit(&ctr__clock_tsc, memory_order_relaxed))) {
        uint32_t lo, hi;
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#endif
    return ctr__ticks_slow();
}

/* ---------------------------------------------------------------------------
 * Chunks and the pool (pool.c)
 * ------------------------------------------------------------------------- */

/* A chunk's commit word packs the position and time of its last complete
 * event, so the collector reads both consistently with one load:
 *   bits 0..19  bytes of data committed (so data is < 1 MiB)
 *   bits 20..63 ticks of the last committed event minus chunk->base_ticks */
#define CTR_COMMIT_POS_BITS 20
#define CTR_COMMIT_POS_MASK ((1u << CTR_COMMIT_POS_BITS) - 1)
#define CTR_TICKS_WINDOW (1ull << (64 - CTR_COMMIT_POS_BITS))

struct ctr_chunk {
    struct ctr_lfnode node; /* pool free list or the collector's queue */
    /* Written by the owner before the chunk is published (release on
     * thread->cur or on the queue push), read-only afterwards. */
    uint64_t thread_id;
    uint64_t base_ticks;
    uint32_t slot;  /* owner's slot in the thread slab */
    uint32_t epoch; /* session the chunk was started in */
    uint8_t final;  /* last chunk of an exited thread */
    /* Owner: release store after each event. Collector: acquire load. */
    _Atomic uint64_t commit;
    /* Collector-private: how much of the chunk is already in the file. */
    uint32_t taken;
    uint64_t taken_ticks;
    uint8_t done;
    _Alignas(16) uint8_t data[];
};

/* A session's buffers: one anonymous mapping whose first page holds this
 * header and whose rest is cut into chunks. Writers reach it through
 * ctr__session.pool, loaded inside a write section; a pool is never
 * unmapped (see pool.c for when one is reused and when abandoned). */
struct ctr_pool {
    size_t bytes;       /* mapping size, header page included */
    size_t chunk_bytes; /* including the chunk header */
    uint32_t nchunks;
    uint32_t epoch;         /* the session it serves now */
    uint8_t *chunks;        /* chunk 0 */
    _Atomic uint32_t fresh; /* chunks [fresh, nchunks) never used yet */
    struct ctr_lfstack free_list;
    struct ctr_lfstack full; /* chunks handed to the collector */
    _Atomic uint32_t full_count;
    /* The collector's (ctr__pool_prefault): chunks [0, populated) are
     * mapped in; fresh as it last looked; whether the kernel refused. */
    uint32_t populated, fresh_seen;
    int populate_failed;
};

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it (EINVAL) */
#endif

/* The pool for a session numbered `epoch`: *pp itself when `reuse` and the
 * sizes match (reset: every chunk free), else a new mapping (*pp is then
 * abandoned, never unmapped). @return 0, or -errno from mmap. */
int ctr__pool_open(struct ctr_pool **pp, size_t pool_bytes, size_t chunk_bytes, uint32_t epoch,
                   int reuse);
/* Gives the chunks' pages back to the kernel (the header stays). */
void ctr__pool_release_pages(struct ctr_pool *p);
/* Collector: maps in the chunks threads will take fresh next (as many as
 * they took since the last call, at least a few), so that a thread's first
 * store into a chunk does not stop it for a page fault: that costs tens of
 * microseconds a page in a VM, on the request path. */
void ctr__pool_prefault(struct ctr_pool *p);
struct ctr_chunk *ctr__pool_get(struct ctr_pool *p); /* NULL when empty */
void ctr__pool_put(struct ctr_pool *p, struct ctr_chunk *c);
static inline size_t ctr__chunk_data_bytes(const struct ctr_pool *p)
{
    return p->chunk_bytes - offsetof(struct ctr_chunk, data);
}

/* ---------------------------------------------------------------------------
 * Threads (thread.c)
 * ------------------------------------------------------------------------- */

/* Who owns a slot when (the hand-off protocol; thread.c says it in full):
 *   FREE      on the free list; a registering thread pops it and owns it.
 *   LIVE      its thread's. The collector reads the shared fields only.
 *   EXITED    the thread is handing its last chunk to the collector; after
 *             the push the thread never touches the slot again, and the
 *             collector frees it once it has written that chunk.
 *   ORPHANED  the thread ended with no chunk to hand over and has made its
 *             last store; the collector (or the next session's start) frees
 *             it.
 * Slots are freed by the collector during a session, by the session's start
 * between sessions, and by an exiting thread itself when no session runs;
 * always under ctr__threads.reclaim, which readers of other threads' slots
 * (dumps, pthread_setname_np on another thread) hold too. */
enum ctr_slot_state { CTR_SLOT_FREE = 0, CTR_SLOT_LIVE, CTR_SLOT_EXITED, CTR_SLOT_ORPHANED };

/* What an open call mark (call_kind) stands for: a call the trace must hear
 * the end of however it ends (returned, cancelled, jumped out of). */
enum ctr_call_kind {
    CTR_CALL_NONE = 0,
    CTR_CALL_IO,      /* an I/O call: its span is written when it ends (long enough) */
    CTR_CALL_BLOCKED, /* a wait whose Block is written: its Unblock is owed */
};

/* Names remembered per thread (annotate.c): 1 << CTR_NAME_MEMO_SET_BITS
 * sets of CTR_NAME_MEMO_WAYS. */
#define CTR_NAME_MEMO_SET_BITS 3
#define CTR_NAME_MEMO_WAYS 4u
#define CTR_NAME_MEMO ((1u << CTR_NAME_MEMO_SET_BITS) * CTR_NAME_MEMO_WAYS)

struct ctr_thread {
    /* Owner-only, touched on every event. */
    uint8_t *pos, *end;      /* write cursor in chunk->data */
    uint64_t last_ticks;     /* time of the previous event */
    uint64_t base_ticks;     /* == chunk->base_ticks */
    struct ctr_chunk *chunk; /* owner's current chunk (or NULL) */
    uint32_t epoch;          /* session the chunk belongs to */
    uint32_t section_epoch;  /* session of the write section in progress */
    /* 1 while the owner writes an event (a write section, see below); the
     * owner stores it, relaxed on entry and release on exit; a stopping
     * session reads it (acquire) to wait for writers to leave. */
    _Atomic uint32_t writing;
    uint32_t internal;       /* > 0: the tracer itself is calling out; not traced */
    uintptr_t section_frame; /* frame address where the section began */
    uint64_t id;             /* trace thread id, unique per registration */
    uint64_t lost_pending;   /* drops not yet reported by a LOST event */
    /* The names this thread's annotations used last (annotate.c), so that
     * a name passed again costs a compare instead of a hash and a probe of
     * the shared table. Owner-only. */
    struct ctr_name_memo {
        const char *ptr;
        const struct ctr_intern_entry *entry;
    } names[CTR_NAME_MEMO];

    /* Shared with the collector. */
    _Atomic(struct ctr_chunk *) cur; /* owner: release on change */
    _Atomic uint64_t dropped;        /* owner (and its signal handlers) add, collector reads */
    _Atomic int state;               /* enum ctr_slot_state */

    /* Set at registration, before state becomes LIVE (release). */
    uintptr_t stack_lo, stack_hi; /* the thread's stack, [lo, hi) */
    pthread_t handle;
    int os_tid;
    uint64_t parent_id;
    uint32_t name_id; /* string id of the name at registration */
    uint32_t slot;

    /* The open call (wait.c): owner-only, set while a wrapper is inside the
     * real call. A signal handler's own calls leave a set mark alone. */
    uint8_t call_kind;    /* enum ctr_call_kind */
    uintptr_t call_frame; /* the wrapper's frame address */
    uintptr_t call_obj;   /* CTR_CALL_IO: the descriptor, for the span */
    /* CTR_CALL_IO also publishes the call for the collector, which reads it
     * for PENDING records and a trace's trailer (records.c, pending_calls):
     * a seqlock whose sequence is io_start (0: no call). The owner clears
     * io_start when a call ends (ctr__io_end); for the next one it makes a
     * release fence, writes the fields, then io_start (release). The reader
     * loads io_start (acquire), the fields, makes an acquire fence and loads
     * io_start again: if it changed, the fields may be another call's and
     * are discarded. The fields are relaxed atomics: they may change under
     * the reader, which is no data race. */
    _Atomic uint64_t io_start; /* ticks; 0: none */
    _Atomic uintptr_t io_pc;   /* the call site */
    _Atomic int32_t io_fd;
    _Atomic uint8_t io_reason, io_rules; /* io_rules: CTR_IO_BY_FD, CTR_IO_NB_FD */

    struct ctr_lfnode node; /* free-slot list; fields above are zeroed at registration */

    /* Kept across the slot's memset at registration, which first closes
     * the previous occupant's (ctr__cpu_close, ctr__perf_close). */
    struct ctr_perf_ring sched_ring; /* context switches (sched.c) */
    /* CPU sampling (cpu.c). */
    struct ctr_perf_ring cpu_ring; /* perf_event samples */
    size_t cpu_ring_data;          /* its data bytes, the stack copy and */
    unsigned cpu_ring_copy;        /* the period it was opened with (the */
    uint64_t cpu_ring_period;      /* opener's) */
    /* The collector's, reset by the opener before the ring is published:
     * whether the first sample came (and the real period was set); the CPU
     * ns of samples thinned since the last one kept; the first period
     * (cpu.c, "Phase"). */
    int cpu_phase;
    uint64_t cpu_credit, cpu_first;
    /* The session whose sampler this thread has: claimed by CAS, so that
     * the thread and the session's start never both open one. */
    _Atomic uint32_t cpu_epoch;
    /* The timer source's kernel timer id, valid in CTR_CPU_TIMER_ARMED;
     * every change goes through BUSY by CAS (cpu.c), so that the thread's
     * exit and the session's end never both delete it, and never delete an
     * id the program's own timer_create got since. */
    _Atomic int cpu_timer_state;
    int cpu_timer_id;
};

/* The thread slab: slots are recycled through free_slots (see above). */
struct ctr_threads {
    struct ctr_thread *slab;
    uint32_t capacity;
    _Atomic uint32_t high; /* slots [0, high) have been used */
    struct ctr_lfstack free_slots;
    _Atomic uint64_t next_id;
    _Atomic uint64_t unregistered; /* threads that found no slot */
    /* Threads between the start and the end of their exit hand-off
     * (ctr__thread_exit): a stopping session waits for it to be 0. */
    _Atomic uint32_t exiting;
    struct ctr_lock reclaim; /* see enum ctr_slot_state */
};

extern struct ctr_threads ctr__threads;

/* The calling thread's slot, NULL before registration; &ctr__thread_off when
 * the thread is exiting or is the collector (its `internal` is never 0). */
extern __thread struct ctr_thread *ctr__self __attribute__((tls_model("initial-exec")));
extern struct ctr_thread ctr__thread_off;

struct ctr_thread *ctr__thread_register(uint64_t id, uint64_t parent_id);
uint64_t ctr__thread_new_id(void);
/* The live slot of the thread with this handle, or NULL; its id and slot
 * into *id (the slot may be freed once this returns). */
int ctr__thread_find(pthread_t handle, uint64_t *id);
/* Puts a slot back on the free list, under ctr__threads.reclaim. */
void ctr__thread_free_slot(struct ctr_thread *t);
/* Before a session is published (trace_start): zeroes every slot's drop
 * count and current chunk, so nothing of an earlier session is reported or
 * read, and frees the slots of threads that ended meanwhile (not those of
 * EXITED threads when `keep_exited`: a writer of the last session was not
 * seen to leave and may still be handing its chunk over). */
void ctr__threads_reset_session(int keep_exited);
void ctr__threads_init(void);
/* In a forked child (alone), after the intern tables were emptied: frees
 * every slot but the calling thread's, and forgets what the parent's
 * threads held (locks, rings, chunks). */
void ctr__threads_forked(void);
/* Calls fn on every slot ever used, whatever its state. No lock: for what
 * no one else touches meanwhile (a session's start, under the API lock,
 * before the collector runs), or state that takes its own turns (CAS). */
void ctr__threads_each(void (*fn)(struct ctr_thread *t, void *ctx), void *ctx);
/* Waits until no thread is inside a write section or an exit hand-off,
 * after the session's epoch went to 0: a full memory barrier on every
 * thread of the process (membarrier), then a scan of the slots. Gives up
 * after timeout_ns (a signal handler that never returns, interrupting an
 * event). @return 0, or -ETIMEDOUT when some writer did not leave. */
int ctr__threads_quiesce(uint64_t timeout_ns);
/* At the end of the calling thread (its TSD destructor): closes its open
 * call, writes ThreadEnd and hands its last chunk to the collector. */
void ctr__thread_exit(struct ctr_thread *t);

/* ctr__internal_begin() / ctr__internal_end() : while between them, the
 * calling thread's calls to wrapped functions go straight to the real ones
 * (the tracer calling libunwind, creating its own thread). Nest properly. */
static inline struct ctr_thread *ctr__internal_begin(void)
{
    struct ctr_thread *saved = ctr__self;
    if (saved && saved != &ctr__thread_off)
        saved->internal++;
    else
        ctr__self = &ctr__thread_off;
    return saved;
}

static inline void ctr__internal_end(struct ctr_thread *saved)
{
    if (saved && saved != &ctr__thread_off)
        saved->internal--;
    else
        ctr__self = saved;
}

/* ---------------------------------------------------------------------------
 * Intern tables (intern.c): content-addressed, insert-only, lock-free.
 * ------------------------------------------------------------------------- */

struct ctr_intern {
    _Atomic uint32_t *slots; /* 0 = empty, else arena offset / 8 + 1 */
    uint32_t mask;
    uint8_t *arena;
    size_t arena_bytes;
    _Atomic size_t arena_used;
    _Atomic uint32_t next_id;   /* ids start at 1; 0 means "none" */
    _Atomic uint64_t overflows; /* lookups that found the table full */
    /* Arena position (as in slots) of each id's entry, 0 = none: stored by
     * the inserter before it publishes the entry (ctr__intern_entry). */
    _Atomic uint32_t *by_id;
    uint32_t max_ids;
};

/* An arena entry: filled before it is published, read-only after. */
struct ctr_intern_entry {
    uint64_t hash;
    uint32_t id;
    uint32_t len;
    uint8_t bytes[];
};

int ctr__intern_init(struct ctr_intern *t, uint32_t slots, size_t arena_bytes);
uint32_t ctr__intern(struct ctr_intern *t, const void *bytes, uint32_t len);
/* In a forked child (alone): t empty again, ids from 1. @return 0, or
 * -errno (t is left as it was). */
int ctr__intern_forked(struct ctr_intern *t);
/* The entry of `id`, which the caller read in an event or got from
 * ctr__intern (so it is published); NULL for 0 or an id never given out.
 * Any thread, no lock. */
const struct ctr_intern_entry *ctr__intern_entry(const struct ctr_intern *t, uint32_t id);
extern struct ctr_intern ctr__stacks;  /* bytes: uintptr_t PCs */
extern struct ctr_intern ctr__strings; /* bytes: characters, no NUL */

/* LTTng (lttng.c). ctr__lttng_entry sends a new table entry, once, by the
 * thread that added it (intern.c, while ctr__inline_mode is on). Under the
 * API lock: ctr__lttng_start loads the provider and attaches the LTTng sink
 * (0; -ELIBACC when no provider library loads; as ctr__sink_attach), which
 * ctr__lttng_sink gives for detaching (sink.h). */
struct ctr_sink;
void ctr__lttng_entry(const struct ctr_intern *table, const struct ctr_intern_entry *e);
int ctr__lttng_start(const struct trace_options *o);
/* Stops a running trace_start as the program exits, saying why if the file
 * could not be written whole (filesink.c). */
void ctr__trace_stop_at_exit(void);
/* The tracer's one-time set-up (api.c: wrappers, clock, threads' slab and
 * exit key, tables); again, a no-op. @return 0 or -errno. */
int ctr__init(void);
struct ctr_sink *ctr__lttng_sink(void);

/* ---------------------------------------------------------------------------
 * Stacks (stack.c)
 * ------------------------------------------------------------------------- */

/* CTR_STACK_MAX, the most frames of a stack, is stack_depth's max in the
 * options table (ctrace_options.h). */

/* Code in this section is the tracer's own wrapper layer: stack captures skip
 * the frames that return into it, so a stack starts at the user's call site
 * however the compiler inlined or tail-called the wrappers. */
#define CTR_WRAPPER_TEXT __attribute__((section("ctrace_text"), noinline))
extern const char __start_ctrace_text[] __attribute__((visibility("hidden")));
extern const char __stop_ctrace_text[] __attribute__((visibility("hidden")));

/* The id of the calling code's stack: return addresses from the innermost
 * one outside the wrapper layer (CTR_WRAPPER_TEXT, above) outward.
 * Must be called from CTR_WRAPPER_TEXT code. */
uint32_t ctr__stack_here(struct ctr_thread *t);
/* The id of the stack whose innermost frame is `frame` (a frame address of
 * the calling thread's stack, still whole): frame pointers only, wrapper
 * frames skipped as above. */
uint32_t ctr__stack_at(struct ctr_thread *t, uintptr_t frame);
/* The return address of the innermost frame outside the wrapper layer: the
 * user's call site, for a few nanoseconds (no interning). */
uintptr_t ctr__caller_pc(void);
/* Chooses the session's unwinding methods (CTRACE_UNWIND) and warms up
 * libunwind if they include it. Called at trace start, before the session is
 * published. */
void ctr__stack_init(void);
/* The TRACE_INFO flags (CTR_INFO_STACKS_*) of the session's methods. */
uint32_t ctr__stack_info(void);
/* In a forked child (alone): the code ranges to be remade; and libunwind is
 * not used again if a thread of the parent was inside it at the fork (its
 * locks may be held for ever). */
void ctr__stack_forked(void);

/* ---------------------------------------------------------------------------
 * Session state (api.c) and the collector (collector.c)
 * ------------------------------------------------------------------------- */

/* What a descriptor refers to, to check later that its number still does
 * (one closed by a raw syscall may have been reused by then): fdguard.c. */
struct ctr_fd_id {
    uint64_t dev, ino;
};

struct ctr_session {
    /* 0 when not tracing; the session number otherwise. Wrappers load it
     * relaxed to decide whether to trace at all; a write section loads it
     * (acquire) once as it begins and writes only into that session's pool
     * (see "Write sections" below). */
    _Atomic uint32_t epoch;
    uint32_t last_epoch;
    /* The session's buffers: set before the epoch is published; a writer
     * loads it in a section and checks the pool's epoch against its own. */
    _Atomic(struct ctr_pool *) pool;
    /* 1 when the last stop gave up waiting for a writer: the next session
     * must not reuse its pool or the slots of EXITED threads. */
    int tainted;
    unsigned flush_ms;
    int level;
    unsigned stack_depth;
    uint64_t start_ticks, start_mono, start_real; /* CLOCK at trace_start */
    unsigned io_min_ns;
    /* io_min_ns in ticks: from a quick calibration at the start, refined
     * by the collector from its clock samples. */
    _Atomic uint64_t io_min_ticks;
    _Atomic uint32_t wake;         /* futex word the collector sleeps on */
    _Atomic uint32_t collector_up; /* futex word: the collector reached its loop */
    _Atomic int stopping;
    _Atomic uint32_t done_seq; /* futex word: bumped as a session's final round ends */
    pthread_t collector;
    _Atomic uint64_t chunks_flushed;
    _Atomic uint64_t events_dropped;
    _Atomic uint64_t events_recorded; /* taken by the collector (genstate.c) */
    int sched;                        /* record context switches (sched.c) */
    unsigned cpu_hz;                  /* CPU samples a second, 0: none (cpu.c) */
    _Atomic uint64_t sched_failed;    /* threads whose perf event could not open */

    /* Requests: the API bumps req_seq (release) after setting what it asks
     * for (a sink attached or detached) and kicks; the collector reads
     * req_seq (acquire) as a round starts and stores it in ack_seq (release)
     * when that round is over, waking the waiters (futex on ack_seq). */
    _Atomic uint32_t req_seq, ack_seq;
};

extern struct ctr_session ctr__session;

/* Under the API lock: start feeds the session `epoch` to the collector
 * (creating its thread unless the control channel keeps it up); stop runs
 * its final round and waits for it (from the collector itself, a command
 * of the channel's: runs it). @return 0 or -errno. */
int ctr__collector_start(uint32_t epoch);
void ctr__collector_stop(void);
/* Under the API lock (control.c): keep the collector's thread up between
 * sessions, creating it if none runs (@return 0 or -errno); release lets it
 * end with the last session, or now if none runs (not from the collector
 * itself). */
int ctr__collector_keep(void);
void ctr__collector_release(void);
/* Whether the calling thread is the collector's. */
int ctr__collector_is_self(void);
void ctr__collector_kick(void); /* wake the collector early (queue filling) */
/* Around a fork (pthread_atfork, in the forking thread): prepare waits for
 * the collector's round to end and holds off the next; parent lets it go;
 * in the child, ctr__collector_forked frees it and forgets the round the
 * parent's collector was in. */
void ctr__collector_fork_prepare(void);
void ctr__collector_fork_parent(void);
void ctr__collector_forked(void);
/* Makes a request (see ctr_session) and waits until the collector has run
 * a round that saw it (on the collector itself: runs one). */
void ctr__collector_sync(void);
/* The same, waiting at most timeout_ns. @return 0, or -ETIMEDOUT. */
int ctr__collector_sync_for(uint64_t timeout_ns);

/* Session lifecycle (api.c), under the API lock: begin starts the buffers and
 * the collector with options o; end stops them (a final round first). */
void ctr__api_lock(void);
void ctr__api_unlock(void);
/* Takes the API lock if it is free (the collector, which must never wait
 * for it: its holder may be waiting for a round). @return 1 if taken. */
int ctr__api_trylock(void);

/* The control channel (control.c, CONTROL.md). open, under the API lock:
 * listens for `ctrace ctl`, and keeps the collector's thread up to serve it;
 * a session that a `trace` request begins takes o's options. Idempotent.
 * close, under the API lock (not from the collector): ends what a client
 * started, closes and removes the socket. @return 0 or -errno. */
int ctr__control_open(const struct trace_options *o);
void ctr__control_close(void);
/* The collector's side: wait sleeps up to timeout_ns (UINT64_MAX: no end)
 * until a kick or a client (@return 0; -1 when the channel is closed, and
 * nothing was done); serve runs what clients asked, between rounds. */
int ctr__control_wait(uint64_t timeout_ns);
void ctr__control_serve(void);
/* Wakes the collector if it sleeps in ctr__control_wait (through the
 * channel's eventfd, if one was made). Any thread. */
void ctr__control_kick(void);
/* In a forked child: the parent's channel is not the child's. */
void ctr__control_forked(void);
int ctr__session_begin(const struct trace_options *o);
void ctr__session_end(void);
/* The trace file's descriptor while trace_start's file is open, else -1
 * (filesink.c; for tests). */
int ctr__trace_fd(void);
/* At exit, the result of stopping the trace: said on stderr when it failed
 * and the session was started for `ctrace run` (autostart.c). */
void ctr__autostart_stopped(int rc);
/* o's options as a session uses them (ctrace_options.h): the default for
 * each 0, sizes rounded; path and fd copied. Into *r. @return 0, or -EINVAL
 * for an option out of its range or a pool of fewer than CTR_POOL_MIN_CHUNKS
 * chunks. */
int ctr__options_resolve(const struct trace_options *o, struct trace_options *r);
/* ctr__options_resolve without the result: 0 or -EINVAL. */
int ctr__options_check(const struct trace_options *o);
/* Fills o's numeric options from their CTRACE_* variables (unset: 0, the
 * default) and checks CTRACE_UNWIND (autostart.c). @return 0, or -EINVAL
 * after saying on stderr which variable is bad and why. */
int ctr__options_from_env(struct trace_options *o);

/* The 16 bytes a trace file starts with (FORMAT.md §2). */
void ctr__file_header(uint8_t h[CTR_FILE_HEADER_LEN]);

/* ---------------------------------------------------------------------------
 * Compressed frames (sink.c) and the records that describe the process
 * (records.c)
 * ------------------------------------------------------------------------- */

struct ctr_outbuf;

struct ctr_clock_sample {
    uint64_t ticks, mono, real;
};

/* A zstd compression stream: one thread's at a time. */
struct ctr_zstream {
    void *cctx;   /* ZSTD_CCtx */
    uint8_t *buf; /* the last output */
    size_t cap;
    size_t frame_in; /* bytes put into the frame still open (0: none is) */
};

/* Prepares z (zero-initialised or used before) for frames at `level`.
 * @return 0 or -ENOMEM. */
int ctr__zstream_open(struct ctr_zstream *z, int level);
void ctr__zstream_close(struct ctr_zstream *z);
/* Compresses n bytes at p into z's frame (opening one if none is open),
 * then either ends the frame (end_frame) or flushes it: the output so far
 * is then whole zstd blocks, which decode to every byte put so far, while
 * the frame stays open and later data can match what came before. The
 * output is in *out / *outn, which z owns until its next call. @return 0
 * or -errno (the open frame is then abandoned: the next call opens one). */
int ctr__zstream_put(struct ctr_zstream *z, const void *p, size_t n, int end_frame,
                     const void **out, size_t *outn);
/* One whole zstd frame of a's bytes (ctr__zstream_put, ended). */
int ctr__zstream_frame(struct ctr_zstream *z, const struct ctr_outbuf *a, const void **out,
                       size_t *outn);

/* The records of records.c, into o; any thread. */
/* TRACE_INFO. @return the string id of the executable's path (0: none). */
uint32_t ctr__rec_trace_info(struct ctr_outbuf *o);
void ctr__rec_clock(struct ctr_outbuf *o, const struct ctr_clock_sample *c);
void ctr__rec_mapping(struct ctr_outbuf *o, uint64_t id, uint64_t start, uint64_t limit,
                      uint64_t file_offset, uint64_t bias, uint32_t path, const uint8_t *build_id,
                      size_t build_id_len);
/* The STRING / STACK record of an intern table's entry. */
void ctr__rec_string(struct ctr_outbuf *o, const struct ctr_intern_entry *e);
void ctr__rec_stack(struct ctr_outbuf *o, const struct ctr_intern_entry *e);
/* t's THREAD record, with name (a string id). */
void ctr__rec_thread(struct ctr_outbuf *o, const struct ctr_thread *t, uint32_t name);
/* WAITING: the thread is inside a wait begun at `ticks` as a generation
 * begins. */
void ctr__rec_waiting(struct ctr_outbuf *o, uint64_t thread_id, uint64_t ticks, uint64_t reason,
                      uint64_t object, uint64_t stack);
/* A BATCH of one BLOCK event at `ticks`: a wait that began there. */
void ctr__rec_block(struct ctr_outbuf *o, uint64_t thread_id, uint64_t ticks, uint64_t reason,
                    uint64_t object, uint64_t stack);
/* For each thread inside an I/O call (or a wait for a child or a signal)
 * for io_min_ns or more: a PENDING record, which a reader uses only when the
 * trace has no END (the process died, by a signal, before it could close
 * the file); noted() is told each one's slot, thread and call site's stack
 * (records the generation must hold). Takes ctr__threads.reclaim. */
void ctr__rec_pending(struct ctr_outbuf *o,
                      void (*noted)(uint32_t slot, uint64_t thread_id, uint64_t stack));
/* What ends a complete trace, after its last generation (FORMAT.md §3.1):
 * for each thread inside such a call, the STACK of its call site and a
 * BATCH with one BLOCK at the call's start (a call that never returns, a
 * write nobody reads, is thus a wait still open at the end); a CLOCK of
 * now; END. Takes ctr__threads.reclaim. */
void ctr__rec_trailer(struct ctr_outbuf *o, uint64_t events_dropped);

/* ---------------------------------------------------------------------------
 * Context switches (sched.c)
 * ------------------------------------------------------------------------- */

/* A session that records switches begins: rings opened from now on have
 * data_bytes (a power of two) of data, at least a page. With `idle` (no
 * thread of an earlier session may still write, and no collector runs),
 * the rings that threads kept from an earlier session with another size are
 * closed, to be opened again at the new size. */
void ctr__sched_session(size_t data_bytes, int idle);
/* Owner, once per session: opens (or re-enables) t's context-switch ring. */
void ctr__sched_open(struct ctr_thread *t);
/* Stops t's ring recording (the session ended). */
void ctr__sched_disable(struct ctr_thread *t);
/* Collector: reads t's ring, calling on_switch for each switch at or after
 * since_ns and on_lost for records the kernel had to drop. */
void ctr__sched_drain(struct ctr_thread *t, uint64_t since_ns,
                      void (*on_switch)(void *ctx, uint64_t ns, int out, int preempted),
                      void (*on_lost)(void *ctx, uint64_t n), void *ctx);

/* ---------------------------------------------------------------------------
 * CPU samples (cpu.c, cpu_unwind.c)
 * ------------------------------------------------------------------------- */

/* A session begins (under the API lock, before it is published): samples
 * cpu_hz times a second of each thread's CPU time (0: none) with
 * perf_event, or with the timer when `timer`. flush_ms sizes the rings.
 * With `idle` (as for ctr__sched_session), the rings kept from an earlier
 * session at another rate or size are closed, to be opened anew. */
void ctr__cpu_session(unsigned cpu_hz, int timer, unsigned flush_ms, int idle);
/* The session is published: samplers for the threads alive now. */
void ctr__cpu_session_started(uint32_t epoch);
/* The session's epoch went to 0: the timers go (their signals may still
 * come, and find nothing to write). */
void ctr__cpu_session_ended(void);
/* Opens t's sampler for the session `epoch` unless one is open for it
 * (t's own thread at its first event, or the session's start). */
void ctr__cpu_open(struct ctr_thread *t, uint32_t epoch);
/* The calling thread ends: its timer goes. */
void ctr__cpu_thread_exit(struct ctr_thread *t);
/* A slot is reused: the previous occupant's sampler goes. */
void ctr__cpu_close(struct ctr_thread *t);
/* Collector: stops t's perf sampler (the session ended). */
void ctr__cpu_disable(struct ctr_thread *t);
/* Collector: t's perf samples since the last drain, at or after since_ns,
 * each to on_sample with its time, stack id and CPU ns. */
void ctr__cpu_drain(struct ctr_thread *t, uint64_t since_ns,
                    void (*on_sample)(void *ctx, uint64_t ns, uint64_t stack, uint64_t cpu_ns),
                    void *ctx);
/* Whether this session samples; its SAMPLING record's fields. */
int ctr__cpu_sampling(uint64_t *sources, uint64_t *period_ns, uint64_t *lost);
/* Counts samples lost (any thread, signal handlers included). */
void ctr__cpu_lost(uint64_t n);
/* The program sets SIGPROF's action (the sigaction and signal wrappers):
 * the timer source gives SIGPROF up for good, and its timers go. */
void ctr__cpu_sigprof_yield(void);
/* What the program reads back of SIGPROF: SIG_DFL where the timer
 * source's handler stands in for it. */
void ctr__cpu_sigprof_hide(struct sigaction *old);
/* In a forked child: the parent's samplers are gone (timers are not
 * inherited; ring descriptors went with the tracer's others). */
void ctr__cpu_forked(struct ctr_thread *t);

/* The stack of a sample: PCs, the interrupted instruction's plus one
 * first, from the registers and a copy of the stack (cpu_unwind.c). */
struct ctr_sample_regs {
    uint64_t ip, sp, bp;
    uint64_t regs[17]; /* the perf_event order of PERF_REG_X86_* up to R15 */
    int have_all;      /* regs[] holds every one of them */
};
/* Unwinds a perf sample in the collector: `stack` holds `len` bytes copied
 * from sp up. @return PCs into pcs[0..max). */
unsigned ctr__unwind_copy(const struct ctr_sample_regs *r, const uint8_t *stack, size_t len,
                          uintptr_t *pcs, unsigned max);
/* The id of the stack a signal interrupted on the calling thread, from its
 * handler's ucontext (stack.c). Async-signal-safe. */
uint32_t ctr__stack_signal(struct ctr_thread *t, const void *ucontext);
/* Interns PCs as a stack id (0 for none). */
uint32_t ctr__stack_intern(const uintptr_t *pcs, unsigned n);
/* Whether libunwind is the session's (CTRACE_UNWIND is not fp). */
int ctr__stack_uses_dwarf(void);

/* ---------------------------------------------------------------------------
 * Write sections: the one guarded path of every event (thread.c)
 *
 * A thread writes events only between ctr__write_begin() and
 * ctr__write_end() on its own slot. The section is what makes three things
 * safe:
 *   - Re-entry. A signal handler that interrupts a section and reaches a
 *     traced call finds `writing` set: its event is counted as dropped
 *     instead of being written into the half-written one.
 *   - Stopping. ctr__session_end stores epoch 0, then waits for every
 *     section to end (ctr__threads_quiesce), so no thread still writes into
 *     the pool when the final round reads it or the next session reuses it.
 *     The section's relaxed store of `writing` is ordered before its load of
 *     the epoch by the stopper's membarrier (which makes every running thread
 *     execute a full barrier), so either the stopper sees `writing` set or
 *     the writer sees epoch 0. The release store that ends a section pairs
 *     with the stopper's acquire load: the section's stores happen before
 *     whatever the stopper does next.
 *   - Sessions. The section remembers its epoch (section_epoch) and writes
 *     only into a chunk of that epoch and a pool whose epoch it is: a thread
 *     that a stop gave up waiting for cannot cross into the next session.
 * ------------------------------------------------------------------------- */

/* A signal handler interrupted t's section: its `events` are not written. */
void ctr__drop_nested(struct ctr_thread *t, unsigned events);

/* ctr__write_begin_n() : opens a write section on t, the calling thread's
 * own slot, for `events` events. @return 1 when they may be written (end
 * with ctr__write_end), 0 when not: tracing is off, or t is already writing
 * (a signal handler interrupted an event; these are counted as dropped). */
static inline int ctr__write_begin_n(struct ctr_thread *t, unsigned events)
{
    /* relaxed: only this thread (and its signal handlers, on this CPU) stores
     * `writing`; the stopper's side is described above. */
    if (CTR_UNLIKELY(atomic_load_explicit(&t->writing, memory_order_relaxed))) {
        ctr__drop_nested(t, events);
        return 0;
    }
    atomic_store_explicit(&t->writing, 1, memory_order_relaxed);
    /* Keeps the compiler from moving the store after the load below, or the
     * section's stores before the store (a handler on this thread must see
     * `writing` first); the CPU's side is the stopper's membarrier. */
    atomic_signal_fence(memory_order_seq_cst);
    /* acquire: pairs with the release store of the epoch in
     * ctr__session_begin (api.c), so the session's fields (pool, stack
     * depth, ...) are visible. */
    uint32_t epoch = atomic_load_explicit(&ctr__session.epoch, memory_order_acquire);
    if (CTR_UNLIKELY(epoch == 0)) {
        /* release: as in ctr__write_end. */
        atomic_store_explicit(&t->writing, 0, memory_order_release);
        return 0;
    }
    t->section_epoch = epoch;
    t->section_frame = (uintptr_t)__builtin_frame_address(0);
    return 1;
}

/* ctr__write_begin() : a section for one event. */
static inline int ctr__write_begin(struct ctr_thread *t)
{
    return ctr__write_begin_n(t, 1);
}

/* ctr__write_end() : closes the section ctr__write_begin opened. */
static inline void ctr__write_end(struct ctr_thread *t)
{
    /* release: every store of the section before a stopper's acquire load
     * that sees 0 (ctr__threads_quiesce); also a compiler barrier against
     * the handler case. */
    atomic_store_explicit(&t->writing, 0, memory_order_release);
}

/* ---------------------------------------------------------------------------
 * Writing events, inside a write section (fast path inline, slow path in
 * thread.c)
 * ------------------------------------------------------------------------- */

void ctr__emit_slow(struct ctr_thread *t, uint8_t type, uint64_t now, const uint64_t *args,
                    const void *payload, size_t len);

/* Where events go besides the chunks (sink.c sets it as sinks come and go):
 * OFF, only the chunks; ALSO, LTTng and the chunks; ONLY, LTTng alone (no
 * sink reads chunks). */
enum { CTR_INLINE_OFF = 0, CTR_INLINE_ALSO, CTR_INLINE_ONLY };
extern _Atomic int ctr__inline_mode;
/* Sends one event to LTTng as its thread writes it (lttng.c). */
void ctr__lttng_event(struct ctr_thread *t, uint8_t type, uint64_t now, const uint64_t *args,
                      const void *payload, size_t len);

/* Bytes ahead of the write cursor to prefetch (a few cache lines). */
#define CTR_PREFETCH_AHEAD 256

/* ctr__emit_chunk() : ctr__emit_payload() into t's chunk alone, with `now`
 * no earlier than the thread's last event. */
static inline void ctr__emit_chunk(struct ctr_thread *t, uint8_t type, uint64_t now,
                                   const uint64_t *args, const void *payload, size_t len)
{
    if (CTR_UNLIKELY((size_t)(t->end - t->pos) < CTR_MAX_EVENT_BYTES + len ||
                     now - t->base_ticks >= CTR_TICKS_WINDOW || t->epoch != t->section_epoch)) {
        ctr__emit_slow(t, type, now, args, payload, len);
        return;
    }
    uint8_t *p = ctr_encode_event(t->pos, type, now - t->last_ticks, args);
    /* The chunk's next lines are cold (the collector last read them, on
     * another CPU): ask for them ahead, so the store that first reaches one
     * does not stall the thread. */
    __builtin_prefetch(p + CTR_PREFETCH_AHEAD, 1);
    if (len) {
        memcpy(p, payload, len);
        p += len;
    }
    t->pos = p;
    t->last_ticks = now;
    /* Release: the event bytes above are visible to the collector before it
     * sees the position that covers them (pairs with the acquire load in
     * write_chunk, collector.c). */
    atomic_store_explicit(&t->chunk->commit,
                          ((now - t->base_ticks) << CTR_COMMIT_POS_BITS) |
                              (uint64_t)(p - t->chunk->data),
                          memory_order_release);
}

/* ctr__emit_payload() : appends event `type` at time `now` (ticks) with
 * args[0..nargs-2] (the arguments after the time delta, as many as
 * ctr_event_specs[type] says) to t's chunk, followed by `len` raw bytes
 * (for an event whose last argument is a LENGTH, which must equal len;
 * len <= CTR_MAX_EVENT_PAYLOAD), and sends it to LTTng when a sink takes
 * events as they are written (ctr__inline_mode). A time before the
 * thread's last event is written as that event's time. Owner thread only,
 * inside a write section. With `type` a constant and no payload,
 * ctr_encode_event's loop unrolls and the copy disappears. */
static inline void ctr__emit_payload(struct ctr_thread *t, uint8_t type, uint64_t now,
                                     const uint64_t *args, const void *payload, size_t len)
{
    /* Time never runs backwards within a thread, even if the TSCs of two
     * CPUs disagree a little after a migration. This also keeps
     * now - base_ticks from wrapping. */
    if (now < t->last_ticks)
        now = t->last_ticks;
    /* relaxed: a mode that changes only as sinks come and go; the event is
     * written by the rules of whichever mode it sees (ctr__lttng_event
     * loads what it needs with acquire). */
    int mode = atomic_load_explicit(&ctr__inline_mode, memory_order_relaxed);
    if (CTR_UNLIKELY(mode != CTR_INLINE_OFF)) {
        ctr__lttng_event(t, type, now, args, payload, len);
        if (mode == CTR_INLINE_ONLY) {
            t->last_ticks = now;
            return;
        }
    }
    ctr__emit_chunk(t, type, now, args, payload, len);
}

/* ctr__emit_at() : an event with no payload at time `now`. */
static inline void ctr__emit_at(struct ctr_thread *t, uint8_t type, uint64_t now,
                                const uint64_t *args)
{
    ctr__emit_payload(t, type, now, args, NULL, 0);
}

/* ctr__emit() : ctr__emit_at(), now. */
static inline void ctr__emit(struct ctr_thread *t, uint8_t type, const uint64_t *args)
{
    ctr__emit_at(t, type, ctr__ticks(), args);
}

/* ctr__emit_one() : one event in a section of its own (the annotations'
 * and thread events' way). */
static inline void ctr__emit_one(struct ctr_thread *t, uint8_t type, const uint64_t *args)
{
    if (ctr__write_begin(t)) {
        ctr__emit(t, type, args);
        ctr__write_end(t);
    }
}

/* ctr__tracing() : whether a session is on (one relaxed load). */
static inline int ctr__tracing(void)
{
    /* relaxed: a hint; whatever is then written checks again in a write
     * section (the acquire load in ctr__write_begin_n). */
    return atomic_load_explicit(&ctr__session.epoch, memory_order_relaxed) != 0;
}

/* ctr__self_traced() : the calling thread's slot if tracing is on and the
 * tracer is not itself calling out (ctr__internal_begin); registers the
 * thread on first use. NULL means: do not trace this call. A thread inside
 * a write section (a signal handler interrupted it) still gets its slot:
 * the section's check counts what it would have written. */
static inline struct ctr_thread *ctr__self_traced(void)
{
    /* relaxed: as in ctr__tracing. */
    if (CTR_LIKELY(atomic_load_explicit(&ctr__session.epoch, memory_order_relaxed) == 0))
        return NULL;
    struct ctr_thread *t = ctr__self;
    if (CTR_UNLIKELY(t == NULL))
        t = ctr__thread_register(ctr__thread_new_id(), 0);
    if (t == NULL || t->internal)
        return NULL;
    return t;
}

/* ctr__self_traced_keeping_errno() : ctr__self_traced(), keeping errno when
 * it registers the thread (a wrapper's call that succeeds must leave the
 * caller's errno as it was). */
static inline struct ctr_thread *ctr__self_traced_keeping_errno(void)
{
    if (CTR_UNLIKELY(ctr__self == NULL)) {
        int saved = errno;
        struct ctr_thread *t = ctr__self_traced();
        errno = saved;
        return t;
    }
    return ctr__self_traced();
}

/* ---------------------------------------------------------------------------
 * Waits, for the wrappers (wait.c). Each captures the stack of the code that
 * called the wrapper, so each must be called from CTR_WRAPPER_TEXT code.
 *
 * A wrapper inside the real call of a wait or an I/O call holds an open call
 * mark (call_kind, call_frame: its own frame). The trace hears the end of
 * the call however it ends: the wrapper clears the mark when the real call
 * returns; a cancellation unwinds through the wrapper's CTR_CALL_GUARD,
 * whose cleanup ends the call then; a longjmp out of a signal handler ends
 * it in the longjmp wrapper (interpose.c) when the jump leaves the wrapper's
 * frame; the thread's end ends whatever is left.
 * ------------------------------------------------------------------------- */

/* What ctr__wait_begin did, for ctr__wait_end. */
enum { CTR_WAIT_NONE = 0, CTR_WAIT_MARKED, CTR_WAIT_NESTED };

/* Block(reason, obj, stack) now: t starts a wait that may be long, in the
 * wrapper whose frame is `frame`, which holds the mark from now on unless
 * t's mark was already set. @return a CTR_WAIT_* token for ctr__wait_end
 * (CTR_WAIT_NONE: nothing written). */
int ctr__wait_begin(struct ctr_thread *t, enum ctr_reason reason, const void *obj, uintptr_t frame);
/* Unblock now, if ctr__wait_begin wrote the Block (token): the wait is over. */
void ctr__wait_end(struct ctr_thread *t, int token);
/* A wait that is only known once over (a call that may or may not have
 * blocked): Block at `start` ticks, Unblock now. */
void ctr__wait_span(struct ctr_thread *t, enum ctr_reason reason, const void *obj, uint64_t start);
/* Release(obj, stack) now: t let go of obj while other threads waited on it. */
void ctr__release(struct ctr_thread *t, const void *obj);
/* How an I/O call's descriptor decides its wait (ctr__io_begin's `rules`,
 * ctr__io_waited): */
#define CTR_IO_BY_FD 1 /* on a socket, the reason's NET_ variant */
#define CTR_IO_NB_FD 2 /* on a descriptor that cannot block, no wait at all */

/* Marks t as inside I/O call `reason` on fd, under `rules`, since `start`,
 * in the wrapper whose frame is `frame`, unless t's mark is already set (a
 * signal handler's call inside another). @return 1 if marked: end with
 * ctr__io_end. */
int ctr__io_begin(struct ctr_thread *t, uint64_t start, enum ctr_reason reason, int rules, int fd,
                  uintptr_t frame);

/* ctr__io_end() : the marked I/O call returned. */
static inline void ctr__io_end(struct ctr_thread *t)
{
    /* relaxed: the next call's fields are ordered after this by the
     * release fence in ctr__io_begin (see io_start in struct ctr_thread). */
    atomic_store_explicit(&t->io_start, 0, memory_order_relaxed);
    t->call_kind = CTR_CALL_NONE;
}
/* Ends t's open call now, as a call that did not return: an I/O call as a
 * wait from its start (if long enough), a wait with its Unblock. _jump: the
 * call's frames are still whole (a longjmp about to leave them), so the
 * wait gets its full stack; _abandon: they are gone (the thread's end), the
 * call site alone. */
void ctr__call_jump(struct ctr_thread *t);
void ctr__call_abandon(struct ctr_thread *t);

/* A wrapper's guard of its open call: `marked` once it set the mark. */
struct ctr_call_guard {
    struct ctr_thread *t;
    int marked;
};
/* Ends the guarded call: a cancellation unwinds through its wrapper. */
void ctr__call_unwound_slow(struct ctr_call_guard *g);

/* The guard's cleanup: runs when the wrapper's scope ends, normally (the
 * mark is cleared by then: a load and a branch) or because a cancellation
 * unwinds through it. */
static inline void ctr__call_unwound(struct ctr_call_guard *g)
{
    /* marked: this wrapper set the mark (a nested handler's wrapper did
     * not); still set: the call did not come back through the wrapper. */
    if (CTR_UNLIKELY(g->marked && g->t->call_kind != CTR_CALL_NONE))
        ctr__call_unwound_slow(g);
}

/* CTR_CALL_GUARD(name, t) : declares, in a wrapper around a real call, the
 * guard whose cleanup ends t's open call if the call is cancelled (the
 * wrapper files are built with -fexceptions so that cleanups run during a
 * cancellation's unwinding; a normal return costs a load and a branch). */
#define CTR_CALL_GUARD(name, thread) \
    struct ctr_call_guard name __attribute__((cleanup(ctr__call_unwound))) = {(thread), 0}

/* ---------------------------------------------------------------------------
 * Descriptor classes, for the I/O wrappers (fdclass.c). One byte per
 * descriptor says whether it is a socket, so a read or write picks its NET_
 * or plain wait reason without a syscall. See fdclass.c for the protocol.
 * ------------------------------------------------------------------------- */

enum ctr_fd_class {
    CTR_FD_UNKNOWN = 0,
    CTR_FD_SOCKET,
    CTR_FD_OTHER,
    CTR_FD_TRACER = 0x80, /* the tracer's own descriptor (fdguard.c) */
};
/* A program descriptor's byte: its class in the low bits, and the last
 * answer of ctr__fd_cannot_block (fdclass.c): known, what it was, and the
 * period (ctr__fd_period, 3 bits) it was asked in. */
#define CTR_FD_CLASS_MASK 0x03
#define CTR_FD_NB_KNOWN 0x04
#define CTR_FD_NB_CANNOT_BLOCK 0x08
#define CTR_FD_NB_PERIOD_SHIFT 4
#define CTR_FD_NB_PERIOD_MASK 0x07

#define CTR_FD_TABLE_FDS (1u << 20) /* descriptors the table covers (Linux's default nr_open) */

/* The table, NULL until a traced call first needs it; never unmapped. */
extern _Atomic(_Atomic uint8_t *) ctr__fd_table;

/* The table, mapped on first use; NULL if it cannot be. Keeps errno. */
_Atomic uint8_t *ctr__fd_table_map(void);
/* Maps the table and stores c for fd. Keeps errno. */
void ctr__fd_note_slow(int fd, enum ctr_fd_class c);
/* Whether fd is a socket: the cached class, else one fstat (whose answer is
 * cached). For the slow path of a recorded call only; may change errno. */
int ctr__fd_is_socket(int fd);
/* Whether a call on fd returns at once instead of waiting: fd is open with
 * O_NONBLOCK and is something that honours it (not a regular file or a block
 * device). Asking the kernel takes one to three syscalls; the answer is kept
 * for the rest of the collector's period, and given from there when
 * `kept_ok` (the fcntl that changes the flag is not wrapped: a kept answer
 * may be up to a period old). For the slow path of a recorded call only;
 * may change errno. */
int ctr__fd_cannot_block(int fd, int kept_ok);
/* Collector, each round: a new period, in which each descriptor's
 * O_NONBLOCK is asked of the kernel again. */
void ctr__fd_period_tick(void);

/* ctr__io_waited() : whether an I/O call under `rules` (CTR_IO_*) on fd,
 * long enough to record, waited: not when its descriptor's O_NONBLOCK
 * decides and the descriptor cannot block (it spent its time working in
 * the kernel; the thread was running). The one rule for a call that
 * returned (`returned`: the period's answer will do: at worst one call
 * lands in the other profile), one that did not (ctr__call_jump) and one
 * in progress (PENDING, a trace's trailer): for those two the kernel is
 * asked, since a stale answer could hide a thread blocked for good. May
 * change errno. */
static inline int ctr__io_waited(int rules, int fd, int returned)
{
    return !((rules & CTR_IO_NB_FD) && ctr__fd_cannot_block(fd, returned));
}

/* ctr__fd_note() : fd (if >= 0) now has class c. Once the table exists this
 * is a relaxed store whether tracing or not, so that it follows every
 * descriptor the wrappers see being created or closed; before that only a
 * traced call makes the table. Keeps errno. */
static inline void ctr__fd_note(int fd, enum ctr_fd_class c)
{
    if ((unsigned)fd >= CTR_FD_TABLE_FDS)
        return;
    /* acquire: pairs with the release CAS in ctr__fd_table_map (fdclass.c)
     * that published the mapping. */
    _Atomic uint8_t *tb = atomic_load_explicit(&ctr__fd_table, memory_order_acquire);
    if (CTR_LIKELY(tb != NULL))
        /* relaxed: the byte is self-contained; nothing is published by it. */
        atomic_store_explicit(&tb[fd], (uint8_t)c, memory_order_relaxed);
    else if (c != CTR_FD_UNKNOWN && ctr__tracing())
        ctr__fd_note_slow(fd, c);
}

/* ctr__fd_copy() : `to` is now a duplicate of `from` (dup, dup2, dup3). */
static inline void ctr__fd_copy(int from, int to)
{
    /* acquire and relaxed: as in ctr__fd_note. */
    _Atomic uint8_t *tb = atomic_load_explicit(&ctr__fd_table, memory_order_acquire);
    if (!tb || (unsigned)to >= CTR_FD_TABLE_FDS)
        return;
    uint8_t c = (unsigned)from < CTR_FD_TABLE_FDS
                    ? atomic_load_explicit(&tb[from], memory_order_relaxed)
                    : (uint8_t)CTR_FD_UNKNOWN;
    atomic_store_explicit(&tb[to], c, memory_order_relaxed);
}

/* ---------------------------------------------------------------------------
 * The tracer's own descriptors (fdguard.c): high, close-on-exec, and kept
 * apart from the program's. See fdguard.c for the rules and the protocol.
 * ------------------------------------------------------------------------- */

/* Adopts fd, a descriptor the tracer just made: moves it to the top of the
 * descriptor range, close-on-exec, closing fd; `holder` (or NULL) is where
 * the tracer keeps the number, updated if it must move again. Keeps errno.
 * @return the new descriptor, or -errno (fd is closed either way). */
int ctr__fd_adopt(int fd, _Atomic int *holder);
/* Adopts both ends of a pipe libunwind made (no holder: they are retired
 * together if the program takes one's number). @return 0 (fds updated) or
 * -errno (both closed). */
int ctr__fd_adopt_pipe(int fds[2]);
/* Closes a descriptor of the tracer's. @return 0 or -errno. */
int ctr__fd_close(int fd);
/* Whether fd is the tracer's (a relaxed load). */
int ctr__fd_is_tracers(int fd);
/* @return 0 (*id set) or -errno from fstat. Keeps errno. */
int ctr__fd_identify(int fd, struct ctr_fd_id *id);
/* Whether fd still refers to id: one fstat, no lock. Keeps errno. */
int ctr__fd_is(int fd, const struct ctr_fd_id *id);
/* Before the program makes fd a copy of another descriptor (dup2, dup3):
 * moves the tracer's descriptor fd, if it is one, elsewhere. */
void ctr__fd_evict(int fd);
/* close_range(first, last, flags) for the program, passing over the
 * tracer's descriptors. @return as close_range. */
int ctr__fd_close_range(unsigned first, unsigned last, int flags);
/* In a forked child: closes and forgets every tracer descriptor. */
void ctr__fd_forget_all(void);
/* Around any use of a tracer descriptor through its holder: the number
 * does not move meanwhile. use_begin waits out a move when `wait`, else
 * returns 0 at once (the caller must then not use it). @return 1 if held. */
int ctr__fd_use_begin(int wait);
void ctr__fd_use_end(void);

/* A file the tracer writes into by its own descriptor (the trace file it
 * opened, a dump's file, one a `ctrace ctl` client passed): adopted, and
 * checked before each write to be the file it was, so that a number the
 * program took over (a raw close, then an open) never gets trace bytes. */
struct ctr_owned_fd {
    _Atomic int fd; /* the holder (fdguard.c): a move updates it */
    struct ctr_fd_id id;
};
/* Adopts fd (ctr__fd_adopt) into o and notes what it refers to. Keeps
 * errno. @return 0, or -errno (fd closed; for fd < 0, errno's). */
int ctr__owned_adopt(struct ctr_owned_fd *o, int fd);
/* Writes buf whole into o's file (under a use, as fdguard.c asks).
 * @return 0; -EBADF when its number no longer refers to it; -errno. */
int ctr__owned_write(struct ctr_owned_fd *o, const void *buf, size_t len);
/* Closes o's descriptor. @return 0 or -errno. */
int ctr__owned_close(struct ctr_owned_fd *o);

/* The executable text of libunwind, once stack.c has loaded it: calls
 * returning there are libunwind's, which may touch only tracer
 * descriptors. Set once, before unwinding is published. */
extern _Atomic uintptr_t ctr__unwinder_lo, ctr__unwinder_hi;

/* ctr__from_unwinder() : whether return address ra is in libunwind. */
static inline int ctr__from_unwinder(const void *ra)
{
    /* relaxed: a call from libunwind comes after both stores (note_unwinder,
     * stack.c: the same thread, or through the acquire of backtrace_fn).
     * Any other thread may read them while they are stored, one new and one
     * still 0: such a pair (lo 0, or hi below lo) means "not libunwind",
     * else every return address below hi (or above lo) would be taken for
     * libunwind's, and the program's close() of its own descriptor refused. */
    uintptr_t lo = atomic_load_explicit(&ctr__unwinder_lo, memory_order_relaxed);
    uintptr_t hi = atomic_load_explicit(&ctr__unwinder_hi, memory_order_relaxed);
    return lo != 0 && lo < hi && (uintptr_t)ra - lo < hi - lo;
}

#endif /* CTR_INTERNAL_H */
