/* SPDX-License-Identifier: MIT */
/* test-stacks.c - stacks are true or absent, for code without frame pointers
 * (tracer/core/stack.c, tracer/core/retaddr.c):
 *   - a chain of calls built with -fomit-frame-pointer (stacks_nofp.c) is
 *     recorded whole, caller after caller, in every wait it makes (the first
 *     learns the verdicts, the later ones use them);
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
#include "read/trace.h"
#include "stacks_nofp.h"
#include "symbols/symbolize.h"

#define ROUNDS 5

static char path[64];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------------
 * The waiting side: three ways to reach pthread_mutex_lock(&mu)
 * ---------------------------------------------------------------------- */

struct waiter {
    _Atomic pid_t tid;
    uintptr_t decoy_ret; /* the made-up frame's return address (fake_worker) */
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
    atomic_store(&w->tid, ctr_test_tid());
    int r = nofp_outer(&mu, 3);
    pthread_mutex_unlock(&mu);
    return (void *)(intptr_t)r;
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
    atomic_store(&w->tid, ctr_test_tid());
    fake_frame_call(fp_level, NULL, fake);
    __asm__ volatile("" ::: "memory");
    return NULL;
}

/* Makes `rounds` waits on mu, each in a new thread running body: the lock is
 * held until the thread sleeps in it. @return the waiters' kernel ids. */
static void contend(void *(*body)(void *), uintptr_t decoy_ret, pid_t *tids, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        struct waiter w = {.decoy_ret = decoy_ret};
        pthread_t th;
        pthread_mutex_lock(&mu);
        assert_int_equal(pthread_create(&th, NULL, body, &w), 0);
        while (atomic_load(&w.tid) == 0)
            sched_yield();
        tids[i] = atomic_load(&w.tid);
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

/* Checks the stack of the mutex wait of each thread in tids: every PC in a
 * mapping, the first frames are `chain` (NULL-terminated) in order, and no
 * frame is `never`. */
static void check_waits(struct checked *c, const pid_t *tids, int rounds, const char *const *chain,
                        const char *never)
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
            for (uint32_t i = 0; chain[i]; i++) {
                const char *got = i < st->n ? fn_name(c, st->pcs[i]) : "(end of stack)";
                if (!names(got, chain[i]))
                    fail_msg("round %d: frame %u is %s, not %s", r, i, got, chain[i]);
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
    const char *was = getenv("CTRACE_UNWIND");
    char *saved = was ? strdup(was) : NULL;
    trace_stop();
    setenv("CTRACE_UNWIND", "fp", 1);
    assert_int_equal(trace_start(path), 0);
    if (saved)
        setenv("CTRACE_UNWIND", saved, 1);
    else
        unsetenv("CTRACE_UNWIND");
    free(saved);
    /* An address where nothing is mapped: a page given back. */
    void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(page != MAP_FAILED);
    munmap(page, 4096);
    pid_t tids[ROUNDS];
    contend(fake_worker, (uintptr_t)page + 16, tids, ROUNDS);
    struct checked c;
    open_trace(&c);
    static const char *const chain[] = {"fp_level", "fake_frame_call", NULL};
    check_waits(&c, tids, ROUNDS, chain, NULL);
    close_trace(&c);
}

static void test_chain_without_frame_pointers(void **state)
{
    (void)state;
    NEEDS_LIBUNWIND();
    pid_t tids[ROUNDS];
    contend(chain_worker, 0, tids, ROUNDS);
    struct checked c;
    open_trace(&c);
    static const char *const chain[] = {"nofp_inner", "nofp_middle", "nofp_outer", "chain_worker",
                                        NULL};
    check_waits(&c, tids, ROUNDS, chain, NULL);
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
    check_waits(&c, tids, ROUNDS, chain, "stacks_decoy");
    close_trace(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fp_only_ends_at_a_frame_outside_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chain_without_frame_pointers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_made_up_frame_in_code, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
