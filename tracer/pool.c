/* pool.c - the session's chunk pool: one anonymous mapping cut into fixed-size
 * chunks, handed to threads lock-free.
 *
 * Chunks are taken first from the free list (chunks the collector has written
 * out), then from the never-used tail, so memory is touched only as the trace
 * needs it. The mapping is never unmapped while the process lives: a thread
 * that was mid-event when tracing stopped may still store into its old chunk,
 * which must stay writable memory. Between sessions its pages are returned
 * to the kernel with MADV_DONTNEED instead.
 */
#include "internal.h"

#include <errno.h>
#include <sys/mman.h>

int ctr__pool_init(struct ctr_pool *p, size_t pool_bytes, size_t chunk_bytes)
{
    if (p->base && (p->bytes != pool_bytes || p->chunk_bytes != chunk_bytes))
        p->base = NULL; /* sizes changed: leave the old mapping (see above) */
    if (!p->base) {
        void *m = mmap(NULL, pool_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return -errno;
        p->base = m;
        p->bytes = pool_bytes;
        p->chunk_bytes = chunk_bytes;
    }
    p->nchunks = (uint32_t)(pool_bytes / chunk_bytes);
    ctr_lfstack_init(&p->free_list, p->base, chunk_bytes, offsetof(struct ctr_chunk, node));
    atomic_store_explicit(&p->fresh, 0, memory_order_relaxed);
    return 0;
}

void ctr__pool_reset(struct ctr_pool *p)
{
    if (p->base)
        madvise(p->base, p->bytes, MADV_DONTNEED);
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
            return (struct ctr_chunk *)(p->base + (size_t)i * p->chunk_bytes);
    }
    return NULL;
}

void ctr__pool_put(struct ctr_pool *p, struct ctr_chunk *c)
{
    ctr_lfstack_push(&p->free_list, c);
}
