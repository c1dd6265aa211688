/* SPDX-License-Identifier: MIT */
/* segarr.c - arrays mapped a segment at a time (the protocol is in
 * segarr.h). */
#include "core/segarr.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it (EINVAL) */
#endif

static size_t page_bytes(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

static size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

static void *map_zeros(size_t bytes)
{
    /* MAP_NORESERVE: the pool's chunks in particular are touched only as
     * the trace needs them; no swap is set aside for the rest. */
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

static size_t table_bytes(const struct ctr_segarr *a)
{
    return round_up((size_t)a->nsegs * sizeof(*a->segs), page_bytes());
}

int ctr_segarr_init(struct ctr_segarr *a, uint64_t n, size_t stride, size_t seg_bytes_min,
                    uint32_t max_segs)
{
    memset(a, 0, sizeof(*a));
    if (n == 0 || stride == 0 || max_segs == 0)
        return -EINVAL;
    /* The fewest elements per segment (a power of two, for a shift) that
     * fill seg_bytes_min, then more until the table fits max_segs. */
    uint32_t shift = 0;
    while (shift < 40 && ((uint64_t)stride << shift) < seg_bytes_min)
        shift++;
    while (shift < 40 && ((n - 1) >> shift) + 1 > max_segs)
        shift++;
    if (((n - 1) >> shift) + 1 > max_segs || ((uint64_t)stride << shift) > SIZE_MAX / 2)
        return -ENOMEM;
    a->seg_shift = shift;
    a->nsegs = (uint32_t)(((n - 1) >> shift) + 1);
    a->n = n;
    a->stride = stride;
    a->seg_bytes = round_up((size_t)stride << shift, page_bytes());
    int saved = errno;
    a->segs = map_zeros(table_bytes(a));
    errno = saved;
    if (!a->segs) {
        memset(a, 0, sizeof(*a));
        return -ENOMEM;
    }
    return 0;
}

void ctr_segarr_destroy(struct ctr_segarr *a)
{
    if (!a->segs)
        return;
    for (uint32_t s = 0; s < a->nsegs; s++) {
        /* relaxed: the caller is the array's only user now. */
        uint8_t *seg = atomic_load_explicit(&a->segs[s], memory_order_relaxed);
        if (seg)
            munmap(seg, a->seg_bytes);
    }
    munmap((void *)a->segs, table_bytes(a));
    memset(a, 0, sizeof(*a));
}

/* Installs a mapping for segment s unless another thread did first.
 * @return the segment, or NULL when the kernel refused. */
static uint8_t *segment_install(struct ctr_segarr *a, uint32_t s)
{
    int saved = errno;
    uint8_t *mine = map_zeros(a->seg_bytes);
    uint8_t *seen = NULL;
    /* release: the mapping before the pointer (pairs with the acquire load
     * in ctr_segarr_at); acquire on failure: the winner's segment, used
     * next. */
    if (mine && atomic_compare_exchange_strong_explicit(
                    &a->segs[s], &seen, mine, memory_order_acq_rel, memory_order_acquire)) {
        /* relaxed: a count for ctl status only. */
        atomic_fetch_add_explicit(&a->mapped, 1, memory_order_relaxed);
        errno = saved;
        return mine;
    }
    if (mine)
        munmap(mine, a->seg_bytes); /* lost the race: the winner's serves */
    else
        /* acquire: as ctr_segarr_at; another thread may have mapped it. */
        seen = atomic_load_explicit(&a->segs[s], memory_order_acquire);
    errno = saved;
    return seen;
}

void *ctr_segarr_get(struct ctr_segarr *a, uint64_t i)
{
    void *e = ctr_segarr_at(a, i);
    if (e || i >= a->n)
        return e;
    uint8_t *seg = segment_install(a, (uint32_t)(i >> a->seg_shift));
    if (!seg)
        return NULL;
    return seg + (size_t)(i & ((1ull << a->seg_shift) - 1)) * a->stride;
}

int ctr_segarr_populate(struct ctr_segarr *a, uint64_t lo, uint64_t hi)
{
    if (hi > a->n)
        hi = a->n;
    int saved = errno, rc = 0;
    while (lo < hi && rc == 0) {
        /* The part of [lo, hi) in lo's segment. */
        uint64_t seg_end = ((lo >> a->seg_shift) + 1) << a->seg_shift;
        uint64_t end = hi < seg_end ? hi : seg_end;
        uint8_t *first = ctr_segarr_get(a, lo);
        if (!first) {
            rc = -ENOMEM;
            break;
        }
        /* madvise wants a page-aligned start: round down within the
         * segment (which starts on a page), the length up. */
        uintptr_t from = (uintptr_t)first & ~(uintptr_t)(page_bytes() - 1);
        size_t len = (size_t)((uintptr_t)first + (size_t)(end - lo) * a->stride - from);
        if (madvise((void *)from, len, MADV_POPULATE_WRITE) != 0)
            rc = -errno;
        lo = end;
    }
    errno = saved;
    return rc;
}

void ctr_segarr_release_pages(struct ctr_segarr *a)
{
    if (!a->segs)
        return;
    int saved = errno;
    for (uint32_t s = 0; s < a->nsegs; s++) {
        /* acquire: as ctr_segarr_at. */
        uint8_t *seg = atomic_load_explicit(&a->segs[s], memory_order_acquire);
        if (seg)
            madvise(seg, a->seg_bytes, MADV_DONTNEED);
    }
    errno = saved;
}

size_t ctr_segarr_mapped_bytes(const struct ctr_segarr *a)
{
    if (!a->segs)
        return 0;
    /* relaxed: a count for reports. */
    return table_bytes(a) +
           (size_t)atomic_load_explicit(&a->mapped, memory_order_relaxed) * a->seg_bytes;
}
