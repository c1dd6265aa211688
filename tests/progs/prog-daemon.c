/* SPDX-License-Identifier: MIT */
/* prog-daemon.c - a daemon, for `ctrace run` (tests/e2e/daemon.sh): daemon(3)
 * forks, the parent exits at once (_exit), and the child does the work:
 * two threads taking turns on a mutex that each holds for 30 ms, and one
 * blocked in read() on a pipe until the main thread writes 50 ms later.
 * The waits are certain, not a matter of timing: the first contender holds
 * the mutex until the second sleeps in pthread_mutex_lock, and main writes
 * only once the reader sleeps in read() (the kernel says so).
 * When done the child writes its pid to DIR/done, then exits.
 * usage: prog-daemon DIR
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "asleep.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int pipe_fds[2];

static void sleep_ms(unsigned ms)
{
    struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&d, NULL);
}

/* The kernel ids of the second contender and of the reader, once known;
 * whether the first contender holds the mutex. */
static volatile pid_t second_tid, reader_tid;
static volatile int first_holds;

/* Waits until *tid is known and that thread of this process sleeps. */
static void until_asleep(volatile pid_t *tid)
{
    while (!*tid || !ctr_test_is_asleep(getpid(), *tid))
        sched_yield();
}

static void *contender_main(void *arg)
{
    pthread_setname_np(pthread_self(), "contender");
    if (arg) { /* the second: asks once the first holds it (threads may
                * start in any order: it must not be done before the first
                * begins, or the first would wait for it for ever) */
        second_tid = (pid_t)syscall(SYS_gettid);
        while (!first_holds)
            sched_yield();
    } else { /* the first: holds the mutex until the second waits for it */
        pthread_mutex_lock(&lock);
        first_holds = 1;
        until_asleep(&second_tid);
        pthread_mutex_unlock(&lock);
    }
    for (int i = 0; i < 5; i++) {
        pthread_mutex_lock(&lock);
        sleep_ms(30);
        pthread_mutex_unlock(&lock);
        sleep_ms(1);
    }
    return NULL;
}

static void *reader_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "reader");
    reader_tid = (pid_t)syscall(SYS_gettid);
    char c;
    if (read(pipe_fds[0], &c, 1) != 1)
        exit(3);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prog-daemon DIR\n");
        return 2;
    }
    if (daemon(1, 1) != 0) {
        perror("daemon");
        return 1;
    }
    if (pipe(pipe_fds) != 0)
        return 1;
    pthread_t th[3];
    pthread_create(&th[0], NULL, contender_main, NULL);
    pthread_create(&th[1], NULL, contender_main, "second");
    pthread_create(&th[2], NULL, reader_main, NULL);
    until_asleep(&reader_tid);
    sleep_ms(50);
    if (write(pipe_fds[1], "x", 1) != 1)
        return 1;
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    char path[4096];
    snprintf(path, sizeof(path), "%s/done.tmp", argv[1]);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    fprintf(f, "%ld\n", (long)getpid());
    fclose(f);
    char done[4096];
    snprintf(done, sizeof(done), "%s/done", argv[1]);
    rename(path, done);
    return 0;
}
