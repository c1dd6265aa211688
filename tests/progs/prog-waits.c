/* SPDX-License-Identifier: MIT */
/* prog-waits.c - a small workload with a wait of every sync kind, for the
 * golden traces (tests/data/golden/make.sh): four named workers go through
 * phases, each separated by a barrier, in which they make each other wait
 * on one kind of object, holding it across short sleeps so that the others
 * really block:
 *   mutex    each locks one mutex 8 times, holding it 200 us;
 *   rwlock   worker 0 write-locks 4 times for 1 ms, the others read-lock 8
 *            times for 300 us: readers wait for the writer and it for them;
 *   cond     worker 0 hands 12 items, one every 300 us, to the others, who
 *            wait in pthread_cond_wait (worker 3 in pthread_cond_timedwait);
 *   sem      workers 0/1 and 2/3 ping-pong 10 times through semaphores;
 *   spin     each takes one spin lock 5 times, spinning 100 us inside.
 * After the last round worker 3 sleeps 20 ms, so that main waits in join.
 *
 * usage: prog-waits run [ROUNDS]   ROUNDS of the phases (default 1), for
 *                                  `ctrace run` to trace
 *        prog-waits flight DUMP    the flight recorder with a 30 ms window
 *                                  (10 ms generations) over 15 rounds; worker
 *                                  0 dumps it into DUMP after the last round,
 *                                  while main has been waiting in join since
 *                                  the start and the others in the barrier:
 *                                  the dump's first generation has WAITING
 *                                  records. Prints nothing on success.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctrace/flightrec.h"

#define NW 4

static pthread_barrier_t phase;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int items, produced_all;
static sem_t sems[NW];
static pthread_spinlock_t spin;
static int rounds = 1;
static const char *dump_path; /* flight mode */

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void spin_us(long us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < us * 1000);
}

static void cond_phase(int me)
{
    if (me == 0) {
        for (int i = 0; i < 12; i++) {
            sleep_us(300);
            pthread_mutex_lock(&cond_mutex);
            items++;
            pthread_cond_signal(&cond);
            pthread_mutex_unlock(&cond_mutex);
        }
        pthread_mutex_lock(&cond_mutex);
        produced_all = 1;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&cond_mutex);
        return;
    }
    pthread_mutex_lock(&cond_mutex);
    for (;;) {
        while (!items && !produced_all) {
            if (me == 3) {
                struct timespec dl;
                clock_gettime(CLOCK_REALTIME, &dl);
                dl.tv_sec += 1;
                pthread_cond_timedwait(&cond, &cond_mutex, &dl);
            } else {
                pthread_cond_wait(&cond, &cond_mutex);
            }
        }
        if (!items)
            break;
        items--;
    }
    pthread_mutex_unlock(&cond_mutex);
}

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    char name[16];
    snprintf(name, sizeof(name), "waits-%d", me);
    pthread_setname_np(pthread_self(), name);
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 8; i++) {
            pthread_mutex_lock(&mutex);
            sleep_us(200);
            pthread_mutex_unlock(&mutex);
        }
        pthread_barrier_wait(&phase);
        for (int i = 0; i < (me == 0 ? 4 : 8); i++) {
            if (me == 0)
                pthread_rwlock_wrlock(&rwlock);
            else
                pthread_rwlock_rdlock(&rwlock);
            sleep_us(me == 0 ? 1000 : 300);
            pthread_rwlock_unlock(&rwlock);
            sleep_us(me == 0 ? 500 : 100);
        }
        if (pthread_barrier_wait(&phase) == PTHREAD_BARRIER_SERIAL_THREAD)
            items = produced_all = 0; /* the others wait in the next barrier */
        pthread_barrier_wait(&phase);
        cond_phase(me);
        pthread_barrier_wait(&phase);
        int peer = me ^ 1;
        for (int i = 0; i < 10; i++) {
            if (me & 1) {
                sem_wait(&sems[me]);
                sem_post(&sems[peer]);
            } else {
                sem_post(&sems[peer]);
                sem_wait(&sems[me]);
            }
        }
        pthread_barrier_wait(&phase);
        for (int i = 0; i < 5; i++) {
            pthread_spin_lock(&spin);
            spin_us(100);
            pthread_spin_unlock(&spin);
        }
        pthread_barrier_wait(&phase);
    }
    if (dump_path && me == 0 && flightrec_dump(dump_path) != 0) {
        fprintf(stderr, "prog-waits: flightrec_dump(%s) failed\n", dump_path);
        exit(1);
    }
    if (me == 3)
        sleep_us(20000);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "flight")) {
        dump_path = argv[2];
        rounds = 15;
        struct trace_options o = {.flush_ms = 10};
        struct flightrec_config fc = {.min_age_ns = 30000000, .trace = &o};
        if (flightrec_start(&fc) != 0) {
            fprintf(stderr, "prog-waits: flightrec_start failed\n");
            return 1;
        }
    } else if ((argc == 2 || argc == 3) && !strcmp(argv[1], "run")) {
        rounds = argc == 3 ? atoi(argv[2]) : 1;
    } else {
        fprintf(stderr, "usage: prog-waits run [ROUNDS] | prog-waits flight DUMP\n");
        return 2;
    }
    pthread_barrier_init(&phase, NULL, NW);
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    for (int i = 0; i < NW; i++)
        sem_init(&sems[i], 0, 0);
    pthread_t th[NW];
    for (long i = 0; i < NW; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)i) != 0)
            return 1;
    for (int i = 0; i < NW; i++)
        pthread_join(th[i], NULL);
    return 0;
}
