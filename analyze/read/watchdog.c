/* SPDX-License-Identifier: MIT */
/* watchdog.c - the bound on a call (see watchdog.h). The armed call's
 * deadline is one atomic word, written by the caller's thread and read by
 * the watchdog's; nothing else is shared but the stop flag, under the
 * lock.
 */
#include "read/watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ctr_watchdog {
    /* CLOCK_MONOTONIC ns by which the armed call must have returned; 0:
     * none armed. Relaxed on both sides: it publishes nothing else, and a
     * value seen a tick late only delays the end by that tick. */
    _Atomic int64_t deadline;
    int64_t bound_ns;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC */
    int stopping;        /* under lock */
    size_t message_len;
    char message[]; /* ends with '\n' */
};

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *watch(void *arg)
{
    struct ctr_watchdog *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stopping) {
        int64_t wake = now_ns() + w->bound_ns / 4;
        struct timespec t = {.tv_sec = wake / 1000000000, .tv_nsec = wake % 1000000000};
        pthread_cond_timedwait(&w->cond, &w->lock, &t);
        int64_t d = atomic_load_explicit(&w->deadline, memory_order_relaxed);
        if (!w->stopping && d && now_ns() >= d) {
            /* Async-signal-safe calls only from here: the stuck thread may
             * hold any lock (malloc's, stdio's). */
            ssize_t n = write(STDERR_FILENO, w->message, w->message_len);
            (void)n;
            _exit(1);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int ctr_watchdog_start(struct ctr_watchdog **out, double seconds, const char *message)
{
    *out = NULL;
    size_t len = strlen(message);
    struct ctr_watchdog *w = calloc(1, sizeof(*w) + len + 2);
    if (!w)
        return -ENOMEM;
    memcpy(w->message, message, len);
    w->message[len] = '\n';
    w->message_len = len + 1;
    w->bound_ns = (int64_t)(seconds * 1e9);
    atomic_init(&w->deadline, 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->lock, NULL);
    /* No signal is handled on the watchdog's thread: a program's handlers
     * run on its own threads, as before. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, watch, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return -rc;
    }
    *out = w;
    return 0;
}

void ctr_watchdog_arm(struct ctr_watchdog *w)
{
    if (!w)
        return;
    atomic_store_explicit(&w->deadline, now_ns() + w->bound_ns, memory_order_relaxed);
}

void ctr_watchdog_disarm(struct ctr_watchdog *w)
{
    if (!w)
        return;
    atomic_store_explicit(&w->deadline, 0, memory_order_relaxed);
}

void ctr_watchdog_stop(struct ctr_watchdog *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
