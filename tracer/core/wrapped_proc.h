/* SPDX-License-Identifier: MIT */
/* wrapped_proc.h - the waits for processes and signals libctrace wraps
 * (waitpid, sigwait, pause, ...), and the calls that set a signal's action
 * (sigaction, signal: SIGPROF is the program's when it asks for it, perf/cpu.c).
 * See real.h for the X-macro's columns, wrap/interpose_proc.c for the
 * wrappers.
 */
#ifndef CTR_WRAPPED_PROC_H
#define CTR_WRAPPED_PROC_H

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CTR_WRAPPED_PROC(X)                                                                       \
    X(pid_t, wait, (int *status), (status), 1)                                                    \
    X(pid_t, waitpid, (pid_t pid, int *status, int options), (pid, status, options), 1)           \
    X(pid_t, wait3, (int *status, int options, struct rusage *ru), (status, options, ru), 1)      \
    X(pid_t, wait4, (pid_t pid, int *status, int options, struct rusage *ru),                     \
      (pid, status, options, ru), 1)                                                              \
    X(int, waitid, (idtype_t idtype, id_t id, siginfo_t * info, int options),                     \
      (idtype, id, info, options), 1)                                                             \
    X(int, sigwait, (const sigset_t *restrict set, int *restrict sig), (set, sig), 1)             \
    X(int, sigwaitinfo, (const sigset_t *restrict set, siginfo_t *restrict info), (set, info), 1) \
    X(int, sigtimedwait,                                                                          \
      (const sigset_t *restrict set, siginfo_t *restrict info,                                    \
       const struct timespec *restrict timeout),                                                  \
      (set, info, timeout), 1)                                                                    \
    X(int, pause, (void), (), 1)                                                                  \
    X(int, sigsuspend, (const sigset_t *mask), (mask), 1)                                         \
    X(int, sigaction,                                                                             \
      (int sig, const struct sigaction *restrict act, struct sigaction *restrict old),            \
      (sig, act, old), 1)                                                                         \
    X(sighandler_t, signal, (int sig, sighandler_t handler), (sig, handler), 1)

#endif
