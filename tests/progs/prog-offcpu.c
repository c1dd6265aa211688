/* SPDX-License-Identifier: MIT */
/* prog-offcpu.c - ground truth for time no wrapper sees (offcpu.sh): a
 * thread that blocks where no wrapper can see it (the nanosleep system call
 * made with its own syscall instruction, as a library with its own system
 * calls would), or spinners that outnumber the CPUs, so that the kernel
 * preempts them: one kind a run, so that each run's threads other than main
 * are one group in `ctrace threads` (under a sanitizer every thread's start
 * function is the sanitizer's). Each thread measures itself: the sleeper
 * its blocked time and its CPU time, the spinners their CPU time and wall
 * time, and main prints them:
 *   sleeper BLOCKED_NS CPU_NS
 *   spinners CPU_NS WALL_NS      (summed over the spinners)
 * Mode `named`: two threads block 300 ms, longer than the collector's
 * rounds, where no wrapper sees them, for the untraced waits that context
 * switches reveal and the collector names (FORMAT.md §4.2): one in a futex
 * wait that main then wakes with syscall(SYS_futex, FUTEX_WAKE) (which is
 * traced: a release of the word), one in flock on a file main holds locked
 * (with flock: traced, not a wait). Each prints the time it measured:
 *   futex BLOCKED_NS
 *   flock BLOCKED_NS
 * Mode `libc-flock`: as named's flock, but through libc's flock(), which
 * ctrace wraps: for the test that switches the wrapper off
 * (CTRACE_TEST_UNWRAP=flock). Prints `flock BLOCKED_NS`.
 * usage: prog-offcpu sleeper | spinners [N (default 3)] | named | libc-flock
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <time.h>

#include "hidden_syscall.h"

static uint64_t ns_of(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_for(uint64_t ns)
{
    uint64_t t0 = ns_of(CLOCK_MONOTONIC);
    volatile uint64_t x = 0;
    while (ns_of(CLOCK_MONOTONIC) - t0 < ns)
        x++;
}

static uint64_t sleeper_blocked, sleeper_cpu;

static void *sleeper(void *arg)
{
    for (int i = 0; i < 4; i++) {
        uint64_t t0 = ns_of(CLOCK_MONOTONIC);
        ctr_test_hidden_sleep(25);
        sleeper_blocked += ns_of(CLOCK_MONOTONIC) - t0;
        spin_for(5 * 1000000u);
    }
    sleeper_cpu = ns_of(CLOCK_THREAD_CPUTIME_ID);
    return arg;
}

struct spinner {
    pthread_t th;
    uint64_t cpu, wall;
};

static void *spinner(void *arg)
{
    struct spinner *s = arg;
    uint64_t t0 = ns_of(CLOCK_MONOTONIC);
    spin_for(300 * 1000000u);
    s->wall = ns_of(CLOCK_MONOTONIC) - t0;
    s->cpu = ns_of(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

/* ================================================================ named */

#define NAMED_MS 300
static _Atomic int futex_word; /* 0 until main lets the futex waiter go */
static _Atomic int waiters_ready;
static int lock_fd = -1;
static uint64_t futex_blocked, flock_blocked;

static void *futex_waiter(void *arg)
{
    atomic_fetch_add(&waiters_ready, 1);
    uint64_t t0 = ns_of(CLOCK_MONOTONIC);
    while (atomic_load(&futex_word) == 0)
        ctr_test_hidden_syscall(SYS_futex, (long)&futex_word, FUTEX_WAIT_PRIVATE, 0, 0);
    futex_blocked = ns_of(CLOCK_MONOTONIC) - t0;
    return arg;
}

static int libc_flock; /* flock_waiter calls libc's flock() */

static void *flock_waiter(void *arg)
{
    const char *path = arg;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    atomic_fetch_add(&waiters_ready, 1);
    uint64_t t0 = ns_of(CLOCK_MONOTONIC);
    if (libc_flock)
        flock(fd, LOCK_EX);
    else
        ctr_test_hidden_syscall(SYS_flock, fd, LOCK_EX, 0, 0);
    flock_blocked = ns_of(CLOCK_MONOTONIC) - t0;
    close(fd);
    return NULL;
}

/* Mode libc-flock: flock_waiter alone, through libc. */
static int flock_alone(void)
{
    char path[] = "/tmp/prog-offcpu-XXXXXX";
    lock_fd = mkstemp(path);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX) != 0)
        return 1;
    libc_flock = 1;
    pthread_t fl;
    if (pthread_create(&fl, NULL, flock_waiter, path) != 0)
        return 1;
    while (atomic_load(&waiters_ready) < 1)
        sched_yield();
    struct timespec ts = {0, NAMED_MS * 1000000L};
    nanosleep(&ts, NULL);
    flock(lock_fd, LOCK_UN);
    pthread_join(fl, NULL);
    close(lock_fd);
    unlink(path);
    printf("flock %llu\n", (unsigned long long)flock_blocked);
    return 0;
}

static int named(void)
{
    char path[] = "/tmp/prog-offcpu-XXXXXX";
    lock_fd = mkstemp(path);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX) != 0)
        return 1;
    pthread_t fu, fl;
    if (pthread_create(&fu, NULL, futex_waiter, NULL) != 0 ||
        pthread_create(&fl, NULL, flock_waiter, path) != 0)
        return 1;
    while (atomic_load(&waiters_ready) < 2)
        sched_yield();
    struct timespec ts = {0, NAMED_MS * 1000000L};
    nanosleep(&ts, NULL);
    atomic_store(&futex_word, 1);
    syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    flock(lock_fd, LOCK_UN);
    pthread_join(fu, NULL);
    pthread_join(fl, NULL);
    close(lock_fd);
    unlink(path);
    printf("futex %llu\nflock %llu\n", (unsigned long long)futex_blocked,
           (unsigned long long)flock_blocked);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "named") == 0)
        return named();
    if (argc > 1 && strcmp(argv[1], "libc-flock") == 0)
        return flock_alone();
    if (argc > 1 && strcmp(argv[1], "sleeper") == 0) {
        pthread_t sl;
        if (pthread_create(&sl, NULL, sleeper, NULL) != 0)
            return 1;
        pthread_join(sl, NULL);
        printf("sleeper %llu %llu\n", (unsigned long long)sleeper_blocked,
               (unsigned long long)sleeper_cpu);
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "spinners") != 0) {
        fprintf(stderr, "usage: prog-offcpu sleeper | spinners [N] | named | libc-flock\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 3;
    if (n < 1 || n > 64)
        n = 3;
    struct spinner s[64];
    for (int i = 0; i < n; i++)
        if (pthread_create(&s[i].th, NULL, spinner, &s[i]) != 0)
            return 1;
    uint64_t cpu = 0, wall = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(s[i].th, NULL);
        cpu += s[i].cpu;
        wall += s[i].wall;
    }
    printf("spinners %llu %llu\n", (unsigned long long)cpu, (unsigned long long)wall);
    return 0;
}
