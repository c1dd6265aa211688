/* SPDX-License-Identifier: MIT */
/* retaddr.c - the tables behind retaddr.h: the executable segments of the
 * process, and the verdicts on frame-pointer steps.
 *
 * How stack.c learns a verdict: when a walk passes a return address with no
 * verdict, the same stack is also unwound by libunwind (from .eh_frame, which
 * every object has whether or not it keeps frame pointers) and the two are
 * compared. Where they agree, each step was true (GOOD). At the first step
 * where they part, or where the walk could go no further, the frame before
 * it is BAD, unless libunwind finds at most CTR_ROOT_FRAMES frames beyond
 * it: then it is END, the outermost frames of the thread (start_thread and
 * clone3, __libc_start_call_main and _start: glibc keeps no frame pointers,
 * so every walk would otherwise part there and pay for libunwind on every
 * stack of a program that does keep them). Beyond the end of libunwind's
 * stack nothing can be checked: END again.
 *
 * The frames libunwind found beyond an END frame are the stack's true end,
 * which a walk cannot reach: start_thread and clone3 beyond the call sites
 * of a start routine built without frame pointers (the walk would end
 * inside the routine, and lose where it runs: issue 31), clone3 beyond
 * start_thread, __libc_start_main and _start beyond __libc_start_call_main.
 * So they are kept with it, a root, with where each return address lay on
 * the stack (stack.c steps libunwind to see where, once per END return
 * address); a walk that ends at the END frame reads them there again and
 * goes on through them when they are the same, and otherwise hands the
 * stack to libunwind.
 *
 * The verdicts are forgotten whenever objects are loaded or unloaded: an
 * unloaded object's addresses may come back holding other code.
 */
#include "core/retaddr.h"

#include "core/lock.h"
#include "core/maps.h"

#include <stdlib.h>

_Atomic uint64_t ctr__verdicts[CTR_VERDICT_SLOTS];
struct ctr_root_entry ctr__roots[CTR_ROOT_SLOTS];
struct ctr_code_ranges ctr__code;

void ctr__fp_learn(uintptr_t pc, enum ctr_fp_verdict v)
{
    uint64_t want = (uint64_t)pc << 2 | (uint64_t)v;
    unsigned i = ctr__verdict_home(pc);
    for (int probe = 0; probe < CTR_VERDICT_PROBES; probe++) {
        /* relaxed (here, the CAS and the store): an entry is one word, whole
         * or absent, and publishes nothing else (see ctr__fp_verdict). */
        uint64_t e = atomic_load_explicit(&ctr__verdicts[i], memory_order_relaxed);
        if (e == 0 && atomic_compare_exchange_strong_explicit(
                          &ctr__verdicts[i], &e, want, memory_order_relaxed, memory_order_relaxed))
            return;
        if ((e >> 2) == pc) { /* ours already (or just taken for pc by another thread) */
            atomic_store_explicit(&ctr__verdicts[i], want, memory_order_relaxed);
            return;
        }
        i = (i + 1) & (CTR_VERDICT_SLOTS - 1);
    }
}

void ctr__root_learn(uintptr_t pc, const struct ctr_root *root)
{
    if (root->n > CTR_ROOT_FRAMES)
        return;
    unsigned i = ctr__root_home(pc);
    for (int probe = 0; probe < CTR_ROOT_PROBES; probe++) {
        struct ctr_root_entry *e = &ctr__roots[i];
        uintptr_t key = 0;
        /* relaxed: taking the slot publishes nothing; the fence below orders
         * the busy key before the fields (the seqlock's writer side). */
        if (atomic_compare_exchange_strong_explicit(&e->key, &key, CTR_ROOT_BUSY,
                                                    memory_order_relaxed, memory_order_relaxed)) {
            atomic_thread_fence(memory_order_release);
            /* relaxed: published by the release store of the key. */
            atomic_store_explicit(&e->n, root->n, memory_order_relaxed);
            for (unsigned k = 0; k < CTR_ROOT_FRAMES; k++) {
                atomic_store_explicit(&e->pc[k], k < root->n ? root->pc[k] : 0,
                                      memory_order_relaxed);
                atomic_store_explicit(&e->off[k], k < root->n ? root->off[k] : 0,
                                      memory_order_relaxed);
            }
            /* release: the fields before the key (pairs with the acquire
             * load in ctr__root_of). */
            atomic_store_explicit(&e->key, pc, memory_order_release);
            return;
        }
        if (key == pc)
            return; /* kept already (or being kept by another thread) */
        i = (i + 1) & (CTR_ROOT_SLOTS - 1);
    }
}

struct collect {
    uintptr_t lo[CTR_CODE_RANGES], hi[CTR_CODE_RANGES];
    uint32_t n;
};

static void note_range(void *ctx, const struct ctr_map_info *m)
{
    struct collect *c = ctx;
    if (c->n < CTR_CODE_RANGES) {
        c->lo[c->n] = (uintptr_t)m->start;
        c->hi[c->n] = (uintptr_t)m->limit;
        c->n++;
    }
}

static void sort_ranges(struct collect *c)
{
    for (uint32_t i = 1; i < c->n; i++) /* a few dozen, almost sorted already */
        for (uint32_t j = i; j > 0 && c->lo[j - 1] > c->lo[j]; j--) {
            uintptr_t lo = c->lo[j], hi = c->hi[j];
            c->lo[j] = c->lo[j - 1];
            c->hi[j] = c->hi[j - 1];
            c->lo[j - 1] = lo;
            c->hi[j - 1] = hi;
        }
}

static struct ctr_lock writer; /* trace start vs the collector */
static int built;              /* under writer: the ranges were made once */

void ctr__frames_refresh(int force)
{
    static uint64_t version;
    static struct collect c; /* 16 KiB: not on the collector's stack */
    ctr_lock_acquire(&writer);
    uint64_t v = ctr__maps_version();
    if (!force && built && v == version) {
        ctr_lock_release(&writer);
        return;
    }
    version = v;
    built = 1;
    c.n = 0;
    ctr__maps_scan(note_range, &c);
    sort_ranges(&c);
    /* Odd while rewriting; the fence orders the odd count before the
     * entries (pairs with the acquire fence in ctr__in_code). The count's
     * load and the entries' stores are relaxed: only this writer (under
     * `writer`) stores them, and the fence and the final release order them. */
    uint64_t seq = atomic_load_explicit(&ctr__code.seq, memory_order_relaxed);
    atomic_store_explicit(&ctr__code.seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (uint32_t i = 0; i < c.n; i++) {
        atomic_store_explicit(&ctr__code.r[i].lo, c.lo[i], memory_order_relaxed);
        atomic_store_explicit(&ctr__code.r[i].hi, c.hi[i], memory_order_relaxed);
    }
    atomic_store_explicit(&ctr__code.n, c.n, memory_order_relaxed);
    /* release: the entries before the even count (pairs with the acquire
     * load in ctr__in_code). */
    atomic_store_explicit(&ctr__code.seq, seq + 2, memory_order_release);
    /* relaxed: a verdict is one word (see ctr__fp_verdict); a reader that
     * still sees an old one judges one step by it, as before the refresh. */
    for (unsigned i = 0; i < CTR_VERDICT_SLOTS; i++)
        atomic_store_explicit(&ctr__verdicts[i], 0, memory_order_relaxed);
    /* relaxed: as the verdicts. The fields stay until a writer takes the
     * slot again, under a busy key, which a reader that read them sees when
     * it checks the key again (ctr__root_of). */
    for (unsigned i = 0; i < CTR_ROOT_SLOTS; i++)
        atomic_store_explicit(&ctr__roots[i].key, 0, memory_order_relaxed);
    ctr_lock_release(&writer);
}

void ctr__frames_forked(void)
{
    /* The parent's collector may have been rewriting the ranges: the lock
     * is free again, the count even (readers trust nothing until the next
     * refresh, which remakes them all). relaxed: alone in the child; the
     * release store of seq as in ctr__frames_refresh. */
    atomic_store_explicit(&writer.word, 0, memory_order_relaxed);
    uint64_t seq = atomic_load_explicit(&ctr__code.seq, memory_order_relaxed);
    atomic_store_explicit(&ctr__code.n, 0, memory_order_relaxed);
    atomic_store_explicit(&ctr__code.seq, (seq | 1) + 1, memory_order_release);
    built = 0;
}
