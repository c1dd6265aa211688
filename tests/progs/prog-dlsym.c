/* SPDX-License-Identifier: MIT */
/* prog-dlsym.c - threads created through dlsym'd pthread_create, by a
 * library (lib-dlsym.c), for `ctrace run` (tests/e2e/dlsym.sh): two through
 * dlsym(RTLD_NEXT, ...) and one through dlsym(RTLD_DEFAULT, ...), each
 * waiting 30 ms for a mutex the main thread holds. Prints what the
 * library's other lookups answered. */
#include "lib-dlsym.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *next_worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "next");
    pthread_mutex_lock(&lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void *default_worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "default");
    pthread_mutex_lock(&lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    lib_lookups();
    pthread_t th[3];
    pthread_mutex_lock(&lock);
    int rc = lib_create(1, &th[0], next_worker, NULL) | lib_create(1, &th[1], next_worker, NULL) |
             lib_create(0, &th[2], default_worker, NULL);
    struct timespec d = {0, 30 * 1000 * 1000};
    nanosleep(&d, NULL);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < 3 && rc == 0; i++)
        pthread_join(th[i], NULL);
    printf("created: %s\n", rc == 0 ? "yes" : "no");
    return rc == 0 ? 0 : 1;
}
