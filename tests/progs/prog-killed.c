/* SPDX-License-Identifier: MIT */
/* prog-killed.c - a program that dies with a thread blocked in read(), for
 * `ctrace run` (tests/e2e/killed.sh): the thread "reader" waits on a pipe that
 * nobody writes; once it is asleep in its read and 300 ms have passed, the
 * main thread sends the process SIGINT or SIGTERM (the default action: the
 * process dies by it), or exits normally.
 * usage: prog-killed INT|TERM|exit
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "asleep.h"

static int pipe_fds[2];
static volatile int reader_tid;

static void *reader_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "reader");
    reader_tid = (int)syscall(SYS_gettid);
    char c;
    if (read(pipe_fds[0], &c, 1) != 1)
        exit(3);
    return NULL;
}

int main(int argc, char **argv)
{
    int sig = argc == 2 && strcmp(argv[1], "INT") == 0    ? SIGINT
              : argc == 2 && strcmp(argv[1], "TERM") == 0 ? SIGTERM
              : argc == 2 && strcmp(argv[1], "exit") == 0 ? 0
                                                          : -1;
    if (sig < 0) {
        fprintf(stderr, "usage: prog-killed INT|TERM|exit\n");
        return 2;
    }
    /* A shell starts background jobs with SIGINT ignored: die by it anyway. */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (pipe(pipe_fds) != 0)
        return 1;
    pthread_t th;
    if (pthread_create(&th, NULL, reader_main, NULL) != 0)
        return 1;
    while (!reader_tid || !ctr_test_is_asleep(getpid(), reader_tid))
        sched_yield();
    struct timespec d = {0, 300 * 1000 * 1000};
    nanosleep(&d, NULL);
    printf("reader blocked\n");
    fflush(stdout);
    if (sig == 0)
        exit(0);
    kill(getpid(), sig);
    for (;;)
        pause();
}
