/* SPDX-License-Identifier: MIT */
/* prog-chain.c - requests whose critical path crosses three threads, with
 * times the program measures itself, for why.sh (`ctrace why`).
 *
 * Each request: the "holder" thread takes the table lock and, holding it,
 * waits on a condition; the "request" thread begins a task and asks for the
 * table lock (it waits: the holder has it); the "io" thread is blocked in a
 * read() of a pipe that the "writer" thread writes DELAY ms after the
 * request asked; when the read returns, io signals the condition, the holder
 * wakes and lets the lock go, and the request gets it and ends its task.
 * So the request's critical path is: its own wait for the lock, the
 * holder's wait on the condition under the lock, and io's read, which the
 * program measures from the request's lock call to the read's return.
 *
 * usage: prog-chain TRACE [REQUESTS [DELAY_MS]]
 * Prints, per request: "request I latency_ns N read_ns R" (R: from the lock
 * call to the read's return). Exits 0 when every step worked.
 */
#include <ctrace/trace.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t table = PTHREAD_MUTEX_INITIALIZER, flag_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static int flag;
static sem_t holding, asked, done;
static int pipefd[2];
static int requests = 5, delay_ms = 30;
static uint64_t read_end_ns;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *holder(void *arg)
{
    pthread_setname_np(pthread_self(), "holder");
    for (int i = 0; i < requests; i++) {
        pthread_mutex_lock(&table);
        pthread_mutex_lock(&flag_lock);
        sem_post(&holding); /* the request may ask now: the lock is held */
        while (!flag)
            pthread_cond_wait(&ready, &flag_lock);
        flag = 0;
        pthread_mutex_unlock(&flag_lock);
        pthread_mutex_unlock(&table);
        sem_wait(&done); /* the request is over before the next one */
    }
    return arg;
}

static void *io(void *arg)
{
    pthread_setname_np(pthread_self(), "io");
    for (int i = 0; i < requests; i++) {
        char c;
        if (read(pipefd[0], &c, 1) != 1)
            exit(1);
        read_end_ns = now_ns(); /* read by the request after its lock: ordered by it */
        pthread_mutex_lock(&flag_lock);
        flag = 1;
        pthread_cond_signal(&ready);
        pthread_mutex_unlock(&flag_lock);
    }
    return arg;
}

static void *writer(void *arg)
{
    pthread_setname_np(pthread_self(), "writer");
    for (int i = 0; i < requests; i++) {
        sem_wait(&asked);
        struct timespec d = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000};
        nanosleep(&d, NULL);
        if (write(pipefd[1], "x", 1) != 1)
            exit(1);
    }
    return arg;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: prog-chain TRACE [REQUESTS [DELAY_MS]]\n");
        return 2;
    }
    if (argc > 2)
        requests = atoi(argv[2]);
    if (argc > 3)
        delay_ms = atoi(argv[3]);
    if (pipe(pipefd) != 0 || trace_start(argv[1]) != 0)
        return 1;
    pthread_setname_np(pthread_self(), "request");
    sem_init(&holding, 0, 0);
    sem_init(&asked, 0, 0);
    sem_init(&done, 0, 0);
    pthread_t th[3];
    pthread_create(&th[0], NULL, holder, NULL);
    pthread_create(&th[1], NULL, io, NULL);
    pthread_create(&th[2], NULL, writer, NULL);
    for (int i = 0; i < requests; i++) {
        sem_wait(&holding);
        /* Let the holder reach its wait on the condition (not needed for
         * the chain, which holds either way; it keeps the picture simple). */
        struct timespec settle = {0, 2 * 1000 * 1000};
        nanosleep(&settle, NULL);
        /* The clock read around the task's calls: the latency measured
         * brackets the one traced. */
        uint64_t begin = now_ns();
        trace_task_t task = trace_task_begin("request", 0);
        sem_post(&asked);
        pthread_mutex_lock(&table);
        pthread_mutex_unlock(&table);
        trace_task_end(task);
        uint64_t end = now_ns();
        printf("request %d latency_ns %llu read_ns %llu\n", i, (unsigned long long)(end - begin),
               (unsigned long long)(read_end_ns - begin));
        sem_post(&done);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    return trace_stop() == 0 ? 0 : 1;
}
