/* SPDX-License-Identifier: MIT */
/* io.h - CTR_IO, the wrapper of a blocking I/O call and its traced path,
 * which every timed I/O wrapper file shares (interpose_io.c, the calls
 * on descriptors; interpose_file.c, the rarer ones: file locks, splices,
 * vectored and batched I/O, IPC, stdio, name lookups), and the values of
 * its columns. See interpose_io.c for how an I/O call is recorded. */
#ifndef CTR_IO_H
#define CTR_IO_H

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/clock.h"
#include "core/common.h"
#include "core/emit.h"
#include "core/fdclass.h"
#include "core/fdguard.h"
#include "core/real.h"
#include "core/stack.h"
#include "core/thread.h"
#include "wrap/wait.h"

/* Whether a call on fd comes from libunwind and fd is not the tracer's:
 * then it must not touch fd (fdguard.c). Only while tracing: libunwind runs
 * in a wrapper's stack capture, or at its warm-up on its own new pipe. */
#define FOREIGN_FD(fd) \
    (CTR_UNLIKELY(ctr__from_unwinder(__builtin_return_address(0))) && !ctr__fd_is_tracers(fd))
#define NEVER 0

/* CTR_IO(ret, name, params, args, object, reason, by_fd, after, refuse,
 *        instant, nb_fd) :
 * the wrapper of `name` and its traced path. `object` is the descriptor (an
 * expression of the parameters); `reason` the wait reason, whose NET_
 * variant is used on a socket when by_fd is 1. `after` is a statement run
 * after every real call, with the result in `rc` (descriptor bookkeeping; it
 * must keep errno). While tracing, a call for which `refuse` is true fails
 * with EBADF without being made (FOREIGN_FD). While the real call runs, the
 * thread's open call mark says so (wait.c), so that a call that never
 * returns (a write to a pipe nobody reads, a cancelled or jumped-out-of read)
 * is still a wait.
 *
 * A call that cannot block is no wait, however long the kernel works on it
 * (docs/internals.md, "What counts as a wait"): `instant` says so from the arguments
 * alone (MSG_DONTWAIT, a zero timeout), and such a call goes straight to the
 * real function; when nb_fd is 1, a call long enough to record, or in
 * progress when a trace ends, is first asked whether its descriptor is
 * non-blocking (ctr__io_waited). */
#define CTR_IO_(ret, name, params, args, object, reason, by_fd, after, refuse, instant, nb_fd, \
                call)                                                                          \
    static CTR_WRAPPER_TEXT ret name##_traced params                                           \
    {                                                                                          \
        ret rc;                                                                                \
        struct ctr_thread *t = ctr__self_traced_keeping_errno();                               \
        if (!t || (instant)) {                                                                 \
            rc = ctr__real.name args;                                                          \
            after;                                                                             \
            return rc;                                                                         \
        }                                                                                      \
        uint64_t start = ctr__ticks();                                                         \
        CTR_CALL_GUARD(g, t);                                                                  \
        int rules = ((by_fd) ? CTR_IO_BY_FD : 0) | ((nb_fd) ? CTR_IO_NB_FD : 0);               \
        g.marked = ctr__io_begin(t, start, reason, rules, (int)(object),                       \
                                 (uintptr_t)__builtin_frame_address(0));                       \
        rc = call(ret, name, args);                                                            \
        after;                                                                                 \
        ctr__io_returned(t, &g, start, reason, rules, (int)(object));                          \
        return rc;                                                                             \
    }                                                                                          \
    CTR_EXPORT CTR_WRAPPER_TEXT ret name params                                                \
    {                                                                                          \
        if (CTR_LIKELY(!ctr__tracing())) {                                                     \
            ret rc = ctr__real.name args;                                                      \
            after;                                                                             \
            return rc;                                                                         \
        }                                                                                      \
        if (refuse) {                                                                          \
            errno = EBADF;                                                                     \
            return (ret)(intptr_t)-1;                                                          \
        }                                                                                      \
        return name##_traced args;                                                             \
    }

#define CTR_IO(ret, name, params, args, object, reason, by_fd, after, refuse, instant, nb_fd) \
    CTR_IO_(ret, name, params, args, object, reason, by_fd, after, refuse, instant, nb_fd,    \
            CTR_CALL_PLAIN)
#define CTR_CALL_PLAIN(ret, name, args) ctr__real.name args

/* CTR_IO_OUTER(ret, name, params, args, object, reason, by_fd, instant,
 *              nb_fd) :
 * the same for a call that makes other calls inside (stdio, popen, name
 * lookups): while it runs, the wrapped calls it makes (an NSS module's
 * sockets, a cookie stream's reads) go straight to the real functions, so
 * that the outer call's span, written once it returned, comes whole and
 * before anything after it in the thread's events. */
#define CTR_IO_OUTER(ret, name, params, args, object, reason, by_fd, instant, nb_fd)        \
    CTR_IO_(ret, name, params, args, object, reason, by_fd, NOTHING, NEVER, instant, nb_fd, \
            CTR_CALL_OUTER)
#define CTR_CALL_OUTER(ret, name, args)                        \
    __extension__({                                            \
        struct ctr_thread *ctr_saved_ = ctr__internal_begin(); \
        ret ctr_rc_ = ctr__real.name args;                     \
        ctr__internal_end(ctr_saved_);                         \
        ctr_rc_;                                               \
    })

/* The `instant` column: what the arguments say. */
#define WAITS 0                                         /* may block: ask nothing */
#define DONTWAIT(flags) ((MSG_DONTWAIT & (flags)) != 0) /* a socket call told not to */
#define POLL_NOW(ms) ((ms) == 0)                        /* poll, epoll_wait */
#define TS_NOW(ts) ((ts) && (ts)->tv_sec == 0 && (ts)->tv_nsec == 0)
#define TV_NOW(tv) ((tv) && (tv)->tv_sec == 0 && (tv)->tv_usec == 0)
/* The nb_fd column. */
#define NB_FD 1  /* the descriptor's O_NONBLOCK decides */
#define ANY_FD 0 /* no descriptor, or one whose flag does not matter */

#define NOTHING ((void)0)
#define NOTE_SOCKET ctr__fd_note(rc, CTR_FD_SOCKET)

#endif /* CTR_IO_H */
