/* SPDX-License-Identifier: MIT */
/* retaddr.h - what the stack walks (stack.c) know about a return address:
 * whether it lies in code (an executable segment of a loaded object), and
 * whether the frame-pointer step from its frame has been found true.
 *
 * A frame-pointer walk reads, in the frame of each function, the saved frame
 * pointer of its caller and its return address. That is only right when the
 * caller keeps rbp as its frame pointer; code built without frame pointers
 * (all of Debian) leaves anything in rbp, often a pointer into the stack, and
 * the walk then reads a "frame" that never was. Whether the caller keeps a
 * frame pointer at a given call is a fact of its code, so a property of the
 * return address: the first walk through an unknown return address is checked
 * against libunwind's .eh_frame unwinding, and the verdict is kept here for
 * every later walk (retaddr.c says how verdicts are learned):
 *
 *   GOOD  the step from this frame leads to its true caller;
 *   END   trust the stack no further than this frame: what lies beyond is
 *         the thread's root (start_thread, _start) or cannot be checked;
 *         the root's frames, where libunwind found them, are kept with it
 *         (the roots table below);
 *   BAD   the step from this frame is false: the whole stack must come from
 *         libunwind.
 *
 * The tables are written by a session's start and the collector (and the
 * verdicts and roots by any thread that learns one) and read by any thread
 * in a wrapper, in a signal handler too: they never block and never spin.
 * The code ranges and each root are seqlocks whose readers give up ("not
 * known") rather than retry; verdicts are single words.
 */
#ifndef CTR_FRAMES_H
#define CTR_FRAMES_H

#include <stdatomic.h>
#include <stdint.h>

/* The walks read whatever the stack holds where a frame pointer leads:
 * memory that is mapped (the bounds are checked) but that AddressSanitizer
 * may have poisoned as another frame's redzone (code without frame pointers
 * leaves any value in rbp). Reading it is the point: not instrumented. The
 * inline functions below carry it too: GCC does not inline across differing
 * sanitizer attributes. */
#define CTR_STACK_READER __attribute__((no_sanitize_address))

enum ctr_fp_verdict { CTR_FP_UNKNOWN = 0, CTR_FP_GOOD = 1, CTR_FP_END = 2, CTR_FP_BAD = 3 };

/* Open addressing over PCs; an entry is (pc << 2 | verdict), 0 when empty.
 * User-space addresses are below 2^47, so the shift loses nothing. */
#define CTR_VERDICT_SLOTS 16384 /* 128 KiB; a program's distinct call sites */
#define CTR_VERDICT_PROBES 16
extern _Atomic uint64_t ctr__verdicts[CTR_VERDICT_SLOTS];

static inline CTR_STACK_READER unsigned ctr__verdict_home(uintptr_t pc)
{
    uint64_t h = (uint64_t)pc * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing */
    return (unsigned)(h >> 50) & (CTR_VERDICT_SLOTS - 1);
}

/* The verdict on the frame-pointer step from the frame returning to pc.
 * Relaxed: an entry is one word, whole or absent. */
static inline CTR_STACK_READER enum ctr_fp_verdict ctr__fp_verdict(uintptr_t pc)
{
    unsigned i = ctr__verdict_home(pc);
    for (int probe = 0; probe < CTR_VERDICT_PROBES; probe++) {
        uint64_t e = atomic_load_explicit(&ctr__verdicts[i], memory_order_relaxed);
        if (e == 0)
            return CTR_FP_UNKNOWN;
        if ((e >> 2) == pc)
            return (enum ctr_fp_verdict)(e & 3);
        i = (i + 1) & (CTR_VERDICT_SLOTS - 1);
    }
    return CTR_FP_UNKNOWN;
}

/* Keeps a verdict for pc (a full table forgets it: the pc is checked again
 * next time, which costs time, never truth). Any thread. */
void ctr__fp_learn(uintptr_t pc, enum ctr_fp_verdict v);

/* Frames libunwind may find beyond the last one a walk can reach for an END
 * verdict: the thread's root (see retaddr.c). */
#define CTR_ROOT_FRAMES 2

/* The thread's root beyond an END return address: the return addresses
 * libunwind found past it, and where each lay on the stack, in bytes above
 * the END return address's own slot. A later walk that finds each of them
 * at its place again is in the same root: the END return address's
 * function was called from the same call site, and that one's too (a
 * function's frame at one of its call sites has one size; one that changes
 * it at run time keeps a frame pointer). */
struct ctr_root {
    unsigned n;
    uintptr_t pc[CTR_ROOT_FRAMES];
    uint32_t off[CTR_ROOT_FRAMES];
};

/* Open addressing over END return addresses (a few per program: glibc's
 * start_thread and __libc_start_call_main, and the call sites of start
 * routines built without frame pointers). An entry's key is its return
 * address, 0 when empty, CTR_ROOT_BUSY while it is being written. */
#define CTR_ROOT_SLOTS 256
#define CTR_ROOT_PROBES 8
#define CTR_ROOT_BUSY ((uintptr_t)1)
struct ctr_root_entry {
    _Atomic uintptr_t key;
    _Atomic uint32_t n;
    _Atomic uint32_t off[CTR_ROOT_FRAMES];
    _Atomic uintptr_t pc[CTR_ROOT_FRAMES];
};
extern struct ctr_root_entry ctr__roots[CTR_ROOT_SLOTS];

static inline CTR_STACK_READER unsigned ctr__root_home(uintptr_t pc)
{
    uint64_t h = (uint64_t)pc * 0x9E3779B97F4A7C15ull; /* as ctr__verdict_home */
    return (unsigned)(h >> 56) & (CTR_ROOT_SLOTS - 1);
}

/* The root kept for the END return address pc, into *root. @return 0 when
 * none is (not learned, or being rewritten: no retry, as ctr__in_code). */
static inline CTR_STACK_READER int ctr__root_of(uintptr_t pc, struct ctr_root *root)
{
    unsigned i = ctr__root_home(pc);
    for (int probe = 0; probe < CTR_ROOT_PROBES; probe++) {
        /* acquire: the entry's fields after its key (pairs with the release
         * store of the key in ctr__root_learn). */
        uintptr_t key = atomic_load_explicit(&ctr__roots[i].key, memory_order_acquire);
        if (key == 0)
            return 0;
        if (key == pc) {
            /* relaxed: the seqlock's fields; the acquire fence and the
             * re-check of the key below tell whether they were rewritten. */
            root->n = atomic_load_explicit(&ctr__roots[i].n, memory_order_relaxed);
            for (unsigned k = 0; k < CTR_ROOT_FRAMES; k++) {
                root->pc[k] = atomic_load_explicit(&ctr__roots[i].pc[k], memory_order_relaxed);
                root->off[k] = atomic_load_explicit(&ctr__roots[i].off[k], memory_order_relaxed);
            }
            /* acquire fence: the reads above before the re-check (pairs with
             * the release fence after the busy key in ctr__root_learn). */
            atomic_thread_fence(memory_order_acquire);
            return root->n <= CTR_ROOT_FRAMES &&
                   atomic_load_explicit(&ctr__roots[i].key, memory_order_relaxed) == pc;
        }
        i = (i + 1) & (CTR_ROOT_SLOTS - 1);
    }
    return 0;
}

/* Keeps the root beyond the END return address pc (a full table, or one
 * already kept, keeps it no more: a walk then stops at pc, or keeps the
 * first). Any thread. */
void ctr__root_learn(uintptr_t pc, const struct ctr_root *root);

/* Code ranges: a sorted array of the executable segments, under a sequence
 * count that is odd while the collector rewrites them. */
#define CTR_CODE_RANGES 1024
struct ctr_code_ranges {
    _Atomic uint64_t seq;
    _Atomic uint32_t n;
    struct {
        _Atomic uintptr_t lo, hi;
    } r[CTR_CODE_RANGES];
};
extern struct ctr_code_ranges ctr__code;

/* Whether pc lies in an executable segment of a loaded object; 0 also when
 * the ranges were being rewritten (no retry: a caller may be a handler that
 * interrupted the writer). Pairs with the release stores of ctr__frames_refresh. */
static inline CTR_STACK_READER int ctr__in_code(uintptr_t pc)
{
    uint64_t seq = atomic_load_explicit(&ctr__code.seq, memory_order_acquire);
    if (seq & 1)
        return 0;
    /* relaxed: the seqlock's fields; the acquire fence and the re-check of
     * seq below tell whether they were rewritten meanwhile. */
    uint32_t lo = 0, hi = atomic_load_explicit(&ctr__code.n, memory_order_relaxed);
    if (hi > CTR_CODE_RANGES)
        return 0;
    int found = 0;
    while (lo < hi) { /* the last range starting at or below pc */
        uint32_t mid = (lo + hi) / 2;
        if (atomic_load_explicit(&ctr__code.r[mid].lo, memory_order_relaxed) <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0)
        found = pc < atomic_load_explicit(&ctr__code.r[lo - 1].hi, memory_order_relaxed);
    /* acquire fence: the reads above before the re-check (pairs with the
     * release fence after the odd count in ctr__frames_refresh). */
    atomic_thread_fence(memory_order_acquire);
    return found && atomic_load_explicit(&ctr__code.seq, memory_order_relaxed) == seq;
}

/* Rebuilds the code ranges if objects were loaded or unloaded since the last
 * call (or always, when `force`), and then forgets every verdict and root:
 * an address may now hold other code. Takes the loader's lock
 * (dl_iterate_phdr): the collector and trace start only, never a wrapper. */
void ctr__frames_refresh(int force);

/* In a forked child (alone): the ranges unknown until the next refresh, the
 * writer's lock free. The verdicts stay: the code is the same. */
void ctr__frames_forked(void);

#endif
