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

/* SLOT_DEFERRED: decoding it ahead would have overrun the budget; the
 * caller decodes it when it is the oldest (the compressed bytes kept). */
enum slot_state { SLOT_FREE, SLOT_QUEUED, SLOT_DECODING, SLOT_DONE, SLOT_DEFERRED };

struct slot {
    enum slot_state state;
    uint64_t seq;
    struct ctr_frame frame;
    struct ctr_gen gen;
    int rc;
    struct ctr_decoders *d;
    struct ctr_gen_budget budget; /* account: slot_account(this slot) */
    size_t ahead_held;            /* of d->ahead_held, under d->lock */
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
    /* The memory budget (decoders.h): what the frames decoded ahead of the
     * oldest hold of their share, ahead_max. */
    size_t ahead_held, ahead_max;
    int stop, at_end, read_rc;
    struct ctr_frame tail;       /* what the source said at its end */
    struct ctr_bufpool *buffers; /* shared by the decoders and the caller */
    ZSTD_DCtx *own_dctx;         /* the caller's, when it decodes */
    pthread_t threads[MAX_JOBS];
    int nthreads;
};

/* A frame's request to the budget (ctr_gen_budget.account). The oldest
 * frame not yet taken, the one the caller waits for, always has its share
 * (gen.c keeps it within frame_max); the frames decoded ahead of it share
 * ahead_max, and one that does not fit is given up (-EAGAIN), to be decoded
 * again when it is the oldest. So no frame waits for another's memory, and
 * the caller's frames, the oldest, those ahead and the pool's free buffers
 * stay within the budget (ctr_decoders_new). */
static int slot_account(void *arg, ptrdiff_t bytes)
{
    struct slot *s = arg;
    struct ctr_decoders *d = s->d;
    int rc = 0;
    pthread_mutex_lock(&d->lock);
    if (bytes < 0) {
        size_t back = (size_t)-bytes < s->ahead_held ? (size_t)-bytes : s->ahead_held;
        s->ahead_held -= back;
        d->ahead_held -= back;
    } else if (s->seq != d->next_take) {
        if (d->ahead_held + (size_t)bytes > d->ahead_max) {
            rc = -EAGAIN;
        } else {
            s->ahead_held += (size_t)bytes;
            d->ahead_held += (size_t)bytes;
        }
    }
    pthread_mutex_unlock(&d->lock);
    return rc;
}

/* The slot the caller takes next is the oldest: what it holds leaves the
 * share of those ahead. Called with the lock held. */
static void promote_oldest(struct ctr_decoders *d)
{
    struct slot *s = &d->slots[d->next_take % d->nslots];
    if (s->state != SLOT_FREE && s->seq == d->next_take) {
        d->ahead_held -= s->ahead_held;
        s->ahead_held = 0;
    }
}

/* Decodes s outside the lock. Given up for the budget (-EAGAIN), the slot
 * keeps its compressed bytes and frees the rest. */
static void decode_slot(struct slot *s, ZSTD_DCtx *dctx, struct ctr_bufpool *buffers)
{
    s->rc = ctr_gen_decode(&s->gen, s->frame.data, s->frame.len, s->frame.file_off, s->frame.cut,
                           dctx, buffers, &s->budget);
    if (s->rc == -EAGAIN) {
        ctr_gen_free(&s->gen, buffers);
        return;
    }
    free(s->frame.data);
    s->frame.data = NULL;
}

/* The state of a slot s decode_slot() has decoded, under the lock. */
static void decoded(struct ctr_decoders *d, struct slot *s)
{
    if (s->rc == -EAGAIN) {
        d->ahead_held -= s->ahead_held;
        s->ahead_held = 0;
        s->state = SLOT_DEFERRED;
        return;
    }
    s->state = SLOT_DONE;
    d->done_mem += s->gen.mem;
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
        decoded(d, s);
        pthread_cond_broadcast(&d->done);
        pthread_cond_broadcast(&d->work); /* the next slot may be queued already */
    }
    pthread_mutex_unlock(&d->lock);
    ZSTD_freeDCtx(dctx);
    return NULL;
}

struct ctr_decoders *ctr_decoders_new(struct ctr_source *src, int jobs, size_t mem)
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
    /* The budget's shares: the caller's two frames (the one it holds, the
     * one it takes in: pipeline.c) and the oldest, a quarter each at most;
     * the frames ahead an eighth; the free buffers kept for the next
     * frames (about a frame or two a job's worth) an eighth. */
    if (mem < CTR_DECODERS_MEM_MIN)
        mem = CTR_DECODERS_MEM_MIN;
    d->ahead_max = mem / 8;
    for (size_t i = 0; d->slots && i < d->nslots; i++)
        d->slots[i] = (struct slot){
            .d = d, .budget = {.frame_max = mem / 4, .account = slot_account, .arg = &d->slots[i]}};
    size_t keep = (size_t)(jobs + 1) * MEM_BUDGET / 2;
    d->buffers = ctr_bufpool_new(keep < mem / 8 ? keep : mem / 8);
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
    for (;;) {
        /* No workers, or the frame was given up ahead of its turn: the
         * caller decodes it, as the oldest (its share is always there). */
        if ((d->nthreads == 0 && s->state == SLOT_QUEUED) || s->state == SLOT_DEFERRED) {
            if (s->state == SLOT_QUEUED)
                d->next_decode++;
            s->state = SLOT_DECODING;
            pthread_mutex_unlock(&d->lock);
            decode_slot(s, d->own_dctx, d->buffers);
            pthread_mutex_lock(&d->lock);
            decoded(d, s);
        }
        if (s->state == SLOT_DONE)
            break;
        pthread_cond_wait(&d->done, &d->lock);
    }
    d->done_mem -= s->gen.mem;
    d->next_take++;
    promote_oldest(d);
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
