/* SPDX-License-Identifier: MIT */
/* prog-busy.c - a traced program whose busiest thread is known: "spinner"
 * burns 150 ms of its own CPU time while three "napper" threads sleep and
 * the main thread joins them all. The Perfetto export must rank the
 * spinner first (tests/e2e/perfetto.sh).
 * usage: prog-busy TRACE */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "ctrace/trace.h"

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile unsigned long sink; /* the work the compiler must keep */

static void *spinner(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "spinner");
    for (double start = cpu_seconds(); cpu_seconds() - start < 0.150;)
        for (int i = 0; i < 100000; i++)
            sink += (unsigned long)i;
    return NULL;
}

static void *napper(void *arg)
{
    char name[16];
    snprintf(name, sizeof(name), "napper-%d", (int)(long)arg);
    pthread_setname_np(pthread_self(), name);
    for (int i = 0; i < 15; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prog-busy TRACE\n");
        return 2;
    }
    struct trace_options o = {.path = argv[1]};
    if (trace_start_opts(&o) != 0) {
        perror("trace_start");
        return 1;
    }
    pthread_t t[4];
    pthread_create(&t[0], NULL, spinner, NULL);
    for (long i = 1; i < 4; i++)
        pthread_create(&t[i], NULL, napper, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    trace_stop();
    return 0;
}
