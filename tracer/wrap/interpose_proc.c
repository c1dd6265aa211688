/* SPDX-License-Identifier: MIT */
/* interpose_proc.c - libctrace's wrappers of the waits for other processes
 * and for signals: wait, waitpid, wait3, wait4, waitid, sigwait,
 * sigwaitinfo, sigtimedwait, pause, sigsuspend; and of sigaction and signal
 * (at the end).
 *
 * They are recorded as the blocking I/O calls are (interpose_io.c): the
 * wrapper times the real call and, if it took at least the session's
 * threshold (io_min_ns), records it afterwards as Block at its start and
 * Unblock now, with the caller's stack. While the real call runs the
 * thread's open call mark says so (wait.c), so a thread still waiting when
 * the trace ends (a sigwait thread of a program that never got its signal,
 * a parent waiting for a child) is a wait still open at the end, and a call
 * left by a cancellation or a longjmp out of a signal handler (the classic
 * way out of pause) still ends its wait.
 *
 * A call that cannot block is not a wait (DESIGN.md): a wait with WNOHANG,
 * or a sigtimedwait with a zero timeout, goes straight to the real function.
 * Reasons are of the syscall class (ctrace_format.h). The BLOCK's object is
 * an integer, as for I/O reasons (FORMAT.md §5): see each group below.
 *
 * Every wrapper leaves errno and the call's result exactly as the real call
 * left them, and changes no signal mask or disposition: the program's
 * sigwait-based shutdown works as untraced (the collector thread blocks
 * every signal, so a process-directed signal is never taken by it).
 */
#include "core/clock.h"
#include "core/common.h"
#include "core/emit.h"
#include "core/real.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "ctrace_format.h"
#include "perf/cpu.h"
#include "wrap/wait.h"

#include <errno.h>

/* Pulls this file in with core/real.c from the static library. */
const int ctr__wrappers_proc;

/* The end of a traced wait that returned: its mark cleared, and the call
 * recorded (errno kept) if it lasted at least io_min_ns. */
static inline __attribute__((always_inline)) void wait_returned(struct ctr_thread *t,
                                                                struct ctr_call_guard *g,
                                                                uint64_t start,
                                                                enum ctr_reason reason, int object)
{
    if (g->marked)
        ctr__io_end(t);
    if (CTR_UNLIKELY(ctr__io_long_enough(start))) {
        int saved = errno;
        ctr__wait_span(t, reason, (const void *)(intptr_t)object, start);
        errno = saved;
    }
}

/* Whether a sigtimedwait with this timeout can block at all. */
static int timeout_blocks(const struct timespec *ts)
{
    return !ts || ts->tv_sec != 0 || ts->tv_nsec != 0;
}

/* CTR_WAIT_CALL(ret, name, params, args, pending, object, reason, blocks) :
 * the wrapper of `name` and its traced path. `pending` is the object of the
 * wait while it runs (an int expression of the parameters; what a trace
 * that ends meanwhile shows), `object` the one recorded once it returned
 * (of the parameters and the result `rc`, read only then: a pointer the
 * kernel accepted). `blocks` says whether this call can wait at all (else
 * it is not traced). */
#define CTR_WAIT_CALL(ret, name, params, args, pending, object, reason, blocks)                   \
    static CTR_WRAPPER_TEXT ret name##_traced params                                              \
    {                                                                                             \
        struct ctr_thread *t = ctr__self_traced_keeping_errno();                                  \
        if (!t)                                                                                   \
            return ctr__real.name args;                                                           \
        uint64_t start = ctr__ticks();                                                            \
        CTR_CALL_GUARD(g, t);                                                                     \
        g.marked =                                                                                \
            ctr__io_begin(t, start, reason, 0, (pending), (uintptr_t)__builtin_frame_address(0)); \
        ret rc = ctr__real.name args;                                                             \
        wait_returned(t, &g, start, reason, (object));                                            \
        return rc;                                                                                \
    }                                                                                             \
    CTR_EXPORT CTR_WRAPPER_TEXT ret name params                                                   \
    {                                                                                             \
        if (CTR_LIKELY(!ctr__tracing()) || !(blocks))                                             \
            return ctr__real.name args;                                                           \
        return name##_traced args;                                                                \
    }

/* ---------------------------------------------------------------------------
 * Waits for children. Object: the pid waited for (-1: any child) while the
 * call runs; once it returned, the child it reported, if any.
 * ------------------------------------------------------------------------- */

#define REPORTED(asked) (rc > 0 ? (int)rc : (int)(asked))
#define BLOCKING(options) ((WNOHANG & (options)) == 0)

CTR_WAIT_CALL(pid_t, wait, (int *status), (status), -1, REPORTED(-1), CTR_REASON_WAIT, 1)
CTR_WAIT_CALL(pid_t, waitpid, (pid_t pid, int *status, int options), (pid, status, options),
              (int)pid, REPORTED(pid), CTR_REASON_WAITPID, BLOCKING(options))
CTR_WAIT_CALL(pid_t, wait3, (int *status, int options, struct rusage *ru), (status, options, ru),
              -1, REPORTED(-1), CTR_REASON_WAIT3, BLOCKING(options))
CTR_WAIT_CALL(pid_t, wait4, (pid_t pid, int *status, int options, struct rusage *ru),
              (pid, status, options, ru), (int)pid, REPORTED(pid), CTR_REASON_WAIT4,
              BLOCKING(options))
#define WAITID_ASKED (idtype == P_ALL ? -1 : (int)id)
CTR_WAIT_CALL(int, waitid, (idtype_t idtype, id_t id, siginfo_t *info, int options),
              (idtype, id, info, options), WAITID_ASKED,
              rc == 0 && info && info->si_pid ? (int)info->si_pid : WAITID_ASKED, CTR_REASON_WAITID,
              BLOCKING(options))

/* ---------------------------------------------------------------------------
 * Waits for signals. Object: 0 while the call runs; once it returned, the
 * signal it took (0 if none: interrupted, timed out, failed).
 * ------------------------------------------------------------------------- */

CTR_WAIT_CALL(int, sigwait, (const sigset_t *restrict set, int *restrict sig), (set, sig), 0,
              rc == 0 && sig ? *sig : 0, CTR_REASON_SIGWAIT, 1)
CTR_WAIT_CALL(int, sigwaitinfo, (const sigset_t *restrict set, siginfo_t *restrict info),
              (set, info), 0, rc > 0 ? rc : 0, CTR_REASON_SIGWAITINFO, 1)
CTR_WAIT_CALL(int, sigtimedwait,
              (const sigset_t *restrict set, siginfo_t *restrict info,
               const struct timespec *restrict timeout),
              (set, info, timeout), 0, rc > 0 ? rc : 0, CTR_REASON_SIGTIMEDWAIT,
              timeout_blocks(timeout))
CTR_WAIT_CALL(int, pause, (void), (), 0, 0, CTR_REASON_PAUSE, 1)
CTR_WAIT_CALL(int, sigsuspend, (const sigset_t *mask), (mask), 0, 0, CTR_REASON_SIGSUSPEND, 1)

/* ---------------------------------------------------------------------------
 * Signal actions: SIGPROF is the program's (cpu.c)
 *
 * The timer source of CPU samples puts its handler on SIGPROF only where the
 * program left SIG_DFL. When the program sets an action of its own, the
 * tracer's timers go first (no more of their signals), and the action the
 * program reads back is SIG_DFL where the tracer's handler stood in for it.
 * Nothing else of either call is changed.
 * ------------------------------------------------------------------------- */

CTR_EXPORT CTR_WRAPPER_TEXT int sigaction(int sig, const struct sigaction *restrict act,
                                          struct sigaction *restrict old)
{
    if (sig == SIGPROF && act)
        ctr__cpu_sigprof_yield();
    int rc = ctr__real.sigaction(sig, act, old);
    if (rc == 0 && sig == SIGPROF && old)
        ctr__cpu_sigprof_hide(old);
    return rc;
}

CTR_EXPORT CTR_WRAPPER_TEXT sighandler_t signal(int sig, sighandler_t handler)
{
    if (sig == SIGPROF)
        ctr__cpu_sigprof_yield();
    sighandler_t prev = ctr__real.signal(sig, handler);
    if (sig == SIGPROF && prev != SIG_ERR) {
        struct sigaction as = {0};
        as.sa_handler = prev;
        ctr__cpu_sigprof_hide(&as);
        prev = as.sa_handler;
    }
    return prev;
}
