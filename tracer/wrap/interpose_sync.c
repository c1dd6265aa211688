/* SPDX-License-Identifier: MIT */
/* interpose_sync.c - wrappers of the pthread and POSIX waits: mutexes,
 * rwlocks, semaphores, barriers, joins, spin locks and sleeps, and the
 * releases that end them.
 *
 * A wait first tries the non-blocking variant (trylock, sem_trywait,
 * pthread_tryjoin_np, ...): when that succeeds nothing is recorded, so the
 * uncontended case costs one try. Only a call that must wait writes Block,
 * makes the real blocking call, and writes Unblock (even when the call then
 * fails or times out: the thread did wait). Calls with no try (barriers,
 * sleeps) always record.
 *
 * A release (unlock, post) writes a Release event first when the object has
 * waiters (waiters.h), so the analyzer can tell when each waiter was let go
 * and by which code. Every wrapper keeps the real function's semantics,
 * return value and errno.
 */
#include "core/common.h"
#include "core/emit.h"
#include "core/real.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "ctrace_format.h"
#include "wrap/wait.h"
#include "wrap/waiters.h"

#include <errno.h>

/* Pulls this file in with core/real.c from the static library. */
const int ctr__wrappers_sync;

/* ---------------------------------------------------------------------------
 * Mutexes
 * ------------------------------------------------------------------------- */

/* trylock, except that an error-checking mutex already owned by the caller
 * is no wait: the real lock answers EDEADLK at once, and so do we. (A plain
 * mutex relocked by its owner does block, forever, and is recorded.) Owner
 * and kind are in glibc's public layout; the kind's low two bits are the
 * type. */
static int try_mutex(struct ctr_call *c)
{
    pthread_mutex_t *m = c->obj;
    int rc = ctr__real.pthread_mutex_trylock(m);
#ifdef __GLIBC__
    if (rc == EBUSY && (m->__data.__kind & 3) == PTHREAD_MUTEX_ERRORCHECK &&
        m->__data.__owner == ctr__self->os_tid)
        return EDEADLK;
#endif
    return rc;
}

static int do_mutex_lock(struct ctr_call *c)
{
    return ctr__real.pthread_mutex_lock(c->obj);
}
static int do_mutex_timedlock(struct ctr_call *c)
{
    return ctr__real.pthread_mutex_timedlock(c->obj, c->at);
}
static int do_mutex_clocklock(struct ctr_call *c)
{
    return ctr__real.pthread_mutex_clocklock(c->obj, c->clk, c->at);
}

static const struct ctr_waitop mutex_lock = {CTR_REASON_MUTEX_LOCK, try_mutex, do_mutex_lock, NULL};
static const struct ctr_waitop mutex_timedlock = {CTR_REASON_MUTEX_TIMEDLOCK, try_mutex,
                                                  do_mutex_timedlock, NULL};
static const struct ctr_waitop mutex_clocklock = {CTR_REASON_MUTEX_CLOCKLOCK, try_mutex,
                                                  do_mutex_clocklock, NULL};

/* The hottest wrappers try inline before taking the shared path, which
 * then tries once more (cheap next to a wait, and the lock may be free by
 * then): an uncontended lock costs the wrapper one trylock and no call. */
CTR_EXPORT CTR_WRAPPER_TEXT int pthread_mutex_lock(pthread_mutex_t *m)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_mutex_lock(m);
    int rc = ctr__real.pthread_mutex_trylock(m);
    if (CTR_LIKELY(rc != EBUSY))
        return rc;
    return ctr__wait_traced(&mutex_lock, &(struct ctr_call){.obj = m}, m);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_mutex_timedlock(pthread_mutex_t *m,
                                                        const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_mutex_timedlock(m, at);
    return ctr__wait_traced(&mutex_timedlock, &(struct ctr_call){.obj = m, .at = at}, m);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk,
                                                        const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_mutex_clocklock(m, clk, at);
    return ctr__wait_traced(&mutex_clocklock, &(struct ctr_call){.obj = m, .clk = clk, .at = at},
                            m);
}

CTR_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    return ctr__real.pthread_mutex_trylock(m); /* never waits: nothing to record */
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    if (CTR_UNLIKELY(ctr__tracing()) && ctr__mutex_has_waiters(m))
        ctr__note_release(m);
    return ctr__real.pthread_mutex_unlock(m);
}

/* ---------------------------------------------------------------------------
 * Read-write locks
 * ------------------------------------------------------------------------- */

/* glibc's rwlock keeps its waiter bits in words whose encoding changed over
 * releases, so releases are keyed on our own count of traced threads blocked
 * in an rwlock wait: while any is, every rwlock unlock writes a Release
 * (those of other rwlocks match no wait and cost only the event). */
static _Atomic int rwlock_waiting;

static int try_rd(struct ctr_call *c)
{
    return ctr__real.pthread_rwlock_tryrdlock(c->obj);
}
static int try_wr(struct ctr_call *c)
{
    return ctr__real.pthread_rwlock_trywrlock(c->obj);
}
static int do_rdlock(struct ctr_call *c)
{
    return ctr__real.pthread_rwlock_rdlock(c->obj);
}
static int do_wrlock(struct ctr_call *c)
{
    return ctr__real.pthread_rwlock_wrlock(c->obj);
}
static int do_timedrd(struct ctr_call *c)
{
    return ctr__real.pthread_rwlock_timedrdlock(c->obj, c->at);
}
static int do_timedwr(struct ctr_call *c)
{
    return ctr__real.pthread_rwlock_timedwrlock(c->obj, c->at);
}
static int do_clockrd(struct ctr_call *c)
{
    return ctr__real.pthread_rwlock_clockrdlock(c->obj, c->clk, c->at);
}
static int do_clockwr(struct ctr_call *c)
{
    return ctr__real.pthread_rwlock_clockwrlock(c->obj, c->clk, c->at);
}

static const struct ctr_waitop rw_rd = {CTR_REASON_RWLOCK_RDLOCK, try_rd, do_rdlock,
                                        &rwlock_waiting};
static const struct ctr_waitop rw_wr = {CTR_REASON_RWLOCK_WRLOCK, try_wr, do_wrlock,
                                        &rwlock_waiting};
static const struct ctr_waitop rw_timedrd = {CTR_REASON_RWLOCK_TIMEDRDLOCK, try_rd, do_timedrd,
                                             &rwlock_waiting};
static const struct ctr_waitop rw_timedwr = {CTR_REASON_RWLOCK_TIMEDWRLOCK, try_wr, do_timedwr,
                                             &rwlock_waiting};
static const struct ctr_waitop rw_clockrd = {CTR_REASON_RWLOCK_CLOCKRDLOCK, try_rd, do_clockrd,
                                             &rwlock_waiting};
static const struct ctr_waitop rw_clockwr = {CTR_REASON_RWLOCK_CLOCKWRLOCK, try_wr, do_clockwr,
                                             &rwlock_waiting};

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_rwlock_rdlock(l);
    int rc = ctr__real.pthread_rwlock_tryrdlock(l);
    if (CTR_LIKELY(rc != EBUSY))
        return rc;
    return ctr__wait_traced(&rw_rd, &(struct ctr_call){.obj = l}, l);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_rwlock_wrlock(l);
    int rc = ctr__real.pthread_rwlock_trywrlock(l);
    if (CTR_LIKELY(rc != EBUSY))
        return rc;
    return ctr__wait_traced(&rw_wr, &(struct ctr_call){.obj = l}, l);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l,
                                                           const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_rwlock_timedrdlock(l, at);
    return ctr__wait_traced(&rw_timedrd, &(struct ctr_call){.obj = l, .at = at}, l);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l,
                                                           const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_rwlock_timedwrlock(l, at);
    return ctr__wait_traced(&rw_timedwr, &(struct ctr_call){.obj = l, .at = at}, l);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clk,
                                                           const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_rwlock_clockrdlock(l, clk, at);
    return ctr__wait_traced(&rw_clockrd, &(struct ctr_call){.obj = l, .clk = clk, .at = at}, l);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clk,
                                                           const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_rwlock_clockwrlock(l, clk, at);
    return ctr__wait_traced(&rw_clockwr, &(struct ctr_call){.obj = l, .clk = clk, .at = at}, l);
}

CTR_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
    return ctr__real.pthread_rwlock_tryrdlock(l);
}

CTR_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
    return ctr__real.pthread_rwlock_trywrlock(l);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    /* relaxed: a hint, counted by the waits above; a miss or an extra
     * Release is harmless to the analysis (see waiters.h). */
    if (CTR_UNLIKELY(ctr__tracing()) &&
        atomic_load_explicit(&rwlock_waiting, memory_order_relaxed) > 0)
        ctr__note_release(l);
    return ctr__real.pthread_rwlock_unlock(l);
}

/* ---------------------------------------------------------------------------
 * Semaphores (functions return -1 and set errno)
 * ------------------------------------------------------------------------- */

static int try_sem(struct ctr_call *c)
{
    int saved = errno;
    if (ctr__real.sem_trywait(c->obj) == 0)
        return 0;
    if (errno != EAGAIN)
        return -1; /* EINVAL etc.: the wrapper returns it as the real call would */
    errno = saved;
    return EBUSY;
}

static int do_sem_wait(struct ctr_call *c)
{
    return ctr__real.sem_wait(c->obj);
}
static int do_sem_timedwait(struct ctr_call *c)
{
    return ctr__real.sem_timedwait(c->obj, c->at);
}
static int do_sem_clockwait(struct ctr_call *c)
{
    return ctr__real.sem_clockwait(c->obj, c->clk, c->at);
}

static const struct ctr_waitop sem_wait_op = {CTR_REASON_SEM_WAIT, try_sem, do_sem_wait, NULL};
static const struct ctr_waitop sem_timedwait_op = {CTR_REASON_SEM_TIMEDWAIT, try_sem,
                                                   do_sem_timedwait, NULL};
static const struct ctr_waitop sem_clockwait_op = {CTR_REASON_SEM_CLOCKWAIT, try_sem,
                                                   do_sem_clockwait, NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int sem_wait(sem_t *s)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.sem_wait(s);
    int saved = errno;
    if (CTR_LIKELY(ctr__real.sem_trywait(s) == 0))
        return 0;
    errno = saved;
    return ctr__wait_traced(&sem_wait_op, &(struct ctr_call){.obj = s}, s);
}

CTR_EXPORT CTR_WRAPPER_TEXT int sem_timedwait(sem_t *s, const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.sem_timedwait(s, at);
    return ctr__wait_traced(&sem_timedwait_op, &(struct ctr_call){.obj = s, .at = at}, s);
}

CTR_EXPORT CTR_WRAPPER_TEXT int sem_clockwait(sem_t *s, clockid_t clk, const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.sem_clockwait(s, clk, at);
    return ctr__wait_traced(&sem_clockwait_op, &(struct ctr_call){.obj = s, .clk = clk, .at = at},
                            s);
}

CTR_EXPORT int sem_trywait(sem_t *s)
{
    return ctr__real.sem_trywait(s);
}

CTR_EXPORT CTR_WRAPPER_TEXT int sem_post(sem_t *s)
{
    if (CTR_UNLIKELY(ctr__tracing()) && ctr__sem_has_waiters(s))
        ctr__note_release(s);
    return ctr__real.sem_post(s);
}

/* ---------------------------------------------------------------------------
 * Barriers, joins, spin locks
 * ------------------------------------------------------------------------- */

/* A barrier wait always records (there is no try). No Release is written:
 * the last thread to arrive lets the others go, and the analyzer finds it
 * from the Block times alone. */
static int do_barrier(struct ctr_call *c)
{
    return ctr__real.pthread_barrier_wait(c->obj);
}
static const struct ctr_waitop barrier_op = {CTR_REASON_BARRIER_WAIT, NULL, do_barrier, NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_barrier_wait(pthread_barrier_t *b)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_barrier_wait(b);
    return ctr__wait_traced(&barrier_op, &(struct ctr_call){.obj = b}, b);
}

/* A join waits on the pthread_t; the joined thread's ThreadEnd releases it
 * (THREAD records carry the handle). */
static int try_join(struct ctr_call *c)
{
    return ctr__real.pthread_tryjoin_np((pthread_t)(uintptr_t)c->obj, c->ret);
}
static int do_join(struct ctr_call *c)
{
    return ctr__real.pthread_join((pthread_t)(uintptr_t)c->obj, c->ret);
}
static int do_timedjoin(struct ctr_call *c)
{
    return ctr__real.pthread_timedjoin_np((pthread_t)(uintptr_t)c->obj, c->ret, c->at);
}
static int do_clockjoin(struct ctr_call *c)
{
    return ctr__real.pthread_clockjoin_np((pthread_t)(uintptr_t)c->obj, c->ret, c->clk, c->at);
}

static const struct ctr_waitop join_op = {CTR_REASON_JOIN, try_join, do_join, NULL};
static const struct ctr_waitop timedjoin_op = {CTR_REASON_TIMEDJOIN, try_join, do_timedjoin, NULL};
static const struct ctr_waitop clockjoin_op = {CTR_REASON_CLOCKJOIN, try_join, do_clockjoin, NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_join(pthread_t th, void **ret)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_join(th, ret);
    void *obj = (void *)(uintptr_t)th;
    return ctr__wait_traced(&join_op, &(struct ctr_call){.obj = obj, .ret = ret}, obj);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_timedjoin_np(pthread_t th, void **ret,
                                                     const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_timedjoin_np(th, ret, at);
    void *obj = (void *)(uintptr_t)th;
    return ctr__wait_traced(&timedjoin_op, &(struct ctr_call){.obj = obj, .ret = ret, .at = at},
                            obj);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_clockjoin_np(pthread_t th, void **ret, clockid_t clk,
                                                     const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_clockjoin_np(th, ret, clk, at);
    void *obj = (void *)(uintptr_t)th;
    return ctr__wait_traced(&clockjoin_op,
                            &(struct ctr_call){.obj = obj, .ret = ret, .clk = clk, .at = at}, obj);
}

CTR_EXPORT int pthread_tryjoin_np(pthread_t th, void **ret)
{
    return ctr__real.pthread_tryjoin_np(th, ret);
}

/* Spin locks: the wait is recorded; their unlock is too hot and too short
 * to check for waiters, so spin waits have no Release. */
static int try_spin(struct ctr_call *c)
{
    return ctr__real.pthread_spin_trylock(c->obj);
}
static int do_spin(struct ctr_call *c)
{
    return ctr__real.pthread_spin_lock(c->obj);
}
static const struct ctr_waitop spin_op = {CTR_REASON_SPIN_LOCK, try_spin, do_spin, NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_spin_lock(pthread_spinlock_t *l)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.pthread_spin_lock(l);
    return ctr__wait_traced(&spin_op, &(struct ctr_call){.obj = (void *)l}, (void *)l);
}

CTR_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l)
{
    return ctr__real.pthread_spin_trylock(l);
}

/* ---------------------------------------------------------------------------
 * Sleeps: always a wait, in no delay profile (as in Go)
 * ------------------------------------------------------------------------- */

static int do_nanosleep(struct ctr_call *c)
{
    return ctr__real.nanosleep(c->at, (struct timespec *)c->ret);
}
static int do_clock_nanosleep(struct ctr_call *c)
{
    return ctr__real.clock_nanosleep(c->clk, (int)(intptr_t)c->obj, c->at,
                                     (struct timespec *)c->ret);
}
static int do_usleep(struct ctr_call *c)
{
    return ctr__real.usleep((useconds_t)(uintptr_t)c->obj);
}
static int do_sleep(struct ctr_call *c)
{
    return (int)ctr__real.sleep((unsigned)(uintptr_t)c->obj);
}

static const struct ctr_waitop nanosleep_op = {CTR_REASON_NANOSLEEP, NULL, do_nanosleep, NULL};
static const struct ctr_waitop clock_nanosleep_op = {CTR_REASON_CLOCK_NANOSLEEP, NULL,
                                                     do_clock_nanosleep, NULL};
static const struct ctr_waitop usleep_op = {CTR_REASON_USLEEP, NULL, do_usleep, NULL};
static const struct ctr_waitop sleep_op = {CTR_REASON_SLEEP, NULL, do_sleep, NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int nanosleep(const struct timespec *req, struct timespec *rem)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.nanosleep(req, rem);
    return ctr__wait_traced(&nanosleep_op, &(struct ctr_call){.at = req, .ret = (void **)rem},
                            NULL);
}

CTR_EXPORT CTR_WRAPPER_TEXT int clock_nanosleep(clockid_t clk, int flags,
                                                const struct timespec *req, struct timespec *rem)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.clock_nanosleep(clk, flags, req, rem);
    return ctr__wait_traced(
        &clock_nanosleep_op,
        &(struct ctr_call){
            .obj = (void *)(intptr_t)flags, .clk = clk, .at = req, .ret = (void **)rem},
        NULL);
}

CTR_EXPORT CTR_WRAPPER_TEXT int usleep(useconds_t us)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.usleep(us);
    return ctr__wait_traced(&usleep_op, &(struct ctr_call){.obj = (void *)(uintptr_t)us}, NULL);
}

CTR_EXPORT CTR_WRAPPER_TEXT unsigned sleep(unsigned s)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.sleep(s);
    return (unsigned)ctr__wait_traced(&sleep_op, &(struct ctr_call){.obj = (void *)(uintptr_t)s},
                                      NULL);
}
