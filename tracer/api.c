/* SPDX-License-Identifier: MIT */
/* api.c - the tracing session that the sinks (sink.h: the trace file's
 * trace_start, the flight recorder's flightrec_start) run on.
 *
 * A session is numbered by its epoch (never 0). Publishing the epoch turns
 * tracing on for every thread at once; storing 0 turns it off, and the stop
 * then waits for every thread to finish the event it is writing (write
 * sections, core/emit.h). Each event's section checks the epoch, so threads
 * notice a new session without any coordination: a chunk from an older
 * epoch is simply abandoned.
 * start/stop are serialized by a small spin lock (they are rare, and taking
 * a pthread mutex here would go through our own wrappers).
 */
#include "collect/collector.h"
#include "collect/face.h"
#include "collect/sink.h"
#include "core/clock.h"
#include "core/fdguard.h"
#include "core/intern.h"
#include "core/pool.h"
#include "core/real.h"
#include "core/scribe.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "ctrace_options.h"
#include "face.h"
#include "perf/cpu.h"
#include "perf/sched.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

static atomic_flag api_lock = ATOMIC_FLAG_INIT;
static int atfork_registered;

static void lock_api(void)
{
    /* acquire: pairs with the release clear in unlock_api. */
    while (atomic_flag_test_and_set_explicit(&api_lock, memory_order_acquire))
        sched_yield();
}

static void unlock_api(void)
{
    /* release: the session's changes before the next lock_api's acquire. */
    atomic_flag_clear_explicit(&api_lock, memory_order_release);
}

/* In a forked child the collector thread does not exist and the file is the
 * parent's: the child does not trace, and holds none of the tracer's
 * descriptors. It is alone, but inherits whatever the parent's other
 * threads held at the fork (locks, chunks, half-made table entries, slots):
 * all of it is let go, so that the child can start a session of its own
 * (trace_start, or autostart's follow-forks) as a new process would. */
static void atfork_child(void)
{
    ctr__fd_forget_all();
    ctr__control_forked(); /* after its descriptors went */
    ctr__scribe_forked();
    /* relaxed (three stores): the child's only thread; nothing to order. */
    atomic_store_explicit(&ctr__session.epoch, 0, memory_order_relaxed);
    __atomic_store_n(&trace__active, 0, __ATOMIC_RELAXED);
    atomic_flag_clear_explicit(&api_lock, memory_order_relaxed); /* the forker's */
    ctr__sinks_forked();
    ctr__intern_forked(&ctr__stacks);
    ctr__intern_forked(&ctr__strings);
    ctr__threads_forked();
    ctr__stack_forked();
    ctr__collector_forked(); /* after the tables: it forgets their ids */
}

void ctr__file_header(uint8_t h[CTR_FILE_HEADER_LEN])
{
    memset(h, 0, CTR_FILE_HEADER_LEN);
    memcpy(h, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN);
    h[8] = CTR_VERSION_MAJOR & 0xff;
    h[9] = CTR_VERSION_MAJOR >> 8;
    h[10] = CTR_VERSION_MINOR & 0xff;
    h[11] = CTR_VERSION_MINOR >> 8;
}

int ctr__init(void)
{
    ctr__real_init();
    ctr__clock_init();
    ctr__threads_init();
    if (!ctr__threads_ready())
        return -ENOMEM;
    int rc = ctr__intern_init(&ctr__stacks, 1u << 18, 64u << 20);
    if (rc == 0)
        rc = ctr__intern_init(&ctr__strings, 1u << 16, 8u << 20);
    if (rc == 0 && !atfork_registered) {
        rc = -pthread_atfork(ctr__collector_fork_prepare, ctr__collector_fork_parent, atfork_child);
        atfork_registered = rc == 0;
    }
    return rc;
}

int ctr__options_resolve(const struct trace_options *o, struct trace_options *r)
{
    *r = *o;
    uint64_t v;
    /* Each field as the table counts: a negative int becomes a number above
     * any int field's max (a switch's: on, as trace.h says). */
#define RESOLVE(field, ...)                                                           \
    if (ctr_option_resolve(ctr_option(CTR_OPT_##field), (uint64_t)o->field, &v) != 0) \
        return -EINVAL;                                                               \
    r->field = v; /* in range, so it fits */
    CTR_OPTIONS(RESOLVE)
#undef RESOLVE
    return r->pool_bytes / r->chunk_bytes >= CTR_POOL_MIN_CHUNKS ? 0 : -EINVAL;
}

int ctr__options_check(const struct trace_options *o)
{
    struct trace_options r;
    return ctr__options_resolve(o, &r);
}

void ctr__api_lock(void)
{
    lock_api();
}

void ctr__api_unlock(void)
{
    unlock_api();
}

int ctr__api_trylock(void)
{
    /* acquire: as in lock_api. */
    return !atomic_flag_test_and_set_explicit(&api_lock, memory_order_acquire);
}

size_t ctr__mapped_bytes(void)
{
    /* relaxed: a report; the pool pointer is only swapped under the API
     * lock, and a pool is never unmapped. */
    const struct ctr_pool *p = atomic_load_explicit(&ctr__session.pool, memory_order_relaxed);
    return ctr_segarr_mapped_bytes(&ctr__threads.slab) + ctr__pool_mapped_bytes(p) +
           ctr__intern_mapped_bytes(&ctr__stacks) + ctr__intern_mapped_bytes(&ctr__strings);
}

/* Whether a session ever began: until then no thread holds a slot or an
 * id of the tables, and a start that fails gives them back. */
static int session_began;

/* A start that failed keeps nothing it made: the tables too, while no
 * session ever began (later ones keep them: slots and ids refer to them). */
static int begin_failed(int rc)
{
    if (!session_began) {
        ctr__intern_release(&ctr__stacks);
        ctr__intern_release(&ctr__strings);
        ctr__threads_release();
    }
    return rc;
}

int ctr__session_begin(const struct trace_options *o)
{
    int rc = ctr__init();
    if (rc != 0)
        return begin_failed(rc);
    struct ctr_session *s = &ctr__session;
    struct trace_options r;
    if ((rc = ctr__options_resolve(o, &r)) != 0)
        return begin_failed(rc);
    /* relaxed: read only as counters; the collector starts after these. */
    atomic_store_explicit(&s->chunks_flushed, 0, memory_order_relaxed);
    atomic_store_explicit(&s->events_dropped, 0, memory_order_relaxed);
    atomic_store_explicit(&s->events_recorded, 0, memory_order_relaxed);
    s->flush_ms = r.flush_ms;
    s->level = r.compression_level;
    s->stack_depth = r.stack_depth;
    s->io_min_ns = r.io_min_ns;
    s->sched = r.sched_switches;
    if (s->sched)
        ctr__sched_session(r.sched_ring_bytes, !s->tainted);
    s->cpu_hz = r.cpu_hz;
    ctr__cpu_session(r.cpu_hz, r.cpu_timer, r.flush_ms, !s->tainted);
    /* relaxed: published with the epoch below (release). */
    atomic_store_explicit(&s->sched_failed, 0, memory_order_relaxed);
    atomic_store_explicit(&s->io_min_ticks, (uint64_t)(s->io_min_ns * ctr__clock_ticks_per_ns()),
                          memory_order_relaxed);
    uint32_t epoch = ++s->last_epoch ? s->last_epoch : ++s->last_epoch;
    /* No writer is in a section now (the last stop waited for them), unless
     * that stop gave up on one: then the old pool is left to it. */
    /* relaxed: only begin and end store the pool, under the API lock. */
    struct ctr_pool *p = atomic_load_explicit(&s->pool, memory_order_relaxed), *was = p;
    if ((rc = ctr__pool_open(&p, r.pool_bytes / r.chunk_bytes * r.chunk_bytes, r.chunk_bytes, epoch,
                             !s->tainted)) != 0)
        return begin_failed(rc);
    int tainted = s->tainted;
    ctr__threads_reset_session(s->tainted);
    s->tainted = 0;
    ctr__clock_sample(&s->start_ticks, &s->start_mono, &s->start_real);
    /* relaxed: published with the epoch below (release). */
    atomic_store_explicit(&s->pool, p, memory_order_relaxed);
    if ((rc = ctr__collector_start(epoch)) != 0) {
        /* A failed start keeps nothing it made: the pool is new to this
         * start and no writer saw it (the epoch was never published), or
         * it is the one the last session left, as it left it. */
        s->tainted = tainted;
        if (p != was) {
            /* relaxed: as above; nothing was published. */
            atomic_store_explicit(&s->pool, was, memory_order_relaxed);
            ctr__pool_close(p);
        }
        return begin_failed(rc);
    }
    session_began = 1;
    /* release: the session fields above before any thread sees it on
     * (pairs with the acquire load in ctr__write_begin_n, core/emit.h). */
    atomic_store_explicit(&s->epoch, epoch, memory_order_release);
    /* The threads alive now are sampled from now on, not from their first
     * event (a thread that only computes may write none). */
    ctr__cpu_session_started(epoch);
    /* relaxed: trace__active is a hint for trace.h's inline functions; what
     * they then write checks the epoch in a write section. */
    __atomic_store_n(&trace__active, 1, __ATOMIC_RELAXED);
    return 0;
}

/* How long a stop waits for a thread to finish the event it is writing.
 * A preempted writer needs a scheduler slice at most; only a signal handler
 * that never returns keeps one longer. */
#define QUIESCE_TIMEOUT_NS (2ull * 1000 * 1000 * 1000)

void ctr__session_end(void)
{
    struct ctr_session *s = &ctr__session;
    /* relaxed: a hint, as in ctr__session_begin. */
    __atomic_store_n(&trace__active, 0, __ATOMIC_RELAXED);
    /* seq_cst: before the loads of ctr__threads_quiesce (see core/emit.h,
     * "Write sections"). */
    atomic_store_explicit(&s->epoch, 0, memory_order_seq_cst);
    ctr__cpu_session_ended();
    /* Every event written is in the pool before the final round reads it,
     * and no writer of this session is left to touch the pool the next one
     * may reuse. */
    if (ctr__threads_quiesce(QUIESCE_TIMEOUT_NS) != 0)
        s->tainted = 1;
    ctr__collector_stop();
    /* relaxed: as in ctr__session_begin. */
    ctr__pool_release_pages(atomic_load_explicit(&s->pool, memory_order_relaxed));
}
