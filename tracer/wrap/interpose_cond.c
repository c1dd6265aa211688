/* SPDX-License-Identifier: MIT */
/* interpose_cond.c - wrappers of condition variables, for both of glibc's ABIs.
 *
 * glibc (x86_64) has two versions of each condvar function: GLIBC_2.3.2, the
 * default, and GLIBC_2.2.5 for binaries built against the old condvar
 * layout. An unversioned wrapper would catch both kinds of callers and hand
 * the old ones to the new implementation, which corrupts their condvars. So
 * the shared library (built with CTR_SYMVER and the version script
 * libctrace.map) exports each wrapper under the version it wraps, and each
 * forwards to the real function of that same version (dlvsym). The static
 * library is linked into the program itself, where there are no versions to
 * honour: it defines the default-ABI functions under their plain names.
 *
 * A wait always records (a condvar has no try): Block on the condvar, the
 * real wait (which also re-takes the mutex), Unblock. signal and broadcast
 * write a Release first when the condvar has waiters.
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
const int ctr__wrappers_cond;

#ifdef CTR_SYMVER
#define CTR_VERSIONED(new_name, old_name, symbol)               \
    __asm__(".symver " #new_name ", " #symbol "@@GLIBC_2.3.2"); \
    __asm__(".symver " #old_name ", " #symbol "@GLIBC_2.2.5");
#define COND_WAIT ctr_cond_wait
#define COND_TIMEDWAIT ctr_cond_timedwait
#define COND_SIGNAL ctr_cond_signal
#define COND_BROADCAST ctr_cond_broadcast
CTR_VERSIONED(ctr_cond_wait, ctr_cond_wait_old, pthread_cond_wait)
CTR_VERSIONED(ctr_cond_timedwait, ctr_cond_timedwait_old, pthread_cond_timedwait)
CTR_VERSIONED(ctr_cond_signal, ctr_cond_signal_old, pthread_cond_signal)
CTR_VERSIONED(ctr_cond_broadcast, ctr_cond_broadcast_old, pthread_cond_broadcast)
/* Exported only under the versioned names above, never called by their own:
 * declared here from the table (core/real.h) so that each definition below is
 * checked against it. */
#define CTR_X_DECLARE(ret, field, sym, ver, params, args) CTR_EXPORT ret ctr_##field params;
CTR_WRAPPED_COND(CTR_X_DECLARE)
#undef CTR_X_DECLARE
#else
#define COND_WAIT pthread_cond_wait
#define COND_TIMEDWAIT pthread_cond_timedwait
#define COND_SIGNAL pthread_cond_signal
#define COND_BROADCAST pthread_cond_broadcast
#endif

/* Every wait takes the shared path (wait.c): the condvar is the call's
 * object, its mutex in `ret`. */
#define MUTEX(c) ((pthread_mutex_t *)(c)->ret)
#define CALL(...) (&(struct ctr_call){__VA_ARGS__})

static int do_wait(struct ctr_call *c)
{
    return ctr__real.cond_wait(c->obj, MUTEX(c));
}
static int do_timedwait(struct ctr_call *c)
{
    return ctr__real.cond_timedwait(c->obj, MUTEX(c), c->at);
}
static int do_clockwait(struct ctr_call *c)
{
    return ctr__real.cond_clockwait(c->obj, MUTEX(c), c->clk, c->at);
}

static const struct ctr_waitop wait_op = {CTR_REASON_COND_WAIT, NULL, do_wait, NULL};
static const struct ctr_waitop timedwait_op = {CTR_REASON_COND_TIMEDWAIT, NULL, do_timedwait, NULL};
static const struct ctr_waitop clockwait_op = {CTR_REASON_COND_CLOCKWAIT, NULL, do_clockwait, NULL};

/* ---------------------------------------------------------------------------
 * The default ABI (GLIBC_2.3.2)
 * ------------------------------------------------------------------------- */

CTR_EXPORT CTR_WRAPPER_TEXT int COND_WAIT(pthread_cond_t *c, pthread_mutex_t *m)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.cond_wait(c, m);
    return ctr__wait_traced(&wait_op, CALL(.obj = c, .ret = (void **)m), c);
}

CTR_EXPORT CTR_WRAPPER_TEXT int COND_TIMEDWAIT(pthread_cond_t *c, pthread_mutex_t *m,
                                               const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.cond_timedwait(c, m, at);
    return ctr__wait_traced(&timedwait_op, CALL(.obj = c, .ret = (void **)m, .at = at), c);
}

CTR_EXPORT CTR_WRAPPER_TEXT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
                                                       clockid_t clk, const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.cond_clockwait(c, m, clk, at);
    return ctr__wait_traced(&clockwait_op, CALL(.obj = c, .ret = (void **)m, .clk = clk, .at = at),
                            c);
}

CTR_EXPORT CTR_WRAPPER_TEXT int COND_SIGNAL(pthread_cond_t *c)
{
    if (CTR_UNLIKELY(ctr__tracing()) && ctr__cond_has_waiters(c))
        ctr__note_release(c);
    return ctr__real.cond_signal(c);
}

CTR_EXPORT CTR_WRAPPER_TEXT int COND_BROADCAST(pthread_cond_t *c)
{
    if (CTR_UNLIKELY(ctr__tracing()) && ctr__cond_has_waiters(c))
        ctr__note_release(c);
    return ctr__real.cond_broadcast(c);
}

/* ---------------------------------------------------------------------------
 * The old ABI (GLIBC_2.2.5): waits are recorded the same way; releases are
 * not, since the old object's layout has no waiter count to read.
 * ------------------------------------------------------------------------- */

#ifdef CTR_SYMVER
static int do_wait_old(struct ctr_call *c)
{
    return ctr__real.cond_wait_old(c->obj, MUTEX(c));
}
static int do_timedwait_old(struct ctr_call *c)
{
    return ctr__real.cond_timedwait_old(c->obj, MUTEX(c), c->at);
}
static const struct ctr_waitop wait_old_op = {CTR_REASON_COND_WAIT, NULL, do_wait_old, NULL};
static const struct ctr_waitop timedwait_old_op = {CTR_REASON_COND_TIMEDWAIT, NULL,
                                                   do_timedwait_old, NULL};

CTR_EXPORT CTR_WRAPPER_TEXT int ctr_cond_wait_old(pthread_cond_t *c, pthread_mutex_t *m)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.cond_wait_old(c, m);
    return ctr__wait_traced(&wait_old_op, CALL(.obj = c, .ret = (void **)m), c);
}

CTR_EXPORT CTR_WRAPPER_TEXT int ctr_cond_timedwait_old(pthread_cond_t *c, pthread_mutex_t *m,
                                                       const struct timespec *at)
{
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.cond_timedwait_old(c, m, at);
    return ctr__wait_traced(&timedwait_old_op, CALL(.obj = c, .ret = (void **)m, .at = at), c);
}

CTR_EXPORT int ctr_cond_signal_old(pthread_cond_t *c)
{
    return ctr__real.cond_signal_old(c);
}

CTR_EXPORT int ctr_cond_broadcast_old(pthread_cond_t *c)
{
    return ctr__real.cond_broadcast_old(c);
}
#endif
