/* SPDX-License-Identifier: MIT */
/* bufpool.c - big buffers reused (see bufpool.h). A handful of blocks, a
 * mutex: taking and giving happen a few times a frame, not an event. */
#include "read/bufpool.h"

#include <pthread.h>
#include <stdlib.h>

#define MAX_BLOCKS 64

struct block {
    void *p;
    size_t cap;
};

struct ctr_bufpool {
    pthread_mutex_t lock;
    struct block free[MAX_BLOCKS];
    size_t nfree, bytes, max_bytes;
};

struct ctr_bufpool *ctr_bufpool_new(size_t max_bytes)
{
    struct ctr_bufpool *p = calloc(1, sizeof(*p));
    if (p) {
        pthread_mutex_init(&p->lock, NULL);
        p->max_bytes = max_bytes;
    }
    return p;
}

void *ctr_bufpool_take(struct ctr_bufpool *p, size_t min, size_t *cap)
{
    if (min == 0)
        min = 1;
    if (p) {
        pthread_mutex_lock(&p->lock);
        size_t best = MAX_BLOCKS;
        for (size_t i = 0; i < p->nfree; i++)
            if (p->free[i].cap >= min && (best == MAX_BLOCKS || p->free[i].cap < p->free[best].cap))
                best = i;
        if (best != MAX_BLOCKS) {
            struct block b = p->free[best];
            p->free[best] = p->free[--p->nfree];
            p->bytes -= b.cap;
            pthread_mutex_unlock(&p->lock);
            *cap = b.cap;
            return b.p;
        }
        pthread_mutex_unlock(&p->lock);
        /* New: with some room, so that the next frame's a little larger
         * need fits it too. */
        min += min / 4;
    }
    void *b = malloc(min);
    *cap = b ? min : 0;
    return b;
}

void ctr_bufpool_give(struct ctr_bufpool *p, void *b, size_t cap)
{
    if (!b)
        return;
    if (p) {
        pthread_mutex_lock(&p->lock);
        /* Make room by dropping smaller blocks: the big ones are the dear ones. */
        while (p->nfree > 0 && (p->nfree == MAX_BLOCKS || p->bytes + cap > p->max_bytes)) {
            size_t small = 0;
            for (size_t i = 1; i < p->nfree; i++)
                if (p->free[i].cap < p->free[small].cap)
                    small = i;
            if (p->free[small].cap >= cap)
                break;
            p->bytes -= p->free[small].cap;
            free(p->free[small].p);
            p->free[small] = p->free[--p->nfree];
        }
        if (p->nfree < MAX_BLOCKS && p->bytes + cap <= p->max_bytes) {
            p->free[p->nfree++] = (struct block){b, cap};
            p->bytes += cap;
            b = NULL;
        }
        pthread_mutex_unlock(&p->lock);
    }
    free(b);
}

void ctr_bufpool_free(struct ctr_bufpool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nfree; i++)
        free(p->free[i].p);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
