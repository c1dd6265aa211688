/* interpose.h - the real libc/libpthread functions behind libctrace's wrappers.
 * Tracer code that needs a pthread function calls it through ctr__real, so it
 * never goes through (and never traces) its own wrappers. */
#ifndef CTR_INTERPOSE_H
#define CTR_INTERPOSE_H

#include <pthread.h>
#include <time.h>

struct ctr_real {
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    int (*pthread_join)(pthread_t, void **);
    int (*pthread_setname_np)(pthread_t, const char *);
    int (*pthread_mutex_lock)(pthread_mutex_t *);
    int (*pthread_mutex_trylock)(pthread_mutex_t *);
    int (*pthread_mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
    int (*pthread_mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*pthread_mutex_unlock)(pthread_mutex_t *);
};

extern struct ctr_real ctr__real;

/* Resolves ctr__real (idempotent, thread-safe: every thread stores the same
 * values). Aborts with a message if libc lacks a function we wrap. */
void ctr__interpose_init(void);

#endif
