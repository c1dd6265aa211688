/* SPDX-License-Identifier: MIT */
/* testutil.h - what the cmocka tests of ctrace share: temporary files, and
 * reading back the trace a test just wrote. Include after <cmocka.h>. */
#ifndef CTR_TESTUTIL_H
#define CTR_TESTUTIL_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../progs/asleep.h"
#include "ctrace/flightrec.h"
#include "ctrace/trace.h"
#include "read/load.h"

/* CTR_TEST_TSAN: 1 in a ThreadSanitizer build, where everything runs 5 to 15
 * times slower; stress loops then run fewer rounds (that pass looks for
 * races, which a few rounds show, not for rare interleavings). */
#if defined(__SANITIZE_THREAD__)
#define CTR_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CTR_TEST_TSAN 1
#endif
#endif
#ifndef CTR_TEST_TSAN
#define CTR_TEST_TSAN 0
#endif

/* CTR_TEST_ASAN: 1 in an AddressSanitizer build. */
#if defined(__SANITIZE_ADDRESS__)
#define CTR_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CTR_TEST_ASAN 1
#endif
#endif
#ifndef CTR_TEST_ASAN
#define CTR_TEST_ASAN 0
#endif

/* Creates an empty file /tmp/ctrace-STEM-XXXXXX and puts its name in buf. */
static inline void ctr_test_temp(char *buf, size_t cap, const char *stem)
{
    snprintf(buf, cap, "/tmp/ctrace-%s-XXXXXX", stem);
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

/* Reads the trace at path into *tr: it must read whole, with no damage. */
static inline void ctr_test_read(const char *path, struct ctr_trace *tr)
{
    char err[256];
    int rc = ctr_trace_read(path, tr, err, sizeof(err));
    if (rc != 0)
        fail_msg("reading %s: %s", path, err);
    assert_string_equal(tr->damage, "");
}

/* Stops tracing (which must succeed) and reads the trace at path. */
static inline void ctr_test_stop_and_read(const char *path, struct ctr_trace *tr)
{
    assert_int_equal(trace_stop(), 0);
    ctr_test_read(path, tr);
}

/* Dumps the flight recorder's window into a new temporary file named after
 * `stem` (its path into path), stops the recorder and reads the dump into
 * *tr: each step must succeed. */
static inline void ctr_test_dump_stop_read(const char *stem, char path[64], struct ctr_trace *tr)
{
    ctr_test_temp(path, 64, stem);
    assert_int_equal(flightrec_dump(path), 0);
    assert_int_equal(flightrec_stop(), 0);
    ctr_test_read(path, tr);
}

/* A test's trace: a new temporary file for it, and tracing started into it
 * (@return trace_start's result: a cmocka setup returns it). */
static inline int ctr_test_trace_begin(char *path, size_t cap, const char *stem)
{
    ctr_test_temp(path, cap, stem);
    return trace_start(path);
}

/* The end of a test's trace, passed or failed: tracing stopped (if it still
 * runs) and the file removed. */
static inline int ctr_test_trace_end(const char *path)
{
    if (trace_is_running())
        trace_stop();
    unlink(path);
    return 0;
}

static inline uint64_t ctr_test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's kernel id. */
static inline pid_t ctr_test_tid(void)
{
    return (pid_t)syscall(SYS_gettid);
}

/* Waits until thread tid of process pid is asleep in the kernel (state S):
 * in its blocking call, when it does nothing else that sleeps. Tests use it
 * instead of sleeping "long enough" for a thread to get there, which a
 * loaded machine can make too short. */
static inline void ctr_test_until_asleep_in(pid_t pid, pid_t tid)
{
    while (!ctr_test_is_asleep((int)pid, (int)tid))
        sched_yield();
}

/* The same for thread tid of this process. */
static inline void ctr_test_until_asleep(pid_t tid)
{
    ctr_test_until_asleep_in(getpid(), tid);
}

/* The other side of a timed wait: waits until thread tid of process pid
 * sleeps (in the call the test times), then ms more. @return the nanoseconds
 * from seeing it asleep to now, which the recorded wait must hold
 * (testwait.h's assert_wait). */
static inline uint64_t ctr_test_asleep_for(pid_t pid, pid_t tid, unsigned ms)
{
    ctr_test_until_asleep_in(pid, tid);
    uint64_t asleep = ctr_test_now_ns();
    struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
    return ctr_test_now_ns() - asleep;
}

#endif
