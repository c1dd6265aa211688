/* SPDX-License-Identifier: MIT */
/* real.c - the table of real functions (ctr__real) and its resolvers, and
 * libc's own dlsym for the tracer's lookups.
 *
 * The wrappers (wrap/) preempt libc's definitions (link order, or
 * LD_PRELOAD) and reach the real ones through ctr__real, whose entries start
 * out as resolvers so that a call made before our constructor (by another
 * library's) works. The tracer's own code calls libc through it too, so it
 * never traces itself.
 */

#include "core/real.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------
 * libc's dlsym
 * ------------------------------------------------------------------------- */

/* libc's dlsym (dlsym moved into libc proper in glibc 2.34, and kept its
 * old libdl version as well). Any thread that finds it unset resolves it
 * and stores the same value (relaxed: the value is all there is to it); the
 * stub (wrap/interpose_dl.c) reads it after ctr__dlsym_route made sure it
 * is set. */
_Atomic(ctr_dlsym_fn) ctr__dlsym_next;

/* libc's dlsym, resolved on first use. */
CTR_UNINSTRUMENTED ctr_dlsym_fn ctr__dlsym_libc(void)
{
    /* relaxed (load and store): every thread resolves the same function, and
     * a code address publishes no data; a racing thread resolves it again. */
    ctr_dlsym_fn f = atomic_load_explicit(&ctr__dlsym_next, memory_order_relaxed);
    if (!f) {
        *(void **)&f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!f)
            *(void **)&f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        atomic_store_explicit(&ctr__dlsym_next, f, memory_order_relaxed);
    }
    return f;
}

void *ctr__dlsym_real(void *handle, const char *name)
{
    ctr_dlsym_fn f = ctr__dlsym_libc();
    return f ? f(handle, name) : NULL;
}

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
    void *f = version ? dlvsym(RTLD_NEXT, name, version) : ctr__dlsym_real(RTLD_NEXT, name);
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
        ctr__real_init();                            \
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

CTR_UNINSTRUMENTED void ctr__syscall_args(va_list ap, long a[6])
{
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
}

static long resolve_syscall(long nr, ...)
{
    va_list ap;
    long a[6];
    va_start(ap, nr);
    ctr__syscall_args(ap, a);
    va_end(ap);
    ctr__real_init();
    return ctr__real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
#define CTR_X_JRESOLVER(name, params, args) \
    static void resolve_##name params       \
    {                                       \
        ctr__real_init();                   \
        ctr__real.name args;                \
    }
CTR_WRAPPED_JUMP(CTR_X_JRESOLVER)
#undef CTR_X_JRESOLVER

/* clang-format off */
struct ctr_real ctr__real = {
#define CTR_X_INIT(ret, name, params, args, req) .name = resolve_##name,
#define CTR_X_VINIT(ret, field, sym, ver, params, args) .field = resolve_##field,
    CTR_WRAPPED(CTR_X_INIT)
    CTR_WRAPPED_COND(CTR_X_VINIT)
    .cond_clockwait = resolve_cond_clockwait,
    .syscall = resolve_syscall,
#define CTR_X_JINIT(name, params, args) .name = resolve_##name,
    CTR_WRAPPED_JUMP(CTR_X_JINIT)
#undef CTR_X_JINIT
#undef CTR_X_VINIT
#undef CTR_X_INIT
};
/* clang-format on */

/* A -static executable cannot be traced, and must not be linked with
 * libctrace: its libc has no dynamic linker to find the real functions
 * with (dlsym above), and the wrappers take the place of libc's own
 * definitions, which are then out of reach: the program could not even
 * lock a mutex. So such a link fails, in this function, whose name says
 * why ("in function `libctrace_cannot_be_linked_into_a_static_executable':
 * undefined reference to `_DYNAMIC'": the linker defines _DYNAMIC in every
 * dynamically linked executable and shared object, and in no static one).
 * docs/building.md, "Static programs". */
extern char _DYNAMIC[] __attribute__((visibility("hidden")));

static __attribute__((noinline)) const void *
libctrace_cannot_be_linked_into_a_static_executable(void)
{
    const void *p = _DYNAMIC;
    /* Opaque: no compiler may fold the reference into its caller, or drop
     * it as a constant that is never null. */
    __asm__ volatile("" : "+r"(p));
    return p;
}

/* Where that function's result goes, so that the call stays. */
static const void *volatile dynamic_section;

void ctr__real_init(void)
{
    static _Atomic int done;
    /* acquire: pairs with the release store of done below (made by whichever
     * thread finished first), so ctr__real is whole. */
    if (atomic_load_explicit(&done, memory_order_acquire))
        return;
    /* Where the reference that makes a static link fail must be: code that
     * is always linked. */
    dynamic_section = libctrace_cannot_be_linked_into_a_static_executable();
    struct ctr_real r;
#define CTR_X_RESOLVE(ret, name, params, args, req) r.name = resolve(#name, NULL, req);
    /* The default ABI's real function is the next definition, whatever it is
     * (a sanitizer's interceptor, which must see every wait, or libc's
     * default version); the old ABI's must be libc's of that version. */
#define CTR_X_VRESOLVE(ret, field, sym, ver, params, args) \
    r.field = resolve(#sym, strcmp(#ver, CTR_COND_DEFAULT_VERSION) ? #ver : NULL, 1);
    CTR_WRAPPED(CTR_X_RESOLVE)
    CTR_WRAPPED_COND(CTR_X_VRESOLVE)
    r.cond_clockwait = resolve("pthread_cond_clockwait", NULL, 0);
    *(void **)&r.syscall = resolve("syscall", NULL, 1);
#define CTR_X_JRESOLVE(name, params, args) *(void **)&r.name = resolve(#name, NULL, 1);
    CTR_WRAPPED_JUMP(CTR_X_JRESOLVE)
#undef CTR_X_JRESOLVE
#undef CTR_X_VRESOLVE
#undef CTR_X_RESOLVE
    /* Plain stores of pointer-sized values; a thread that reads an old value
     * calls the resolver, which forwards to the same function. */
    ctr__real = r;
    /* release: ctr__real before done (pairs with the acquire load above). */
    atomic_store_explicit(&done, 1, memory_order_release);
}

/* Linked from the static library, an archive member is pulled in only for a
 * symbol still undefined when the linker reaches it; a sanitizer's runtime,
 * which the compiler puts first on the link line, already defines
 * pthread_mutex_lock, read and the others, so the wrapper files would be
 * left out and nothing traced. This file is always pulled (ctr__real), and
 * these references pull in every wrapper file with it. */
extern const int ctr__wrappers_threads, ctr__wrappers_dl, ctr__wrappers_sync, ctr__wrappers_io,
    ctr__wrappers_cond, ctr__wrappers_proc, ctr__wrappers_c11, ctr__wrappers_futex,
    ctr__wrappers_file;
__attribute__((used)) static const int *const wrapper_files[] = {
    &ctr__wrappers_threads, &ctr__wrappers_dl,    &ctr__wrappers_sync,
    &ctr__wrappers_io,      &ctr__wrappers_cond,  &ctr__wrappers_proc,
    &ctr__wrappers_c11,     &ctr__wrappers_futex, &ctr__wrappers_file};
