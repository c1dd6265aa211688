/* SPDX-License-Identifier: MIT */
/* lock.h - the tracer's own mutex: a futex word, for the few places where
 * threads of the tracer and of the program must take turns (the thread slab's
 * reclamation, the flight recorder's window, the registry of the tracer's
 * descriptors). Never on an event's path.
 *
 * Why not pthread_mutex_t: the tracer's code would go through its own
 * wrappers, and calling the real functions directly hides the lock from
 * ThreadSanitizer, which then reports the data it protects. This lock is
 * made of C11 atomics, which TSan follows.
 *
 * Protocol (Drepper, "Futexes Are Tricky", mutex 3): the word is 0 (free),
 * 1 (held) or 2 (held, maybe with sleepers). Acquiring CASes 0 -> 1
 * (acquire); on contention it swaps in 2 and sleeps on the word while it is
 * 2. Releasing swaps in 0 (release, pairs with the acquire of the next
 * holder) and wakes one sleeper if the old value was 2. Not recursive; a
 * holder must not be interrupted by a signal handler that takes the same
 * lock (no caller does: none of these locks is taken by a wrapper).
 */
#ifndef CTR_LOCK_H
#define CTR_LOCK_H

#include "core/real.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

struct ctr_lock {
    _Atomic uint32_t word;
};

static inline void ctr_lock_acquire(struct ctr_lock *l)
{
    uint32_t c = 0;
    /* acquire: the previous holder's critical section, released by the
     * exchange in ctr_lock_release. */
    if (atomic_compare_exchange_strong_explicit(&l->word, &c, 1, memory_order_acquire,
                                                memory_order_relaxed))
        return;
    int saved = errno; /* the program's, wherever the tracer runs */
    /* acquire: as above, for the exchange that finally takes it. */
    if (c != 2)
        c = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
    while (c != 0) {
        ctr__real.syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
    }
    errno = saved;
}

/* ctr_lock_try() : takes l if it is free. @return 1 if taken, else 0. */
static inline int ctr_lock_try(struct ctr_lock *l)
{
    uint32_t c = 0;
    /* acquire: as in ctr_lock_acquire. */
    return atomic_compare_exchange_strong_explicit(&l->word, &c, 1, memory_order_acquire,
                                                   memory_order_relaxed);
}

static inline void ctr_lock_release(struct ctr_lock *l)
{
    /* release: the critical section before the next holder's acquire. */
    if (atomic_exchange_explicit(&l->word, 0, memory_order_release) == 2) {
        int saved = errno;
        ctr__real.syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        errno = saved;
    }
}

#endif /* CTR_LOCK_H */
