/* SPDX-License-Identifier: MIT */
/* prog-oldcond.c - a program built against glibc's old condition-variable ABI
 * (pthread_cond_*@GLIBC_2.2.5, as binaries from the LinuxThreads era are),
 * run under the tracer: two threads hand a token back and forth through an
 * old-ABI condvar. With a tracer that caught old-ABI calls in new-ABI
 * wrappers, the old condvar would be corrupted and this would hang or crash.
 * It finds trace_start at run time, so the same source serves a binary
 * linked with libctrace and one that only gets it through LD_PRELOAD.
 * usage: prog-oldcond TRACE (exits 0 when every hand-off completed) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* Bind this file's condvar calls to the old versions. */
__asm__(".symver pthread_cond_init, pthread_cond_init@GLIBC_2.2.5");
__asm__(".symver pthread_cond_destroy, pthread_cond_destroy@GLIBC_2.2.5");
__asm__(".symver pthread_cond_wait, pthread_cond_wait@GLIBC_2.2.5");
__asm__(".symver pthread_cond_signal, pthread_cond_signal@GLIBC_2.2.5");

#define ROUNDS 2000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static int turn; /* 0: main's turn, 1: the other thread's */

static void *other(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&mu);
        while (turn != 1)
            pthread_cond_wait(&cv, &mu);
        turn = 0;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prog-oldcond TRACE\n");
        return 2;
    }
    pthread_cond_init(&cv, NULL);
    int (*start)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "trace_start");
    int (*stop)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "trace_stop");
    if (!start || !stop || start(argv[1]) != 0) {
        fprintf(stderr, "prog-oldcond: cannot start tracing (is libctrace loaded?)\n");
        return 1;
    }
    pthread_t th;
    pthread_create(&th, NULL, other, NULL);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&mu);
        turn = 1;
        pthread_cond_signal(&cv);
        while (turn != 0)
            pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
    }
    pthread_join(th, NULL);
    pthread_cond_destroy(&cv);
    if (stop() != 0)
        return 1;
    printf("prog-oldcond: %d hand-offs\n", ROUNDS);
    return 0;
}
