/* SPDX-License-Identifier: MIT */
/* prog-install.c - the program install.sh and deb.sh build against an
 * installed ctrace, as a user's would be: two threads contend one lock.
 * Built with -DWITH_CTRACE, it traces itself into argv[1] through the
 * installed header and library, and first checks that the two are of one
 * version (printing "libctrace VERSION" when all went well); built without,
 * it knows nothing of ctrace, for `ctrace run`. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef WITH_CTRACE
#include <ctrace/flightrec.h>
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    for (int i = 0; i < 20; i++) {
        pthread_mutex_lock(&lock);
        usleep(500);
        pthread_mutex_unlock(&lock);
    }
    return arg;
}

int main(int argc, char **argv)
{
#ifdef WITH_CTRACE
    if (argc < 2 || ctrace_version() != CTRACE_VERSION_NUMBER ||
        strcmp(ctrace_version_string(), CTRACE_VERSION_STRING) != 0)
        return 1;
    struct trace_options o = {.path = argv[1], .flush_ms = 20};
    if (trace_start_opts(&o) != 0)
        return 2;
#else
    (void)argc;
    (void)argv;
#endif
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
#ifdef WITH_CTRACE
    struct trace_counters c;
    if (trace_get_counters(&c) != 0 || trace_stop() != 0)
        return 3;
    printf("libctrace %s\n", ctrace_version_string());
#endif
    return 0;
}
