/* SPDX-License-Identifier: MIT */
/* thread.c - per-thread state: registration in the thread slab, the slow path
 * of event writing (new chunk, drops), the end of a thread, and the wait for
 * writers that stopping a session needs.
 *
 * A thread registers on its first traced event (or in the start routine of a
 * thread created through our pthread_create). Its slot holds the write cursor
 * and is found again through the initial-exec TLS pointer ctr__self, which is
 * all the TLS the tracer uses. A pthread key's destructor notices every thread
 * exit, however it happens (return, pthread_exit, cancellation), writes the
 * ThreadEnd event and hands the last chunk to the collector.
 *
 * The slot hand-off protocol (who may touch a slot when; the states are in
 * thread.h):
 *   - A registering thread pops a FREE slot, zeroes and fills it, and stores
 *     LIVE (release; the collector's acquire load of the state pairs with it).
 *   - While LIVE, only the owner writes its fields; the collector reads the
 *     shared ones.
 *   - At its end the owner detaches its last chunk from the slot (chunk,
 *     cur), stores EXITED (release), and only then pushes the chunk to the
 *     collector's queue. The push is its last access to anything in the slot:
 *     from then on the collector may write the chunk, free the slot, and a new
 *     thread may own it. (Storing into the slot after the push is what once
 *     cleared a new owner's chunk pointer and crashed it.) With no chunk to
 *     hand over, the owner's last store is ORPHANED.
 *   - The collector frees an EXITED slot after writing its final chunk, an
 *     ORPHANED one when it sees it; the start of a session frees both; an
 *     ending thread frees its own slot when no session runs. Every free
 *     takes ctr__threads.reclaim.
 * An exit hand-off is also counted in ctr__threads.exiting from before it
 * reads the epoch to after its push, so that a stopping session can wait
 * for it (ctr__threads_quiesce): the push must reach the queue the final
 * round reads, never the next session's.
 */
#include "core/thread.h"

#include "core/emit.h"
#include "core/hooks.h"
#include "core/intern.h"
#include "core/lfstack.h"
#include "core/lock.h"
#include "core/perfring.h"
#include "core/pool.h"
#include "core/real.h"
#include "core/session.h"
#include "ctrace_format.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CTR_MAX_THREADS (1u << 18)

struct ctr_threads ctr__threads;
__thread struct ctr_thread *ctr__self __attribute__((tls_model("initial-exec")));
struct ctr_thread ctr__thread_off = {.internal = 1};

static pthread_key_t exit_key;
static int membarrier_private; /* 1: MEMBARRIER_CMD_PRIVATE_EXPEDITED is registered */

static void thread_exit_cb(void *arg);

/* ---------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------- */

/* Slots are mapped at least this many bytes' worth at a time (a power of
 * two of them: 256 of today's 848-byte slots, 212 KiB). */
#define SLAB_SEGMENT_MIN (128u << 10)

void ctr__threads_init(void)
{
    if (ctr__threads_ready())
        return;
    struct ctr_segarr slab;
    if (ctr_segarr_init(&slab, CTR_MAX_THREADS, sizeof(struct ctr_thread), SLAB_SEGMENT_MIN,
                        CTR_MAX_THREADS) != 0)
        return; /* no slab: every thread stays untraced */
    ctr__threads.capacity = CTR_MAX_THREADS;
    /* relaxed: before any thread is traced (the first session's epoch,
     * published later with release, orders it). */
    atomic_store_explicit(&ctr__threads.next_id, 1, memory_order_relaxed);
    static int key_made; /* once: a slab released and made again keeps it */
    if (!key_made)
        key_made = pthread_key_create(&exit_key, thread_exit_cb) == 0;
    membarrier_private =
        ctr__real.syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    ctr__threads.slab = slab;
    ctr_lfstack_init(&ctr__threads.free_slots, &ctr__threads.slab,
                     offsetof(struct ctr_thread, node));
}

void ctr__threads_release(void)
{
    ctr_segarr_destroy(&ctr__threads.slab);
    /* relaxed: no thread was ever given a slot (the caller's promise). */
    atomic_store_explicit(&ctr__threads.high, 0, memory_order_relaxed);
    ctr_lfstack_init(&ctr__threads.free_slots, &ctr__threads.slab,
                     offsetof(struct ctr_thread, node));
}

uint64_t ctr__thread_new_id(void)
{
    /* relaxed: the counter only hands out distinct ids. */
    return atomic_fetch_add_explicit(&ctr__threads.next_id, 1, memory_order_relaxed);
}

static struct ctr_thread *slot_get(void)
{
    struct ctr_thread *t = ctr_lfstack_pop(&ctr__threads.free_slots);
    if (t)
        return t;
    /* relaxed: `high` only bounds the scans; a slot's contents are published
     * by its state (the release store of LIVE in ctr__thread_register). */
    uint32_t i = atomic_fetch_add_explicit(&ctr__threads.high, 1, memory_order_relaxed);
    if (i >= ctr__threads.capacity) {
        atomic_fetch_sub_explicit(&ctr__threads.high, 1, memory_order_relaxed);
        return NULL;
    }
    /* The kernel may refuse the segment (RLIMIT_AS): slot i is then lost
     * (zeros, FREE, if a later thread maps its segment), the thread is not
     * traced, and the next one tries again. */
    t = ctr_segarr_get(&ctr__threads.slab, i);
    if (t)
        ctr_lfstack_name(&ctr__threads.free_slots, t, i);
    return t;
}

/* The calling thread's stack, [*lo, *hi); 0s when unknown.
 *
 * A thread that glibc made keeps its descriptor (what pthread_self() points
 * at) at the top of its stack's mapping, its static TLS between the two: so
 * every frame lies below pthread_self(), and everything from a frame up to
 * it is mapped, which is all a frame-pointer walk reads. That bound costs
 * nothing. pthread_getattr_np, the exact one, allocates (its CPU-set
 * buffer), and a thread's first malloc makes it an arena of 64 MiB of
 * address space: a tracer that made one in every thread of a program
 * whose threads never allocate took that out of its RLIMIT_AS. So it serves
 * only the main thread (whose descriptor is elsewhere; the main arena
 * serves its malloc). The low bound is then unknown (0): it only tells a
 * longjmp onto this stack from one elsewhere (interpose.c), and a jump
 * below this stack's frames is never out of one of them. */
static void stack_bounds(uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    uintptr_t self = (uintptr_t)pthread_self();
    *lo = *hi = 0;
    if (self > sp && self - sp < ((uintptr_t)1 << 32)) {
        *hi = self;
        return;
    }
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        *lo = (uintptr_t)addr;
        *hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
}

/* The string id of the calling thread's name in the kernel (0: none). */
static uint32_t kernel_name_id(void)
{
    char name[17] = {0};
    if (prctl(PR_GET_NAME, name) != 0 || !name[0])
        return 0;
    return ctr__intern(&ctr__strings, name, (uint32_t)strlen(name));
}

struct ctr_thread *ctr__thread_register(uint64_t id, uint64_t parent_id)
{
    /* acquire: the slab (ctr__init), made before the session's epoch was
     * published (pairs with the release store in ctr__session_begin): a
     * thread that ran before the first session registers here, on its
     * first event, having seen the epoch only with a relaxed load. */
    (void)atomic_load_explicit(&ctr__session.epoch, memory_order_acquire);
    if (!ctr__threads_ready()) {
        ctr__self = &ctr__thread_off;
        return NULL;
    }
    ctr__self = &ctr__thread_off; /* what we call below must not trace us */
    struct ctr_thread *t = slot_get();
    if (!t) {
        /* relaxed: a count read only for the trace's trailer (records.c). */
        atomic_fetch_add_explicit(&ctr__threads.unregistered, 1, memory_order_relaxed);
        return NULL; /* ctr__self stays "off": this thread is not traced */
    }
    uint32_t slot = ctr_lfstack_index1(&ctr__threads.free_slots, t) - 1;
    /* The previous occupant's rings and timer: nobody reads a free slot. */
    ctr__perf_close(&t->sched_ring);
    ctr__cpu_close(t);
    memset(t, 0, offsetof(struct ctr_thread, node)); /* node: the free list's */
    t->slot = slot;
    t->id = id;
    t->parent_id = parent_id;
    t->handle = pthread_self();
    t->os_tid = (int)ctr__real.syscall(SYS_gettid);
    stack_bounds(&t->stack_lo, &t->stack_hi);
    ctr__cputime_thread_start(t);
    /* The kernel's name now covers names set before tracing or before this
     * thread registered; later renames come as ThreadName events. */
    t->name_id = kernel_name_id();
    pthread_setspecific(exit_key, t);
    /* release: everything above is visible to the collector once it sees LIVE
     * (pairs with its acquire loads of the state in round_run and gen_close,
     * collector.c, and in ctr__thread_find). */
    atomic_store_explicit(&t->state, CTR_SLOT_LIVE, memory_order_release);
    ctr__self = t;
    return t;
}

int ctr__thread_find(pthread_t handle, uint64_t *id)
{
    int found = 0;
    /* Under reclaim: a slot found live cannot be freed and refilled while
     * its fields are read. */
    ctr_lock_acquire(&ctr__threads.reclaim);
    /* acquire on high: more than needed (slot_get's add is relaxed; see
     * there). acquire on the state: pairs with the release store of LIVE in
     * ctr__thread_register, so handle and id are the new owner's. */
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    for (uint32_t i = 0; i < high && i < ctr__threads.capacity && !found; i++) {
        struct ctr_thread *t = ctr__thread_at(i);
        if (t && atomic_load_explicit(&t->state, memory_order_acquire) == CTR_SLOT_LIVE &&
            pthread_equal(t->handle, handle)) {
            *id = t->id;
            found = 1;
        }
    }
    ctr_lock_release(&ctr__threads.reclaim);
    return found;
}

void ctr__threads_reset_session(int keep_exited)
{
    /* acquire on high: as in ctr__thread_find. relaxed stores: no session
     * runs (the API lock is held, the collector is not started); the
     * epoch's release in ctr__session_begin publishes them. */
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    for (uint32_t i = 0; i < high && i < ctr__threads.capacity; i++) {
        struct ctr_thread *t = ctr__thread_at(i);
        if (!t)
            continue;
        atomic_store_explicit(&t->dropped, 0, memory_order_relaxed);
        /* A chunk from an earlier session may belong to another thread by
         * now (the pool is reused): forget it. */
        atomic_store_explicit(&t->cur, NULL, memory_order_relaxed);
        /* acquire: pairs with the release stores of EXITED and ORPHANED in
         * ctr__thread_exit: the ended thread's last accesses come first. */
        int state = atomic_load_explicit(&t->state, memory_order_acquire);
        /* Ended while no session ran, or as the last one stopped. */
        if (state == CTR_SLOT_ORPHANED || (state == CTR_SLOT_EXITED && !keep_exited))
            ctr__thread_free_slot(t);
    }
}

void ctr__thread_free_slot(struct ctr_thread *t)
{
    ctr_lock_acquire(&ctr__threads.reclaim);
    /* relaxed: a scan that sees FREE skips the slot and reads nothing of
     * it; the next owner gets it through the push's release CAS. */
    atomic_store_explicit(&t->state, CTR_SLOT_FREE, memory_order_relaxed);
    ctr_lfstack_push(&ctr__threads.free_slots, t);
    ctr_lock_release(&ctr__threads.reclaim);
}

void ctr__threads_each(void (*fn)(struct ctr_thread *t, void *ctx), void *ctx)
{
    /* acquire on high: as in ctr__thread_find. */
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    for (uint32_t i = 0; i < high && i < ctr__threads.capacity; i++) {
        struct ctr_thread *t = ctr__thread_at(i);
        if (t)
            fn(t, ctx);
    }
}

/* ---------------------------------------------------------------------------
 * A forked child
 * ------------------------------------------------------------------------- */

void ctr__threads_forked(void)
{
    if (!ctr__threads_ready())
        return;
    /* Alone in the process: every other thread vanished at the fork,
     * whatever it held (the reclaim lock, an exit hand-off in progress,
     * a half-done pop of the free list). So every access below is
     * relaxed: no other thread to order anything with. */
    ctr__threads.reclaim = (struct ctr_lock){0};
    atomic_store_explicit(&ctr__threads.exiting, 0, memory_order_relaxed);
    atomic_store_explicit(&ctr__threads.unregistered, 0, memory_order_relaxed);
    struct ctr_thread *self = ctr__self;
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_relaxed);
    if (high > ctr__threads.capacity)
        high = ctr__threads.capacity;
    ctr_lfstack_init(&ctr__threads.free_slots, &ctr__threads.slab,
                     offsetof(struct ctr_thread, node));
    for (uint32_t i = high; i-- > 0;) {
        struct ctr_thread *t = ctr__thread_at(i);
        if (!t)
            continue;
        /* The parent thread's perf events: their descriptors went with the
         * tracer's others (ctr__fd_forget_all), their rings were never
         * copied into the child (ctr__perf_forget). */
        ctr__perf_forget(&t->sched_ring);
        ctr__cpu_forked(t);
        atomic_store_explicit(&t->cur, NULL, memory_order_relaxed);
        atomic_store_explicit(&t->dropped, 0, memory_order_relaxed);
        if (t == self) {
            /* The thread that forked: the child's only thread, with the
             * child's pid as its id in the kernel. Its chunk is the
             * parent's; the next session gives it a new one. */
            t->chunk = NULL;
            t->pos = t->end = NULL;
            t->os_tid = (int)ctr__real.syscall(SYS_gettid);
            t->name_id = kernel_name_id();
            /* The parent's string table is gone (ctr__intern_forked). */
            memset(t->names, 0, sizeof(t->names));
            continue;
        }
        atomic_store_explicit(&t->state, CTR_SLOT_FREE, memory_order_relaxed);
        ctr_lfstack_push(&ctr__threads.free_slots, t);
    }
}

/* ---------------------------------------------------------------------------
 * The slow path of writing (inside a write section)
 * ------------------------------------------------------------------------- */

/* Starts a fresh chunk for t from pool p, or leaves t without one (every
 * event then counts as dropped) when the pool is exhausted. */
static int chunk_start(struct ctr_thread *t, struct ctr_pool *p, uint64_t now)
{
    struct ctr_chunk *c = ctr__pool_get(p);
    t->epoch = p->epoch;
    t->chunk = c;
    if (!c) {
        t->pos = t->end = NULL;
        /* release: as in chunk_detach. */
        atomic_store_explicit(&t->cur, NULL, memory_order_release);
        return 0;
    }
    c->thread_id = t->id;
    c->base_ticks = now;
    c->slot = t->slot;
    c->epoch = p->epoch;
    c->final = 0;
    c->taken = 0;
    c->taken_ticks = now;
    c->done = 0;
    /* relaxed: published with the header by the release store of cur below. */
    atomic_store_explicit(&c->commit, 0, memory_order_relaxed);
    t->pos = c->data;
    t->end = c->data + ctr__chunk_data_bytes(p);
    t->base_ticks = now;
    t->last_ticks = now;
    /* release: the header above before the collector can reach the chunk
     * through cur (pairs with the acquire load of cur in round_run,
     * collector.c). */
    atomic_store_explicit(&t->cur, c, memory_order_release);
    return 1;
}

/* Takes t's chunk away from its slot: the slot no longer refers to it once
 * this returns, so pushing it (queue_chunk) may be the slot's last use. */
static struct ctr_chunk *chunk_detach(struct ctr_thread *t)
{
    struct ctr_chunk *c = t->chunk;
    t->chunk = NULL;
    t->pos = t->end = NULL;
    /* release, before the push: pairs with the collector's acquire load of
     * cur in round_run; once the collector has the chunk from the queue it may
     * write it out and recycle it, and no slot may still point at it. */
    atomic_store_explicit(&t->cur, NULL, memory_order_release);
    return c;
}

/* Hands chunk c to the collector through p's queue. Touches no slot. */
static void queue_chunk(struct ctr_pool *p, struct ctr_chunk *c, int final)
{
    c->final = (uint8_t) final;
    ctr_lfstack_push(&p->full, c);
    /* relaxed: a count for deciding when to kick; the chunk itself is
     * published by the push's release CAS. */
    uint32_t queued = atomic_fetch_add_explicit(&p->full_count, 1, memory_order_relaxed);
    /* Wake the collector early only when a good part of the pool waits for
     * it: a syscall once per many chunks, never per event. */
    if (queued + 1 == p->nchunks / 4)
        ctr__collector_kick();
}

static void count_drop(struct ctr_thread *t)
{
    t->lost_pending++;
    /* An RMW although the owner is the only thread that adds: a signal
     * handler on the owner may add in the middle (ctr__drop_nested).
     * relaxed: a counter the collector reads for DROPS records (gen_close);
     * nothing is published with it. */
    atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
}

void ctr__drop_nested(struct ctr_thread *t, unsigned events)
{
    /* The section this interrupts belongs to a running session: its drops
     * are that session's (a stop waits for the section, and this, to end).
     * relaxed: a counter, as in count_drop. */
    atomic_fetch_add_explicit(&t->dropped, events, memory_order_relaxed);
}

void ctr__emit_slow(struct ctr_thread *t, uint8_t type, uint64_t now, const uint64_t *args,
                    const void *payload, size_t len)
{
    uint32_t epoch = t->section_epoch;
    /* acquire: the pool was stored before the epoch's release in
     * ctr__session_begin, which the section's acquire load of the epoch
     * (ctr__write_begin_n) synchronized with; p->epoch then tells whether
     * the pool is the section's. */
    struct ctr_pool *p = atomic_load_explicit(&ctr__session.pool, memory_order_acquire);
    if (!p || p->epoch != epoch)
        return; /* a stop gave up waiting for this section: not this session's */
    if (t->epoch != epoch) {
        /* A new session: whatever chunk we held belongs to an old pool.
         * (trace_start reset `dropped` for every slot.) */
        t->lost_pending = 0;
        if (ctr__session.sched)
            ctr__sched_open(t);
        if (ctr__session.cpu_hz)
            ctr__cpu_open(t, epoch);
        chunk_start(t, p, now);
    } else if (t->chunk) {
        queue_chunk(p, chunk_detach(t), 0);
        chunk_start(t, p, now);
    } else {
        chunk_start(t, p, now); /* retry after the pool ran dry */
    }
    if (!t->chunk) {
        count_drop(t);
        return;
    }
    if (t->lost_pending) {
        uint64_t lost = t->lost_pending;
        t->lost_pending = 0;
        ctr__emit_chunk(t, CTR_EV_LOST, now, &lost, NULL, 0);
    }
    ctr__emit_chunk(t, type, now, args, payload, len);
}

/* ---------------------------------------------------------------------------
 * The end of a thread
 * ------------------------------------------------------------------------- */

void ctr__thread_exit(struct ctr_thread *t)
{
    /* A section or a call-out the thread never comes back to: pthread_exit
     * from a signal handler that interrupted it. The chunk stays consistent
     * (an event is committed only once whole); the event is lost. */
    t->internal = 0;
    /* relaxed: the owner's own field, and a counter (count_drop); release:
     * as in ctr__write_end. */
    if (atomic_load_explicit(&t->writing, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
        atomic_store_explicit(&t->writing, 0, memory_order_release);
    }
    /* A call the thread never came back from (cancelled where no guard saw
     * it, or left by pthread_exit in a signal handler). */
    if (t->call_kind != CTR_CALL_NONE)
        ctr__call_abandon(t);
    ctr__cpu_thread_exit(t); /* no sample after this thread's end */
    ctr__cputime_thread_end(t);
    /* seq_cst RMW before the epoch load in ctr__write_begin: a stopper that
     * stored epoch 0 and then reads 0 here knows this hand-off either saw
     * epoch 0 or has finished. */
    atomic_fetch_add_explicit(&ctr__threads.exiting, 1, memory_order_seq_cst);
    struct ctr_chunk *last = NULL;
    struct ctr_pool *p = NULL;
    int in_session = 0;
    if (ctr__write_begin(t)) {
        in_session = 1;
        ctr__emit(t, CTR_EV_THREAD_END, NULL);
        /* acquire: as in ctr__emit_slow. */
        p = atomic_load_explicit(&ctr__session.pool, memory_order_acquire);
        if (t->chunk && t->epoch == t->section_epoch && p && p->epoch == t->section_epoch)
            last = chunk_detach(t);
        ctr__write_end(t);
    }
    if (last) {
        /* release: the slot's fields before the collector frees it (pairs
         * with the acquire loads of the state in gen_close, collector.c, and
         * ctr__threads_reset_session). */
        atomic_store_explicit(&t->state, CTR_SLOT_EXITED, memory_order_release);
        queue_chunk(p, last, 1); /* the last access to the slot: see the top */
    } else if (in_session || atomic_load_explicit(&ctr__session.epoch, memory_order_acquire)) {
        /* The collector (or the next start) frees it after reporting its
         * drops. acquire on the epoch: more than needed (nothing of the
         * session is read here); release: as for EXITED above. */
        atomic_store_explicit(&t->state, CTR_SLOT_ORPHANED, memory_order_release);
    } else {
        ctr__thread_free_slot(t); /* no session: nobody else looks at it */
    }
    /* release: the hand-off (its push) before the stopper's seq_cst load in
     * wait_zero (ctr__threads_quiesce) sees the count drop. */
    atomic_fetch_sub_explicit(&ctr__threads.exiting, 1, memory_order_release);
}

static void thread_exit_cb(void *arg)
{
    struct ctr_thread *t = arg;
    ctr__self = &ctr__thread_off; /* later TSD destructors must not re-register */
    ctr__thread_exit(t);
}

/* ---------------------------------------------------------------------------
 * Waiting for writers (a stopping session)
 * ------------------------------------------------------------------------- */

/* A full memory barrier on every running thread of the process: any
 * store a thread made before it is visible to our loads after it. */
static void barrier_all_threads(void)
{
    if (membarrier_private &&
        ctr__real.syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
    if (ctr__real.syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
        return;
    /* No membarrier (kernels before 4.3): a store buffer drains in far less
     * than this; not a proof, the best there is without one. */
    struct timespec ts = {0, 2000000};
    ctr__real.nanosleep(&ts, NULL);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits while *word is not 0, until `deadline`. @return 0 once it is 0,
 * -ETIMEDOUT at the deadline. The loads are seq_cst (they pair with
 * ctr__write_end's release and with ctr__thread_exit's seq_cst count). */
static int wait_zero(_Atomic uint32_t *word, uint64_t deadline)
{
    for (unsigned spins = 0; atomic_load_explicit(word, memory_order_seq_cst) != 0; spins++) {
        if (spins >= 64 && mono_ns() >= deadline)
            return -ETIMEDOUT;
        if (spins < 1000) {
            sched_yield(); /* a writer preempted mid-event needs the CPU */
        } else {
            struct timespec ts = {0, 200000};
            ctr__real.nanosleep(&ts, NULL);
        }
    }
    return 0;
}

int ctr__threads_quiesce(uint64_t timeout_ns)
{
    barrier_all_threads();
    uint64_t deadline = mono_ns() + timeout_ns;
    int rc = 0;
    /* acquire: more than needed (see slot_get); the membarrier above makes
     * every slot used by a thread that could be in a section visible. */
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    for (uint32_t i = 0; i < high && i < ctr__threads.capacity; i++) {
        struct ctr_thread *t = ctr__thread_at(i); /* NULL: never handed out */
        if (t && wait_zero(&t->writing, deadline) != 0)
            rc = -ETIMEDOUT; /* go on: the others still must be waited for */
    }
    /* After the sections: an exit hand-off counts itself before it begins
     * its section, so one that passed its section is counted here. */
    if (wait_zero(&ctr__threads.exiting, deadline) != 0)
        rc = -ETIMEDOUT;
    return rc;
}
