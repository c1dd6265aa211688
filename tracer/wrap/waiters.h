/* SPDX-License-Identifier: MIT */
/* waiters.h - whether a pthread object has waiters, read from glibc's public
 * object layouts, so a releasing wrapper writes a Release event only when
 * some thread is waiting (the uncontended path stays one load more).
 *
 * Each test reads a word the real function is about to read anyway (so it is
 * in cache), and is only a hint: a waiter arriving a moment later is missed,
 * a waiter leaving a moment earlier gives a Release nobody matches. Both are
 * harmless to the analysis, which matches a wait to the last Release of its
 * object before the wait ended. Outside glibc the answer is "no waiters".
 */
#ifndef CTR_WAITERS_H
#define CTR_WAITERS_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define CTR_FUTEX_WAITERS 0x80000000u

static inline int ctr__mutex_has_waiters(const pthread_mutex_t *m)
{
#ifdef __GLIBC__
    /* Plain kinds: 0 free, 1 locked, 2 locked with waiters. Robust and
     * priority-inheritance kinds (bits 16, 32 of __kind): the owner's tid
     * with FUTEX_WAITERS set when someone sleeps. relaxed: a hint (see the
     * top); the real function that follows does its own ordering. */
    unsigned lock = (unsigned)__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
    if (m->__data.__kind & (16 | 32))
        return (lock & CTR_FUTEX_WAITERS) != 0;
    return lock > 1;
#else
    (void)m;
    return 0;
#endif
}

static inline int ctr__sem_has_waiters(const sem_t *s)
{
#if defined(__GLIBC__) && UINTPTR_MAX == UINT64_MAX
    /* 64-bit glibc: the first word is value | (waiters << 32). */
    uint64_t data;
    memcpy(&data, s, sizeof(data));
    return (data >> 32) != 0;
#else
    (void)s;
    return 0;
#endif
}

static inline int ctr__cond_has_waiters(const pthread_cond_t *c)
{
#ifdef __GLIBC__
    /* glibc >= 2.25: __wrefs counts waiters in its bits 3 and up; this is
     * the test pthread_cond_signal itself starts with (relaxed, as glibc's:
     * a hint; the real function that follows does its own ordering). */
    return (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) >> 3) != 0;
#else
    (void)c;
    return 0;
#endif
}

#endif
