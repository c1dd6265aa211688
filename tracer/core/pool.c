/* SPDX-License-Identifier: MIT */
/* pool.c - a session's buffers: one anonymous mapping that holds its own
 * header (struct ctr_pool: the free list, the queue of full chunks) in its
 * first page and fixed-size chunks after it, handed to threads lock-free.
 *
 * Chunks are taken first from the free list (chunks the collector has written
 * out), then from the never-used tail, so memory is touched only as the trace
 * needs it.
 *
 * A pool is never unmapped while the process lives. The next session reuses
 * it (same sizes, every chunk free again) when the last stop saw every writer
 * leave its write section; otherwise, and when the sizes change, the next
 * session maps a new pool and this one is abandoned: a writer that a stop gave
 * up waiting for may still store into its old chunk, or push it to the old
 * queue, and must find writable memory and its own pool's header there. Its
 * section's epoch no longer matches, so nothing it does reaches a trace.
 * Between sessions the chunks' pages go back to the kernel (MADV_DONTNEED:
 * they read as zeros afterwards, and stay writable).
 */
#include "core/pool.h"

#include "core/lfstack.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

/* The header page: chunks start one page in, so they keep the page
 * alignment the chunk size (a power of two, at least 4 KiB) suggests. */
static size_t header_bytes(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return sizeof(struct ctr_pool) <= page ? page : 2 * page;
}

int ctr__pool_open(struct ctr_pool **pp, size_t pool_bytes, size_t chunk_bytes, uint32_t epoch,
                   int reuse)
{
    struct ctr_pool *p = *pp;
    size_t hdr = header_bytes();
    if (!p || !reuse || p->bytes != hdr + pool_bytes || p->chunk_bytes != chunk_bytes) {
        void *m = mmap(NULL, hdr + pool_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return -errno;
        p = m;
        p->bytes = hdr + pool_bytes;
        p->chunk_bytes = chunk_bytes;
        p->chunks = (uint8_t *)m + hdr;
        p->nchunks = (uint32_t)(pool_bytes / chunk_bytes);
    }
    p->epoch = epoch;
    ctr_lfstack_init(&p->free_list, p->chunks, chunk_bytes, offsetof(struct ctr_chunk, node));
    ctr_lfstack_init(&p->full, p->chunks, chunk_bytes, offsetof(struct ctr_chunk, node));
    /* relaxed: no writer uses the pool yet; ctr__session_begin publishes it
     * with the epoch (release). */
    atomic_store_explicit(&p->full_count, 0, memory_order_relaxed);
    atomic_store_explicit(&p->fresh, 0, memory_order_relaxed);
    p->populated = p->fresh_seen = 0;
    p->populate_failed = 0;
    *pp = p;
    return 0;
}

void ctr__pool_release_pages(struct ctr_pool *p)
{
    if (p) /* ctr__pool_open resets what ctr__pool_prefault counted */
        madvise(p->chunks, p->bytes - (size_t)(p->chunks - (uint8_t *)p), MADV_DONTNEED);
}

/* Chunks ctr__pool_prefault keeps mapped in ahead, at least and at most. */
#define PREFAULT_MIN_CHUNKS 8u
#define PREFAULT_MAX_CHUNKS 64u

void ctr__pool_prefault(struct ctr_pool *p)
{
    /* relaxed: fresh only hands out indexes. A thread may take a chunk and
     * write into it while it is being mapped in here: no race, populating
     * stores nothing. */
    uint32_t fresh = atomic_load_explicit(&p->fresh, memory_order_relaxed);
    uint32_t taken = fresh - p->fresh_seen;
    p->fresh_seen = fresh;
    if (p->populate_failed || fresh >= p->nchunks)
        return;
    uint32_t ahead = taken < PREFAULT_MIN_CHUNKS   ? PREFAULT_MIN_CHUNKS
                     : taken > PREFAULT_MAX_CHUNKS ? PREFAULT_MAX_CHUNKS
                                                   : taken;
    uint32_t from = p->populated > fresh ? p->populated : fresh;
    uint32_t to = p->nchunks - fresh < ahead ? p->nchunks : fresh + ahead;
    if (to <= from)
        return;
    if (madvise(p->chunks + (size_t)from * p->chunk_bytes, (size_t)(to - from) * p->chunk_bytes,
                MADV_POPULATE_WRITE) != 0)
        p->populate_failed = 1; /* an older kernel: threads fault as before */
    else
        p->populated = to;
}

struct ctr_chunk *ctr__pool_get(struct ctr_pool *p)
{
    struct ctr_chunk *c = ctr_lfstack_pop(&p->free_list);
    if (c)
        return c;
    /* relaxed: the counter only hands out distinct indexes; the chunk's
     * memory is fresh zero pages that nobody else touches. */
    uint32_t i = atomic_load_explicit(&p->fresh, memory_order_relaxed);
    while (i < p->nchunks) {
        if (atomic_compare_exchange_weak_explicit(&p->fresh, &i, i + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            /* aligned: chunks start a page in, chunk_bytes (4 KiB at least) apart */
            return (struct ctr_chunk *)(void *)(p->chunks + (size_t)i * p->chunk_bytes);
    }
    return NULL;
}

void ctr__pool_put(struct ctr_pool *p, struct ctr_chunk *c)
{
    ctr_lfstack_push(&p->free_list, c);
}
