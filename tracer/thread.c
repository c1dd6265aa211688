/* thread.c - per-thread state: registration in the thread slab, the slow path
 * of event writing (new chunk, drops), and the end of a thread.
 *
 * A thread registers on its first traced event (or in the start routine of a
 * thread created through our pthread_create). Its slot holds the write cursor
 * and is found again through the initial-exec TLS pointer ctr__self, which is
 * all the TLS the tracer uses. A pthread key's destructor notices every thread
 * exit, however it happens (return, pthread_exit, cancellation), writes the
 * ThreadEnd event and hands the last chunk to the collector.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CTR_MAX_THREADS (1u << 18)

struct ctr_threads ctr__threads;
__thread struct ctr_thread *ctr__self __attribute__((tls_model("initial-exec")));
struct ctr_thread ctr__thread_off = {.nesting = 1};

static pthread_key_t exit_key;

static void thread_exit_cb(void *arg);

void ctr__threads_init(void)
{
    if (ctr__threads.slab)
        return;
    void *m = mmap(NULL, (size_t)CTR_MAX_THREADS * sizeof(struct ctr_thread), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return; /* no slab: every thread stays untraced */
    ctr_lfstack_init(&ctr__threads.free_slots, m, sizeof(struct ctr_thread),
                     offsetof(struct ctr_thread, node));
    ctr__threads.capacity = CTR_MAX_THREADS;
    atomic_store_explicit(&ctr__threads.next_id, 1, memory_order_relaxed);
    pthread_key_create(&exit_key, thread_exit_cb);
    ctr__threads.slab = m;
}

uint64_t ctr__thread_new_id(void)
{
    return atomic_fetch_add_explicit(&ctr__threads.next_id, 1, memory_order_relaxed);
}

static struct ctr_thread *slot_get(void)
{
    struct ctr_thread *t = ctr_lfstack_pop(&ctr__threads.free_slots);
    if (t)
        return t;
    uint32_t i = atomic_fetch_add_explicit(&ctr__threads.high, 1, memory_order_relaxed);
    if (i >= ctr__threads.capacity) {
        atomic_fetch_sub_explicit(&ctr__threads.high, 1, memory_order_relaxed);
        return NULL;
    }
    return &ctr__threads.slab[i];
}

static uintptr_t stack_top(void)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return 0;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    return rc == 0 ? (uintptr_t)addr + size : 0;
}

struct ctr_thread *ctr__thread_register(uint64_t id, uint64_t parent_id)
{
    if (!ctr__threads.slab) {
        ctr__self = &ctr__thread_off;
        return NULL;
    }
    ctr__self = &ctr__thread_off; /* what we call below must not trace us */
    struct ctr_thread *t = slot_get();
    if (!t) {
        atomic_fetch_add_explicit(&ctr__threads.unregistered, 1, memory_order_relaxed);
        return NULL; /* ctr__self stays "off": this thread is not traced */
    }
    uint32_t slot = (uint32_t)(t - ctr__threads.slab);
    ctr__sched_close(t); /* the previous occupant's ring: nobody reads a free slot */
    memset(t, 0, offsetof(struct ctr_thread, node)); /* node: the free list's */
    t->slot = slot;
    t->id = id;
    t->parent_id = parent_id;
    t->handle = pthread_self();
    t->os_tid = (int)syscall(SYS_gettid);
    t->stack_hi = stack_top();
    /* The kernel's name now covers names set before tracing or before this
     * thread registered; later renames come as ThreadName events. */
    char name[17] = {0};
    if (prctl(PR_GET_NAME, name) == 0 && name[0])
        t->name_id = ctr__intern(&ctr__strings, name, (uint32_t)strlen(name));
    pthread_setspecific(exit_key, t);
    /* release: everything above is visible to the collector once it sees LIVE
     * (pairs with its acquire load in the slab scan). */
    atomic_store_explicit(&t->state, CTR_SLOT_LIVE, memory_order_release);
    ctr__self = t;
    return t;
}

struct ctr_thread *ctr__thread_find(pthread_t handle)
{
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    for (uint32_t i = 0; i < high && i < ctr__threads.capacity; i++) {
        struct ctr_thread *t = &ctr__threads.slab[i];
        if (atomic_load_explicit(&t->state, memory_order_acquire) == CTR_SLOT_LIVE &&
            pthread_equal(t->handle, handle))
            return t;
    }
    return NULL;
}

void ctr__threads_reset_session(void)
{
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    for (uint32_t i = 0; i < high && i < ctr__threads.capacity; i++) {
        struct ctr_thread *t = &ctr__threads.slab[i];
        atomic_store_explicit(&t->dropped, 0, memory_order_relaxed);
        /* A chunk from an earlier session may belong to another thread by
         * now (the pool is reused): forget it. */
        atomic_store_explicit(&t->cur, NULL, memory_order_relaxed);
        int state = atomic_load_explicit(&t->state, memory_order_acquire);
        /* Exited while a session stopped: its last chunk went to a queue
         * that no collector will read again. */
        if (state == CTR_SLOT_EXITED || state == CTR_SLOT_ORPHANED)
            ctr__thread_free_slot(t);
    }
}

void ctr__thread_free_slot(struct ctr_thread *t)
{
    atomic_store_explicit(&t->state, CTR_SLOT_FREE, memory_order_relaxed);
    ctr_lfstack_push(&ctr__threads.free_slots, t);
}

/* Starts a fresh chunk for t in the current session, or leaves t without one
 * (every event then counts as dropped) when the pool is exhausted. */
static int chunk_start(struct ctr_thread *t, uint32_t epoch, uint64_t now)
{
    struct ctr_chunk *c = ctr__pool_get(&ctr__session.pool);
    t->epoch = epoch;
    t->chunk = c;
    if (!c) {
        t->pos = t->end = NULL;
        atomic_store_explicit(&t->cur, NULL, memory_order_release);
        return 0;
    }
    c->thread_id = t->id;
    c->base_ticks = now;
    c->slot = t->slot;
    c->epoch = epoch;
    c->final = 0;
    c->taken = 0;
    c->taken_ticks = now;
    c->done = 0;
    atomic_store_explicit(&c->commit, 0, memory_order_relaxed);
    t->pos = c->data;
    t->end = c->data + ctr__chunk_data_bytes(&ctr__session.pool);
    t->base_ticks = now;
    t->last_ticks = now;
    /* release: the header above before the collector can reach the chunk
     * through cur (pairs with the acquire load in its snapshot). */
    atomic_store_explicit(&t->cur, c, memory_order_release);
    return 1;
}

/* Hands t's chunk to the collector (it is full, or t is exiting). */
static void chunk_hand_off(struct ctr_thread *t, int final)
{
    struct ctr_chunk *c = t->chunk;
    c->final = (uint8_t)final;
    /* Unpublish before the push (release, pairs with the collector's
     * acquire in its snapshot): once the collector has the chunk from the
     * queue it may write it out and recycle it to another thread, and no
     * slot may still point at it then. */
    atomic_store_explicit(&t->cur, NULL, memory_order_release);
    ctr_lfstack_push(&ctr__session.full, c);
    uint32_t queued = atomic_fetch_add_explicit(&ctr__session.full_count, 1, memory_order_relaxed);
    /* Wake the collector early only when a good part of the pool waits for
     * it: a syscall once per many chunks, never per event. */
    if (queued + 1 == ctr__session.pool.nchunks / 4)
        ctr__collector_kick();
    t->chunk = NULL;
}

static void count_drop(struct ctr_thread *t)
{
    t->lost_pending++;
    /* Only the owner writes `dropped`; the collector reads it. A relaxed
     * load+store is enough (no RMW needed with a single writer). */
    atomic_store_explicit(&t->dropped,
                          atomic_load_explicit(&t->dropped, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

void ctr__emit_slow(struct ctr_thread *t, uint8_t type, uint64_t now, const uint64_t *args,
                    const void *payload, size_t len)
{
    uint32_t epoch = atomic_load_explicit(&ctr__session.epoch, memory_order_acquire);
    if (epoch == 0)
        return; /* tracing stopped while we were on our way here */
    if (t->epoch != epoch) {
        /* A new session: whatever chunk we held belongs to an old pool.
         * (trace_start reset `dropped` for every slot.) */
        t->lost_pending = 0;
        if (ctr__session.sched)
            ctr__sched_open(t);
        chunk_start(t, epoch, now);
    } else if (t->chunk) {
        chunk_hand_off(t, 0);
        chunk_start(t, epoch, now);
    } else {
        chunk_start(t, epoch, now); /* retry after the pool ran dry */
    }
    if (!t->chunk) {
        count_drop(t);
        return;
    }
    if (t->lost_pending) {
        uint64_t lost = t->lost_pending;
        t->lost_pending = 0;
        ctr__emit_at(t, CTR_EV_LOST, now, &lost);
    }
    ctr__emit_payload(t, type, now, args, payload, len);
}

void ctr__thread_exit_flush(struct ctr_thread *t)
{
    ctr__emit(t, CTR_EV_THREAD_END, NULL);
    uint32_t epoch = atomic_load_explicit(&ctr__session.epoch, memory_order_acquire);
    if (epoch == 0) {
        ctr__thread_free_slot(t); /* no session: nobody else looks at it */
    } else if (t->epoch == epoch && t->chunk) {
        /* release: the slot's fields before the collector frees it. */
        atomic_store_explicit(&t->state, CTR_SLOT_EXITED, memory_order_release);
        chunk_hand_off(t, 1);
    } else {
        atomic_store_explicit(&t->state, CTR_SLOT_ORPHANED, memory_order_release);
    }
}

static void thread_exit_cb(void *arg)
{
    struct ctr_thread *t = arg;
    ctr__self = &ctr__thread_off; /* later TSD destructors must not re-register */
    ctr__thread_exit_flush(t);
}
