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

/* glibc's map from a pthread function's error to a C11 result (thrd_err_map),
 * for the errors: out of line, so a wrapper's success path is one test. */
static __attribute__((cold, noinline)) int c11_error(int err)
{
    switch (err) {
    case ENOMEM:
        return thrd_nomem;
    case ETIMEDOUT:
        return thrd_timedout;
    case EBUSY:
        return thrd_busy;
    default:
        return thrd_error;
    }
}

/* The C11 result of a pthread function's result: 0 is thrd_success (0). */
static inline int c11_result(int err)
{
    return CTR_LIKELY(err == 0) ? thrd_success : c11_error(err);
}

/* ---------------------------------------------------------------------------
 * Joins and sleeps (thrd_create is beside pthread_create, in interpose.c)
 * ------------------------------------------------------------------------- */

/* A join waits on the thrd_t, released by the joined thread's end, as a
 * pthread_join (interpose_sync.c); the result is the int the thread
 * returned, which glibc passes as the thread's pointer. */
static int try_pjoin(struct ctr_call *c)
{
    return ctr__real.pthread_tryjoin_np((pthread_t)(uintptr_t)c->obj, c->ret);
}
static int do_pjoin(struct ctr_call *c)
{
    return ctr__real.pthread_join((pthread_t)(uintptr_t)c->obj, c->ret);
}
static const struct ctr_waitop thrd_join_op = {CTR_REASON_THRD_JOIN, try_pjoin, do_pjoin, NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int thrd_join(thrd_t th, int *res)
{
    void *obj = (void *)(uintptr_t)th, *ret = NULL;
    int rc =
        CTR_LIKELY(!ctr__tracing())
            ? ctr__real.pthread_join((pthread_t)th, &ret)
            : ctr__wait_traced(&thrd_join_op, &(struct ctr_call){.obj = obj, .ret = &ret}, obj);
    if (rc == 0 && res)
        *res = (int)(intptr_t)ret;
    return rc == 0 ? thrd_success : thrd_error;
}

CTR_EXPORT int thrd_detach(thrd_t th)
{
    return ctr__real.pthread_detach((pthread_t)th) == 0 ? thrd_success : thrd_error;
}

/* thrd_sleep is clock_nanosleep on CLOCK_REALTIME; 0, -1 (a signal), or
 * another negative for an error. */
static int do_thrd_sleep(struct ctr_call *c)
{
    return ctr__real.clock_nanosleep(CLOCK_REALTIME, 0, c->at, (struct timespec *)c->ret);
}
static const struct ctr_waitop thrd_sleep_op = {CTR_REASON_THRD_SLEEP, NULL, do_thrd_sleep, NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int thrd_sleep(const struct timespec *d, struct timespec *rem)
{
    struct ctr_call c = {.at = d, .ret = (void **)rem};
    int rc = CTR_LIKELY(!ctr__tracing()) ? do_thrd_sleep(&c)
                                         : ctr__wait_traced(&thrd_sleep_op, &c, NULL);
    return rc == 0 ? 0 : rc == EINTR ? -1 : -2;
}

/* ---------------------------------------------------------------------------
 * Mutexes and condition variables: glibc's pthread objects
 * ------------------------------------------------------------------------- */

#define PMUTEX(c) ((pthread_mutex_t *)(void *)(c)->obj)

static int try_mtx(struct ctr_call *c)
{
    return ctr__real.pthread_mutex_trylock(PMUTEX(c)); /* EBUSY: would wait */
}
static int do_mtx_lock(struct ctr_call *c)
{
    return ctr__real.pthread_mutex_lock(PMUTEX(c));
}
static int do_mtx_timedlock(struct ctr_call *c)
{
    return ctr__real.pthread_mutex_timedlock(PMUTEX(c), c->at);
}
static const struct ctr_waitop mtx_lock_op = {CTR_REASON_MTX_LOCK, try_mtx, do_mtx_lock, NULL};
static const struct ctr_waitop mtx_timedlock_op = {CTR_REASON_MTX_TIMEDLOCK, try_mtx,
                                                   do_mtx_timedlock, NULL};

/* glibc's flags of a mutex kind that say whether to elide its lock
 * (pthreadP.h): mtx_init's plain mutex is PTHREAD_MUTEX_NORMAL | NO_ELISION. */
#define MTX_KIND_ELISION 256
#define MTX_KIND_NO_ELISION 512

/* Whether glibc's lock and unlock of m can only return 0, so their result
 * is already the C11 one (thrd_success) and the wrapper may jump to them, as
 * pthread_mutex_lock's does, instead of calling them and mapping the result:
 * a plain mutex (mtx_plain or mtx_timed, a zeroed mtx_t: type 0, no flag but
 * elision's), whose lock and unlock check nothing, elided or not. Any other
 * kind (recursive: EAGAIN, EPERM; robust, priority, process-shared) takes
 * the mapping. relaxed: as glibc's own read of the kind, which the real call
 * then makes; the kind is set by mtx_init (and its elision flag by a lock). */
static inline int mtx_cannot_fail(const pthread_mutex_t *m)
{
#ifdef __GLIBC__
    int kind = __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
    return (kind & ~(MTX_KIND_ELISION | MTX_KIND_NO_ELISION)) == 0;
#else
    (void)m;
    return 0;
#endif
}

/* The real lock or unlock of a mutex that may fail, its result mapped: out
 * of line, so that the wrappers' path for a plain mutex needs no frame. */
static CTR_WRAPPER_TEXT int mtx_lock_mapped(pthread_mutex_t *pm)
{
    return c11_result(ctr__real.pthread_mutex_lock(pm));
}
static CTR_WRAPPER_TEXT int mtx_unlock_mapped(pthread_mutex_t *pm)
{
    return c11_result(ctr__real.pthread_mutex_unlock(pm));
}

/* As pthread_mutex_lock's wrapper (interpose_sync.c): an uncontended lock
 * of a plain mutex costs the wrapper a test and a jump to the real lock,
 * and when tracing one trylock and a test of its result. */
CTR_EXPORT CTR_WRAPPER_TEXT int mtx_lock(mtx_t *m)
{
    pthread_mutex_t *pm = (pthread_mutex_t *)(void *)m;
    if (CTR_LIKELY(!ctr__tracing())) {
        if (CTR_LIKELY(mtx_cannot_fail(pm)))
            return ctr__real.pthread_mutex_lock(pm); /* 0: thrd_success */
        return mtx_lock_mapped(pm);
    }
    int rc = ctr__real.pthread_mutex_trylock(pm);
    if (CTR_LIKELY(rc == 0))
        return thrd_success;
    if (rc == EBUSY)
        rc = ctr__wait_traced(&mtx_lock_op, &(struct ctr_call){.obj = m}, m);
    return c11_result(rc);
}

CTR_EXPORT CTR_WRAPPER_TEXT int mtx_timedlock(mtx_t *restrict m, const struct timespec *restrict at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return c11_result(ctr__real.pthread_mutex_timedlock((pthread_mutex_t *)(void *)m, at));
    return c11_result(
        ctr__wait_traced(&mtx_timedlock_op, &(struct ctr_call){.obj = m, .at = at}, m));
}

CTR_EXPORT int mtx_trylock(mtx_t *m)
{
    return c11_result(ctr__real.pthread_mutex_trylock((pthread_mutex_t *)(void *)m));
}

CTR_EXPORT CTR_WRAPPER_TEXT int mtx_unlock(mtx_t *m)
{
    pthread_mutex_t *pm = (pthread_mutex_t *)(void *)m;
    if (CTR_UNLIKELY(ctr__tracing()) && ctr__mutex_has_waiters(pm))
        ctr__note_release(m);
    if (CTR_LIKELY(mtx_cannot_fail(pm)))
        return ctr__real.pthread_mutex_unlock(pm); /* 0: thrd_success */
    return mtx_unlock_mapped(pm);
}

#define PCOND(c) ((pthread_cond_t *)(void *)(c)->obj)
#define PCOND_MUTEX(c) ((pthread_mutex_t *)(void *)(c)->ret)

static int do_cnd_wait(struct ctr_call *c)
{
    return ctr__real.cond_wait(PCOND(c), PCOND_MUTEX(c));
}
static int do_cnd_timedwait(struct ctr_call *c)
{
    return ctr__real.cond_timedwait(PCOND(c), PCOND_MUTEX(c), c->at);
}
static const struct ctr_waitop cnd_wait_op = {CTR_REASON_CND_WAIT, NULL, do_cnd_wait, NULL};
static const struct ctr_waitop cnd_timedwait_op = {CTR_REASON_CND_TIMEDWAIT, NULL, do_cnd_timedwait,
                                                   NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int cnd_wait(cnd_t *c, mtx_t *m)
{
    struct ctr_call call = {.obj = c, .ret = (void **)(void *)m};
    if (CTR_LIKELY(!ctr__tracing()))
        return c11_result(do_cnd_wait(&call));
    return c11_result(ctr__wait_traced(&cnd_wait_op, &call, c));
}

CTR_EXPORT CTR_WRAPPER_TEXT int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m,
                                              const struct timespec *restrict at)
{
    struct ctr_call call = {.obj = c, .ret = (void **)(void *)m, .at = at};
    if (CTR_LIKELY(!ctr__tracing()))
        return c11_result(do_cnd_timedwait(&call));
    return c11_result(ctr__wait_traced(&cnd_timedwait_op, &call, c));
}

CTR_EXPORT CTR_WRAPPER_TEXT int cnd_signal(cnd_t *c)
{
    pthread_cond_t *pc = (pthread_cond_t *)(void *)c;
    if (CTR_UNLIKELY(ctr__tracing()) && ctr__cond_has_waiters(pc))
        ctr__note_release(c);
    return c11_result(ctr__real.cond_signal(pc));
}

CTR_EXPORT CTR_WRAPPER_TEXT int cnd_broadcast(cnd_t *c)
{
    pthread_cond_t *pc = (pthread_cond_t *)(void *)c;
    if (CTR_UNLIKELY(ctr__tracing()) && ctr__cond_has_waiters(pc))
        ctr__note_release(c);
    return c11_result(ctr__real.cond_broadcast(pc));
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
    int rc = ctr__real.pthread_once(flag, once_trampoline);
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
        ctr__real.pthread_once((pthread_once_t *)(void *)flag, init); /* glibc's call_once */
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
