/* interpose.c - libctrace's wrappers of pthread functions: thread creation and
 * naming, and mutex waits.
 *
 * The wrappers preempt libc's definitions (link order, or LD_PRELOAD) and
 * reach the real ones through ctr__real. When tracing is off a wrapper costs
 * one load and a branch before jumping to the real function. When it is on,
 * a mutex lock first tries the lock: the uncontended case records nothing and
 * costs one trylock. Only a lock that must wait reads the clock, captures the
 * stack and writes Block ... Unblock around the real, blocking call.
 *
 * Each wrapper keeps the real function's semantics and return values: a
 * trylock failing with something other than EBUSY (an invalid or dead-owner
 * mutex) is returned as is, and an error-checking mutex re-locked by its
 * owner still gets EDEADLK from the real lock. The traced paths live in
 * CTR_WRAPPER_TEXT functions so that stacks start at the caller's line.
 */
#include "interpose.h"
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * The table of real functions, with resolvers as initial values
 * ------------------------------------------------------------------------- */

static int no_such_function(void)
{
    return ENOSYS;
}

static void *resolve(const char *name, int required)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f && required) {
        /* Nothing sensible can run without the real function. */
        static const char msg[] = "libctrace: cannot resolve a wrapped pthread function\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        abort();
    }
    return f ? f : (void *)no_such_function;
}

#define CTR_X_RESOLVER(ret, name, params, args, req) \
    static ret resolve_##name params                 \
    {                                                \
        ctr__interpose_init();                       \
        return ctr__real.name args;                  \
    }
CTR_WRAPPED(CTR_X_RESOLVER)
#undef CTR_X_RESOLVER

struct ctr_real ctr__real = {
#define CTR_X_INIT(ret, name, params, args, req) .name = resolve_##name,
    CTR_WRAPPED(CTR_X_INIT)
#undef CTR_X_INIT
};

void ctr__interpose_init(void)
{
    static _Atomic int done;
    if (atomic_load_explicit(&done, memory_order_acquire))
        return;
    struct ctr_real r;
#define CTR_X_RESOLVE(ret, name, params, args, req) r.name = resolve(#name, req);
    CTR_WRAPPED(CTR_X_RESOLVE)
#undef CTR_X_RESOLVE
    /* Plain stores of pointer-sized values; a thread that reads an old value
     * calls the resolver, which forwards to the same function. */
    ctr__real = r;
    atomic_store_explicit(&done, 1, memory_order_release);
}

static int tracing(void)
{
    return atomic_load_explicit(&ctr__session.epoch, memory_order_relaxed) != 0;
}

/* ---------------------------------------------------------------------------
 * Waits
 * ------------------------------------------------------------------------- */

/* The traced path shared by every mutex lock variant: `lock` is the real
 * blocking call with its extra arguments bound by the caller. */
typedef int (*lock_fn)(pthread_mutex_t *m, clockid_t clk, const struct timespec *at);

static int call_lock(pthread_mutex_t *m, clockid_t clk, const struct timespec *at)
{
    (void)clk, (void)at;
    return ctr__real.pthread_mutex_lock(m);
}

static int call_timedlock(pthread_mutex_t *m, clockid_t clk, const struct timespec *at)
{
    (void)clk;
    return ctr__real.pthread_mutex_timedlock(m, at);
}

static int call_clocklock(pthread_mutex_t *m, clockid_t clk, const struct timespec *at)
{
    return ctr__real.pthread_mutex_clocklock(m, clk, at);
}

/* Whether m is an error-checking mutex that t already owns: then trylock's
 * EBUSY means the real lock will answer EDEADLK at once, which is no wait.
 * (A plain mutex relocked by its owner does block, forever: that is recorded.)
 * Owner and kind are part of glibc's public pthread_mutex_t layout; the low
 * two bits of the kind are the type. */
static int errorcheck_relock(pthread_mutex_t *m, const struct ctr_thread *t)
{
#ifdef __GLIBC__
    return m->__data.__owner == t->os_tid && (m->__data.__kind & 3) == PTHREAD_MUTEX_ERRORCHECK;
#else
    (void)m, (void)t;
    return 0;
#endif
}

static CTR_WRAPPER_TEXT int lock_traced(pthread_mutex_t *m, clockid_t clk,
                                        const struct timespec *at, lock_fn lock,
                                        enum ctr_reason reason)
{
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return lock(m, clk, at);
    int rc = ctr__real.pthread_mutex_trylock(m);
    if (rc != EBUSY || errorcheck_relock(m, t))
        return rc != EBUSY ? rc : lock(m, clk, at); /* relock by the owner: no wait */
    ctr__wait_begin(t, reason, m);
    rc = lock(m, clk, at); /* a timeout still waited: the Block stands */
    ctr__wait_end(t);
    return rc;
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_mutex_lock(pthread_mutex_t *m)
{
    if (CTR_LIKELY(!tracing()))
        return ctr__real.pthread_mutex_lock(m);
    return lock_traced(m, 0, NULL, call_lock, CTR_REASON_MUTEX_LOCK);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_mutex_timedlock(pthread_mutex_t *m,
                                                        const struct timespec *at)
{
    if (CTR_LIKELY(!tracing()))
        return ctr__real.pthread_mutex_timedlock(m, at);
    return lock_traced(m, 0, at, call_timedlock, CTR_REASON_MUTEX_TIMEDLOCK);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk,
                                                        const struct timespec *at)
{
    if (CTR_LIKELY(!tracing()))
        return ctr__real.pthread_mutex_clocklock(m, clk, at);
    return lock_traced(m, clk, at, call_clocklock, CTR_REASON_MUTEX_CLOCKLOCK);
}

CTR_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    return ctr__real.pthread_mutex_trylock(m); /* never waits: nothing to record */
}

CTR_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    return ctr__real.pthread_mutex_unlock(m);
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
    if (tracing()) {
        struct ctr_thread *t = ctr__thread_register(s.id, s.parent_id);
        if (t) {
            uint64_t args[2] = {s.parent_id, (uintptr_t)s.fn};
            ctr__emit(t, CTR_EV_THREAD_START, args);
        }
    }
    return s.fn(s.arg);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                                               void *(*fn)(void *), void *arg)
{
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return ctr__real.pthread_create(th, attr, fn, arg);
    struct start_args *s = malloc(sizeof(*s));
    if (!s)
        return ctr__real.pthread_create(th, attr, fn, arg); /* child registers lazily */
    *s = (struct start_args){fn, arg, ctr__thread_new_id(), t->id};
    /* Before the real call, so the child's ThreadStart is later in time. */
    uint64_t args[2] = {s->id, ctr__stack_here(t)};
    ctr__emit(t, CTR_EV_THREAD_CREATE, args);
    int rc = ctr__real.pthread_create(th, attr, thread_trampoline, s);
    if (rc != 0)
        free(s); /* the ThreadCreate stays, for a thread that never starts */
    return rc;
}

CTR_EXPORT int pthread_join(pthread_t th, void **ret)
{
    return ctr__real.pthread_join(th, ret);
}

CTR_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
    int rc = ctr__real.pthread_setname_np(th, name);
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
