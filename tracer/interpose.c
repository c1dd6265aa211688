/* interpose.c - how libctrace interposes: the table of real functions and its
 * resolvers, and the wrappers of thread creation and naming. The waits are in
 * interpose_sync.c, interpose_cond.c and interpose_io.c.
 *
 * The wrappers preempt libc's definitions (link order, or LD_PRELOAD) and
 * reach the real ones through ctr__real, whose entries start out as resolvers
 * so that a call made before our constructor (by another library's) works.
 * When tracing is off a wrapper costs one load and a branch before jumping to
 * the real function. Traced paths live in CTR_WRAPPER_TEXT functions so that
 * stacks start at the caller's line.
 */
#include "interpose.h"
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * The table of real functions, with resolvers as initial values
 * ------------------------------------------------------------------------- */

static int no_such_function(void)
{
    return ENOSYS;
}

/* The real `name` (of `version`, when not NULL); a stub when absent and
 * not required. */
static void *resolve(const char *name, const char *version, int required)
{
    void *f = version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
    if (!f && required) {
        /* Nothing sensible can run without the real function. */
        /* A raw syscall: write() itself is wrapped, and resolving it is
         * what failed, maybe. */
        static const char msg[] = "libctrace: cannot resolve a wrapped libc function\n";
        syscall(SYS_write, 2, msg, sizeof(msg) - 1);
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
#define CTR_X_VRESOLVER(ret, field, sym, ver, params, args) \
    CTR_X_RESOLVER(ret, field, params, args, 1)
CTR_WRAPPED(CTR_X_RESOLVER)
CTR_WRAPPED_COND(CTR_X_VRESOLVER)
CTR_X_RESOLVER(int, cond_clockwait,
               (pthread_cond_t * c, pthread_mutex_t *m, clockid_t clk, const struct timespec *at),
               (c, m, clk, at), 0)
#undef CTR_X_VRESOLVER
#undef CTR_X_RESOLVER

struct ctr_real ctr__real = {
#define CTR_X_INIT(ret, name, params, args, req) .name = resolve_##name,
#define CTR_X_VINIT(ret, field, sym, ver, params, args) .field = resolve_##field,
    CTR_WRAPPED(CTR_X_INIT)
    CTR_WRAPPED_COND(CTR_X_VINIT)
    .cond_clockwait = resolve_cond_clockwait,
#undef CTR_X_VINIT
#undef CTR_X_INIT
};

void ctr__interpose_init(void)
{
    static _Atomic int done;
    if (atomic_load_explicit(&done, memory_order_acquire))
        return;
    struct ctr_real r;
#define CTR_X_RESOLVE(ret, name, params, args, req) r.name = resolve(#name, NULL, req);
#define CTR_X_VRESOLVE(ret, field, sym, ver, params, args) r.field = resolve(#sym, #ver, 1);
    CTR_WRAPPED(CTR_X_RESOLVE)
    CTR_WRAPPED_COND(CTR_X_VRESOLVE)
    r.cond_clockwait = resolve("pthread_cond_clockwait", NULL, 0);
#undef CTR_X_VRESOLVE
#undef CTR_X_RESOLVE
    /* Plain stores of pointer-sized values; a thread that reads an old value
     * calls the resolver, which forwards to the same function. */
    ctr__real = r;
    atomic_store_explicit(&done, 1, memory_order_release);
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
    if (ctr__tracing()) {
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
