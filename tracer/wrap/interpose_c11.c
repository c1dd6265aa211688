/* SPDX-License-Identifier: MIT */
/* interpose_c11.c - wrappers of C11 threads (<threads.h>) and of the
 * one-time initialisations (call_once, pthread_once).
 *
 * glibc implements thrd_create, mtx_lock, cnd_wait, thrd_join, thrd_sleep
 * and call_once on its internal pthread functions, which no wrapper of
 * interpose.c or interpose_sync.c sees (thrd_create's is in interpose.c): a program written against
 * the C standard's own API would leave an empty trace. So each is wrapped by its own name and
 * recorded as its POSIX sibling is (the same "try, then wait" path, wait.c), under reasons that
 * name what the program called (mtx_lock, not pthread_mutex_lock). glibc's C11 objects are its
 * pthread objects (mtx_t is a pthread_mutex_t, cnd_t a pthread_cond_t, thrd_t a pthread_t: checked
 * below), so waiters.h reads them as well.
 *
 * A one-time initialisation is a wait for the thread that runs the init
 * function: the wrapper hands the real call a trampoline that says (in a
 * thread-local) that this thread is the one running it, and writes a
 * Release of the flag when the init function returns, before glibc wakes
 * the threads that waited. A call that finds the flag done is no wait; one
 * that finds it not done and did not run the init itself waited for the
 * thread that did, from the call to its return (ctr__wait_span).
 */
#include "core/clock.h"
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
#include <threads.h>

/* Pulls this file in with core/real.c from the static library. */
const int ctr__wrappers_c11;

#ifdef __GLIBC__
_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t), "mtx_t is glibc's pthread_mutex_t");
_Static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t), "cnd_t is glibc's pthread_cond_t");
_Static_assert(sizeof(thrd_t) == sizeof(pthread_t), "thrd_t is glibc's pthread_t");
_Static_assert(sizeof(once_flag) == sizeof(pthread_once_t), "once_flag is glibc's pthread_once_t");
#endif

/* ---------------------------------------------------------------------------
 * Joins and sleeps (thrd_create is beside pthread_create, in interpose.c)
 * ------------------------------------------------------------------------- */

/* A join waits on the thrd_t, released by the joined thread's end, as a
 * pthread_join (interpose_sync.c). The try maps pthread_tryjoin_np's answer
 * to thrd_join's: the result is the int the thread returned. */
static int try_thrd_join(struct ctr_call *c)
{
    void *res;
    int rc = ctr__real.pthread_tryjoin_np((pthread_t)(uintptr_t)c->obj, &res);
    if (rc == EBUSY)
        return EBUSY;
    if (rc != 0)
        return thrd_error;
    if (c->ret)
        *(int *)c->ret = (int)(intptr_t)res;
    return thrd_success;
}
static int do_thrd_join(struct ctr_call *c)
{
    return ctr__real.thrd_join((thrd_t)(uintptr_t)c->obj, (int *)c->ret);
}
static const struct ctr_waitop thrd_join_op = {CTR_REASON_THRD_JOIN, try_thrd_join, do_thrd_join,
                                               NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int thrd_join(thrd_t th, int *res)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.thrd_join(th, res);
    void *obj = (void *)(uintptr_t)th;
    return ctr__wait_traced(&thrd_join_op,
                            &(struct ctr_call){.obj = obj, .ret = (void **)(void *)res}, obj);
}

static int do_thrd_sleep(struct ctr_call *c)
{
    return ctr__real.thrd_sleep(c->at, (struct timespec *)c->ret);
}
static const struct ctr_waitop thrd_sleep_op = {CTR_REASON_THRD_SLEEP, NULL, do_thrd_sleep, NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int thrd_sleep(const struct timespec *d, struct timespec *rem)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.thrd_sleep(d, rem);
    return ctr__wait_traced(&thrd_sleep_op, &(struct ctr_call){.at = d, .ret = (void **)rem}, NULL);
}

/* ---------------------------------------------------------------------------
 * Mutexes and condition variables
 * ------------------------------------------------------------------------- */

/* thrd_busy is "would wait"; any other answer is the call's. */
static int try_mtx(struct ctr_call *c)
{
    int rc = ctr__real.mtx_trylock(c->obj);
    return rc == thrd_busy ? EBUSY : rc;
}
static int do_mtx_lock(struct ctr_call *c)
{
    return ctr__real.mtx_lock(c->obj);
}
static int do_mtx_timedlock(struct ctr_call *c)
{
    return ctr__real.mtx_timedlock(c->obj, c->at);
}
static const struct ctr_waitop mtx_lock_op = {CTR_REASON_MTX_LOCK, try_mtx, do_mtx_lock, NULL};
static const struct ctr_waitop mtx_timedlock_op = {CTR_REASON_MTX_TIMEDLOCK, try_mtx,
                                                   do_mtx_timedlock, NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int mtx_lock(mtx_t *m)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.mtx_lock(m);
    int rc = ctr__real.mtx_trylock(m);
    if (CTR_LIKELY(rc != thrd_busy))
        return rc;
    return ctr__wait_traced(&mtx_lock_op, &(struct ctr_call){.obj = m}, m);
}

CTR_EXPORT CTR_WRAPPER_TEXT int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.mtx_timedlock(m, at);
    return ctr__wait_traced(&mtx_timedlock_op, &(struct ctr_call){.obj = m, .at = at}, m);
}

CTR_EXPORT int mtx_trylock(mtx_t *m)
{
    return ctr__real.mtx_trylock(m); /* never waits: nothing to record */
}

CTR_EXPORT CTR_WRAPPER_TEXT int mtx_unlock(mtx_t *m)
{
    if (CTR_UNLIKELY(ctr__tracing()) && ctr__mutex_has_waiters((pthread_mutex_t *)(void *)m))
        ctr__note_release(m);
    return ctr__real.mtx_unlock(m);
}

static int do_cnd_wait(struct ctr_call *c)
{
    return ctr__real.cnd_wait(c->obj, (mtx_t *)c->ret);
}
static int do_cnd_timedwait(struct ctr_call *c)
{
    return ctr__real.cnd_timedwait(c->obj, (mtx_t *)c->ret, c->at);
}
static const struct ctr_waitop cnd_wait_op = {CTR_REASON_CND_WAIT, NULL, do_cnd_wait, NULL};
static const struct ctr_waitop cnd_timedwait_op = {CTR_REASON_CND_TIMEDWAIT, NULL, do_cnd_timedwait,
                                                   NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int cnd_wait(cnd_t *c, mtx_t *m)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.cnd_wait(c, m);
    return ctr__wait_traced(&cnd_wait_op, &(struct ctr_call){.obj = c, .ret = (void **)m}, c);
}

CTR_EXPORT CTR_WRAPPER_TEXT int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m,
                                              const struct timespec *restrict at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.cnd_timedwait(c, m, at);
    return ctr__wait_traced(&cnd_timedwait_op,
                            &(struct ctr_call){.obj = c, .ret = (void **)m, .at = at}, c);
}

CTR_EXPORT CTR_WRAPPER_TEXT int cnd_signal(cnd_t *c)
{
    if (CTR_UNLIKELY(ctr__tracing()) && ctr__cond_has_waiters((pthread_cond_t *)(void *)c))
        ctr__note_release(c);
    return ctr__real.cnd_signal(c);
}

CTR_EXPORT CTR_WRAPPER_TEXT int cnd_broadcast(cnd_t *c)
{
    if (CTR_UNLIKELY(ctr__tracing()) && ctr__cond_has_waiters((pthread_cond_t *)(void *)c))
        ctr__note_release(c);
    return ctr__real.cnd_broadcast(c);
}

/* ---------------------------------------------------------------------------
 * One-time initialisations
 * ------------------------------------------------------------------------- */

/* The init call this thread is making through the trampoline (NULL when
 * none): its function and flag, and whether it ran here. A call_once inside
 * an init function of another flag saves and restores the outer one. */
struct once_call {
    void (*init)(void);
    const void *flag;
    int ran;
};
static __thread struct once_call *once_here __attribute__((tls_model("initial-exec")));

static void once_trampoline(void)
{
    struct once_call *oc = once_here;
    oc->ran = 1;
    oc->init();
    /* Before the real call marks the flag done and wakes the waiters. */
    ctr__note_release(oc->flag);
}

/* Whether glibc's once word says the init has run (bit 1, __PTHREAD_ONCE_DONE,
 * the test pthread_once itself starts with; acquire as glibc's, so the
 * caller that returns at once sees what the init function wrote). */
static int once_done(const void *flag)
{
#ifdef __GLIBC__
    return (__atomic_load_n((const int *)flag, __ATOMIC_ACQUIRE) & 2) != 0;
#else
    (void)flag;
    return 0;
#endif
}

/* Runs the real call through the trampoline; a call that did not run the
 * init function itself waited from `start` for the thread that did. */
static CTR_WRAPPER_TEXT int once_traced(struct ctr_thread *t, void *flag, void (*init)(void),
                                        enum ctr_reason reason)
{
    struct once_call oc = {init, flag, 0}, *outer = once_here;
    once_here = &oc;
    uint64_t start = ctr__ticks();
    int rc = 0;
    if (reason == CTR_REASON_CALL_ONCE)
        ctr__real.call_once(flag, once_trampoline);
    else
        rc = ctr__real.pthread_once(flag, once_trampoline);
    once_here = outer;
    if (!oc.ran && ctr__io_long_enough(start)) {
        int saved = errno;
        ctr__wait_span(t, reason, flag, start);
        errno = saved;
    }
    return rc;
}

/* The thread to trace a once call on: NULL when tracing is off, the flag is
 * done, or the call comes inside a marked call (libgcc's unwinder runs its
 * pthread_once while a cancellation unwinds through a read: that call's
 * span is written after, and its events must not come between). */
static struct ctr_thread *once_thread(const void *flag)
{
    struct ctr_thread *t;
    if (CTR_LIKELY(!ctr__tracing()) || once_done(flag) || !(t = ctr__self_traced()) ||
        t->call_kind != CTR_CALL_NONE)
        return NULL;
    return t;
}

CTR_EXPORT CTR_WRAPPER_TEXT void call_once(once_flag *flag, void (*init)(void))
{
    struct ctr_thread *t = once_thread(flag);
    if (!t)
        ctr__real.call_once(flag, init);
    else
        once_traced(t, flag, init, CTR_REASON_CALL_ONCE);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_once(pthread_once_t *once, void (*init)(void))
{
    struct ctr_thread *t = once_thread(once);
    if (!t)
        return ctr__real.pthread_once(once, init);
    return once_traced(t, once, init, CTR_REASON_PTHREAD_ONCE);
}
