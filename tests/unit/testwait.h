/* SPDX-License-Identifier: MIT */
/* testwait.h - what the tests of recorded waits share (test-io.c,
 * test-proc.c): a recorded wait against the time the test measured itself,
 * and a stack's call site against the test's own source line. Include after
 * <cmocka.h>, with symbolize.h's functions linked (the tests build with -g). */
#ifndef CTR_TESTWAIT_H
#define CTR_TESTWAIT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read/trace.h"
#include "symbols/symbolize.h"

#define CTR_TEST_MS (1000u * 1000u)

static inline void assert_within_10pct(uint64_t got_ns, uint64_t want_ns)
{
    if (got_ns < want_ns - want_ns / 10 || got_ns > want_ns + want_ns / 10)
        fail_msg("%.3f ms, expected %.3f ms +- 10%%", got_ns / 1e6, want_ns / 1e6);
}

/* A recorded wait (wait_ns) against two spans the test measured itself: the
 * call as the waiting thread timed it from just before to just after
 * (took_ns), which holds the wait; and the span the other side measured
 * while the waiter slept in the call, from seeing it asleep to waking it
 * (slept_ns), which the wait holds. No nominal sleep: a loaded machine
 * stretches both sides alike. The slack covers the tracer's clock
 * conversion. */
static inline void assert_wait(uint64_t wait_ns, uint64_t took_ns, uint64_t slept_ns)
{
    uint64_t slack = 100 * 1000 + took_ns / 100;
    if (slept_ns == 0)
        fail_msg("the other side never saw the waiter asleep");
    if (wait_ns > took_ns + slack || wait_ns + slack < slept_ns)
        fail_msg("a wait of %.3f ms, outside [%.3f, %.3f] ms measured around it", wait_ns / 1e6,
                 slept_ns / 1e6, took_ns / 1e6);
}

/* Checks that stack `id`'s first PC is a call in function `fn` at `line` of
 * the test's file, by symbolizing it from the trace's own mappings. */
static inline void assert_stack_at(const struct ctr_trace *tr, uint64_t id, const char *fn,
                                   int line)
{
    const struct ctr_stack_info *s = ctr_trace_stack(tr, id);
    assert_non_null(s);
    assert_true(s->n >= 2);
    struct ctr_sym_mapping *maps = calloc(tr->nmappings + 1, sizeof(*maps));
    assert_non_null(maps);
    for (size_t i = 0; i < tr->nmappings; i++) {
        const struct ctr_mapping_info *m = &tr->mappings[i];
        maps[i] =
            (struct ctr_sym_mapping){m->start,       m->limit, m->file_offset,
                                     m->bias,        m->path,  m->build_id_len ? m->build_id : NULL,
                                     m->build_id_len};
    }
    struct ctr_symbolizer *sym = ctr_symbolizer_new(maps, tr->nmappings);
    assert_non_null(sym);
    struct ctr_sym_frame f[8];
    int k = ctr_symbolize(sym, s->pcs[0] - 1, f, 8);
    assert_true(k >= 1);
    /* The call may be inside a function inlined there (glibc's inline
     * getline calls __getdelim): fn's frame is the first or an outer one of
     * the same PC. */
    int at = 0;
    while (at + 1 < k && f[at].function && strcmp(f[at].function, fn) != 0)
        at++;
    assert_non_null(f[at].function);
    assert_string_equal(f[at].function, fn);
    assert_int_equal(f[at].line, line);
    ctr_symbolizer_free(sym);
    free(maps);
}

#endif
