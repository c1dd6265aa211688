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
 *   BAD   the step from this frame is false: the whole stack must come from
 *         libunwind.
 *
 * Both tables are written by a session's start and the collector and read by
 * any thread in a wrapper, in a signal handler too: they never block and
 * never spin. The code ranges are a seqlock whose readers give up ("not
 * known to be code") rather than retry; verdicts are single words.
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
 * call (or always, when `force`), and then forgets every verdict: an address
 * may now hold other code. Takes the loader's lock (dl_iterate_phdr): the
 * collector and trace start only, never a wrapper. */
void ctr__frames_refresh(int force);

/* In a forked child (alone): the ranges unknown until the next refresh, the
 * writer's lock free. The verdicts stay: the code is the same. */
void ctr__frames_forked(void);

#endif
