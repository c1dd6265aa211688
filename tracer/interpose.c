/* interpose.c - libctrace's wrappers of pthread functions: thread creation and
 * naming, and mutex waits.
 *
 * The wrappers preempt libc's definitions (link order, or LD_PRELOAD) and
 * reach the real ones through dlsym(RTLD_NEXT). When tracing is off a wrapper
 * costs a load and a branch before the real call. When it is on, a mutex lock
 * first tries the lock: the uncontended case records nothing and costs one
 * trylock. Only a lock that must wait reads the clock, captures the stack and
 * writes Block ... Unblock around the real, blocking call.
 *
 * Wrapped with the same semantics as the real functions, including every
 * return value: a trylock that fails with something other than EBUSY (an
 * invalid or dead-owner mutex) is returned as is, and an error-checking
 * mutex re-locked by its owner still gets EDEADLK from the real lock.
 */
#include "interpose.h"
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ctr_real ctr__real;

static void *resolve(const char *name, int required)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f && required) {
        /* Nothing sensible can run without the real function. */
        static const char msg[] = "libctrace: cannot resolve a pthread function\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        abort();
    }
    return f;
}

void ctr__interpose_init(void)
{
    if (ctr__real.pthread_mutex_unlock)
        return;
    ctr__real.pthread_create = resolve("pthread_create", 1);
    ctr__real.pthread_join = resolve("pthread_join", 1);
    ctr__real.pthread_setname_np = resolve("pthread_setname_np", 1);
    ctr__real.pthread_mutex_lock = resolve("pthread_mutex_lock", 1);
    ctr__real.pthread_mutex_trylock = resolve("pthread_mutex_trylock", 1);
    ctr__real.pthread_mutex_timedlock = resolve("pthread_mutex_timedlock", 1);
    ctr__real.pthread_mutex_clocklock = resolve("pthread_mutex_clocklock", 0); /* glibc >= 2.30 */
    ctr__real.pthread_mutex_unlock = resolve("pthread_mutex_unlock", 1);
}

#define REAL(fn) (CTR_UNLIKELY(!ctr__real.fn) ? ctr__interpose_init() : (void)0, ctr__real.fn)

/* ---------------------------------------------------------------------------
 * Waits
 * ------------------------------------------------------------------------- */

/* Writes Block(reason, obj, stack of the wrapper's caller). noinline keeps
 * the stack walk's frame count fixed: here, then the wrapper, then user code. */
static __attribute__((noinline)) void block_begin(struct ctr_thread *t, enum ctr_reason reason,
                                                  const void *obj)
{
    uint64_t args[3] = {reason, (uintptr_t)obj, ctr__stack_here(t, 1)};
    ctr__emit(t, CTR_EV_BLOCK, args);
}

static void block_end(struct ctr_thread *t)
{
    ctr__emit(t, CTR_EV_UNBLOCK, NULL);
}

CTR_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    int (*lock)(pthread_mutex_t *) = REAL(pthread_mutex_lock);
    struct ctr_thread *t = ctr__self_traced();
    if (CTR_LIKELY(!t))
        return lock(m);
    int rc = ctr__real.pthread_mutex_trylock(m);
    if (rc != EBUSY)
        return rc;
    block_begin(t, CTR_REASON_MUTEX_LOCK, m);
    rc = lock(m);
    block_end(t);
    return rc;
}

CTR_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    return REAL(pthread_mutex_trylock)(m); /* never waits: nothing to record */
}

CTR_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
    int (*lock)(pthread_mutex_t *, const struct timespec *) = REAL(pthread_mutex_timedlock);
    struct ctr_thread *t = ctr__self_traced();
    if (CTR_LIKELY(!t))
        return lock(m, abstime);
    int rc = ctr__real.pthread_mutex_trylock(m);
    if (rc != EBUSY)
        return rc;
    block_begin(t, CTR_REASON_MUTEX_TIMEDLOCK, m);
    rc = lock(m, abstime); /* a timeout still waited: the Block stands */
    block_end(t);
    return rc;
}

CTR_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk, const struct timespec *abstime)
{
    int (*lock)(pthread_mutex_t *, clockid_t, const struct timespec *) =
        REAL(pthread_mutex_clocklock);
    if (!lock)
        return ENOSYS;
    struct ctr_thread *t = ctr__self_traced();
    if (CTR_LIKELY(!t))
        return lock(m, clk, abstime);
    int rc = ctr__real.pthread_mutex_trylock(m);
    if (rc != EBUSY)
        return rc;
    block_begin(t, CTR_REASON_MUTEX_CLOCKLOCK, m);
    rc = lock(m, clk, abstime);
    block_end(t);
    return rc;
}

CTR_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    return REAL(pthread_mutex_unlock)(m);
}

/* ---------------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------------- */

struct start_args {
    void *(*fn)(void *);
    void *arg;
    uint64_t id, parent_id;
};

static void *thread_trampoline(void *p)
{
    struct start_args s = *(struct start_args *)p;
    free(p);
    /* If tracing stopped meanwhile, register lazily later (or never). */
    if (atomic_load_explicit(&ctr__session.epoch, memory_order_relaxed) != 0) {
        struct ctr_thread *t = ctr__thread_register(s.id, s.parent_id);
        if (t) {
            uint64_t args[2] = {s.parent_id, (uintptr_t)s.fn};
            ctr__emit(t, CTR_EV_THREAD_START, args);
        }
    }
    return s.fn(s.arg);
}

CTR_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        REAL(pthread_create);
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return create(th, attr, fn, arg);
    struct start_args *s = malloc(sizeof(*s));
    if (!s)
        return create(th, attr, fn, arg); /* the child registers lazily */
    *s = (struct start_args){fn, arg, ctr__thread_new_id(), t->id};
    /* Before the real call, so the child's ThreadStart is later in time. */
    uint64_t args[2] = {s->id, ctr__stack_here(t, 0)};
    ctr__emit(t, CTR_EV_THREAD_CREATE, args);
    int rc = create(th, attr, thread_trampoline, s);
    if (rc != 0)
        free(s); /* the ThreadCreate stays, for a thread that never starts */
    return rc;
}

CTR_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
    int rc = REAL(pthread_setname_np)(th, name);
    struct ctr_thread *t = ctr__self_traced();
    if (rc != 0 || !t)
        return rc;
    struct ctr_thread *target = pthread_equal(th, pthread_self()) ? t : ctr__thread_find(th);
    if (target) {
        uint64_t args[2] = {target->id, ctr__intern(&ctr__strings, name, (uint32_t)strlen(name))};
        ctr__emit(t, CTR_EV_THREAD_NAME, args);
    }
    return rc;
}
