/* SPDX-License-Identifier: MIT */
/* prog-phases.c - an unmodified program (no libctrace: `ctrace run` preloads
 * it) with two phases of contention on two locks, for the control channel's
 * tests (control.sh): a flight recorder dumped, or a dormant process traced,
 * in its second phase must show that phase's lock, and a trace of the
 * second phase alone must not show the first's.
 * usage: prog-phases A_MS B_MS [THREADS]
 *   phase A: A_MS ms of THREADS (default 4) threads taking lock_a, each
 *            holding it 1 ms (phase_a_work);
 *   phase B: B_MS ms of the same on lock_b, held 2 ms (phase_b_work).
 * Prints "phase A", "phase B", "done" (flushed as they begin): the same
 * output traced or not, whatever the timing. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static struct timespec phase_end;
static _Atomic int phase; /* 0: A, 1: B, 2: over */

static int before(const struct timespec *end)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec < end->tv_sec || (now.tv_sec == end->tv_sec && now.tv_nsec < end->tv_nsec);
}

static void hold(pthread_mutex_t *m, long ns)
{
    pthread_mutex_lock(m);
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
    pthread_mutex_unlock(m);
}

__attribute__((noinline)) static void phase_a_work(void)
{
    hold(&lock_a, 1000000);
}

__attribute__((noinline)) static void phase_b_work(void)
{
    hold(&lock_b, 2000000);
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        int p = phase;
        if (p == 0)
            phase_a_work();
        else if (p == 1)
            phase_b_work();
        else
            return NULL;
    }
}

static void phase_for(long ms)
{
    clock_gettime(CLOCK_MONOTONIC, &phase_end);
    phase_end.tv_sec += ms / 1000;
    phase_end.tv_nsec += (ms % 1000) * 1000000L;
    if (phase_end.tv_nsec >= 1000000000L)
        phase_end.tv_sec++, phase_end.tv_nsec -= 1000000000L;
    while (before(&phase_end)) {
        struct timespec tick = {0, 10000000};
        nanosleep(&tick, NULL);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: prog-phases A_MS B_MS [THREADS]\n");
        return 2;
    }
    long a = atol(argv[1]), b = atol(argv[2]);
    int n = argc > 3 ? atoi(argv[3]) : 4;
    if (n < 1 || n > 64)
        n = 4;
    pthread_t t[64];
    puts("phase A");
    fflush(stdout);
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    phase_for(a);
    phase = 1;
    puts("phase B");
    fflush(stdout);
    phase_for(b);
    phase = 2;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    puts("done");
    return 0;
}
