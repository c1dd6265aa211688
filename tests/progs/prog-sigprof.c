/* SPDX-License-Identifier: MIT */
/* prog-sigprof.c - a program that profiles itself as gprof-like tools do: a
 * SIGPROF handler of its own and setitimer(ITIMER_PROF), then 200 ms of
 * CPU. Its signals are its own under any tracing (tests/e2e/cpu_sampling.sh):
 * prints "sigprof: N signals" (N > 0, every one with the kernel's si_code,
 * none of the tracer's) and exits 0, or says what went wrong and exits 1.
 * With "signal", the handler is set with signal() instead (which hands the
 * old one back as a bare pointer, and the handler sees no si_code).
 * usage: prog-sigprof [signal] */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t ticks, foreign;
static volatile unsigned long sink;

static void on_prof(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si->si_code == SI_KERNEL)
        ticks++;
    else
        foreign++;
}

static void on_prof_plain(int sig)
{
    (void)sig;
    ticks++;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "signal") == 0) {
        void (*was)(int) = signal(SIGPROF, on_prof_plain);
        if (was != SIG_DFL) {
            fprintf(stderr, "prog-sigprof: signal() says SIGPROF's handler was not SIG_DFL\n");
            return 1;
        }
    } else {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_prof;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        if (sigaction(SIGPROF, &sa, &old) != 0)
            return perror("sigaction"), 1;
        if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) {
            fprintf(stderr, "prog-sigprof: SIGPROF's action was not SIG_DFL before ours\n");
            return 1;
        }
    }
    struct itimerval it = {{0, 10000}, {0, 10000}};
    if (setitimer(ITIMER_PROF, &it, NULL) != 0)
        return perror("setitimer"), 1;
    for (double start = cpu_ms(); cpu_ms() - start < 200;)
        for (int i = 0; i < 100000; i++)
            sink += (unsigned long)i;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    if (foreign) {
        fprintf(stderr, "prog-sigprof: %d SIGPROFs that were not the kernel's\n", (int)foreign);
        return 1;
    }
    printf("sigprof: %d signals\n", (int)ticks);
    return ticks > 0 ? 0 : 1;
}
