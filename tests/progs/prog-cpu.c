/* SPDX-License-Identifier: MIT */
/* prog-cpu.c - a program whose CPU time is known, for the CPU sampling tests
 * (tests/e2e/cpu.sh): thread "burner-a" spends MS_A ms of its own CPU time in
 * burn_a, thread "burner-b" MS_B ms in burn_b, at the same time; then each
 * prints the CPU time it measured itself:
 *   burn_a 300.2 ms
 *   burn_b 100.1 ms
 * No traced call in between: the threads only compute, so a sampler must
 * not wait for their next event to find them.
 * usage: prog-cpu [MS_A [MS_B]]   (defaults 300 and 100) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static volatile unsigned long sink; /* the work the compiler must keep */

/* The loops are the functions' own code (no call but the clock's, rarely),
 * so every sample inside lands on their lines. One template, two
 * functions: each must be code of its own. */
#define BURNER(name, k)                                     \
    __attribute__((noinline)) static double name(double ms) \
    {                                                       \
        double start = cpu_ms(), now = start;               \
        while (now - start < ms) {                          \
            for (unsigned long i = 0; i < 200000; i++)      \
                sink += i * (k);                            \
            now = cpu_ms();                                 \
        }                                                   \
        return now - start;                                 \
    }
BURNER(burn_a, 3)
BURNER(burn_b, 5)

struct job {
    const char *name;
    double (*burn)(double);
    double want, got;
};

static void *run(void *arg)
{
    struct job *j = arg;
    pthread_setname_np(pthread_self(), j->burn == burn_a ? "burner-a" : "burner-b");
    j->got = j->burn(j->want);
    return NULL;
}

int main(int argc, char **argv)
{
    struct job jobs[2] = {{"burn_a", burn_a, argc > 1 ? atof(argv[1]) : 300, 0},
                          {"burn_b", burn_b, argc > 2 ? atof(argv[2]) : 100, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, run, &jobs[i]) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++)
        printf("%s %.1f ms\n", jobs[i].name, jobs[i].got);
    return 0;
}
