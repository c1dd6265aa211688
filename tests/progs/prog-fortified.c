/* SPDX-License-Identifier: MIT */
/* prog-fortified.c - built with -O2 -D_FORTIFY_SOURCE=2, as Debian builds its
 * packages, so that its read() of a buffer of known size is a call to glibc's
 * __read_chk: the tracer must see that wait too. A thread writes to a pipe
 * after 50 ms; the main thread reads it in read_late().
 * usage: prog-fortified TRACE */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "ctrace/trace.h"

static int pfd[2];

static void *late_writer(void *arg)
{
    (void)arg;
    struct timespec d = {0, 50 * 1000 * 1000};
    nanosleep(&d, NULL);
    if (write(pfd[1], "x", 1) != 1)
        perror("write");
    return NULL;
}

static volatile size_t want = 16; /* a length only known at run time... */

static __attribute__((noinline)) int read_late(void)
{
    char buf[16]; /* ...into a buffer of known size: the read is checked */
    ssize_t n = read(pfd[0], buf, want);
    __asm__ volatile("" ::: "memory"); /* keep this frame on the stack */
    return (int)n;
}

int main(int argc, char **argv)
{
    if (argc != 2 || pipe(pfd) != 0 || trace_start(argv[1]) != 0) {
        fprintf(stderr, "usage: prog-fortified TRACE\n");
        return 2;
    }
    pthread_t th;
    pthread_create(&th, NULL, late_writer, NULL);
    int n = read_late();
    pthread_join(th, NULL);
    return trace_stop() == 0 && n == 1 ? 0 : 1;
}
