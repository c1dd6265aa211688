/* SPDX-License-Identifier: MIT */
/* bufpool.h - big buffers handed from one generation to the next: the
 * streaming reader (pipeline.c) decodes every frame into buffers of a few
 * MB (the decompressed records, each thread's events) and frees them a
 * moment later. Taken from and given back to a pool, they stay mapped and
 * paged in, instead of costing a map, page faults and an unmap each time
 * (the C library maps buffers this big afresh), and the memory the reader
 * holds stays that of the frames in flight.
 *
 * Thread-safe: the workers take, the main thread gives back.
 */
#ifndef CTR_BUFPOOL_H
#define CTR_BUFPOOL_H

#include <stddef.h>

struct ctr_bufpool;

/* ctr_bufpool_new() : a pool keeping at most max_bytes of free buffers.
 * @return NULL if out of memory (a NULL pool is valid: plain malloc/free). */
struct ctr_bufpool *ctr_bufpool_new(size_t max_bytes);

/* ctr_bufpool_take() : a buffer of at least `min` bytes (its size into
 * *cap), from the pool when one fits, else new. Contents are undefined.
 * @return NULL if out of memory. The buffer may be realloc'd or freed like
 * any malloc'd one. */
void *ctr_bufpool_take(struct ctr_bufpool *p, size_t min, size_t *cap);

/* ctr_bufpool_give() : gives buffer b of cap bytes (NULL: nothing) back to
 * the pool, or frees it when the pool is full. */
void ctr_bufpool_give(struct ctr_bufpool *p, void *b, size_t cap);

void ctr_bufpool_free(struct ctr_bufpool *p);

#endif
