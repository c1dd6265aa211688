/* SPDX-License-Identifier: MIT */
/* segarr.h - an array of fixed-size elements whose memory is mapped one
 * segment at a time, when an index in the segment is first used (segarr.c).
 *
 * Why: the thread slab, the chunk pool and the intern tables have large
 * bounds (2^18 threads, pool_bytes, 64 MiB of stacks) that a program almost
 * never reaches. Reserving the bounds up front cost 650 MB of address space,
 * which a program under `ulimit -v` (RLIMIT_AS) pays out of its own budget:
 * its pthread_create and malloc failed where untraced they succeed. Mapped
 * a segment at a time, the address space follows what the trace uses.
 *
 * Protocol. `segs` is a table of nsegs pointers, NULL until the segment is
 * mapped. A thread that needs element i and finds its segment NULL maps one
 * (fresh zero pages) and installs it with a CAS from NULL; the loser of a race
 * unmaps its own and uses the winner's. A segment, once installed, stays
 * mapped until ctr_segarr_destroy, which only a caller that knows no other
 * thread can reach the array may call (a forked child alone, a failed start):
 * so an element's address, once handed out, stays valid, as a slab slot or a
 * chunk must for a writer that a stop gave up waiting for.
 *
 * Memory order: the CAS that installs a segment is release and ctr_segarr_at
 * loads with acquire, so whoever sees the pointer sees the zero pages behind
 * it (the kernel's doing anyway) and the table entry whole. The elements'
 * own contents are published by their users (the LIVE state of a slot, the
 * lock-free stack's CAS for chunks, the intern table's slot CAS).
 *
 * Async-signal-safe and errno-neutral: a traced signal handler may map a
 * segment (mmap is a system call); errno is the program's and is kept.
 */
#ifndef CTR_SEGARR_H
#define CTR_SEGARR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct ctr_segarr {
    uint8_t *_Atomic *segs; /* nsegs entries, NULL: not mapped yet */
    uint32_t nsegs;
    uint32_t seg_shift;      /* elements per segment: 1 << seg_shift */
    uint64_t n;              /* elements in all */
    size_t stride;           /* bytes between elements */
    size_t seg_bytes;        /* bytes of one segment's mapping (pages) */
    _Atomic uint32_t mapped; /* segments installed, for ctl status */
};

/* An array of n elements of `stride` bytes, with segments of at least
 * seg_bytes_min bytes (fewer, larger ones when n * stride would need more
 * than max_segs of them). Maps only the segment table.
 * @return 0, -EINVAL for n == 0 or stride == 0, or -ENOMEM. Not thread-safe. */
int ctr_segarr_init(struct ctr_segarr *a, uint64_t n, size_t stride, size_t seg_bytes_min,
                    uint32_t max_segs);

/* Unmaps every segment and the table; a is zeroed (ctr_segarr_ready: 0).
 * Only when no other thread can reach the array. */
void ctr_segarr_destroy(struct ctr_segarr *a);

static inline int ctr_segarr_ready(const struct ctr_segarr *a)
{
    return a->segs != NULL;
}

/* Element i if its segment is mapped, else NULL (also for i >= n). Any
 * thread, no system call. */
static inline void *ctr_segarr_at(const struct ctr_segarr *a, uint64_t i)
{
    if (i >= a->n)
        return NULL;
    /* acquire: pairs with the release CAS in ctr_segarr_get that installed
     * the segment. */
    uint8_t *seg = atomic_load_explicit(&a->segs[i >> a->seg_shift], memory_order_acquire);
    if (!seg)
        return NULL;
    return seg + (size_t)(i & ((1ull << a->seg_shift) - 1)) * a->stride;
}

/* Element i, which the caller knows was handed out (so its segment is
 * mapped): a node popped from a stack, an id read in a published entry. */
static inline void *ctr_segarr_elem(const struct ctr_segarr *a, uint64_t i)
{
    /* acquire: as in ctr_segarr_at. */
    uint8_t *seg = atomic_load_explicit(&a->segs[i >> a->seg_shift], memory_order_acquire);
    return seg + (size_t)(i & ((1ull << a->seg_shift) - 1)) * a->stride;
}

/* Element i, mapping its segment first if needed; NULL when i >= n or the
 * kernel refused the mapping (RLIMIT_AS, no memory). Any thread. */
void *ctr_segarr_get(struct ctr_segarr *a, uint64_t i);

/* Whether elements i and j share a segment (so bytes from one to the other
 * are contiguous). */
static inline int ctr_segarr_same_segment(const struct ctr_segarr *a, uint64_t i, uint64_t j)
{
    return (i >> a->seg_shift) == (j >> a->seg_shift);
}

/* Maps elements [lo, hi) and asks the kernel to fault their pages in now
 * (MADV_POPULATE_WRITE). @return 0, or -errno (EINVAL from a kernel before
 * 5.14, which cannot populate; ENOMEM). */
int ctr_segarr_populate(struct ctr_segarr *a, uint64_t lo, uint64_t hi);

/* Gives every mapped segment's pages back to the kernel (they read as zeros
 * afterwards and stay mapped). */
void ctr_segarr_release_pages(struct ctr_segarr *a);

/* Bytes of address space the array holds now: table and mapped segments. */
size_t ctr_segarr_mapped_bytes(const struct ctr_segarr *a);

#endif /* CTR_SEGARR_H */
