/* SPDX-License-Identifier: MIT */
/* prog-sigstorm.c - a storm of signals: SIGALRM every US microseconds, whose
 * handler writes a byte into a pipe and reads it back (I/O the tracer
 * records, with CTRACE_IO_MIN_NS=1, from inside the handler), while main
 * spins for SECONDS. Traced, each handler's stacks cross the signal frame:
 * they must cost a few microseconds, or the handlers take all the time
 * and the program never ends (harm.sh compares its time with its untraced
 * one). Built with frame pointers.
 * usage: prog-sigstorm SECONDS US
 * Prints "storm: N signals handled" and exits 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int pipe_fds[2];
static volatile sig_atomic_t handled;
static volatile unsigned long work; /* what the loop computes, kept */

static void on_alarm(int sig)
{
    (void)sig;
    char c = 'x';
    if (write(pipe_fds[1], &c, 1) == 1 && read(pipe_fds[0], &c, 1) == 1)
        handled++;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The code the signals interrupt: a loop with frames of its own. */
static __attribute__((noinline)) void spin(double seconds)
{
    for (double end = now() + seconds; now() < end;)
        for (int i = 0; i < 1000; i++)
            work += (unsigned long)i;
}

int main(int argc, char **argv)
{
    if (argc != 3 || pipe(pipe_fds) != 0) {
        fprintf(stderr, "usage: prog-sigstorm SECONDS US\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, NULL);
    long us = atol(argv[2]);
    struct itimerval it = {{0, us}, {0, us}};
    setitimer(ITIMER_REAL, &it, NULL);
    spin(atof(argv[1]));
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("storm: %ld signals handled\n", (long)handled);
    return 0;
}
