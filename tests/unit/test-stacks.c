/* SPDX-License-Identifier: MIT */
/* test-stacks.c - stacks are true or absent, for code without frame pointers
 * (tracer/core/stack.c, tracer/core/retaddr.c):
 *   - a chain of calls built with -fomit-frame-pointer (stacks_nofp.c) is
 *     recorded whole, caller after caller, in every wait it makes (the first
 *     learns the verdicts, the later ones use them), down to the thread's
 *     root: each stack the one CTRACE_UNWIND=dwarf records, start_thread and
 *     the clone below it included;
 *   - so is a wait made in a start routine built that way, whose only
 *     callers are the root, which a walk cannot reach (issue 31), and one
 *     in a start routine that keeps frame pointers (glibc's start_thread
 *     does not), and one whose walk once went through a frame record that
 *     was true by chance and then ends there;
 *   - a call made while rbp points at a made-up frame record whose return
 *     address is real code never shows that code;
 *   - with frame pointers only (CTRACE_UNWIND=fp), a made-up record whose
 *     return address is in no mapping ends the stack there.
 * Every PC of every stack checked must lie in one of the trace's mappings.
 * Functions are named by the analyzer's own symbolizer. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "ctrace/trace.h"
#include "ctrace_options.h"
#include "read/trace.h"
#include "stacks_nofp.h"
#include "symbols/symbolize.h"

#define ROUNDS 5

static char path[64];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------------
 * The waiting side: ways to reach pthread_mutex_lock(&mu)
 * ---------------------------------------------------------------------- */

struct waiter {
    struct nofp_start start; /* first: nofp_start_routine's argument */
    uintptr_t decoy_ret;     /* the made-up frame's return address (fake_worker) */
};

/* Built with frame pointers (this file): the callee of fake_frame_call. */
__attribute__((noinline)) static void fp_level(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}

/* Code that nothing calls: its address is the made-up frame's return address. */
void stacks_decoy(void);
__attribute__((noinline)) void stacks_decoy(void)
{
    __asm__ volatile("nop; nop; nop; nop");
}

static void *chain_worker(void *arg)
{
    struct waiter *w = arg;
    atomic_store(&w->start.tid, ctr_test_tid());
    int r = nofp_outer(&mu, 3);
    pthread_mutex_unlock(&mu);
    return (void *)(intptr_t)r;
}

/* Built with frame pointers: a start routine that waits itself. */
static void *fp_start_routine(void *arg)
{
    struct waiter *w = arg;
    atomic_store(&w->start.tid, ctr_test_tid());
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *fake_worker(void *arg)
{
    struct waiter *w = arg;
    /* Two records, the first pointing at the second, both on this stack
     * (above fake_frame_call's frame, as a real one would be). */
    uintptr_t fake[4];
    fake[2] = 0;
    fake[3] = w->decoy_ret;
    fake[0] = (uintptr_t)&fake[2];
    fake[1] = w->decoy_ret;
    atomic_store(&w->start.tid, ctr_test_tid());
    fake_frame_call(fp_level, NULL, fake);
    __asm__ volatile("" ::: "memory");
    return NULL;
}

/* A frame record that is true once. fake_frame_call saves rbp (pushq) but
 * keeps no frame pointer, as glibc's start_thread does; when rbp points at
 * that saved copy, the record there is the true one of its caller, and a
 * walk through it agrees with libunwind, as start_thread's sometimes does.
 * The first wait of once_true_worker is made so (where the copy lies is
 * found by a call through the same call site first); the later ones with
 * rbp at a record that ends the walk. */
static _Atomic uintptr_t saved_rbp_at;
static _Atomic int true_once_left;

/* Called by fake_frame_call: where it saved rbp, the word above this
 * function's own frame record and return address. */
__attribute__((noinline)) static void find_saved_rbp(void *arg)
{
    (void)arg;
    const uintptr_t *fp = __builtin_frame_address(0);
    atomic_store(&saved_rbp_at, (uintptr_t)(fp + 2));
}

/* One call site of fake_frame_call for both calls: the same stack depth,
 * so the saved rbp lies at the same address. */
__attribute__((noinline)) static void call_with_rbp(void (*fn)(void *), const uintptr_t *rbp)
{
    fake_frame_call(fn, NULL, rbp);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}

static void *once_true_worker(void *arg)
{
    struct waiter *w = arg;
    uintptr_t end[2] = {0, 0}; /* a record whose return address is no code */
    call_with_rbp(find_saved_rbp, end);
    const uintptr_t *rbp = atomic_fetch_sub(&true_once_left, 1) > 0
                               ? (const uintptr_t *)atomic_load(&saved_rbp_at)
                               : end;
    atomic_store(&w->start.tid, ctr_test_tid());
    call_with_rbp(fp_level, rbp);
    __asm__ volatile("" ::: "memory");
    return NULL;
}

/* Makes `rounds` waits on mu, each in a new thread running body: the lock is
 * held until the thread sleeps in it. @return the waiters' kernel ids. */
static void contend(void *(*body)(void *), uintptr_t decoy_ret, pid_t *tids, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        struct waiter w = {.start = {.mu = &mu}, .decoy_ret = decoy_ret};
        pthread_t th;
        pthread_mutex_lock(&mu);
        assert_int_equal(pthread_create(&th, NULL, body, &w), 0);
        while (atomic_load(&w.start.tid) == 0)
            sched_yield();
        tids[i] = atomic_load(&w.start.tid);
        ctr_test_until_asleep(tids[i]);
        pthread_mutex_unlock(&mu);
        assert_int_equal(pthread_join(th, NULL), 0);
    }
}

/* ------------------------------------------------------------------------
 * Checking the recorded stacks
 * ---------------------------------------------------------------------- */

struct checked {
    struct ctr_trace tr;
    struct ctr_symbolizer *sym;
};

static void open_trace(struct checked *c)
{
    ctr_test_stop_and_read(path, &c->tr);
    struct ctr_sym_mapping m[256];
    size_t n = 0;
    for (size_t i = 0; i < c->tr.nmappings && n < 256; i++, n++) {
        const struct ctr_mapping_info *mi = &c->tr.mappings[i];
        m[n] = (struct ctr_sym_mapping){mi->start, mi->limit,    mi->file_offset, mi->bias,
                                        mi->path,  mi->build_id, mi->build_id_len};
    }
    c->sym = ctr_symbolizer_new(m, n);
    assert_non_null(c->sym);
}

static void close_trace(struct checked *c)
{
    ctr_symbolizer_free(c->sym);
    ctr_trace_free(&c->tr);
}

/* The name of the function holding return address pc ("?" if none). */
static const char *fn_name(struct checked *c, uint64_t pc)
{
    struct ctr_sym_frame f[8];
    int k = ctr_symbolize(c->sym, pc - 1, f, 8);
    return k > 0 && f[k - 1].function ? f[k - 1].function : "?";
}

/* Whether name is fn, or a compiler's clone of it (fn.constprop.0). */
static int names(const char *name, const char *fn)
{
    size_t n = strlen(fn);
    return strncmp(name, fn, n) == 0 && (name[n] == 0 || name[n] == '.');
}

/* How much of a stack check_waits checks. */
enum depth {
    CHAIN_FIRST, /* the chain, then anything */
    CHAIN_ROOT,  /* the chain, then only the thread's root: start_thread and
                  * the clone it returns to (clone3 or clone, if libunwind
                  * shows it); the tracer's thread_trampoline may come
                  * first, where the compiler (clang, ASan) did not make
                  * its call of the start routine a tail call */
};

/* A stack copied out of a trace, to compare another trace's with. */
struct pcs {
    uint32_t n;
    uint64_t pc[CTR_STACK_MAX];
};

/* Checks the stack of the mutex wait of each thread in tids: every PC in a
 * mapping, the first frames are `chain` (NULL-terminated) in order, then as
 * `depth` says, and no frame is `never`. Each stack is also `same`, unless
 * that is NULL, or empty: then it is filled with the first. */
static void check_waits(struct checked *c, const pid_t *tids, int rounds, const char *const *chain,
                        enum depth depth, const char *never, struct pcs *same)
{
    for (int r = 0; r < rounds; r++) {
        const struct ctr_thread_info *th = NULL;
        for (size_t i = 0; i < c->tr.nthreads; i++)
            if (c->tr.threads[i].os_tid == tids[r])
                th = &c->tr.threads[i];
        assert_non_null(th);
        int waits = 0;
        for (size_t e = 0; e < th->nevents; e++) {
            const struct ctr_trace_event *ev = &th->events[e];
            if (ev->type != CTR_EV_BLOCK || ev->args[0] != CTR_REASON_MUTEX_LOCK ||
                ev->args[1] != (uintptr_t)&mu)
                continue;
            waits++;
            const struct ctr_stack_info *st = ctr_trace_stack(&c->tr, ev->args[2]);
            assert_non_null(st);
            for (uint32_t i = 0; i < st->n; i++) {
                if (ctr_symbolizer_mapping(c->sym, st->pcs[i]) < 0)
                    fail_msg("round %d: frame %u (%#llx) is in no mapping", r, i,
                             (unsigned long long)st->pcs[i]);
                if (never && names(fn_name(c, st->pcs[i]), never))
                    fail_msg("round %d: frame %u is %s, which was never called", r, i, never);
            }
            uint32_t i = 0;
            for (; chain[i]; i++) {
                const char *got = i < st->n ? fn_name(c, st->pcs[i]) : "(end of stack)";
                if (!names(got, chain[i]))
                    fail_msg("round %d: frame %u is %s, not %s", r, i, got, chain[i]);
            }
            if (depth == CHAIN_ROOT) {
                if (i < st->n && names(fn_name(c, st->pcs[i]), "thread_trampoline"))
                    i++;
                const char *got = i < st->n ? fn_name(c, st->pcs[i]) : "(end of stack)";
                if (!names(got, "start_thread"))
                    fail_msg("round %d: frame %u is %s, not start_thread", r, i, got);
                for (i++; i < st->n; i++)
                    if (!strstr(fn_name(c, st->pcs[i]), "clone"))
                        fail_msg("round %d: frame %u is %s, past start_thread", r, i,
                                 fn_name(c, st->pcs[i]));
            }
            if (same && same->n == 0) {
                assert_true(st->n <= CTR_STACK_MAX);
                same->n = st->n;
                memcpy(same->pc, st->pcs, st->n * sizeof(st->pcs[0]));
            } else if (same) {
                for (uint32_t k = 0; k < st->n || k < same->n; k++) {
                    const char *got = k < st->n ? fn_name(c, st->pcs[k]) : "(end of stack)";
                    if (k >= st->n || k >= same->n || st->pcs[k] != same->pc[k])
                        fail_msg("round %d: frame %u is %s, not %s", r, k, got,
                                 k < same->n ? fn_name(c, same->pc[k]) : "(end of stack)");
                }
            }
        }
        assert_int_equal(waits, 1);
    }
}

/* ------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    ctr_test_temp(path, sizeof(path), "stacks");
    return trace_start(path);
}

/* Stops tracing and starts it again into path with CTRACE_UNWIND=how
 * (NULL: as the environment says). */
static void restart_unwinding(const char *how)
{
    const char *was = getenv("CTRACE_UNWIND");
    char *saved = was ? strdup(was) : NULL;
    if (trace_is_running())
        trace_stop();
    if (how)
        setenv("CTRACE_UNWIND", how, 1);
    assert_int_equal(trace_start(path), 0);
    if (saved)
        setenv("CTRACE_UNWIND", saved, 1);
    else
        unsetenv("CTRACE_UNWIND");
    free(saved);
}

/* The stack libunwind alone (CTRACE_UNWIND=dwarf) records for the wait of a
 * thread running body, checked as check_waits does, into *ref; then tracing
 * as the environment says, into a new trace. */
static void unwound_stack(void *(*body)(void *), const char *const *chain, struct pcs *ref)
{
    pid_t tid;
    struct checked c;
    restart_unwinding("dwarf");
    contend(body, 0, &tid, 1);
    open_trace(&c);
    ref->n = 0;
    check_waits(&c, &tid, 1, chain, CHAIN_ROOT, NULL, ref);
    close_trace(&c);
    restart_unwinding(NULL);
}

/* The ThreadSanitizer pass traces with frame pointers only (tests/run.sh:
 * libunwind is not built for it), where a made-up frame in code cannot be
 * told from a real one: the tests of libunwind's checks run in the others. */
#define NEEDS_LIBUNWIND()                                                           \
    do {                                                                            \
        const char *how = getenv("CTRACE_UNWIND");                                  \
        if (how && strcmp(how, "fp") == 0) {                                        \
            print_message("CTRACE_UNWIND=fp: libunwind's checks are not tested\n"); \
            skip();                                                                 \
        }                                                                           \
    } while (0)

static int teardown(void **state)
{
    (void)state;
    return ctr_test_trace_end(path);
}

/* Runs first: no verdict is known yet, so only the code check can stop the
 * walk at the made-up record. */
static void test_fp_only_ends_at_a_frame_outside_code(void **state)
{
    (void)state;
    restart_unwinding("fp");
    /* An address where nothing is mapped: a page given back. */
    void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(page != MAP_FAILED);
    munmap(page, 4096);
    pid_t tids[ROUNDS];
    contend(fake_worker, (uintptr_t)page + 16, tids, ROUNDS);
    struct checked c;
    open_trace(&c);
    static const char *const chain[] = {"fp_level", "fake_frame_call", NULL};
    check_waits(&c, tids, ROUNDS, chain, CHAIN_FIRST, NULL, NULL);
    close_trace(&c);
}

static void test_chain_without_frame_pointers(void **state)
{
    (void)state;
    NEEDS_LIBUNWIND();
    static const char *const chain[] = {"nofp_inner", "nofp_middle", "nofp_outer", "chain_worker",
                                        NULL};
    struct pcs unwound;
    unwound_stack(chain_worker, chain, &unwound);
    pid_t tids[ROUNDS];
    contend(chain_worker, 0, tids, ROUNDS);
    struct checked c;
    open_trace(&c);
    check_waits(&c, tids, ROUNDS, chain, CHAIN_ROOT, NULL, &unwound);
    close_trace(&c);
}

/* Issue 31: a walk cannot step past the start routine, and libunwind finds
 * only the root beyond it; the stack still goes down to start_thread. */
static void test_wait_in_start_routine_without_frame_pointers(void **state)
{
    (void)state;
    NEEDS_LIBUNWIND();
    static const char *const chain[] = {"nofp_start_routine", NULL};
    struct pcs unwound;
    unwound_stack(nofp_start_routine, chain, &unwound);
    pid_t tids[ROUNDS];
    contend(nofp_start_routine, 0, tids, ROUNDS);
    struct checked c;
    open_trace(&c);
    check_waits(&c, tids, ROUNDS, chain, CHAIN_ROOT, NULL, &unwound);
    close_trace(&c);
}

/* The walk reaches start_thread, but not the clone below it. */
static void test_wait_in_start_routine_with_frame_pointers(void **state)
{
    (void)state;
    NEEDS_LIBUNWIND();
    static const char *const chain[] = {"fp_start_routine", NULL};
    struct pcs unwound;
    unwound_stack(fp_start_routine, chain, &unwound);
    pid_t tids[ROUNDS];
    contend(fp_start_routine, 0, tids, ROUNDS);
    struct checked c;
    open_trace(&c);
    check_waits(&c, tids, ROUNDS, chain, CHAIN_ROOT, NULL, &unwound);
    close_trace(&c);
}

/* A verdict learned GOOD from a walk that agreed by luck (the record was
 * true that once) must not end later stacks where the step fails. */
static void test_frame_record_true_once(void **state)
{
    (void)state;
    NEEDS_LIBUNWIND();
    static const char *const chain[] = {"fp_level", "fake_frame_call", "call_with_rbp",
                                        "once_true_worker", NULL};
    struct pcs unwound;
    unwound_stack(once_true_worker, chain, &unwound);
    atomic_store(&true_once_left, 1);
    pid_t tids[ROUNDS];
    contend(once_true_worker, 0, tids, ROUNDS);
    struct checked c;
    open_trace(&c);
    check_waits(&c, tids, ROUNDS, chain, CHAIN_ROOT, NULL, &unwound);
    close_trace(&c);
}

static void test_made_up_frame_in_code(void **state)
{
    (void)state;
    NEEDS_LIBUNWIND();
    pid_t tids[ROUNDS];
    contend(fake_worker, (uintptr_t)stacks_decoy + 1, tids, ROUNDS);
    struct checked c;
    open_trace(&c);
    static const char *const chain[] = {"fp_level", "fake_frame_call", "fake_worker", NULL};
    check_waits(&c, tids, ROUNDS, chain, CHAIN_FIRST, "stacks_decoy", NULL);
    close_trace(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fp_only_ends_at_a_frame_outside_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chain_without_frame_pointers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_in_start_routine_without_frame_pointers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wait_in_start_routine_with_frame_pointers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_frame_record_true_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_made_up_frame_in_code, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
