/* SPDX-License-Identifier: MIT */
/* lfstack.h - a lock-free LIFO of nodes that live in one segmented array
 * (core/segarr.h: the thread slab or the chunk pool), used for the pool's
 * free list, the collector's queue of full chunks and the thread slab's free
 * slots.
 *
 * Protocol. `head` packs (tag << 32) | (index + 1), 0 in the low half meaning
 * empty. Every successful update bumps the tag, so a pop that read head, then
 * lost the CPU while the same node was popped and pushed back, fails its CAS
 * instead of installing a stale `next` (the ABA problem). Nodes are never
 * unmapped, so reading a node's `next` after it was popped by someone else is
 * a harmless read of a value the CAS will then reject. A node knows its own
 * index (`self`, set by whoever first hands the element out), so that a push
 * needs no search through the array's segments.
 *
 * Memory order: push is a release CAS, so whatever the pusher wrote into the
 * node (a chunk's events) is visible to the thread whose acquire CAS or
 * exchange takes it. Cost: one CAS per operation, which is why callers use it
 * once per chunk or per thread, never per event.
 */
#ifndef CTR_LFSTACK_H
#define CTR_LFSTACK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/segarr.h"

struct ctr_lfnode {
    _Atomic uint32_t next; /* index + 1 of the next node, 0 = end */
    uint32_t self;         /* index + 1 of this node's element */
};

struct ctr_lfstack {
    _Atomic uint64_t head;
    const struct ctr_segarr *elems; /* the array the nodes live in */
    size_t node_offset;             /* offset of the ctr_lfnode inside an element */
};

static inline void ctr_lfstack_init(struct ctr_lfstack *s, const struct ctr_segarr *elems,
                                    size_t node_offset)
{
    /* relaxed: before the stack is shared; whatever shares it publishes it. */
    atomic_store_explicit(&s->head, 0, memory_order_relaxed);
    s->elems = elems;
    s->node_offset = node_offset;
}

/* The element (not the node) with 1-based index idx1: it was pushed, so its
 * segment is mapped. */
static inline void *ctr_lfstack_elem(const struct ctr_lfstack *s, uint32_t idx1)
{
    return ctr_segarr_elem(s->elems, idx1 - 1);
}

static inline struct ctr_lfnode *ctr_lfstack_node(const struct ctr_lfstack *s, uint32_t idx1)
{
    /* Aligned: elements are stride bytes apart, each with its node at
     * node_offset. */
    return (struct ctr_lfnode *)(void *)((uint8_t *)ctr_lfstack_elem(s, idx1) + s->node_offset);
}

/* Marks elem as element `index` of the stack's array: once, before its
 * first push (its memory is fresh zeros until then). */
static inline void ctr_lfstack_name(const struct ctr_lfstack *s, void *elem, uint32_t index)
{
    ((struct ctr_lfnode *)(void *)((uint8_t *)elem + s->node_offset))->self = index + 1;
}

static inline uint32_t ctr_lfstack_index1(const struct ctr_lfstack *s, const void *elem)
{
    return ((const struct ctr_lfnode *)(const void *)((const uint8_t *)elem + s->node_offset))
        ->self;
}

static inline void ctr_lfstack_push(struct ctr_lfstack *s, void *elem)
{
    uint32_t idx1 = ctr_lfstack_index1(s, elem);
    struct ctr_lfnode *n = ctr_lfstack_node(s, idx1);
    /* relaxed: only a first guess for the CAS, which checks it. */
    uint64_t old = atomic_load_explicit(&s->head, memory_order_relaxed);
    uint64_t want;
    do {
        /* relaxed: published by the release CAS below. */
        atomic_store_explicit(&n->next, (uint32_t)old, memory_order_relaxed);
        want = ((old >> 32) + 1) << 32 | idx1;
        /* release: the element's contents before the push; pairs with the
         * acquire in pop / take_all. */
    } while (!atomic_compare_exchange_weak_explicit(&s->head, &old, want, memory_order_release,
                                                    memory_order_relaxed));
}

/* Pops one element; NULL when empty. Safe with concurrent pushes and pops. */
static inline void *ctr_lfstack_pop(struct ctr_lfstack *s)
{
    /* acquire (here and on the CAS's failure): the top node's `next`, read
     * next, was written before the release CAS of ctr_lfstack_push that
     * installed the head we read. */
    uint64_t old = atomic_load_explicit(&s->head, memory_order_acquire);
    for (;;) {
        uint32_t idx1 = (uint32_t)old;
        if (idx1 == 0)
            return NULL;
        /* relaxed: ordered by the acquire read of head; a stale value (the
         * node was popped meanwhile) fails the CAS's tag check. */
        uint32_t next =
            atomic_load_explicit(&ctr_lfstack_node(s, idx1)->next, memory_order_relaxed);
        uint64_t want = ((old >> 32) + 1) << 32 | next;
        /* acquire on success: see what the pusher wrote (pairs with push). */
        if (atomic_compare_exchange_weak_explicit(&s->head, &old, want, memory_order_acquire,
                                                  memory_order_acquire))
            return ctr_lfstack_elem(s, idx1);
    }
}

/* Takes every element at once and returns the 1-based index of the first,
 * in push order (oldest first); follow with ctr_lfstack_next(). */
static inline uint32_t ctr_lfstack_take_all_fifo(struct ctr_lfstack *s)
{
    /* relaxed: a first guess for the CAS. acquire on the CAS's success: every
     * pusher's element and `next`, before its release CAS in ctr_lfstack_push. */
    uint64_t old = atomic_load_explicit(&s->head, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&s->head, &old, ((old >> 32) + 1) << 32,
                                                  memory_order_acquire, memory_order_relaxed))
        ;
    /* Reverse the LIFO chain; the nodes are ours alone now (relaxed: no other
     * thread reads or writes them until we push them again). */
    uint32_t prev = 0, cur = (uint32_t)old;
    while (cur) {
        struct ctr_lfnode *n = ctr_lfstack_node(s, cur);
        uint32_t next = atomic_load_explicit(&n->next, memory_order_relaxed);
        atomic_store_explicit(&n->next, prev, memory_order_relaxed);
        prev = cur;
        cur = next;
    }
    return prev;
}

static inline uint32_t ctr_lfstack_next(const struct ctr_lfstack *s, uint32_t idx1)
{
    /* relaxed: a chain from ctr_lfstack_take_all_fifo, written by this thread. */
    return atomic_load_explicit(&ctr_lfstack_node(s, idx1)->next, memory_order_relaxed);
}

#endif /* CTR_LFSTACK_H */
