/* SPDX-License-Identifier: MIT */
/* pool.c - a session's buffers: a header (struct ctr_pool: the free list,
 * the queue of full chunks) and fixed-size chunks in an array mapped a
 * segment at a time (core/segarr.h), handed to threads lock-free.
 *
 * Chunks are taken first from the free list (chunks the collector has written
 * out), then from the never-used tail, so memory is touched, and address
 * space taken, only as the trace needs it: the collector maps the segments
 * threads will take next ahead of them (ctr__pool_prefault), and a thread
 * that outruns it maps one itself.
 *
 * A pool is never unmapped while the process lives. The next session reuses
 * it (same sizes, every chunk free again) when the last stop saw every writer
 * leave its write section; otherwise, and when the sizes change, the next
 * session makes a new pool and this one is abandoned: a writer that a stop gave
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

/* Chunks are mapped this much at a time at least (8 chunks of the default
 * 64 KiB), and the pool's bound never needs more segments than this. */
#define POOL_SEGMENT_MIN (512u << 10)
#define POOL_SEGMENTS_MAX 4096u

static size_t header_bytes(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (sizeof(struct ctr_pool) + page - 1) / page * page;
}

int ctr__pool_open(struct ctr_pool **pp, size_t pool_bytes, size_t chunk_bytes, uint32_t epoch,
                   int reuse)
{
    struct ctr_pool *p = *pp;
    if (!p || !reuse || p->pool_bytes != pool_bytes || p->chunk_bytes != chunk_bytes) {
        uint64_t nchunks = pool_bytes / chunk_bytes;
        if (nchunks > UINT32_MAX - 1) /* lfstack indexes are 32-bit, 0 = none */
            nchunks = UINT32_MAX - 1;
        void *m =
            mmap(NULL, header_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -errno;
        struct ctr_pool *np = m;
        int rc = ctr_segarr_init(&np->chunk_array, nchunks, chunk_bytes, POOL_SEGMENT_MIN,
                                 POOL_SEGMENTS_MAX);
        if (rc != 0) {
            munmap(m, header_bytes());
            return rc;
        }
        p = np;
        p->pool_bytes = pool_bytes;
        p->chunk_bytes = chunk_bytes;
        p->nchunks = (uint32_t)nchunks;
    }
    p->epoch = epoch;
    ctr_lfstack_init(&p->free_list, &p->chunk_array, offsetof(struct ctr_chunk, node));
    ctr_lfstack_init(&p->full, &p->chunk_array, offsetof(struct ctr_chunk, node));
    /* relaxed: no writer uses the pool yet; ctr__session_begin publishes it
     * with the epoch (release). */
    atomic_store_explicit(&p->full_count, 0, memory_order_relaxed);
    atomic_store_explicit(&p->fresh, 0, memory_order_relaxed);
    p->populated = p->fresh_seen = 0;
    p->populate_failed = 0;
    *pp = p;
    return 0;
}

void ctr__pool_close(struct ctr_pool *p)
{
    ctr_segarr_destroy(&p->chunk_array);
    munmap(p, header_bytes());
}

void ctr__pool_release_pages(struct ctr_pool *p)
{
    if (p) /* ctr__pool_open resets what ctr__pool_prefault counted */
        ctr_segarr_release_pages(&p->chunk_array);
}

size_t ctr__pool_mapped_bytes(const struct ctr_pool *p)
{
    return p ? header_bytes() + ctr_segarr_mapped_bytes(&p->chunk_array) : 0;
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
    int rc = ctr_segarr_populate(&p->chunk_array, from, to);
    if (rc == -EINVAL)
        p->populate_failed = 1; /* an older kernel: threads fault as before */
    else if (rc == 0)
        p->populated = to;
    /* else no memory for now: threads map what they take, or drop */
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
        /* Map first, then take: a chunk whose segment the kernel refuses
         * stays fresh for a later try (the collector's, or ours). */
        struct ctr_chunk *fresh = ctr_segarr_get(&p->chunk_array, i);
        if (!fresh)
            return NULL;
        if (atomic_compare_exchange_weak_explicit(&p->fresh, &i, i + 1, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            ctr_lfstack_name(&p->free_list, fresh, i);
            return fresh;
        }
    }
    return NULL;
}

void ctr__pool_put(struct ctr_pool *p, struct ctr_chunk *c)
{
    ctr_lfstack_push(&p->free_list, c);
}
