/* SPDX-License-Identifier: MIT */
/* idmap.h - a hash map from a 64-bit id to a 64-bit value: how the streaming
 * analyzer finds a table entry by its id (threads, stacks, strings) and the
 * last release of an object, in constant time, as the tables grow
 * generation by generation.
 *
 * Open addressing with linear probing over a power-of-two table kept at most
 * half full; any key (0 and UINT64_MAX included) may be stored. Entries are
 * never removed one by one: ctr_idmap_filter() rebuilds the map with the
 * entries a predicate keeps. Not thread-safe: one owner.
 */
#ifndef CTR_IDMAP_H
#define CTR_IDMAP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct ctr_idmap_slot {
    uint64_t key, value;
    uint8_t used;
};

struct ctr_idmap {
    struct ctr_idmap_slot *slots;
    size_t cap, n; /* cap: a power of two, or 0 */
};

/* ctr_hash_bytes() : FNV-1a of n bytes: a string's key, for the maps that
 * find strings by their text (mix it before masking, as ctr_idmap_hash
 * does). */
static inline uint64_t ctr_hash_bytes(const void *s, size_t n)
{
    const uint8_t *b = s;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static inline size_t ctr_idmap_hash(uint64_t key, size_t cap)
{
    /* Ids are often addresses or small counters: mix before masking. */
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

/* ctr_idmap_get() : @return the value of key, or NULL when absent. The
 * pointer is valid until the next insertion. */
static inline uint64_t *ctr_idmap_get(const struct ctr_idmap *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = ctr_idmap_hash(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        struct ctr_idmap_slot *s = &m->slots[i];
        if (!s->used)
            return NULL;
        if (s->key == key)
            return &s->value;
    }
}

static inline int ctr_idmap_rehash(struct ctr_idmap *m, size_t cap)
{
    struct ctr_idmap_slot *slots = calloc(cap, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (size_t k = 0; k < m->cap; k++) {
        if (!m->slots[k].used)
            continue;
        size_t i = ctr_idmap_hash(m->slots[k].key, cap);
        while (slots[i].used)
            i = (i + 1) & (cap - 1);
        slots[i] = m->slots[k];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

/* ctr_idmap_put() : sets key's value (inserting it). @return 0, or -ENOMEM
 * (the map is then unchanged). */
static inline int ctr_idmap_put(struct ctr_idmap *m, uint64_t key, uint64_t value)
{
    if ((m->n + 1) * 2 > m->cap && ctr_idmap_rehash(m, m->cap ? m->cap * 2 : 64) != 0)
        return -ENOMEM;
    size_t i = ctr_idmap_hash(key, m->cap);
    while (m->slots[i].used && m->slots[i].key != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->slots[i].used)
        m->n++;
    m->slots[i] = (struct ctr_idmap_slot){key, value, 1};
    return 0;
}

/* ctr_idmap_filter() : keeps the entries for which keep(ctx, key, value) is
 * non-zero. @return 0 or -ENOMEM (the map is then unchanged). */
static inline int ctr_idmap_filter(struct ctr_idmap *m, int (*keep)(void *, uint64_t, uint64_t),
                                   void *ctx)
{
    size_t cap = 64;
    while (m->n * 2 > cap)
        cap *= 2;
    struct ctr_idmap next = {calloc(cap, sizeof(struct ctr_idmap_slot)), cap, 0};
    if (!next.slots)
        return -ENOMEM;
    for (size_t k = 0; k < m->cap; k++) {
        const struct ctr_idmap_slot *s = &m->slots[k];
        if (!s->used || !keep(ctx, s->key, s->value))
            continue;
        size_t i = ctr_idmap_hash(s->key, cap);
        while (next.slots[i].used)
            i = (i + 1) & (cap - 1);
        next.slots[i] = *s;
        next.n++;
    }
    free(m->slots);
    *m = next;
    return 0;
}

static inline void ctr_idmap_free(struct ctr_idmap *m)
{
    free(m->slots);
    *m = (struct ctr_idmap){0};
}

#endif
