/* sched.c - context switches from perf_event, the opt-in second source of the
 * sched profile (trace_options.sched_switches).
 *
 * Each traced thread opens a software perf event on itself with
 * context_switch=1 and exclude_kernel=1, which needs no privilege
 * (perf_event_paranoid <= 2) and makes the kernel append a record to a small
 * ring buffer at every switch out (marked when the thread was preempted) and
 * every switch in, stamped with CLOCK_MONOTONIC. The collector drains the
 * rings each generation (ctr__sched_drain). That adds preemption, which
 * release events cannot see, and the exact time a released waiter ran again.
 *
 * Ring protocol (perf_event_open(2)): the kernel writes records and advances
 * data_head (our acquire load pairs with its release); the collector reads
 * up to it and stores data_tail (release), which tells the kernel the space
 * is free. Only the collector reads a ring. A ring is unmapped only when its
 * slot is reused by a new thread, never while the collector may read it.
 */
#include "internal.h"
#include "interpose.h"

#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Bytes of data of the rings opened now (a power of two, at least a page):
 * set at a session's start, before the session is published (relaxed). 24
 * bytes a switch: 64 KiB, the default, hold about 2700 per flush. */
static _Atomic size_t ring_data_bytes = CTR_SCHED_RING_DEFAULT;

void ctr__sched_session(size_t data_bytes, int idle)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (data_bytes < page)
        data_bytes = page;
    /* relaxed: see ring_data_bytes. acquire on high: more than needed
     * (slot_get's add is relaxed); on perf_ring: pairs with the release
     * store in ctr__sched_open. */
    atomic_store_explicit(&ring_data_bytes, data_bytes, memory_order_relaxed);
    if (!idle)
        return;
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    for (uint32_t i = 0; i < high && i < ctr__threads.capacity; i++) {
        struct ctr_thread *t = &ctr__threads.slab[i];
        if (atomic_load_explicit(&t->perf_ring, memory_order_acquire) &&
            t->perf_bytes != page + data_bytes)
            ctr__sched_close(t);
    }
}

/* The records t's ring could not take so far (PERF_FORMAT_LOST), or
 * UINT64_MAX if unknown. */
static uint64_t perf_lost(struct ctr_thread *t)
{
    uint64_t v[2]; /* value, lost */
    ctr__fd_use_begin(1);
    /* relaxed: the use (ctr__fd_use_begin) keeps a move of the descriptor
     * off, and the mover's update of perf_fd happens before it (fdguard.c). */
    ssize_t n = ctr__real.read(atomic_load_explicit(&t->perf_fd, memory_order_relaxed), v,
                               sizeof(v));
    ctr__fd_use_end();
    return n == (ssize_t)sizeof(v) ? v[1] : UINT64_MAX;
}

/* An ioctl on t's perf descriptor, whose number must not move meanwhile. */
static void perf_ioctl(struct ctr_thread *t, unsigned long request)
{
    ctr__fd_use_begin(1);
    /* relaxed: as in perf_lost. */
    ioctl(atomic_load_explicit(&t->perf_fd, memory_order_relaxed), request, 0);
    ctr__fd_use_end();
}

void ctr__sched_open(struct ctr_thread *t)
{
    /* relaxed: stored by this thread (below, or NULL by ctr__sched_close in
     * ctr__thread_register), or by ctr__sched_session before the epoch's
     * release, which this section's acquire load of the epoch saw. */
    struct perf_event_mmap_page *meta = atomic_load_explicit(&t->perf_ring, memory_order_relaxed);
    if (meta) {
        /* Still this thread's from an earlier session: drop what it
         * recorded since, and record again. acquire on data_head, release
         * on data_tail: the kernel's protocol, as in ctr__sched_drain. */
        __atomic_store_n(&meta->data_tail, __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE),
                         __ATOMIC_RELEASE);
        perf_ioctl(t, PERF_EVENT_IOC_ENABLE);
        return;
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    a.sample_id_all = 1;
    a.context_switch = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    /* The kernel's count of the records the ring could not take, read at
     * each drain: its LOST records come only once there is room again, so
     * they miss the last overflow of a trace. Before Linux 6.0, those. */
    a.read_format = PERF_FORMAT_LOST;
    int raw = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    t->perf_counts_lost = raw >= 0;
    if (raw < 0) {
        a.read_format = 0;
        raw = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    }
    t->perf_lost_seen = 0;
    /* Out of the program's way at once (fdguard.c); its number goes to
     * perf_fd, where it is updated if it has to move. */
    int fd = ctr__fd_adopt(raw, &t->perf_fd);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    /* relaxed: see ring_data_bytes. */
    size_t bytes = page + atomic_load_explicit(&ring_data_bytes, memory_order_relaxed);
    void *ring = fd >= 0 ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (ring == MAP_FAILED) {
        if (fd >= 0)
            ctr__fd_close(fd);
        /* relaxed: a count read only for the trace's trailer (tables.c). */
        atomic_fetch_add_explicit(&ctr__session.sched_failed, 1, memory_order_relaxed);
        return;
    }
    t->perf_bytes = bytes;
    /* release: fd and size before the collector can see the ring (pairs
     * with the acquire loads in ctr__sched_drain and ctr__sched_disable). */
    atomic_store_explicit(&t->perf_ring, ring, memory_order_release);
}

void ctr__sched_close(struct ctr_thread *t)
{
    /* acquire: pairs with the release store in ctr__sched_open (the size and
     * descriptor). relaxed below: nobody reads a free slot's ring; the new
     * owner publishes the slot with its release store of LIVE. */
    void *ring = atomic_load_explicit(&t->perf_ring, memory_order_acquire);
    if (!ring)
        return;
    munmap(ring, t->perf_bytes);
    ctr__fd_close(atomic_load_explicit(&t->perf_fd, memory_order_relaxed));
    atomic_store_explicit(&t->perf_ring, NULL, memory_order_relaxed);
}

void ctr__sched_disable(struct ctr_thread *t)
{
    /* acquire: as in ctr__sched_drain. */
    if (!atomic_load_explicit(&t->perf_ring, memory_order_acquire))
        return;
    perf_ioctl(t, PERF_EVENT_IOC_DISABLE);
    /* What overflowed after the last drain is no later session's. */
    uint64_t lost = t->perf_counts_lost ? perf_lost(t) : UINT64_MAX;
    if (lost != UINT64_MAX)
        t->perf_lost_seen = lost;
}

/* Copies n bytes at ring offset off (which may wrap) to out. */
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t off, void *out, size_t n)
{
    uint64_t at = off % size;
    size_t first = n < size - at ? n : (size_t)(size - at);
    memcpy(out, data + at, first);
    memcpy((uint8_t *)out + first, data, n - first);
}

void ctr__sched_drain(struct ctr_thread *t, uint64_t since_ns,
                      void (*on_switch)(void *ctx, uint64_t ns, int out, int preempted),
                      void (*on_lost)(void *ctx, uint64_t n), void *ctx)
{
    /* acquire: pairs with the release store in ctr__sched_open, so the
     * mapping's size is the owner's. */
    struct perf_event_mmap_page *meta = atomic_load_explicit(&t->perf_ring, memory_order_acquire);
    if (!meta)
        return;
    const uint8_t *data = (const uint8_t *)meta + (meta->data_offset ? meta->data_offset
                                                                      : (uint64_t)sysconf(_SC_PAGESIZE));
    uint64_t size = meta->data_size ? meta->data_size : t->perf_bytes - (uint64_t)sysconf(_SC_PAGESIZE);
    /* acquire: the records up to head are complete (pairs with the kernel). */
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    while (head - tail >= sizeof(struct perf_event_header)) {
        struct perf_event_header h;
        ring_copy(data, size, tail, &h, sizeof(h));
        if (h.size < sizeof(h) || h.size > head - tail)
            break;
        /* SWITCH: header, then sample_id {u32 pid, u32 tid, u64 time}.
         * LOST: header, u64 id, u64 lost, then sample_id. */
        uint64_t body[4] = {0};
        ring_copy(data, size, tail + sizeof(h), body,
                  h.size - sizeof(h) < sizeof(body) ? h.size - sizeof(h) : sizeof(body));
        if (h.type == PERF_RECORD_SWITCH && h.size >= sizeof(h) + 16) {
            uint64_t ns = body[1];
            if (ns >= since_ns)
                on_switch(ctx, ns, (h.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0,
                          (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0);
        } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16 &&
                   !t->perf_counts_lost) {
            on_lost(ctx, body[1]);
        }
        tail += h.size;
    }
    /* release: we are done reading up to tail (pairs with the kernel). */
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    uint64_t lost = t->perf_counts_lost ? perf_lost(t) : UINT64_MAX;
    if (lost != UINT64_MAX && lost > t->perf_lost_seen) {
        on_lost(ctx, lost - t->perf_lost_seen);
        t->perf_lost_seen = lost;
    }
}
