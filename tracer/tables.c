/* tables.c - the records that describe the traced process rather than its
 * events (FORMAT.md §3): TRACE_INFO, CLOCK, MAPPING, STRING, STACK, THREAD,
 * and the one-event batches (or PENDING records) that open the waits of
 * calls still in progress.
 *
 * The collector writes them into each generation of the file, what the
 * tables gained since the last one; a flight-recorder dump writes all of
 * them at its start (ctr__rec_prologue), from whatever thread asked for it.
 * So nothing here keeps state between calls or belongs to one thread: each
 * function writes into the buffer it is given, and reads only what any
 * thread may read (the lock-free intern tables, the loader's list of
 * objects, the thread slab under its reclaim lock, which the callers of the
 * slab scans hold).
 */
#include "internal.h"
#include "maps.h"
#include "record.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

void ctr__rec_trace_info(struct ctr_outbuf *o)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    uint32_t exe_id = n > 0 ? ctr__intern(&ctr__strings, exe, (uint32_t)n) : 0;
    CTR_REC_PUT(o, TRACE_INFO, (uint64_t)getpid(),
                atomic_load_explicit(&ctr__clock_tsc, memory_order_relaxed)
                    ? CTR_TICKS_TSC
                    : CTR_TICKS_MONOTONIC_NS,
                ctr__stack_info() | (ctr__session.sched ? CTR_INFO_SCHED_SWITCHES : 0), exe_id,
                ctr__session.io_min_ns);
}

void ctr__rec_clock(struct ctr_outbuf *o, const struct ctr_clock_sample *c)
{
    CTR_REC_PUT(o, CLOCK, c->ticks, c->mono, c->real);
}

void ctr__rec_mapping(struct ctr_outbuf *o, uint64_t id, const struct ctr_map_info *m)
{
    uint32_t path = ctr__intern(&ctr__strings, m->path, (uint32_t)strlen(m->path));
    CTR_REC_PUT_BYTES(o, MAPPING, m->build_id, m->build_id_len, id, m->start, m->limit,
                      m->file_offset, m->bias, path);
}

static void visit_string(void *ctx, const struct ctr_intern_entry *e)
{
    CTR_REC_PUT_BYTES((struct ctr_outbuf *)ctx, STRING, e->bytes, e->len, e->id);
}

static void visit_stack(void *ctx, const struct ctr_intern_entry *e)
{
    const uintptr_t *pcs = (const uintptr_t *)e->bytes;
    CTR_REC_PUT_UVARINTS((struct ctr_outbuf *)ctx, STACK, pcs, e->len / sizeof(uintptr_t), e->id);
}

void ctr__rec_strings(struct ctr_outbuf *o, size_t *cursor, int settle)
{
    ctr__intern_scan(&ctr__strings, cursor, settle, visit_string, o);
}

void ctr__rec_stacks(struct ctr_outbuf *o, size_t *cursor, int settle)
{
    ctr__intern_scan(&ctr__stacks, cursor, settle, visit_stack, o);
}

void ctr__rec_thread(struct ctr_outbuf *o, const struct ctr_thread *t, uint32_t name)
{
    CTR_REC_PUT(o, THREAD, t->id, (uint64_t)t->os_tid, t->parent_id, name, (uint64_t)t->handle);
}

void ctr__rec_block(struct ctr_outbuf *o, uint64_t thread_id, uint64_t ticks, uint64_t reason,
                    uint64_t object, uint64_t stack)
{
    /* A batch of its own whose base is the BLOCK's time: delta 0. */
    uint8_t ev[CTR_MAX_EVENT_BYTES];
    uint8_t *end = ctr_encode_event(ev, CTR_EV_BLOCK, 0, (const uint64_t[]){reason, object, stack});
    CTR_REC_PUT_BYTES(o, BATCH, ev, (size_t)(end - ev), thread_id, ticks);
}

/* The slab's used slots, for a scan (under ctr__threads.reclaim). */
static uint32_t slots_in_use(void)
{
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    return high < ctr__threads.capacity ? high : ctr__threads.capacity;
}

/* PENDING(thread, start, reason, object, stack), the same call as a record
 * (FORMAT.md §3). */
static void rec_pending(struct ctr_outbuf *o, uint64_t thread_id, uint64_t ticks, uint64_t reason,
                        uint64_t object, uint64_t stack)
{
    CTR_REC_PUT(o, PENDING, thread_id, ticks, reason, object, stack);
}

/* Calls emit for each thread inside an I/O call (or a wait for a process
 * or a signal) for io_min_ns or more, with its thread, start, reason,
 * object and call site. */
static void pending_calls(struct ctr_outbuf *o,
                          void (*emit)(struct ctr_outbuf *o, uint64_t thread_id, uint64_t ticks,
                                       uint64_t reason, uint64_t object, uint64_t stack))
{
    uint64_t now = ctr__ticks();
    uint64_t min = atomic_load_explicit(&ctr__session.io_min_ticks, memory_order_relaxed);
    for (uint32_t s = 0; s < slots_in_use(); s++) {
        struct ctr_thread *t = &ctr__threads.slab[s];
        if (atomic_load_explicit(&t->state, memory_order_acquire) != CTR_SLOT_LIVE)
            continue;
        /* acquire: pairs with ctr__io_begin's release; reading io_start
         * again after the fields catches a call that ended meanwhile. */
        uint64_t start = atomic_load_explicit(&t->io_start, memory_order_acquire);
        if (!start || now - start < min)
            continue;
        uint64_t reason = atomic_load_explicit(&t->io_reason, memory_order_relaxed);
        uint64_t pc = atomic_load_explicit(&t->io_pc, memory_order_relaxed);
        int fd = atomic_load_explicit(&t->io_fd, memory_order_relaxed);
        int by_fd = atomic_load_explicit(&t->io_by_fd, memory_order_relaxed);
        /* acquire fence: the field loads above before the load below. */
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&t->io_start, memory_order_relaxed) != start)
            continue;
        if (by_fd && ctr__fd_is_socket(fd))
            reason++; /* the NET_ variant (see interpose_io.c) */
        uint64_t stack = pc ? ctr__intern(&ctr__stacks, &pc, sizeof(pc)) : 0;
        emit(o, t->id, start, reason, (uint64_t)(int64_t)fd, stack);
    }
}

void ctr__pending_io(struct ctr_outbuf *o)
{
    pending_calls(o, ctr__rec_block);
}

void ctr__rec_pending(struct ctr_outbuf *o)
{
    pending_calls(o, rec_pending);
}

struct map_count {
    struct ctr_outbuf *o;
    uint64_t id;
};

static void visit_map(void *ctx, const struct ctr_map_info *m)
{
    struct map_count *mc = ctx;
    ctr__rec_mapping(mc->o, ++mc->id, m);
}

void ctr__rec_prologue(struct ctr_outbuf *o, const struct ctr_clock_sample *start,
                       uint32_t (*name_of)(void *ctx, uint64_t thread_id, uint32_t registered),
                       void *ctx)
{
    ctr__rec_trace_info(o);
    ctr__rec_clock(o, start);
    struct map_count mc = {o, 0};
    ctr__maps_scan(visit_map, &mc);
    size_t strings = 0, stacks = 0;
    ctr__rec_strings(o, &strings, 1);
    ctr__rec_stacks(o, &stacks, 1);
    for (uint32_t s = 0; s < slots_in_use(); s++) {
        const struct ctr_thread *t = &ctr__threads.slab[s];
        if (atomic_load_explicit(&t->state, memory_order_acquire) != CTR_SLOT_FREE)
            ctr__rec_thread(o, t, name_of(ctx, t->id, t->name_id));
    }
}
