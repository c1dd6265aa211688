/* SPDX-License-Identifier: MIT */
/* real.h - the real libc/libpthread functions behind libctrace's wrappers:
 * the lists of wrapped functions (here, wrapped_io.h, wrapped_proc.h) and
 * the table ctr__real that the wrappers (wrap/) and the tracer's own code
 * call them through.
 *
 * Tracer code that needs a pthread function calls it through ctr__real, so it
 * never goes through (and never traces) its own wrappers. Every pointer in
 * ctr__real is valid from the first instruction of the process: it starts out
 * pointing at a resolver that fills the table (dlsym) and forwards the call,
 * so the wrappers' fast path is a plain indirect jump with no "resolved yet?"
 * check, even for calls made by other libraries' constructors before ours.
 */
#ifndef CTR_REAL_H
#define CTR_REAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <semaphore.h>
#include <setjmp.h>
#include <threads.h>

#include "core/wrapped_file.h"
#include "core/wrapped_io.h"
#include "core/wrapped_proc.h"

/* The wrapped functions: ret, name, parameters, arguments, required (0: may
 * be absent in old libcs; the real function is then a stub returning ENOSYS).
 * The sync and thread functions are listed here, the I/O ones in
 * wrapped_io.h and wrapped_file.h, the waits for processes and signals in wrapped_proc.h. Condition
 * variables are not here: they have two ABIs, see wrap/interpose_cond.c. */
#define CTR_WRAPPED(X) CTR_WRAPPED_SYNC(X) CTR_WRAPPED_IO(X) CTR_WRAPPED_FILE(X) CTR_WRAPPED_PROC(X)

#define CTR_WRAPPED_SYNC(X)                                                                        \
    X(int, pthread_create,                                                                         \
      (pthread_t * th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg),                \
      (th, attr, fn, arg), 1)                                                                      \
    X(int, pthread_join, (pthread_t th, void **ret), (th, ret), 1)                                 \
    X(int, pthread_detach, (pthread_t th), (th), 1)                                                \
    X(int, pthread_setname_np, (pthread_t th, const char *name), (th, name), 1)                    \
    X(int, pthread_mutex_lock, (pthread_mutex_t * m), (m), 1)                                      \
    X(int, pthread_mutex_trylock, (pthread_mutex_t * m), (m), 1)                                   \
    X(int, pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec *at), (m, at), 1)  \
    X(int, pthread_mutex_clocklock,                                                                \
      (pthread_mutex_t * m, clockid_t clk, const struct timespec *at), (m, clk, at), 0)            \
    X(int, pthread_mutex_unlock, (pthread_mutex_t * m), (m), 1)                                    \
    X(int, pthread_rwlock_rdlock, (pthread_rwlock_t * l), (l), 1)                                  \
    X(int, pthread_rwlock_wrlock, (pthread_rwlock_t * l), (l), 1)                                  \
    X(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t * l), (l), 1)                               \
    X(int, pthread_rwlock_trywrlock, (pthread_rwlock_t * l), (l), 1)                               \
    X(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t * l, const struct timespec *at), (l, at), \
      1)                                                                                           \
    X(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t * l, const struct timespec *at), (l, at), \
      1)                                                                                           \
    X(int, pthread_rwlock_clockrdlock,                                                             \
      (pthread_rwlock_t * l, clockid_t clk, const struct timespec *at), (l, clk, at), 0)           \
    X(int, pthread_rwlock_clockwrlock,                                                             \
      (pthread_rwlock_t * l, clockid_t clk, const struct timespec *at), (l, clk, at), 0)           \
    X(int, pthread_rwlock_unlock, (pthread_rwlock_t * l), (l), 1)                                  \
    X(int, sem_wait, (sem_t * s), (s), 1)                                                          \
    X(int, sem_timedwait, (sem_t * s, const struct timespec *at), (s, at), 1)                      \
    X(int, sem_clockwait, (sem_t * s, clockid_t clk, const struct timespec *at), (s, clk, at), 0)  \
    X(int, sem_trywait, (sem_t * s), (s), 1)                                                       \
    X(int, sem_post, (sem_t * s), (s), 1)                                                          \
    X(int, pthread_barrier_wait, (pthread_barrier_t * b), (b), 1)                                  \
    X(int, pthread_tryjoin_np, (pthread_t th, void **ret), (th, ret), 1)                           \
    X(int, pthread_spin_trylock, (pthread_spinlock_t * l), (l), 1)                                 \
    X(int, pthread_timedjoin_np, (pthread_t th, void **ret, const struct timespec *at),            \
      (th, ret, at), 1)                                                                            \
    X(int, pthread_clockjoin_np,                                                                   \
      (pthread_t th, void **ret, clockid_t clk, const struct timespec *at), (th, ret, clk, at), 0) \
    X(int, pthread_spin_lock, (pthread_spinlock_t * l), (l), 1)                                    \
    X(int, nanosleep, (const struct timespec *req, struct timespec *rem), (req, rem), 1)           \
    X(int, clock_nanosleep,                                                                        \
      (clockid_t clk, int flags, const struct timespec *req, struct timespec *rem),                \
      (clk, flags, req, rem), 1)                                                                   \
    X(int, usleep, (useconds_t us), (us), 1)                                                       \
    X(unsigned, sleep, (unsigned s), (s), 1)                                                       \
    X(int, pthread_once, (pthread_once_t * once, void (*init)(void)), (once, init), 1)             \
    CTR_WRAPPED_C11(X)

/* C11 threads (<threads.h>, glibc 2.28 and later): glibc implements them on
 * its internal pthread functions, which no wrapper above sees, so each is
 * wrapped by its own name (wrap/interpose_c11.c) and made, as glibc makes
 * it, of the real pthread function: only thrd_create's own real function is
 * needed, for a thread created while not tracing. */
#define CTR_WRAPPED_C11(X) \
    X(int, thrd_create, (thrd_t * th, thrd_start_t fn, void *arg), (th, fn, arg), 0)

/* Condition variables have two ABIs in glibc (x86_64): GLIBC_2.3.2, the
 * default, and GLIBC_2.2.5 for binaries built against LinuxThreads-era
 * headers. Each version of each function gets its own wrapper and its own
 * real function (dlvsym), so an old-ABI caller reaches the old-ABI code.
 * Columns: ret, field, symbol, version, parameters, arguments. Not for
 * clang-format, which would write GLIBC_2 .3.2: the version is stringified. */
/* clang-format off */
#define CTR_WRAPPED_COND(X)                                                                \
    X(int, cond_wait, pthread_cond_wait, GLIBC_2.3.2,                                      \
      (pthread_cond_t * c, pthread_mutex_t * m), (c, m))                                   \
    X(int, cond_timedwait, pthread_cond_timedwait, GLIBC_2.3.2,                            \
      (pthread_cond_t * c, pthread_mutex_t * m, const struct timespec *at), (c, m, at))    \
    X(int, cond_signal, pthread_cond_signal, GLIBC_2.3.2, (pthread_cond_t * c), (c))       \
    X(int, cond_broadcast, pthread_cond_broadcast, GLIBC_2.3.2, (pthread_cond_t * c), (c)) \
    X(int, cond_wait_old, pthread_cond_wait, GLIBC_2.2.5,                                  \
      (pthread_cond_t * c, pthread_mutex_t * m), (c, m))                                   \
    X(int, cond_timedwait_old, pthread_cond_timedwait, GLIBC_2.2.5,                        \
      (pthread_cond_t * c, pthread_mutex_t * m, const struct timespec *at), (c, m, at))    \
    X(int, cond_signal_old, pthread_cond_signal, GLIBC_2.2.5, (pthread_cond_t * c), (c))   \
    X(int, cond_broadcast_old, pthread_cond_broadcast, GLIBC_2.2.5, (pthread_cond_t * c),  \
      (c))
/* clang-format on */

/* The jumps that can leave a signal handler (and with it a wrapper's real
 * call or a write section): name, parameters, arguments. They return void
 * and never return, so they have a table and resolvers of their own. */
#define CTR_WRAPPED_JUMP(X)                                           \
    X(longjmp, (struct __jmp_buf_tag env[1], int val), (env, val))    \
    X(_longjmp, (struct __jmp_buf_tag env[1], int val), (env, val))   \
    X(siglongjmp, (struct __jmp_buf_tag env[1], int val), (env, val)) \
    X(__longjmp_chk, (struct __jmp_buf_tag env[1], int val), (env, val))

/* The condition variables' default ABI version (first column of
 * CTR_WRAPPED_COND's versions). */
#define CTR_COND_DEFAULT_VERSION "GLIBC_2.3.2"

struct ctr_real {
#define CTR_X_FIELD(ret, name, params, args, req) ret(*name) params;
    CTR_WRAPPED(CTR_X_FIELD)
#undef CTR_X_FIELD
#define CTR_X_VFIELD(ret, field, sym, ver, params, args) ret(*field) params;
    CTR_WRAPPED_COND(CTR_X_VFIELD)
#undef CTR_X_VFIELD
    /* Added in glibc 2.30, one version only. */
    int (*cond_clockwait)(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                          const struct timespec *at);
    /* syscall(2) is variadic: its real function is always called with six
     * arguments after the number, as glibc's own reads six (interpose_futex.c). */
    long (*syscall)(long nr, ...);
#define CTR_X_JFIELD(name, params, args) void(*name) params;
    CTR_WRAPPED_JUMP(CTR_X_JFIELD)
#undef CTR_X_JFIELD
};

extern struct ctr_real ctr__real;

/* dlsym(handle, name) asked of libc by the tracer itself, for its own
 * lookups: RTLD_NEXT is the next object after libctrace. (The dlsym that
 * libctrace exports answers "pthread_create" for the program: see
 * wrap/interpose_dl.c.) */
void *ctr__dlsym_real(void *handle, const char *name);

/* libc's dlsym, resolved on first use (NULL if it cannot be found); the
 * stub of wrap/interpose_dl.c jumps through ctr__dlsym_next once this has
 * returned it. Uninstrumented: see CTR_UNINSTRUMENTED. */
typedef void *(*ctr_dlsym_fn)(void *handle, const char *name);
extern _Atomic(ctr_dlsym_fn) ctr__dlsym_next;
ctr_dlsym_fn ctr__dlsym_libc(void);

/* A sanitizer's runtime looks its interceptors' real functions up with
 * dlsym while it starts, before it can run instrumented code: what the
 * dlsym stub calls is left uninstrumented, and calls libc only. */
#if defined(__clang__)
#define CTR_UNINSTRUMENTED __attribute__((disable_sanitizer_instrumentation))
#else
#define CTR_UNINSTRUMENTED \
    __attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined))
#endif

/* Reads the six arguments after a syscall's number from `ap` into a[], as
 * glibc's syscall reads them whatever the call takes (the wrapper and the
 * resolver of syscall). Uninstrumented: those beyond what the caller passed
 * lie in the caller's frame, whose redzone AddressSanitizer would flag. */
void ctr__syscall_args(va_list ap, long a[6]);

/* Resolves every entry of ctr__real (idempotent, thread-safe: each thread
 * stores the same values). Aborts with a message if libc lacks a required
 * function. */
void ctr__real_init(void);

#endif
