/* SPDX-License-Identifier: MIT */
/* stack.c - captures the calling thread's stack as raw PCs and interns it to
 * a stack id: by walking frame pointers, checked step by step, and by
 * .eh_frame unwinding with libunwind wherever they cannot be trusted.
 *
 * The frame-pointer walk trusts nothing it reads: each frame pointer must lie
 * above the previous one (stacks grow down), inside [current frame, top of
 * the thread's stack), and be 8-byte aligned; each return address must lie in
 * an executable segment of a loaded object. Code built without frame
 * pointers (all of Debian) passes those checks often enough to make up
 * frames, so each return address also has a verdict, learned once by
 * comparing the walk with libunwind's unwinding (retaddr.h, retaddr.c): the
 * walk goes on through GOOD ones, ends at an END one with the thread's root
 * beyond it (the frames libunwind found there, where they lay: root_step),
 * and hands the stack to libunwind at a BAD one. A stack is true, or shorter
 * than it could be; never made up.
 *
 * The method is chosen per session by CTRACE_UNWIND (read at trace start):
 *   fp     frame pointers only (the checks above, no verdicts): stacks end
 *          where the first frame without a frame pointer is;
 *   dwarf  libunwind's unw_backtrace only;
 *   auto   (default) frame pointers where the verdicts say they are true,
 *          libunwind elsewhere and to learn a new return address's verdict.
 *          A program built with frame pointers pays a walk and a table
 *          look-up per frame; one built without pays libunwind per stack.
 * libunwind is dlopen'd RTLD_LOCAL, never linked: in the global scope of a
 * preloaded program its _Unwind_* definitions would take over C++ exception
 * handling from libgcc_s (and make each throw many times slower). Its first
 * call costs about 1.4 ms, so ctr__stack_init() makes it before the session
 * is published, never in a wrapper's first wait. A thread's first unwind
 * still costs about 0.1 ms: libunwind maps and fills a 256 KiB per-thread
 * cache. Its own calls into wrapped functions go straight to the real ones
 * (the thread's `internal` count), and may touch only the tracer's own
 * descriptors (fdguard.c).
 *
 * Either way the frames that lead up to the user's call site are the
 * tracer's (CTR_WRAPPER_TEXT, which holds this file's functions too) and are
 * skipped, so the first PC is the user's call site whether or not the
 * compiler inlined or tail-called the wrappers. Every PC is a return
 * address, the same from both methods for the same frame. ctr__stack_at
 * walks from another frame of the same stack (a call's wrapper, while a
 * signal handler runs below it), by frame pointers only.
 */
#include "core/stack.h"

#include "core/common.h"
#include "core/fdguard.h"
#include "core/intern.h"
#include "core/maps.h"
#include "core/retaddr.h"
#include "core/session.h"
#include "core/thread.h"
#include "ctrace_format.h"
#include "ctrace_options.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#ifndef CTR_LIBUNWIND_SONAME
#define CTR_LIBUNWIND_SONAME "libunwind.so.8"
#endif

enum { UNWIND_FP = 1, UNWIND_DWARF = 2 }; /* bits of `methods` */

typedef int (*backtrace_t)(void **buf, int size);
_Static_assert(__builtin_types_compatible_p(backtrace_t, __typeof__(&unw_backtrace)),
               "backtrace_t is unw_backtrace's type");

/* Set by ctr__stack_init() before a session is published, read-only while it
 * runs. Relaxed: a wrapper that reads the previous session's methods only
 * unwinds the way that session did. */
static _Atomic unsigned methods = UNWIND_FP;
/* unw_backtrace, once found; never reset. Release store after its first
 * call, acquire load before each use, so a user of it sees it warmed up. */
static _Atomic(backtrace_t) backtrace_fn;

/* libunwind's step-by-step local unwinding, for a signal handler's stack
 * (ctr__stack_signal) and for where a thread's root lies (learn_root):
 * found with unw_backtrace, and published by the same release store of
 * backtrace_fn. */
static struct {
    int (*getcontext)(unw_context_t *);
    int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
} stepper;

/* The lowest address code can have (Linux's default vm.mmap_min_addr). */
#define CTR_MIN_CODE_ADDR ((uintptr_t)65536)

/* Threads inside libunwind now; read by a forked child, alone, which
 * inherits any lock they held (relaxed: the fork orders it). */
static _Atomic int unwinding;
/* Set in a forked child that inherited such locks: no libunwind, ever. */
static int unwinder_unsafe;

/* Leading PCs that libunwind may report for its own frames, before ours. */
#define DWARF_EXTRA 16

/* The text of interposers that sit between the program and our wrappers:
 * the sanitizers' runtimes, whose interceptors catch write() and friends
 * first. Their frames are skipped like ours, so a stack still starts at the
 * program's call. They are loaded with the program: found once per process
 * (the first ctr__stack_init), filled, then published by a release store of
 * nforeign (acquire in in_tracer), and never changed. */
#define MAX_FOREIGN 8
static struct {
    uintptr_t lo, hi;
} foreign[MAX_FOREIGN];
static _Atomic int nforeign;

/* Inlined into the walks (which share its attribute: GCC does not inline
 * across differing sanitizer attributes). */
static inline CTR_STACK_READER int in_tracer(uintptr_t pc)
{
    if (pc >= (uintptr_t)__start_ctrace_text && pc < (uintptr_t)__stop_ctrace_text)
        return 1;
    /* acquire: pairs with the release store of nforeign in ctr__stack_init. */
    int n = atomic_load_explicit(&nforeign, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (pc >= foreign[i].lo && pc < foreign[i].hi)
            return 1;
    return 0;
}

static void note_foreign(void *ctx, const struct ctr_map_info *m)
{
    int *n = ctx;
    static const char *const runtimes[] = {"libasan",  "libtsan",   "liblsan",
                                           "libubsan", "libhwasan", "libmsan"};
    const char *base = strrchr(m->path, '/');
    base = base ? base + 1 : m->path;
    for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
        if (strncmp(base, runtimes[i], strlen(runtimes[i])) == 0 && *n < MAX_FOREIGN) {
            foreign[*n].lo = m->start;
            foreign[*n].hi = m->limit;
            ++*n;
        }
}

/* Enters libunwind on thread t. @return 0 when it cannot run now: the
 * program is taking a descriptor's number (libunwind reads and writes its
 * own, fdguard.c). */
static int unwinder_enter(struct ctr_thread *t)
{
    if (!ctr__fd_use_begin(0))
        return 0;
    t->internal++; /* libunwind may lock: its calls go to the real functions */
    /* relaxed (add, and sub in unwinder_leave): see `unwinding`. */
    atomic_fetch_add_explicit(&unwinding, 1, memory_order_relaxed);
    return 1;
}

static void unwinder_leave(struct ctr_thread *t)
{
    atomic_fetch_sub_explicit(&unwinding, 1, memory_order_relaxed);
    t->internal--;
    ctr__fd_use_end();
}

/* The stack by .eh_frame unwinding, into pcs[0..max): from the first frame
 * outside the tracer (after the leading run of CTR_WRAPPER_TEXT frames, which
 * starts with this function). @return the PCs found, or -1 when libunwind
 * cannot run now (not loaded, or unwinder_enter says no). */
static CTR_WRAPPER_TEXT int stack_dwarf(struct ctr_thread *t, uintptr_t *pcs, unsigned max)
{
    void *buf[CTR_STACK_MAX + 1 + DWARF_EXTRA];
    /* acquire: pairs with the release store in dwarf_load (see backtrace_fn). */
    backtrace_t backtrace = atomic_load_explicit(&backtrace_fn, memory_order_acquire);
    if (!backtrace || !unwinder_enter(t))
        return -1;
    int got = backtrace(buf, (int)(max + DWARF_EXTRA));
    unwinder_leave(t);
    int i = 0;
    while (i < got && !in_tracer((uintptr_t)buf[i]))
        i++; /* libunwind's own frame, if it reports it */
    while (i < got && in_tracer((uintptr_t)buf[i]))
        i++;
    unsigned k = 0;
    for (; i < got && k < max; i++)
        pcs[k++] = (uintptr_t)buf[i];
    return (int)k;
}

/* What a frame-pointer walk found. */
struct fp_walk {
    unsigned n; /* PCs, true as far as the verdicts go */
    int verify; /* it passed a PC with no verdict: check it against libunwind */
    int bad;    /* it stopped at a BAD PC: the rest must come from libunwind */
};

/* How a walk goes on past a signal frame (see walk). */
enum past_signal { PAST_SIGNAL_STOP, PAST_SIGNAL_FOLLOW };

/* Whether the return address ret is the C library's signal restorer, into
 * which a handler returns: `mov $15, %rax; syscall` (glibc's __restore_rt)
 * or `mov $15, %eax; syscall` (musl's), the bytes libunwind and gdb know a
 * signal frame by. ret must be in code (ctr__in_code), and so the bytes
 * readable. */
static CTR_STACK_READER int is_sigreturn(uintptr_t ret)
{
    static const uint8_t glibc[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    static const uint8_t musl[] = {0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    const uint8_t *code = (const uint8_t *)ret;
    /* The first byte rules out nearly every return address, cheaply. */
    if ((code[0] != glibc[0] && code[0] != musl[0]) || !ctr__in_code(ret + sizeof(glibc) - 1))
        return 0;
    int g = 1, m = 1;
    for (size_t i = 0; i < sizeof(glibc); i++)
        g &= code[i] == glibc[i];
    for (size_t i = 0; i < sizeof(musl); i++)
        m &= code[i] == musl[i];
    return g || m;
}

/* The restorers found so far (a process has one, two with musl's and
 * glibc's both loaded): known by address, with no look at the code. */
#define MAX_RESTORERS 4
static _Atomic uintptr_t restorers[MAX_RESTORERS];

/* Whether ret, with verdict v, is a signal restorer (is_sigreturn). A
 * known one is found by its address; an unknown return address in code
 * (`code`) is looked at once, and kept if it is one. A BAD verdict is not
 * looked at again: the restorer is known by the time judge() learns it
 * BAD (libunwind sees the interrupted frame after it, which a plain walk
 * skips). Inlined into the walk: one or two compares on most frames. */
static inline CTR_STACK_READER int is_restorer(uintptr_t ret, enum ctr_fp_verdict v, int code)
{
    if (v == CTR_FP_GOOD || v == CTR_FP_END)
        return 0;
    for (int i = 0; i < MAX_RESTORERS; i++) {
        /* relaxed: an address is the whole message. */
        uintptr_t r = atomic_load_explicit(&restorers[i], memory_order_relaxed);
        if (r == ret)
            return 1;
        if (r == 0)
            break;
    }
    if (v != CTR_FP_UNKNOWN || !code || !is_sigreturn(ret))
        return 0;
    for (int i = 0; i < MAX_RESTORERS; i++) {
        uintptr_t none = 0;
        /* relaxed: as above; a lost race keeps the other's, or both. */
        if (atomic_compare_exchange_strong_explicit(&restorers[i], &none, ret, memory_order_relaxed,
                                                    memory_order_relaxed) ||
            none == ret)
            break;
    }
    return 1;
}

/* The walk's step through a signal frame: fp is the handler's frame, which
 * returns into the restorer; the interrupted context lies above it (see
 * walk). Adds the restorer and the interrupted PC to pcs. @return 1 with
 * *fp and *lo set to go on from the interrupted frame, 0 to stop. Out of
 * line: most walks never take it. */
static __attribute__((noinline)) CTR_WRAPPER_TEXT CTR_STACK_READER int
signal_step(uintptr_t *fp, uintptr_t *lo, uintptr_t hi, uintptr_t *pcs, unsigned max,
            enum past_signal past, struct fp_walk *w)
{
    const uintptr_t *frame = (const uintptr_t *)*fp;
    const ucontext_t *uc = (const ucontext_t *)(frame + 2);
    if ((uintptr_t)uc > hi - sizeof(*uc))
        return 0; /* not on this stack (an alternate signal stack) */
    pcs[w->n++] = frame[1];
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    if (w->n == max || pc < CTR_MIN_CODE_ADDR)
        return 0;
    /* Plus one: every PC of a stack is read as a return address
     * (FORMAT.md §4.1), as in ctr__stack_signal. */
    pcs[w->n++] = pc + 1;
    if (past == PAST_SIGNAL_STOP)
        return 0;
    *lo = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    *fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    return 1;
}

/* The walk's end at an END return address, the last of pcs, whose slot on
 * the stack is `slot`: the thread's root beyond it, as learned with the
 * verdict (retaddr.h), if each of its return addresses lies where it lay
 * then, relative to slot; otherwise this call came by another way, whose
 * frames only libunwind can find (w->bad). No root known: the stack ends
 * here, true and maybe short. */
static inline CTR_STACK_READER void root_step(uintptr_t slot, uintptr_t hi, uintptr_t *pcs,
                                              unsigned max, struct fp_walk *w)
{
    struct ctr_root root;
    if (!ctr__root_of(pcs[w->n - 1], &root))
        return;
    for (unsigned i = 0; i < root.n; i++) {
        uintptr_t at = slot + root.off[i];
        if (at < slot || at > hi - sizeof(uintptr_t) || *(const uintptr_t *)at != root.pc[i]) {
            w->bad = 1;
            return;
        }
    }
    for (unsigned i = 0; i < root.n && w->n < max; i++)
        pcs[w->n++] = root.pc[i];
}

/* Walks the frame-pointer chain from frame address fp, into pcs[0..max).
 * Each frame pointer must lie above the previous one (stacks grow down),
 * inside [the first frame, top of the thread's stack), and be 8-byte
 * aligned; each return address must be in code (retaddr.h), unless a verdict
 * already vouches for it; the verdicts end the walk (END, BAD) where it can
 * no longer be trusted, an END with the thread's root (root_step). Leading
 * frames that return into the wrapper layer are the tracer's and are skipped.
 *
 * A signal handler's frame returns into the restorer, above which the
 * kernel saved the interrupted context (x86-64's rt_sigframe: the return
 * address, then the ucontext). The walk takes the interrupted PC from it,
 * exactly, with no system call and no libunwind (whose signal-frame path
 * costs a handler tens of microseconds: a storm of signals would livelock
 * the program). Past it, the interrupted function may be in its prologue
 * or have no frame: `past` says whether to follow its frame pointer anyway
 * (the fp method's plausibility checks) or to stop there (true, shorter). */
static CTR_WRAPPER_TEXT CTR_STACK_READER void walk(const struct ctr_thread *t, uintptr_t fp,
                                                   uintptr_t *pcs, unsigned max,
                                                   enum past_signal past, struct fp_walk *w)
{
    uintptr_t lo = fp, hi = t->stack_hi;
    int leading = 1;
    /* The last PC's verdict is GOOD: the step from its frame leads to a
     * true frame. A walk that ends there anyway (rbp was not a frame
     * pointer this time: start_thread's, when a start routine's frame
     * keeps one, is sometimes) learned GOOD from a lucky agreement: the
     * verdict is checked again (`verify`), or the stack would end there,
     * short of the root, with no verdict to say so. */
    int vouched = 0;
    w->n = 0;
    w->verify = w->bad = 0;
    while (w->n < max) {
        if (fp < lo || fp > hi - 2 * sizeof(uintptr_t) || (fp & (sizeof(uintptr_t) - 1))) {
            w->verify |= vouched;
            break;
        }
        const uintptr_t *frame = (const uintptr_t *)fp;
        uintptr_t next = frame[0], ret = frame[1];
        /* Nothing is mapped below 64 KiB (Linux's mmap_min_addr): such a
         * return address means rbp was no frame pointer here. */
        if (ret < CTR_MIN_CODE_ADDR) {
            w->verify |= vouched;
            break;
        }
        if (!(leading && in_tracer(ret))) {
            leading = 0;
            enum ctr_fp_verdict v = ctr__fp_verdict(ret);
            int code = v == CTR_FP_UNKNOWN ? ctr__in_code(ret) : 1;
            vouched = v == CTR_FP_GOOD;
            if (CTR_UNLIKELY(is_restorer(ret, v, code))) {
                vouched = 0; /* signal_step says where the walk goes on */
                if (!signal_step(&fp, &lo, hi, pcs, max, past, w))
                    break;
                continue;
            }
            if (v == CTR_FP_UNKNOWN) {
                w->verify = 1;
                if (!code)
                    break; /* the step that led here was false */
            }
            pcs[w->n++] = ret;
            if (v == CTR_FP_END) {
                root_step(fp + sizeof(uintptr_t), hi, pcs, max, w);
                break;
            }
            if (v == CTR_FP_BAD) {
                w->bad = 1;
                break;
            }
        }
        if (next <= fp) {
            w->verify |= vouched;
            break;
        }
        fp = next;
    }
}

#define USE_DWARF (-1)

/* Keeps the root beyond pc, an END return address, the k-th PC of the
 * stack (counted as a walk's and stack_dwarf's are, from the first frame
 * outside the tracer): the frames libunwind finds past it, with where each
 * return address lies on the stack, which unw_backtrace does not say, so
 * libunwind steps here frame by frame, once per END return address. Kept
 * only when libunwind finds the stack's end within CTR_ROOT_FRAMES of pc. */
static __attribute__((noinline)) CTR_WRAPPER_TEXT CTR_STACK_READER void
learn_root(struct ctr_thread *t, uintptr_t pc, unsigned k)
{
    unw_context_t ctx;
    unw_cursor_t c;
    struct ctr_root root = {.n = 0};
    /* acquire: pairs with the release store in dwarf_load; `stepper` was
     * filled before it. */
    if (!atomic_load_explicit(&backtrace_fn, memory_order_acquire) || !stepper.getcontext ||
        !stepper.init_local2 || !stepper.step || !stepper.get_reg ||
        stepper.getcontext(&ctx) != 0 || !unwinder_enter(t))
        return;
    uintptr_t slot = 0; /* where pc lies */
    unsigned user = 0;  /* frames outside the tracer met */
    int whole = 0;      /* libunwind found the end of the stack, past pc */
    /* Bounded as unw_backtrace is: a stack that loops never ends. */
    unsigned steps = CTR_STACK_MAX + DWARF_EXTRA + CTR_ROOT_FRAMES + 1;
    if (stepper.init_local2(&c, &ctx, 0) == 0)
        for (int more; steps-- > 0 && (more = stepper.step(&c)) >= 0;) {
            unw_word_t ip, sp;
            if (more == 0) {
                whole = slot != 0;
                break;
            }
            if (stepper.get_reg(&c, UNW_REG_IP, &ip) != 0 ||
                stepper.get_reg(&c, UNW_REG_SP, &sp) != 0 || ip < CTR_MIN_CODE_ADDR)
                break;
            if (user == 0 && in_tracer(ip))
                continue;
            /* sp is the caller's stack pointer after the return: its
             * return address lay just below. */
            uintptr_t at = (uintptr_t)sp - sizeof(uintptr_t);
            if (user++ < k)
                continue;
            if (user == k + 1) {
                if (ip != pc)
                    break;
                slot = at;
                continue;
            }
            if (root.n == CTR_ROOT_FRAMES || at <= slot || at - slot > UINT32_MAX ||
                *(const uintptr_t *)at != ip)
                break; /* not the thread's root, or not a plain call's frame */
            root.pc[root.n] = (uintptr_t)ip;
            root.off[root.n++] = (uint32_t)(at - slot);
        }
    unwinder_leave(t);
    if (whole && root.n > 0)
        ctr__root_learn(pc, &root);
}

/* Compares a walk's PCs f[0..nf) with libunwind's d[0..nd) for the same
 * stack (both may hold one PC more than will be kept, so that the last kept
 * one's step can be judged), keeps the verdicts learned (retaddr.c), and
 * says which stack is true: the first `return` PCs of the walk, or
 * USE_DWARF. */
static CTR_WRAPPER_TEXT int judge(struct ctr_thread *t, const uintptr_t *f, unsigned nf,
                                  const uintptr_t *d, unsigned nd, unsigned limit)
{
    unsigned m = 0;
    while (m < nf && m < nd && f[m] == d[m])
        m++;
    if (m == 0) /* they disagree on the call site itself: trust libunwind */
        return nd ? USE_DWARF : (nf ? 1 : 0);
    for (unsigned i = 0; i + 1 < m; i++)
        ctr__fp_learn(f[i], CTR_FP_GOOD);
    if (m == nf && m == nd && m == limit)
        return (int)m; /* both cut short by the depth: the last step unknown */
    if (m < nd && nd - m > CTR_ROOT_FRAMES) {
        ctr__fp_learn(f[m - 1], CTR_FP_BAD);
        return USE_DWARF;
    }
    /* The root before the verdict, so that a walk that meets the verdict
     * finds it (or, racing, ends without it: shorter). */
    if (m < nd)
        learn_root(t, f[m - 1], m - 1);
    ctr__fp_learn(f[m - 1], CTR_FP_END);
    /* libunwind's stack is the walk's and the root beyond it, which later
     * walks take from the root kept. */
    return m < nd ? USE_DWARF : (int)m;
}

static uint32_t intern_pcs(const uintptr_t *pcs, unsigned n)
{
    return n ? ctr__intern(&ctr__stacks, pcs, n * (uint32_t)sizeof(uintptr_t)) : 0;
}

uint32_t ctr__stack_intern(const uintptr_t *pcs, unsigned n)
{
    return intern_pcs(pcs, n);
}

int ctr__stack_uses_dwarf(void)
{
    /* relaxed: see `methods`. */
    return (atomic_load_explicit(&methods, memory_order_relaxed) & UNWIND_DWARF) != 0;
}

/* libunwind from a signal's context: the interrupted frame is a signal
 * frame, whose PC is exact (UNW_INIT_SIGNAL_FRAME). Into pcs[1..max), after
 * the interrupted PC. @return the PCs in all, or 0 when libunwind cannot
 * run now (not loaded, or the program is taking a descriptor's number). */
static unsigned signal_dwarf(struct ctr_thread *t, ucontext_t *uc, uintptr_t *pcs, unsigned max)
{
    /* acquire: pairs with the release store in dwarf_load; `stepper` was
     * filled before it. */
    if (!atomic_load_explicit(&backtrace_fn, memory_order_acquire) || !stepper.init_local2 ||
        !stepper.step || !stepper.get_reg || !unwinder_enter(t))
        return 0;
    unw_cursor_t c;
    unsigned n = 0;
    if (stepper.init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0)
        for (n = 1; n < max && stepper.step(&c) > 0;) {
            unw_word_t pc;
            if (stepper.get_reg(&c, UNW_REG_IP, &pc) != 0 || pc < CTR_MIN_CODE_ADDR)
                break;
            pcs[n++] = (uintptr_t)pc;
        }
    unwinder_leave(t);
    return n;
}

uint32_t ctr__stack_signal(struct ctr_thread *t, const void *ucontext)
{
    ucontext_t *uc = (ucontext_t *)(uintptr_t)ucontext;
    uintptr_t pcs[CTR_STACK_MAX];
    unsigned max = ctr__session.stack_depth, n = 0;
    if (max == 0 || t->stack_hi == 0)
        return 0;
    /* The interrupted instruction, plus one: every PC of a stack is read
     * as a return address (FORMAT.md §4.1). */
    pcs[0] = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] + 1;
    if (ctr__stack_uses_dwarf())
        n = signal_dwarf(t, uc, pcs, max);
    if (n == 0) {
        /* Frame pointers from the interrupted frame's: its caller is
         * missed while it is in its prologue or has no frame of its own. */
        uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
        uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
        struct fp_walk w = {0, 0, 0};
        if (fp >= sp && fp < t->stack_hi)
            walk(t, fp, pcs + 1, max - 1, PAST_SIGNAL_FOLLOW, &w);
        n = 1 + w.n;
    }
    return intern_pcs(pcs, n);
}

CTR_WRAPPER_TEXT uint32_t ctr__stack_here(struct ctr_thread *t)
{
    uintptr_t pcs[CTR_STACK_MAX + 1], dw[CTR_STACK_MAX + 1];
    unsigned max = ctr__session.stack_depth;
    /* relaxed: see `methods`. */
    unsigned how = atomic_load_explicit(&methods, memory_order_relaxed);
    if (t->stack_hi == 0)
        return 0; /* stack bounds unknown: a stackless event beats a fault */
    if (!(how & UNWIND_FP)) {
        int nd = stack_dwarf(t, dw, max);
        return intern_pcs(dw, nd > 0 ? (unsigned)nd : 0);
    }
    /* One PC more than kept, so that the last kept one can be judged. */
    struct fp_walk w;
    /* Past a signal frame, only the fp method follows frame pointers that
     * no verdict vouches for (see walk). */
    walk(t, (uintptr_t)__builtin_frame_address(0), pcs, max + 1,
         how & UNWIND_DWARF ? PAST_SIGNAL_STOP : PAST_SIGNAL_FOLLOW, &w);
    unsigned n = w.n;
    if (CTR_UNLIKELY(w.bad || w.verify) && (how & UNWIND_DWARF)) {
        int nd = stack_dwarf(t, dw, max + 1);
        /* Nothing new to learn from a walk that only met known verdicts. */
        int keep = nd < 0     ? (int)n
                   : w.verify ? judge(t, pcs, n, dw, (unsigned)nd, max + 1)
                              : USE_DWARF;
        if (keep == USE_DWARF && nd > 0)
            return intern_pcs(dw, (unsigned)nd < max ? (unsigned)nd : max);
        if (keep >= 0)
            n = (unsigned)keep;
    }
    return intern_pcs(pcs, n < max ? n : max);
}

CTR_WRAPPER_TEXT uint32_t ctr__stack_at(struct ctr_thread *t, uintptr_t frame)
{
    uintptr_t pcs[CTR_STACK_MAX];
    struct fp_walk w;
    if (t->stack_hi == 0 || frame < (uintptr_t)__builtin_frame_address(0))
        return 0; /* not a frame above ours on this stack */
    /* No libunwind from another frame: the walk stops where the verdicts do
     * (a BAD PC is itself true; only the step beyond it is not). */
    walk(t, frame, pcs, ctr__session.stack_depth, PAST_SIGNAL_STOP, &w);
    return intern_pcs(pcs, w.n);
}

/* Records the executable segment holding unw_backtrace: libunwind's text. */
static void note_unwinder(void *ctx, const struct ctr_map_info *m)
{
    uintptr_t fn = (uintptr_t)ctx;
    if (fn >= m->start && fn < m->limit) {
        /* relaxed: this thread makes libunwind's first call after these, and
         * every other reaches libunwind through the acquire load of
         * backtrace_fn (stack_dwarf); other readers see them whole or not
         * at all (ctr__from_unwinder, fdguard.h). */
        atomic_store_explicit(&ctr__unwinder_lo, m->start, memory_order_relaxed);
        atomic_store_explicit(&ctr__unwinder_hi, m->limit, memory_order_relaxed);
    }
}

/* Finds unw_backtrace and makes its expensive first call. */
static int dwarf_load(void)
{
    /* acquire: pairs with the release store below (see backtrace_fn). */
    if (atomic_load_explicit(&backtrace_fn, memory_order_acquire))
        return 1;
    void *h = dlopen(CTR_LIBUNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
    backtrace_t fn;
    *(void **)&fn = dlsym(h, "unw_backtrace"); /* POSIX's way to a function pointer */
    if (!fn)
        return 0; /* the handle stays: nothing else refers to it */
    /* The names behind unw_getcontext, unw_init_local2, unw_step and
     * unw_get_reg. */
    *(void **)&stepper.getcontext = dlsym(h, "_Ux86_64_getcontext");
    *(void **)&stepper.init_local2 = dlsym(h, "_ULx86_64_init_local2");
    *(void **)&stepper.step = dlsym(h, "_ULx86_64_step");
    *(void **)&stepper.get_reg = dlsym(h, "_ULx86_64_get_reg");
    /* Its calls are known by their return address from now on: its pipe,
     * made by the first call, and its files are the tracer's (fdguard.c). */
    ctr__maps_scan(note_unwinder, *(void **)&fn);
    void *warm[CTR_STACK_MAX];
    struct ctr_thread *saved = ctr__internal_begin(); /* its I/O is the tracer's */
    fn(warm, CTR_STACK_MAX);
    ctr__internal_end(saved);
    /* release: warmed up, and libunwind's text known, before any use
     * (pairs with the acquire loads in stack_dwarf and above). */
    atomic_store_explicit(&backtrace_fn, fn, memory_order_release);
    return 1;
}

void ctr__stack_init(void)
{
    /* A bad value is auto here (`ctrace run` refuses it, in autostart.c). */
    enum ctr_unwind how = ctr_unwind_parse(getenv(CTR_UNWIND_ENV));
    unsigned want = how == CTR_UNWIND_FP      ? UNWIND_FP
                    : how == CTR_UNWIND_DWARF ? UNWIND_DWARF
                                              : UNWIND_FP | UNWIND_DWARF; /* auto */
    /* Under a small descriptor limit, auto leaves libunwind out: its pipe
     * would take two of the program's few descriptors (fdguard.h). */
    if (how == CTR_UNWIND_AUTO && ctr__fd_top() < CTR_FD_TOP_FEW)
        want = UNWIND_FP;
    if ((want & UNWIND_DWARF) && (unwinder_unsafe || !dwarf_load()))
        want = UNWIND_FP;   /* no libunwind here: frame pointers it is */
    ctr__frames_refresh(0); /* the code ranges the walk checks against */
    /* relaxed: see `methods` (published with the session's epoch). */
    atomic_store_explicit(&methods, want, memory_order_relaxed);
    static int scanned; /* under the API lock, like every call of this */
    if (!scanned) {
        int n = 0;
        ctr__maps_scan(note_foreign, &n);
        /* release: the ranges before their count (pairs with the acquire
         * load in in_tracer). */
        atomic_store_explicit(&nforeign, n, memory_order_release);
        scanned = 1;
    }
}

void ctr__stack_forked(void)
{
    /* relaxed: alone in the child (see `unwinding`). */
    if (atomic_load_explicit(&unwinding, memory_order_relaxed) != 0)
        unwinder_unsafe = 1;
    atomic_store_explicit(&unwinding, 0, memory_order_relaxed);
    atomic_store_explicit(&methods, UNWIND_FP, memory_order_relaxed);
    ctr__frames_forked();
}

uint32_t ctr__stack_info(void)
{
    /* relaxed: see `methods`. */
    unsigned m = atomic_load_explicit(&methods, memory_order_relaxed);
    return (m & UNWIND_FP ? CTR_INFO_STACKS_FRAME_POINTER : 0) |
           (m & UNWIND_DWARF ? CTR_INFO_STACKS_DWARF : 0);
}

CTR_WRAPPER_TEXT CTR_STACK_READER uintptr_t ctr__caller_pc(void)
{
    /* The same walk as above, to the first frame outside the wrapper layer,
     * with the same bounds: only frames above ours, at most a few. */
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0), lo = fp;
    for (int i = 0; i < 8; i++) {
        if (fp < lo || (fp & (sizeof(uintptr_t) - 1)))
            return 0;
        const uintptr_t *frame = (const uintptr_t *)fp;
        if (frame[1] < CTR_MIN_CODE_ADDR)
            return 0;
        if (!in_tracer(frame[1]))
            return frame[1];
        if (frame[0] <= fp)
            return 0;
        fp = frame[0];
    }
    return 0;
}
