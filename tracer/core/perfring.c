/* SPDX-License-Identifier: MIT */
/* perfring.c - one perf_event of one thread and its ring buffer: opening it
 * out of the program's way, and reading its records (see perfring.h).
 *
 * Ring protocol (perf_event_open(2)): the kernel writes records and advances
 * data_head (our acquire load pairs with its release); the collector reads
 * up to it and stores data_tail (release), which tells the kernel the space
 * is free. Only the collector reads a ring.
 */
#include "core/perfring.h"

#include "core/fdguard.h"
#include "core/real.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The largest record a drain copies out whole: a perf record's size is a
 * u16. Collector thread only. */
static uint8_t scratch[1u << 16];

static size_t page_bytes(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* The records r's ring could not take so far (PERF_FORMAT_LOST), or
 * UINT64_MAX if unknown. */
static uint64_t kernel_lost(struct ctr_perf_ring *r)
{
    if (!r->counts_lost)
        return UINT64_MAX;
    uint64_t v[2]; /* value, lost */
    ctr__fd_use_begin(1);
    /* relaxed: the use (ctr__fd_use_begin) keeps a move of the descriptor
     * off, and the mover's update of fd happens before it (fdguard.c). */
    ssize_t n = ctr__real.read(atomic_load_explicit(&r->fd, memory_order_relaxed), v, sizeof(v));
    ctr__fd_use_end();
    return n == (ssize_t)sizeof(v) ? v[1] : UINT64_MAX;
}

/* An ioctl on r's descriptor, whose number must not move meanwhile. */
static void ring_ioctl(struct ctr_perf_ring *r, unsigned long request, void *arg)
{
    ctr__fd_use_begin(1);
    /* relaxed: as in kernel_lost. */
    ioctl(atomic_load_explicit(&r->fd, memory_order_relaxed), request, arg);
    ctr__fd_use_end();
}

void ctr__perf_period(struct ctr_perf_ring *r, uint64_t period)
{
    if (ctr__perf_is_open(r))
        ring_ioctl(r, PERF_EVENT_IOC_PERIOD, &period);
}

int ctr__perf_open(struct ctr_perf_ring *r, struct perf_event_attr *a, int tid, size_t data_bytes)
{
    /* The kernel's count of the records the ring could not take, read at
     * each drain: its LOST records come only once there is room again, so
     * they miss the last overflow of a trace. Before Linux 6.0, those. */
    a->read_format = PERF_FORMAT_LOST;
    int raw = (int)ctr__real.syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    r->counts_lost = raw >= 0;
    if (raw < 0) {
        a->read_format = 0;
        raw = (int)ctr__real.syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (raw < 0)
        return -errno;
    r->lost_seen = 0;
    /* Out of the program's way at once (fdguard.c); its number goes to
     * r->fd, where it is updated if it has to move. */
    int fd = ctr__fd_adopt(raw, &r->fd);
    if (fd < 0)
        return fd;
    size_t bytes = page_bytes() + data_bytes;
    void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED) {
        int rc = -errno;
        ctr__fd_close(fd);
        return rc;
    }
    r->bytes = bytes;
    /* release: fd and size before the collector can see the ring (pairs
     * with the acquire loads in ctr__perf_is_open and ctr__perf_drain). */
    atomic_store_explicit(&r->meta, ring, memory_order_release);
    return 0;
}

int ctr__perf_is_open(struct ctr_perf_ring *r)
{
    /* acquire: pairs with the release store in ctr__perf_open. */
    return atomic_load_explicit(&r->meta, memory_order_acquire) != NULL;
}

void ctr__perf_close(struct ctr_perf_ring *r)
{
    /* acquire: pairs with the release store in ctr__perf_open (the size and
     * descriptor). relaxed below: nobody reads a closed ring (see the top of
     * perfring.h). */
    void *ring = atomic_load_explicit(&r->meta, memory_order_acquire);
    if (!ring)
        return;
    munmap(ring, r->bytes);
    ctr__fd_close(atomic_load_explicit(&r->fd, memory_order_relaxed));
    atomic_store_explicit(&r->meta, NULL, memory_order_relaxed);
}

void ctr__perf_forget(struct ctr_perf_ring *r)
{
    /* No munmap: the kernel does not copy a perf ring's mapping into a
     * child (VM_DONTCOPY), and by now the child may have mapped something
     * else at that address (the intern tables it remade: unmapping them
     * crashed the daemon example). relaxed: a forked child is alone
     * (thread.c, ctr__threads_forked). */
    atomic_store_explicit(&r->fd, -1, memory_order_relaxed);
}

void ctr__perf_restart(struct ctr_perf_ring *r)
{
    /* relaxed: the opener's own store, or one published to it by the
     * session's start (the epoch's release, whose acquire it made). */
    struct perf_event_mmap_page *meta = atomic_load_explicit(&r->meta, memory_order_relaxed);
    if (!meta)
        return;
    /* acquire on data_head, release on data_tail: the kernel's protocol, as
     * in ctr__perf_drain. */
    __atomic_store_n(&meta->data_tail, __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE),
                     __ATOMIC_RELEASE);
    ring_ioctl(r, PERF_EVENT_IOC_ENABLE, NULL);
}

int ctr__perf_has_records(struct ctr_perf_ring *r)
{
    /* acquire: pairs with the release store in ctr__perf_open. */
    struct perf_event_mmap_page *meta = atomic_load_explicit(&r->meta, memory_order_acquire);
    /* acquire on data_head: the kernel's protocol, as in ctr__perf_drain;
     * data_tail is the collector's own (the caller's). */
    return meta && __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE) !=
                       __atomic_load_n(&meta->data_tail, __ATOMIC_RELAXED);
}

void ctr__perf_disable(struct ctr_perf_ring *r)
{
    if (!ctr__perf_is_open(r))
        return;
    ring_ioctl(r, PERF_EVENT_IOC_DISABLE, NULL);
    uint64_t lost = kernel_lost(r);
    if (lost != UINT64_MAX)
        r->lost_seen = lost;
}

/* Copies n bytes at ring offset off (which may wrap) to out. */
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t off, void *out, size_t n)
{
    uint64_t at = off % size;
    size_t first = n < size - at ? n : (size_t)(size - at);
    memcpy(out, data + at, first);
    memcpy((uint8_t *)out + first, data, n - first);
}

uint64_t ctr__perf_drain(struct ctr_perf_ring *r,
                         void (*on_record)(void *ctx, const struct perf_event_header *h,
                                           const uint8_t *body, size_t len),
                         void *ctx)
{
    /* acquire: pairs with the release store in ctr__perf_open, so the
     * mapping's size is the opener's. */
    struct perf_event_mmap_page *meta = atomic_load_explicit(&r->meta, memory_order_acquire);
    if (!meta)
        return 0;
    size_t page = page_bytes();
    const uint8_t *data = (const uint8_t *)meta + (meta->data_offset ? meta->data_offset : page);
    uint64_t size = meta->data_size ? meta->data_size : r->bytes - page;
    /* acquire: the records up to head are complete (pairs with the kernel). */
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail, lost = 0;
    while (head - tail >= sizeof(struct perf_event_header)) {
        struct perf_event_header h;
        ring_copy(data, size, tail, &h, sizeof(h));
        if (h.size < sizeof(h) || h.size > head - tail)
            break;
        size_t len = h.size - sizeof(h);
        ring_copy(data, size, tail + sizeof(h), scratch, len);
        /* LOST: u64 id, u64 lost, then sample_id. */
        if (h.type == PERF_RECORD_LOST && len >= 16 && !r->counts_lost) {
            uint64_t n;
            memcpy(&n, scratch + 8, sizeof(n));
            lost += n;
        } else if (h.type != PERF_RECORD_LOST) {
            on_record(ctx, &h, scratch, len);
        }
        tail += h.size;
    }
    /* release: we are done reading up to tail (pairs with the kernel). */
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    uint64_t now = kernel_lost(r);
    if (now != UINT64_MAX && now > r->lost_seen) {
        lost += now - r->lost_seen;
        r->lost_seen = now;
    }
    return lost;
}
