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
 * usage: prog-offcpu sleeper | spinners [N (default 3)]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "hidden_sleep.h"

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

int main(int argc, char **argv)
{
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
        fprintf(stderr, "usage: prog-offcpu sleeper | spinners [N]\n");
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
