/* SPDX-License-Identifier: MIT */
/* decoders.c - frames decoded ahead of the analysis (see decoders.h).
 *
 * A ring of slots: the caller reads a frame into a free slot, a worker
 * decodes it, and the caller takes the slots back in file order. Workers
 * take the slots in order too (next_decode), so the oldest frame is always
 * the first being decoded. One lock and two conditions; a frame is a few
 * hundred thousand events, so they are taken a few times a frame.
 */
#include "read/decoders.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "read/bufpool.h"

/* Decoded frames waiting for the caller may hold this much before the
 * reading pauses (one frame is always allowed). */
#define MEM_BUDGET ((size_t)32 << 20)
#define MAX_JOBS 64

enum slot_state { SLOT_FREE, SLOT_QUEUED, SLOT_DECODING, SLOT_DONE };

struct slot {
    enum slot_state state;
    uint64_t seq;
    struct ctr_frame frame;
    struct ctr_gen gen;
    int rc;
};

struct ctr_decoders {
    struct ctr_source *src;
    pthread_mutex_t lock;
    pthread_cond_t work; /* a slot was queued, or stop */
    pthread_cond_t done; /* a slot was decoded */
    struct slot *slots;
    size_t nslots;
    uint64_t next_read, next_take; /* the caller's, under the lock */
    uint64_t next_decode;          /* the lowest seq not yet taken by a worker */
    size_t done_mem;
    int stop, at_end, read_rc;
    struct ctr_frame tail;       /* what the source said at its end */
    struct ctr_bufpool *buffers; /* shared by the decoders and the caller */
    ZSTD_DCtx *own_dctx;         /* the caller's, when it decodes */
    pthread_t threads[MAX_JOBS];
    int nthreads;
};

static void decode_slot(struct slot *s, ZSTD_DCtx *dctx, struct ctr_bufpool *buffers)
{
    s->rc = ctr_gen_decode(&s->gen, s->frame.data, s->frame.len, s->frame.file_off, s->frame.cut,
                           dctx, buffers);
    free(s->frame.data);
    s->frame.data = NULL;
}

static void *worker(void *arg)
{
    struct ctr_decoders *d = arg;
    ZSTD_DCtx *dctx = ZSTD_createDCtx(); /* NULL: one per frame, then */
    pthread_mutex_lock(&d->lock);
    for (;;) {
        struct slot *s = &d->slots[d->next_decode % d->nslots];
        if (d->stop)
            break;
        if (s->state != SLOT_QUEUED || s->seq != d->next_decode) {
            pthread_cond_wait(&d->work, &d->lock);
            continue;
        }
        s->state = SLOT_DECODING;
        d->next_decode++;
        pthread_mutex_unlock(&d->lock);
        decode_slot(s, dctx, d->buffers);
        pthread_mutex_lock(&d->lock);
        s->state = SLOT_DONE;
        d->done_mem += s->gen.mem;
        pthread_cond_broadcast(&d->done);
        pthread_cond_broadcast(&d->work); /* the next slot may be queued already */
    }
    pthread_mutex_unlock(&d->lock);
    ZSTD_freeDCtx(dctx);
    return NULL;
}

struct ctr_decoders *ctr_decoders_new(struct ctr_source *src, int jobs)
{
    if (jobs < 1)
        jobs = 1;
    if (jobs > MAX_JOBS)
        jobs = MAX_JOBS;
    struct ctr_decoders *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->src = src;
    d->nslots = (size_t)jobs;
    d->slots = calloc(d->nslots, sizeof(*d->slots));
    /* Freed frames' buffers are kept for the next ones: about a frame or
     * two a job's worth. */
    d->buffers = ctr_bufpool_new((size_t)(jobs + 1) * MEM_BUDGET / 2);
    d->own_dctx = ZSTD_createDCtx();
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->work, NULL);
    pthread_cond_init(&d->done, NULL);
    if (!d->slots) {
        ctr_decoders_free(d);
        return NULL;
    }
    for (int i = 0; i < jobs - 1; i++) {
        if (pthread_create(&d->threads[i], NULL, worker, d) != 0)
            break; /* fewer workers, still correct */
        d->nthreads++;
    }
    return d;
}

/* Reads frames into free slots while the budget allows. Called and
 * returns with the lock held. */
static void read_ahead(struct ctr_decoders *d)
{
    while (!d->at_end && d->next_read - d->next_take < d->nslots &&
           (d->next_read == d->next_take || d->done_mem < MEM_BUDGET)) {
        struct slot *s = &d->slots[d->next_read % d->nslots];
        pthread_mutex_unlock(&d->lock);
        struct ctr_frame f;
        int got = ctr_source_next(d->src, &f);
        pthread_mutex_lock(&d->lock);
        if (got <= 0) {
            d->tail = f; /* an error's reason, or bytes skipped at the end */
            d->read_rc = got;
            d->at_end = 1;
        } else {
            s->frame = f;
            s->seq = d->next_read++;
            s->state = SLOT_QUEUED;
            pthread_cond_broadcast(&d->work);
        }
    }
}

int ctr_decoders_next(struct ctr_decoders *d, struct ctr_decoded *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&d->lock);
    read_ahead(d);
    if (d->next_take == d->next_read) {
        pthread_mutex_unlock(&d->lock);
        snprintf(out->skipped, sizeof(out->skipped), "%s", d->tail.skipped);
        out->skipped_off = d->tail.skipped_off;
        out->file_off = ctr_source_pos(d->src);
        return d->read_rc;
    }
    struct slot *s = &d->slots[d->next_take % d->nslots];
    if (d->nthreads == 0 && s->state == SLOT_QUEUED) {
        s->state = SLOT_DECODING;
        d->next_decode++;
        pthread_mutex_unlock(&d->lock);
        decode_slot(s, d->own_dctx, d->buffers);
        pthread_mutex_lock(&d->lock);
        s->state = SLOT_DONE;
        d->done_mem += s->gen.mem;
    }
    while (s->state != SLOT_DONE)
        pthread_cond_wait(&d->done, &d->lock);
    d->done_mem -= s->gen.mem;
    d->next_take++;
    /* The frame goes to the caller, and the slot is free again. */
    s->state = SLOT_FREE;
    out->gen = s->gen;
    memset(&s->gen, 0, sizeof(s->gen));
    out->rc = s->rc;
    snprintf(out->skipped, sizeof(out->skipped), "%s", s->frame.skipped);
    out->skipped_off = s->frame.skipped_off;
    out->file_off = s->frame.file_off;
    pthread_mutex_unlock(&d->lock);
    return 1;
}

struct ctr_bufpool *ctr_decoders_buffers(struct ctr_decoders *d)
{
    return d->buffers;
}

void ctr_decoders_free(struct ctr_decoders *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->lock);
    d->stop = 1;
    pthread_cond_broadcast(&d->work);
    pthread_mutex_unlock(&d->lock);
    for (int i = 0; i < d->nthreads; i++)
        pthread_join(d->threads[i], NULL);
    for (size_t i = 0; d->slots && i < d->nslots; i++) {
        free(d->slots[i].frame.data);
        ctr_gen_free(&d->slots[i].gen, d->buffers);
    }
    free(d->slots);
    ctr_bufpool_free(d->buffers);
    ZSTD_freeDCtx(d->own_dctx);
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->work);
    pthread_cond_destroy(&d->done);
    free(d);
}
