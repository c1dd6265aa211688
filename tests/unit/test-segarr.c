/* SPDX-License-Identifier: MIT */
/* test-segarr.c - the tracer's address space follows what the trace uses
 * (core/segarr.h, issue 29):
 *   - a segmented array maps nothing but its table until an element is
 *     used, maps one segment per segment used, and gives every racer of a
 *     segment's first use the same memory;
 *   - a session with a few threads holds a few MiB of buffers and tables
 *     (it reserved 650 MB up front), and more threads take more slots;
 *   - a start that fails for lack of address space keeps nothing it made:
 *     no tables or pool after the first (of the process), and fifty more
 *     in a row leave VmSize where the first left it. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../progs/vmsize.h"
#include "testutil.h"

#include "collect/face.h"
#include "core/segarr.h"
#include "core/thread.h"
#include "ctrace/trace.h"

static void test_maps_segments_as_used(void **state)
{
    (void)state;
    struct ctr_segarr a;
    /* 100,000 elements of 40 bytes, segments of 4 KiB at least: 128 per
     * segment (the power of two whose 40-byte elements fill 4 KiB). */
    assert_int_equal(ctr_segarr_init(&a, 100000, 40, 4096, 4096), 0);
    size_t table = ctr_segarr_mapped_bytes(&a);
    assert_true(table > 0 && table <= 8192);
    assert_null(ctr_segarr_at(&a, 0));
    assert_null(ctr_segarr_at(&a, 99999));
    uint8_t *e5 = ctr_segarr_get(&a, 5);
    assert_non_null(e5);
    assert_ptr_equal(ctr_segarr_at(&a, 5), e5);
    assert_ptr_equal(ctr_segarr_elem(&a, 5), e5);
    /* One segment: its neighbours are mapped, contiguous, and zero. */
    uint8_t *e0 = ctr_segarr_at(&a, 0), *e127 = ctr_segarr_at(&a, 127);
    assert_ptr_equal(e0 + 5 * 40, e5);
    assert_ptr_equal(e0 + 127 * 40, e127);
    assert_int_equal(e127[39], 0);
    assert_null(ctr_segarr_at(&a, 128));
    assert_true(ctr_segarr_same_segment(&a, 0, 127));
    assert_false(ctr_segarr_same_segment(&a, 127, 128));
    assert_int_equal(ctr_segarr_mapped_bytes(&a), table + a.seg_bytes);
    /* The last element, far away: one more segment, none between. */
    assert_non_null(ctr_segarr_get(&a, 99999));
    assert_null(ctr_segarr_at(&a, 50000));
    assert_int_equal(ctr_segarr_mapped_bytes(&a), table + 2 * a.seg_bytes);
    /* Past the end: nothing, and errno is the caller's. */
    errno = 1234;
    assert_null(ctr_segarr_get(&a, 100000));
    assert_int_equal(errno, 1234);
    /* Populating a range maps the segments it spans. */
    assert_true(ctr_segarr_populate(&a, 200, 600) == 0 ||
                ctr_segarr_populate(&a, 200, 600) == -EINVAL); /* a pre-5.14 kernel */
    assert_non_null(ctr_segarr_at(&a, 599));
    ctr_segarr_destroy(&a);
    assert_false(ctr_segarr_ready(&a));
    /* A table bounded by max_segs: segments grow instead. */
    assert_int_equal(ctr_segarr_init(&a, 1u << 20, 64, 4096, 16), 0);
    assert_true(a.nsegs <= 16);
    assert_true(a.seg_bytes >= (1u << 20) / 16 * 64);
    ctr_segarr_destroy(&a);
    assert_int_equal(ctr_segarr_init(&a, 0, 64, 4096, 16), -EINVAL);
}

struct racer {
    struct ctr_segarr *a;
    pthread_barrier_t *go;
    uint64_t index;
    void *got;
};

static void *race_get(void *p)
{
    struct racer *r = p;
    pthread_barrier_wait(r->go);
    r->got = ctr_segarr_get(r->a, r->index);
    return NULL;
}

/* Eight threads use a segment first at once, many times: every one gets
 * the same segment, and exactly one mapping stays per segment. */
static void test_racers_share_one_segment(void **state)
{
    (void)state;
    enum { RACERS = 8, ROUNDS = 50 };
    struct ctr_segarr a;
    assert_int_equal(ctr_segarr_init(&a, ROUNDS * 64, 64, 4096, 4096), 0);
    size_t table = ctr_segarr_mapped_bytes(&a);
    pthread_barrier_t go;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_barrier_init(&go, NULL, RACERS);
        struct racer r[RACERS];
        pthread_t th[RACERS];
        for (int i = 0; i < RACERS; i++) {
            r[i] = (struct racer){&a, &go, (uint64_t)round * 64 + (uint64_t)i, NULL};
            assert_int_equal(pthread_create(&th[i], NULL, race_get, &r[i]), 0);
        }
        for (int i = 0; i < RACERS; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&go);
        uint8_t *base = ctr_segarr_at(&a, (uint64_t)round * 64);
        for (int i = 0; i < RACERS; i++)
            assert_ptr_equal(r[i].got, base + (size_t)i * 64);
    }
    assert_int_equal(ctr_segarr_mapped_bytes(&a), table + ROUNDS * a.seg_bytes);
    ctr_segarr_destroy(&a);
}

static pthread_barrier_t held;

static void *hold(void *p)
{
    pthread_barrier_wait(&held); /* all alive at once */
    pthread_barrier_wait(&held);
    return p;
}

/* A session's buffers and tables: a few MiB for a few threads, more slots
 * mapped only when more threads live at once. */
static void test_session_maps_what_it_uses(void **state)
{
    (void)state;
    enum { MANY = 400 };
    char path[64];
    assert_int_equal(ctr_test_trace_begin(path, sizeof(path), "segarr"), 0);
    size_t few = ctr__mapped_bytes();
    size_t slots_few = ctr_segarr_mapped_bytes(&ctr__threads.slab);
    print_message("mapped at start: %zu KiB (slots %zu KiB)\n", few >> 10, slots_few >> 10);
    assert_true(few > 0 && few < (8u << 20));
    pthread_barrier_init(&held, NULL, MANY + 1);
    pthread_t th[MANY];
    for (int i = 0; i < MANY; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hold, NULL), 0);
    pthread_barrier_wait(&held);
    size_t slots_many = ctr_segarr_mapped_bytes(&ctr__threads.slab);
    pthread_barrier_wait(&held);
    for (int i = 0; i < MANY; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&held);
    print_message("slots with %d threads alive: %zu KiB\n", MANY, slots_many >> 10);
    /* At least MANY slots' worth, at most a segment more than needed. */
    size_t slot = sizeof(struct ctr_thread), seg = ctr__threads.slab.seg_bytes;
    assert_true(slots_many >= (size_t)MANY * slot);
    assert_true(slots_many <= slots_few + (size_t)(MANY + 1) * slot + 2 * seg);
    assert_int_equal(ctr_test_trace_end(path), 0);
}

/* In a new child, before any session: RLIMIT_AS at what is mapped plus
 * `spare` KiB, then a start; if it fails, fifty more. @return 0 when none
 * of them kept anything, 3 when the start succeeded (room enough), 1
 * otherwise. */
static int failed_starts_child(const char *path, long spare)
{
    long before = ctr_test_vm_size_kib();
    struct rlimit lim = {(rlim_t)(before + spare) << 10, RLIM_INFINITY};
    if (before < 0 || setrlimit(RLIMIT_AS, &lim) != 0)
        return 1;
    if (trace_start(path) == 0) {
        trace_stop();
        return 3;
    }
    long first = ctr_test_vm_size_kib();
    /* The first start of the process: its tables and pool went with it. */
    if (ctr__mapped_bytes() != 0) {
        printf("spare %ld KiB: a failed first start kept %zu bytes of tables\n", spare,
               ctr__mapped_bytes());
        return 1;
    }
    for (int i = 0; i < 50; i++)
        if (trace_start(path) == 0)
            return 1; /* the same start, the same room: it must fail */
    long last = ctr_test_vm_size_kib();
    if (last != first)
        printf("spare %ld KiB: VmSize after one failed start %ld KiB, after 51 %ld KiB\n", spare,
               first, last);
    return last == first ? 0 : 1;
}

/* Starts that fail wherever the room runs out (the tables, the pool, the
 * collector's thread): whatever the first one kept (the tables, made once
 * for every session), the next fifty keep nothing more. */
static void test_failed_start_keeps_nothing(void **state)
{
    (void)state;
    if (CTR_TEST_ASAN || CTR_TEST_TSAN) {
        print_message("skipped: RLIMIT_AS under a sanitizer, whose shadow needs terabytes\n");
        return;
    }
    char path[64];
    ctr_test_temp(path, sizeof(path), "segarr-fail");
    int failed = 0, started = 0;
    for (long spare = 0; spare <= 8192; spare += 256) {
        fflush(stdout);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            _exit(failed_starts_child(path, spare));
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 3) {
            started++;
            continue;
        }
        assert_int_equal(WEXITSTATUS(status), 0);
        failed++;
    }
    unlink(path);
    print_message("%d limits where the start failed, %d where it ran\n", failed, started);
    assert_true(failed > 0 && started > 0); /* both sides of the line were seen */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* First: its children must start from a process that never traced
         * (no tables, no pool to reuse, no collector stack cached). */
        cmocka_unit_test(test_failed_start_keeps_nothing),
        cmocka_unit_test(test_maps_segments_as_used),
        cmocka_unit_test(test_racers_share_one_segment),
        cmocka_unit_test(test_session_maps_what_it_uses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
