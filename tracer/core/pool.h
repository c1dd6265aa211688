/* SPDX-License-Identifier: MIT */
/* pool.h - chunks, the fixed-size buffers threads write events into, and the
 * session's pool they come from (pool.c). */
#ifndef CTR_POOL_H
#define CTR_POOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/lfstack.h"
#include "core/segarr.h"

/* ---------------------------------------------------------------------------
 * Chunks and the pool (pool.c)
 * ------------------------------------------------------------------------- */

/* A chunk's commit word packs the position and time of its last complete
 * event, so the collector reads both consistently with one load:
 *   bits 0..19  bytes of data committed (so data is < 1 MiB)
 *   bits 20..63 ticks of the last committed event minus chunk->base_ticks */
#define CTR_COMMIT_POS_BITS 20
#define CTR_COMMIT_POS_MASK ((1u << CTR_COMMIT_POS_BITS) - 1)
#define CTR_TICKS_WINDOW (1ull << (64 - CTR_COMMIT_POS_BITS))

struct ctr_chunk {
    struct ctr_lfnode node; /* pool free list or the collector's queue */
    /* Written by the owner before the chunk is published (release on
     * thread->cur or on the queue push), read-only afterwards. */
    uint64_t thread_id;
    uint64_t base_ticks;
    uint32_t slot;  /* owner's slot in the thread slab */
    uint32_t epoch; /* session the chunk was started in */
    uint8_t final;  /* last chunk of an exited thread */
    /* Owner: release store after each event. Collector: acquire load. */
    _Atomic uint64_t commit;
    /* Collector-private: how much of the chunk is already in the file. */
    uint32_t taken;
    uint64_t taken_ticks;
    uint8_t done;
    _Alignas(16) uint8_t data[];
};

/* A session's buffers: a header mapping of its own (this struct) and the
 * chunks, in an array mapped a segment at a time as threads take fresh
 * chunks (core/segarr.h), so the address space held follows the chunks used,
 * up to pool_bytes. Writers reach it through ctr__session.pool, loaded
 * inside a write section; a pool is never unmapped (see pool.c for when one
 * is reused and when abandoned). */
struct ctr_pool {
    size_t pool_bytes;  /* as asked: the sizes a reuse must match */
    size_t chunk_bytes; /* including the chunk header */
    uint32_t nchunks;
    uint32_t epoch;                /* the session it serves now */
    struct ctr_segarr chunk_array; /* chunk i is element i */
    _Atomic uint32_t fresh;        /* chunks [fresh, nchunks) never used yet */
    struct ctr_lfstack free_list;
    struct ctr_lfstack full; /* chunks handed to the collector */
    _Atomic uint32_t full_count;
    /* The collector's (ctr__pool_prefault): chunks [0, populated) are
     * mapped in; fresh as it last looked; whether the kernel refused. */
    uint32_t populated, fresh_seen;
    int populate_failed;
};

/* The pool for a session numbered `epoch`: *pp itself when `reuse` and the
 * sizes match (reset: every chunk free), else a new one (*pp is then
 * abandoned, never unmapped). Maps the header only: chunks come as taken.
 * @return 0, or -ENOMEM. */
int ctr__pool_open(struct ctr_pool **pp, size_t pool_bytes, size_t chunk_bytes, uint32_t epoch,
                   int reuse);
/* Unmaps a pool that no writer can have seen: one ctr__pool_open made for a
 * session whose start then failed, before its epoch was published. */
void ctr__pool_close(struct ctr_pool *p);
/* Gives the chunks' pages back to the kernel (the header stays, and the
 * segments stay mapped: an abandoned writer may still store there). */
void ctr__pool_release_pages(struct ctr_pool *p);
/* Collector: maps in the chunks threads will take fresh next (as many as
 * they took since the last call, at least a few), so that a thread's first
 * store into a chunk does not stop it for a page fault: that costs tens of
 * microseconds a page in a VM, on the request path. */
void ctr__pool_prefault(struct ctr_pool *p);
/* A free chunk, else a fresh one; NULL when every chunk is taken or the
 * kernel refused to map a fresh one's segment. Any thread. */
struct ctr_chunk *ctr__pool_get(struct ctr_pool *p);
/* Bytes of address space the pool holds: header, table, mapped segments. */
size_t ctr__pool_mapped_bytes(const struct ctr_pool *p);
void ctr__pool_put(struct ctr_pool *p, struct ctr_chunk *c);
static inline size_t ctr__chunk_data_bytes(const struct ctr_pool *p)
{
    return p->chunk_bytes - offsetof(struct ctr_chunk, data);
}

#endif /* CTR_POOL_H */
