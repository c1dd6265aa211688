/* intern.c - content-addressed, insert-only tables that give a small id to a
 * byte string (a stack's PCs, a thread name), lock-free.
 *
 * Protocol. An inserter hashes the bytes and probes `slots` linearly. A slot
 * is 0 (empty) or the arena position of a published entry. To insert, it
 * reserves arena space with one fetch_add, fills the entry, then CASes the
 * empty slot to point at it. The CAS is release (pairs with the acquire load
 * of lookups), so a lookup that sees the slot sees the whole entry. If the
 * CAS loses, the winner may be the same string (use its id) or another one
 * (probe on); the reserved entry is then marked dead. After a successful CAS
 * the entry is marked ready, which is what the collector waits for when it
 * scans the arena in order to write new entries into the trace.
 *
 * Lookups of existing entries take no atomic RMW, only acquire loads. This is
 * on the contended (already slow) path of wrappers, never the uncontended one.
 * When the table or arena is full, ctr__intern returns 0 ("no id") and counts
 * an overflow; tracing goes on.
 */
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

struct ctr_intern ctr__stacks;
struct ctr_intern ctr__strings;

int ctr__intern_init(struct ctr_intern *t, uint32_t slots, size_t arena_bytes)
{
    if (t->slots)
        return 0; /* tables outlive sessions: ids stay valid across them */
    void *s = mmap(NULL, (size_t)slots * sizeof(uint32_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED)
        return -errno;
    void *a = mmap(NULL, arena_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED) {
        munmap(s, (size_t)slots * sizeof(uint32_t));
        return -errno;
    }
    t->arena = a;
    t->arena_bytes = arena_bytes;
    t->mask = slots - 1;
    atomic_store_explicit(&t->next_id, 1, memory_order_relaxed);
    t->slots = s;
    return 0;
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
    munmap((void *)t->slots, (size_t)(t->mask + 1) * sizeof(uint32_t));
    munmap(t->arena, t->arena_bytes);
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
    return (struct ctr_intern_entry *)(t->arena + (size_t)(slot_value - 1) * 8);
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
                size_t need = (sizeof(*mine) + len + 7) & ~(size_t)7;
                /* relaxed: only reserves distinct ranges of the arena. */
                size_t off = atomic_fetch_add_explicit(&t->arena_used, need, memory_order_relaxed);
                if (off + need > t->arena_bytes)
                    goto overflow;
                mine = (struct ctr_intern_entry *)(t->arena + off);
                mine_value = (uint32_t)(off / 8 + 1);
                mine->hash = h;
                mine->len = len;
                memcpy(mine->bytes, bytes, len);
                mine->id = atomic_fetch_add_explicit(&t->next_id, 1, memory_order_relaxed);
            }
            if (atomic_compare_exchange_strong_explicit(slot, &v, mine_value, memory_order_release,
                                                        memory_order_acquire)) {
                /* release: the collector's acquire load of `ready` sees the
                 * filled entry. */
                atomic_store_explicit(&mine->ready, 1, memory_order_release);
                return mine->id;
            }
        }
        struct ctr_intern_entry *e = entry_at(t, v);
        if (entry_equals(e, h, bytes, len)) {
            if (mine)
                atomic_store_explicit(&mine->ready, 2, memory_order_release);
            return e->id;
        }
    }
overflow:
    if (mine)
        atomic_store_explicit(&mine->ready, 2, memory_order_release);
    atomic_fetch_add_explicit(&t->overflows, 1, memory_order_relaxed);
    return 0;
}

void ctr__intern_scan(struct ctr_intern *t, size_t *cursor, int settle,
                      void (*visit)(void *ctx, const struct ctr_intern_entry *e), void *ctx)
{
    size_t used = atomic_load_explicit(&t->arena_used, memory_order_relaxed);
    if (used > t->arena_bytes)
        used = t->arena_bytes; /* overflowing reservations past the end */
    unsigned waited = 0;
    while (*cursor + sizeof(struct ctr_intern_entry) <= used) {
        struct ctr_intern_entry *e = (struct ctr_intern_entry *)(t->arena + *cursor);
        /* acquire: pairs with the release store of `ready` by the inserter. */
        uint32_t r = atomic_load_explicit(&e->ready, memory_order_acquire);
        if (r == 0 && settle && waited++ < 10000) {
            sched_yield(); /* filled in nanoseconds, unless its thread lost the CPU */
            continue;
        }
        if (r == 0)
            return; /* still being filled; resume here next time */
        if (r == 1)
            visit(ctx, e);
        *cursor += (sizeof(*e) + e->len + 7) & ~(size_t)7;
    }
}
