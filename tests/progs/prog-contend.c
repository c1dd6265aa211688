/* SPDX-License-Identifier: MIT */
/* prog-contend.c - a small traced program for the CLI tests: named threads
 * that contend on one mutex, ending in one of several ways so the tests can
 * check what each leaves in the trace.
 * usage: prog-contend MODE TRACE   MODE: stop | exit | _exit
 *   stop   trace_stop() then return (the normal case)
 *   exit   return from main with tracing running (the exit-time flush)
 *   _exit  _exit(0) after a flush interval has passed (no end record) */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctrace/trace.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    char name[16];
    snprintf(name, sizeof(name), "contender-%d", (int)(long)arg);
    pthread_setname_np(pthread_self(), name);
    for (int i = 0; i < 20; i++) {
        pthread_mutex_lock(&lock);
        struct timespec ts = {0, 200000}; /* hold it: the others wait */
        nanosleep(&ts, NULL);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: prog-contend stop|exit|_exit TRACE\n");
        return 2;
    }
    struct trace_options o = {.path = argv[2], .flush_ms = 20};
    if (trace_start_opts(&o) != 0) {
        perror("trace_start");
        return 1;
    }
    pthread_t th[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    if (strcmp(argv[1], "stop") == 0)
        return trace_stop() == 0 ? 0 : 1;
    if (strcmp(argv[1], "_exit") == 0) {
        usleep(100000); /* several flushes */
        _exit(0);
    }
    return 0; /* "exit": the library flushes at exit */
}
