/* SPDX-License-Identifier: MIT */
/* test-regionline.c - the innermost region over time (model/regionline.h)
 * on regions made by hand:
 *   - nested regions: the inner one while it is open, the outer around it;
 *   - back to back ([a, b) then [b, c)): the second from b on;
 *   - an outer region ended before its inner one (the task model allows
 *     it): the inner stays, and after it, none;
 *   - a region of no length, and a thread with no region: none;
 *   - the outermost region open, the one that began first;
 *   - a path's segments cut where their thread's region changes, latest
 *     first, tiling the same time, a running segment's stack kept on its
 *     last piece only, a wait's on every piece. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "model/regionline.h"

static struct ctr_region regions[] = {
    /* thread 0: "outer" [100, 500) holding "inner" [200, 300); then "next"
     * [500, 600) back to back with it. */
    {.task = 1, .name = "outer", .thread = 0, .depth = 0, .start_ns = 100, .end_ns = 500},
    {.task = 1, .name = "inner", .thread = 0, .depth = 1, .start_ns = 200, .end_ns = 300},
    {.task = 1, .name = "next", .thread = 0, .depth = 0, .start_ns = 500, .end_ns = 600},
    /* thread 2: "a" [100, 200) ended before "b" [150, 400) it held; a region
     * of no length at 300. */
    {.task = 2, .name = "a", .thread = 2, .depth = 0, .start_ns = 100, .end_ns = 200},
    {.task = 2, .name = "b", .thread = 2, .depth = 1, .start_ns = 150, .end_ns = 400},
    {.task = 2, .name = "empty", .thread = 2, .depth = 2, .start_ns = 300, .end_ns = 300},
};

static struct ctr_tasks model = {.regions = regions,
                                 .nregions = sizeof(regions) / sizeof(regions[0])};

static const char *name_at(const struct ctr_region_line *rl, uint32_t thread, uint64_t ns,
                           uint64_t *until)
{
    const struct ctr_region *r = ctr_region_line_at(rl, thread, ns, until);
    return r ? r->name : "-";
}

static void test_innermost_over_time(void **state)
{
    (void)state;
    struct ctr_region_line *rl;
    assert_int_equal(ctr_region_line_new(&model, &rl), 0);
    uint64_t until;
    assert_string_equal(name_at(rl, 0, 50, &until), "-");
    assert_int_equal(until, 100);
    assert_string_equal(name_at(rl, 0, 100, &until), "outer");
    assert_int_equal(until, 200);
    assert_string_equal(name_at(rl, 0, 250, &until), "inner");
    assert_int_equal(until, 300);
    assert_string_equal(name_at(rl, 0, 300, &until), "outer");
    assert_int_equal(until, 500);
    assert_string_equal(name_at(rl, 0, 500, &until), "next");
    assert_int_equal(until, 600);
    assert_string_equal(name_at(rl, 0, 600, &until), "-");
    assert_int_equal(until, UINT64_MAX);
    /* The outer one ended first: the inner one stays, to its own end. */
    assert_string_equal(name_at(rl, 2, 120, &until), "a");
    assert_string_equal(name_at(rl, 2, 160, &until), "b");
    assert_string_equal(name_at(rl, 2, 250, &until), "b");
    assert_string_equal(name_at(rl, 2, 300, &until), "b"); /* "empty" is not on the line */
    assert_string_equal(name_at(rl, 2, 400, &until), "-");
    /* The outermost: the one open that began first. */
    assert_string_equal(ctr_region_line_outer(rl, 0, 250)->name, "outer");
    assert_string_equal(ctr_region_line_outer(rl, 2, 120)->name, "a");
    assert_string_equal(ctr_region_line_outer(rl, 2, 250)->name, "b");
    assert_null(ctr_region_line_outer(rl, 1, 250));
    /* No region on thread 1; none beyond the last thread. */
    assert_string_equal(name_at(rl, 1, 250, &until), "-");
    assert_int_equal(until, UINT64_MAX);
    assert_string_equal(name_at(rl, 7, 250, &until), "-");
    ctr_region_line_free(rl);
}

static void test_path_cut_at_regions(void **state)
{
    (void)state;
    struct ctr_region_line *rl;
    assert_int_equal(ctr_region_line_new(&model, &rl), 0);
    struct ctr_cp_path p = {0};
    p.nseg = p.seg_cap = 2;
    p.seg = calloc(2, sizeof(*p.seg));
    assert_non_null(p.seg);
    /* Latest first: thread 0 running [150, 550) up to stack 7, after a wait
     * on thread 2 [120, 150) at stack 9. */
    p.seg[0] = (struct ctr_cp_segment){
        .thread = 0, .state = CTR_CP_RUNNING, .stack_id = 7, .start_ns = 150, .end_ns = 550};
    p.seg[1] = (struct ctr_cp_segment){
        .thread = 2, .state = CTR_CP_BLOCKED, .stack_id = 9, .start_ns = 120, .end_ns = 160};
    assert_int_equal(ctr_region_line_split(rl, &p), 0);
    static const struct {
        uint64_t start, end, stack;
        const char *region;
    } want[] = {{500, 550, 7, "next"},  {300, 500, 0, "outer"}, {200, 300, 0, "inner"},
                {150, 200, 0, "outer"}, {150, 160, 9, "b"},     {120, 150, 9, "a"}};
    assert_int_equal(p.nseg, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < p.nseg; i++) {
        assert_int_equal(p.seg[i].start_ns, want[i].start);
        assert_int_equal(p.seg[i].end_ns, want[i].end);
        assert_int_equal(p.seg[i].stack_id, want[i].stack);
        assert_non_null(p.seg[i].region);
        assert_string_equal(p.seg[i].region->name, want[i].region);
    }
    ctr_cp_path_free(&p);
    ctr_region_line_free(rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_innermost_over_time),
        cmocka_unit_test(test_path_cut_at_regions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
