/* SPDX-License-Identifier: MIT */
/* pingpong.c - a trace generator for the analyzer's benchmark
 * (bench_analyze.sh): two pairs of threads ping-pong through POSIX
 * semaphores for SECONDS, so that a traced run yields a large trace of
 * sync waits at a steady rate.
 *
 * In each pair, "ping" posts `go` and waits on `back`; "pong" waits on `go`
 * and posts `back`. Each round trip usually makes both sem_waits block
 * (BLOCK ... UNBLOCK) and both sem_posts release a waiter (RELEASE), about
 * six traced events. Both threads of a pair check the clock every 1024
 * rounds and stop once the time is up (ping decides; it posts a last time so
 * that pong is never left waiting). Prints nothing on success.
 *
 * Under ctrace, every 16th round trip of the first pair is a task "round"
 * (two more events), so that `ctrace why` and -pprof=critical have paths
 * to walk: about 1 in 100 events. The tracer's calls are looked up at run
 * time, so that the program builds without ctrace's headers and runs
 * untraced as well (then without tasks).
 * usage: pingpong SECONDS   (decimal, e.g. 0.5)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TASK_EVERY 16

struct pair {
    sem_t go, back;
    atomic_int stop; /* set by ping before its last post of go */
    int tasks;       /* its round trips are tasks */
};

/* libctrace's trace__task_begin and trace__task_end (trace.h), when loaded. */
static uint64_t (*task_begin)(const char *type, uint64_t parent);
static void (*task_end)(uint64_t task);

static unsigned long long deadline_ns;

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void *ping(void *arg)
{
    struct pair *p = arg;
    for (unsigned long n = 1;; n++) {
        if (n % 1024 == 0 && now_ns() >= deadline_ns) {
            /* Relaxed: the post that follows orders it for pong's read
             * after its sem_wait (sem_post/sem_wait synchronize). */
            atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
            sem_post(&p->go);
            return NULL;
        }
        uint64_t task = p->tasks && n % TASK_EVERY == 0 ? task_begin("round", 0) : 0;
        sem_post(&p->go);
        sem_wait(&p->back);
        if (task)
            task_end(task);
    }
}

static void *pong(void *arg)
{
    struct pair *p = arg;
    for (;;) {
        sem_wait(&p->go);
        /* Relaxed: read after the sem_wait that pairs with ping's post. */
        if (atomic_load_explicit(&p->stop, memory_order_relaxed))
            return NULL;
        sem_post(&p->back);
    }
}

int main(int argc, char **argv)
{
    char *end;
    double secs = argc == 2 ? strtod(argv[1], &end) : -1;
    if (argc != 2 || *end || !(secs > 0) || secs > 86400) {
        fprintf(stderr, "usage: pingpong SECONDS\n");
        return 2;
    }
    deadline_ns = now_ns() + (unsigned long long)(secs * 1e9);
    /* POSIX lets a void * hold a function's address (dlsym's own use). */
    *(void **)&task_begin = dlsym(RTLD_DEFAULT, "trace__task_begin");
    *(void **)&task_end = dlsym(RTLD_DEFAULT, "trace__task_end");
    struct pair pairs[2];
    pthread_t th[4];
    for (int i = 0; i < 2; i++) {
        if (sem_init(&pairs[i].go, 0, 0) != 0 || sem_init(&pairs[i].back, 0, 0) != 0) {
            perror("pingpong: sem_init");
            return 1;
        }
        atomic_init(&pairs[i].stop, 0);
        pairs[i].tasks = i == 0 && task_begin && task_end;
        if (pthread_create(&th[2 * i], NULL, ping, &pairs[i]) != 0 ||
            pthread_create(&th[2 * i + 1], NULL, pong, &pairs[i]) != 0) {
            fprintf(stderr, "pingpong: pthread_create failed\n");
            return 1;
        }
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    return 0;
}
