/* SPDX-License-Identifier: MIT */
/* intern.c - content-addressed, insert-only tables that give a small id to a
 * byte string (a stack's PCs, a thread name), lock-free.
 *
 * Protocol. An inserter hashes the bytes and probes `slots` linearly. A slot
 * is 0 (empty) or the arena position of a published entry. To insert, it
 * reserves arena space with one fetch_add (another if it would span two of
 * the arena's segments), fills the entry, then CASes the
 * empty slot to point at it. The CAS is release (pairs with the acquire load
 * of lookups), so a lookup that sees the slot sees the whole entry. If the
 * CAS loses, the winner may be the same string (use its id) or another one
 * (probe on); the reserved entry then stays unused. The inserter also notes
 * where each id's entry is (by_id), before the CAS publishes it, so that
 * the collector finds the entries a generation's events use
 * (ctr__intern_entry).
 *
 * Lookups of existing entries take no atomic RMW, only acquire loads. This is
 * on the contended (already slow) path of wrappers, never the uncontended one.
 * When the table or arena is full, ctr__intern returns 0 ("no id") and counts
 * an overflow; tracing goes on.
 */
#include "core/intern.h"

#include "core/common.h"
#include "core/emit.h"
#include "core/hooks.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

struct ctr_intern ctr__stacks;
struct ctr_intern ctr__strings;

/* Entries are mapped this much at a time, ids' index entries likewise. */
#define ARENA_SEGMENT (256u << 10)
#define BY_ID_SEGMENT (16u << 10)
#define SEGMENTS_MAX 4096u

static size_t slots_bytes(uint32_t slots)
{
    return (size_t)slots * sizeof(uint32_t);
}

static void intern_unmap(struct ctr_intern *t)
{
    if (t->slots)
        munmap((void *)t->slots, slots_bytes(t->mask + 1));
    ctr_segarr_destroy(&t->arena);
    ctr_segarr_destroy(&t->by_id);
    memset((void *)t, 0, sizeof(*t));
}

int ctr__intern_init(struct ctr_intern *t, uint32_t slots, size_t arena_bytes)
{
    if (t->slots)
        return 0; /* tables outlive sessions: ids stay valid across them */
    struct ctr_intern n;
    memset(&n, 0, sizeof(n));
    void *s = mmap(NULL, slots_bytes(slots), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED)
        return -errno;
    n.slots = s;
    n.mask = slots - 1;
    /* Every id is an entry of at least sizeof(entry) bytes: that bounds them. */
    n.max_ids = (uint32_t)(arena_bytes / sizeof(struct ctr_intern_entry)) + 1;
    int rc = ctr_segarr_init(&n.arena, arena_bytes / 8, 8, ARENA_SEGMENT, SEGMENTS_MAX);
    if (rc == 0)
        rc = ctr_segarr_init(&n.by_id, n.max_ids, sizeof(uint32_t), BY_ID_SEGMENT, SEGMENTS_MAX);
    if (rc != 0) {
        intern_unmap(&n);
        return rc;
    }
    n.arena_bytes = arena_bytes;
    /* relaxed: before the table is shared (init under the API lock, published
     * with the first session's epoch). */
    atomic_store_explicit(&n.next_id, 1, memory_order_relaxed);
    memcpy((void *)t, &n, sizeof(n));
    return 0;
}

void ctr__intern_release(struct ctr_intern *t)
{
    intern_unmap(t);
}

size_t ctr__intern_mapped_bytes(const struct ctr_intern *t)
{
    if (!t->slots)
        return 0;
    return slots_bytes(t->mask + 1) + ctr_segarr_mapped_bytes(&t->arena) +
           ctr_segarr_mapped_bytes(&t->by_id);
}

int ctr__intern_forked(struct ctr_intern *t)
{
    if (!t->slots)
        return 0;
    /* An entry that a thread of the parent was filling at the fork stays
     * unready for ever, and its length may be unwritten: the scans would
     * stop there. The child's first trace needs every entry again anyway,
     * so it starts from empty tables (ids are never cached elsewhere). */
    struct ctr_intern fresh;
    memset(&fresh, 0, sizeof(fresh));
    int rc = ctr__intern_init(&fresh, t->mask + 1, t->arena_bytes);
    if (rc != 0)
        return rc; /* the old tables stay: a scan may stop early, no worse */
    intern_unmap(t);
    memcpy((void *)t, &fresh, sizeof(fresh));
    return 0;
}

/* A word at a time (a stack is all words): each word is multiplied on its
 * own and folded into a rotated running value, so the multiplies overlap
 * instead of waiting on each other as a byte-wise FNV-1a's do (about 150 ns
 * for a 14-frame stack there, 20 here); the tail bytes go the same way. A
 * final mix makes the low bits used for the slot index depend on every input
 * byte. */
static uint64_t hash_bytes(const uint8_t *p, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n, w;
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = ((h << 31) | (h >> 33)) ^ (w * 0x9E3779B97F4A7C15ull);
    }
    if (i < n) {
        w = 0;
        memcpy(&w, p + i, n - i);
        h = ((h << 31) | (h >> 33)) ^ (w * 0x9E3779B97F4A7C15ull);
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static struct ctr_intern_entry *entry_at(const struct ctr_intern *t, uint32_t slot_value)
{
    /* Entries start on a word of the arena; a published entry's segment is
     * mapped (its inserter mapped it before the release CAS). */
    return (struct ctr_intern_entry *)ctr_segarr_elem(&t->arena, slot_value - 1);
}

/* Reserves arena room for an entry of `need` bytes (a multiple of 8) that
 * lies within one segment, and maps that segment. @return the room and its
 * offset, or NULL when the arena is full or the kernel refused. */
static void *arena_reserve(struct ctr_intern *t, size_t need, size_t *off)
{
    for (;;) {
        /* relaxed: only reserves distinct ranges of the arena. */
        *off = atomic_fetch_add_explicit(&t->arena_used, need, memory_order_relaxed);
        if (*off + need > t->arena_bytes)
            return NULL;
        /* One that would span two segments is left unused (the next try
         * starts past the boundary, or nearer the arena's end). */
        if (ctr_segarr_same_segment(&t->arena, *off / 8, (*off + need) / 8 - 1))
            return ctr_segarr_get(&t->arena, *off / 8);
    }
}

static int entry_equals(const struct ctr_intern_entry *e, uint64_t h, const void *b, uint32_t n)
{
    return e->hash == h && e->len == n && memcmp(e->bytes, b, n) == 0;
}

uint32_t ctr__intern(struct ctr_intern *t, const void *bytes, uint32_t len)
{
    uint64_t h = hash_bytes(bytes, len);
    struct ctr_intern_entry *mine = NULL;
    uint32_t mine_value = 0;
    /* Probe at most a quarter of the table: beyond that it is too full to be
     * worth it, and the bound keeps a full table from spinning. */
    for (uint32_t i = 0; i <= t->mask / 4; i++) {
        _Atomic uint32_t *slot = &t->slots[(h + i) & t->mask];
        /* acquire: pairs with the release CAS that published the entry. */
        uint32_t v = atomic_load_explicit(slot, memory_order_acquire);
        while (v == 0) {
            if (!mine) {
                size_t need = (sizeof(*mine) + len + 7) & ~(size_t)7, off;
                mine = arena_reserve(t, need, &off);
                if (!mine)
                    goto overflow;
                mine_value = (uint32_t)(off / 8 + 1);
                mine->hash = h;
                mine->len = len;
                memcpy(mine->bytes, bytes, len);
                /* relaxed: only hands out distinct ids; the id is published
                 * with the entry by the CAS below. */
                mine->id = atomic_fetch_add_explicit(&t->next_id, 1, memory_order_relaxed);
                /* relaxed: published by the CAS below (release), like the
                 * entry; see ctr__intern_entry for who reads it. An id the
                 * index cannot hold is no id: its events could not be
                 * resolved. */
                _Atomic uint32_t *where = ctr_segarr_get(&t->by_id, mine->id);
                if (!where)
                    goto overflow;
                atomic_store_explicit(where, mine_value, memory_order_relaxed);
            }
            /* release: the entry and by_id before the slot's value (pairs
             * with the acquire load above, in other threads). acquire on
             * failure: the winner's entry, compared next (pairs with this
             * same CAS in the winner). */
            if (atomic_compare_exchange_strong_explicit(slot, &v, mine_value, memory_order_release,
                                                        memory_order_acquire)) {
                /* relaxed: as in ctr__emit_payload (emit.h). */
                if (CTR_UNLIKELY(atomic_load_explicit(&ctr__inline_mode, memory_order_relaxed)))
                    ctr__lttng_entry(t, mine); /* LTTng hears of it once, from here */
                return mine->id;
            }
        }
        struct ctr_intern_entry *e = entry_at(t, v);
        if (entry_equals(e, h, bytes, len))
            return e->id; /* mine, if any, stays unused in the arena */
    }
overflow:
    /* relaxed: a count read only for the trace's END record (records.c). */
    atomic_fetch_add_explicit(&t->overflows, 1, memory_order_relaxed);
    return 0;
}

const struct ctr_intern_entry *ctr__intern_entry(const struct ctr_intern *t, uint32_t id)
{
    if (id == 0 || id >= t->max_ids)
        return NULL;
    /* relaxed: the caller got id from an event (or from ctr__intern), which
     * happens after the entry's publication: the inserter stored by_id and
     * filled the entry before its release CAS, and whoever returned the id
     * read that slot with acquire. So the entry is whole. */
    _Atomic uint32_t *where = ctr_segarr_at(&t->by_id, id);
    uint32_t v = where ? atomic_load_explicit(where, memory_order_relaxed) : 0;
    return v ? entry_at(t, v) : NULL;
}
