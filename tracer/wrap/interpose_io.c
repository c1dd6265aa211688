/* SPDX-License-Identifier: MIT */
/* interpose_io.c - libctrace's wrappers of blocking I/O calls (read, recv,
 * poll, fsync, open, ...) and of the calls that create and close descriptors.
 *
 * An I/O call may or may not block, and only the kernel knows which: so a
 * wrapper times the real call and, if it took at least the session's
 * threshold (io_min_ns, in ticks: ctr__session.io_min_ticks), records it
 * afterwards as Block at its start and Unblock now (ctr__wait_span), with the
 * stack of its caller. A shorter call costs two tick reads and records
 * nothing. With tracing off a wrapper costs one load and a branch before the
 * real call, as in interpose.c.
 *
 * The reason says which delay profile counts the wait: the NET_ variant for
 * read/write/readv/writev on a socket (fdclass.c knows which descriptors
 * are), the plain one otherwise; recv*, send*, accept*, connect, poll, select
 * and epoll are always net; pread/pwrite, fsync, fdatasync and open* always
 * syscall. The BLOCK's object is a descriptor, not an address (FORMAT.md §5).
 *
 * Every wrapper leaves errno exactly as the real call left it: what the
 * tracer does after the call (stack capture, fstat, mmap) runs between a save
 * and a restore of errno, and the registration of a thread on its first
 * traced call, before the real call, keeps errno too (a successful call does
 * not touch errno, so the caller's value must survive it).
 *
 * The tracer never traces itself: the collector thread has the "off" slot,
 * so its writes of the trace file go straight to the real function; and
 * while the tracer calls out (libunwind, in a wrapper's stack capture), the
 * thread's `internal` count is raised, so I/O done by the recording itself
 * (an unwinder reading its maps) is not recorded in turn.
 */
/* This file defines read, open, poll, ...: it must see libc's plain
 * declarations, not fortified inline versions or 64-bit renames. */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS

#include "core/clock.h"
#include "core/common.h"
#include "core/emit.h"
#include "core/fdclass.h"
#include "core/fdguard.h"
#include "core/real.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "core/wrapped_io.h"
#include "ctrace_format.h"
#include "wrap/io.h"
#include "wrap/wait.h"

#include <errno.h>

/* Pulls this file in with core/real.c from the static library. */
const int ctr__wrappers_io;

/* ---------------------------------------------------------------------------
 * Reads and writes: net on a socket, syscall otherwise
 * ------------------------------------------------------------------------- */

CTR_IO(ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n), fd, CTR_REASON_READ, 1, NOTHING,
       FOREIGN_FD(fd), WAITS, NB_FD)
CTR_IO(ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n), fd, CTR_REASON_WRITE, 1,
       NOTHING, FOREIGN_FD(fd), WAITS, NB_FD)
CTR_IO(ssize_t, readv, (int fd, const struct iovec *iov, int iovcnt), (fd, iov, iovcnt), fd,
       CTR_REASON_READV, 1, NOTHING, NEVER, WAITS, NB_FD)
CTR_IO(ssize_t, writev, (int fd, const struct iovec *iov, int iovcnt), (fd, iov, iovcnt), fd,
       CTR_REASON_WRITEV, 1, NOTHING, NEVER, WAITS, NB_FD)

/* Positioned I/O needs a seekable file: never a socket. */
CTR_IO(ssize_t, pread, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), fd,
       CTR_REASON_PREAD, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(ssize_t, pread64, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off), fd,
       CTR_REASON_PREAD, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), fd,
       CTR_REASON_PWRITE, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(ssize_t, pwrite64, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off), fd,
       CTR_REASON_PWRITE, 0, NOTHING, NEVER, WAITS, ANY_FD)

/* ---------------------------------------------------------------------------
 * Sockets: always net
 * ------------------------------------------------------------------------- */

CTR_IO(ssize_t, recv, (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags), fd,
       CTR_REASON_RECV, 0, NOTHING, NEVER, DONTWAIT(flags), NB_FD)
CTR_IO(ssize_t, recvfrom,
       (int fd, void *restrict buf, size_t n, int flags, __SOCKADDR_ARG addr,
        socklen_t *restrict addrlen),
       (fd, buf, n, flags, addr, addrlen), fd, CTR_REASON_RECVFROM, 0, NOTHING, NEVER,
       DONTWAIT(flags), NB_FD)
CTR_IO(ssize_t, recvmsg, (int fd, struct msghdr *msg, int flags), (fd, msg, flags), fd,
       CTR_REASON_RECVMSG, 0, NOTHING, NEVER, DONTWAIT(flags), NB_FD)
CTR_IO(ssize_t, send, (int fd, const void *buf, size_t n, int flags), (fd, buf, n, flags), fd,
       CTR_REASON_SEND, 0, NOTHING, NEVER, DONTWAIT(flags), NB_FD)
CTR_IO(ssize_t, sendto,
       (int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG addr, socklen_t addrlen),
       (fd, buf, n, flags, addr, addrlen), fd, CTR_REASON_SENDTO, 0, NOTHING, NEVER,
       DONTWAIT(flags), NB_FD)
CTR_IO(ssize_t, sendmsg, (int fd, const struct msghdr *msg, int flags), (fd, msg, flags), fd,
       CTR_REASON_SENDMSG, 0, NOTHING, NEVER, DONTWAIT(flags), NB_FD)
CTR_IO(int, accept, (int fd, __SOCKADDR_ARG addr, socklen_t *restrict addrlen), (fd, addr, addrlen),
       fd, CTR_REASON_ACCEPT, 0, NOTE_SOCKET, NEVER, WAITS, NB_FD)
CTR_IO(int, accept4, (int fd, __SOCKADDR_ARG addr, socklen_t *restrict addrlen, int flags),
       (fd, addr, addrlen, flags), fd, CTR_REASON_ACCEPT4, 0, NOTE_SOCKET, NEVER, WAITS, NB_FD)
CTR_IO(int, connect, (int fd, __CONST_SOCKADDR_ARG addr, socklen_t addrlen), (fd, addr, addrlen),
       fd, CTR_REASON_CONNECT, 0, NOTHING, NEVER, WAITS, NB_FD)

/* ---------------------------------------------------------------------------
 * Readiness waits: always net. The object of poll is the first descriptor
 * polled (-1 if none), of select the highest one it may watch (nfds - 1), of
 * epoll the epoll descriptor.
 * ------------------------------------------------------------------------- */

#define FIRST_FD(fds, nfds) ((nfds) > 0 && (fds) ? (fds)[0].fd : -1)

CTR_IO(int, poll, (struct pollfd * fds, nfds_t nfds, int timeout), (fds, nfds, timeout),
       FIRST_FD(fds, nfds), CTR_REASON_POLL, 0, NOTHING, NEVER, POLL_NOW(timeout), ANY_FD)
CTR_IO(int, ppoll,
       (struct pollfd * fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *sigmask),
       (fds, nfds, timeout, sigmask), FIRST_FD(fds, nfds), CTR_REASON_PPOLL, 0, NOTHING, NEVER,
       TS_NOW(timeout), ANY_FD)
CTR_IO(int, select,
       (int nfds, fd_set *restrict rd, fd_set *restrict wr, fd_set *restrict ex,
        struct timeval *restrict timeout),
       (nfds, rd, wr, ex, timeout), nfds - 1, CTR_REASON_SELECT, 0, NOTHING, NEVER, TV_NOW(timeout),
       ANY_FD)
CTR_IO(int, pselect,
       (int nfds, fd_set *restrict rd, fd_set *restrict wr, fd_set *restrict ex,
        const struct timespec *restrict timeout, const sigset_t *restrict sigmask),
       (nfds, rd, wr, ex, timeout, sigmask), nfds - 1, CTR_REASON_PSELECT, 0, NOTHING, NEVER,
       TS_NOW(timeout), ANY_FD)
CTR_IO(int, epoll_wait, (int epfd, struct epoll_event *ev, int maxev, int timeout),
       (epfd, ev, maxev, timeout), epfd, CTR_REASON_EPOLL_WAIT, 0, NOTHING, NEVER,
       POLL_NOW(timeout), ANY_FD)
CTR_IO(int, epoll_pwait,
       (int epfd, struct epoll_event *ev, int maxev, int timeout, const sigset_t *sigmask),
       (epfd, ev, maxev, timeout, sigmask), epfd, CTR_REASON_EPOLL_PWAIT, 0, NOTHING, NEVER,
       POLL_NOW(timeout), ANY_FD)

/* ---------------------------------------------------------------------------
 * File system: always syscall
 * ------------------------------------------------------------------------- */

CTR_IO(int, fsync, (int fd), (fd), fd, CTR_REASON_FSYNC, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(int, fdatasync, (int fd), (fd), fd, CTR_REASON_FDATASYNC, 0, NOTHING, NEVER, WAITS, ANY_FD)

/* The open family is variadic: each wrapper reads the mode (only if the
 * flags say there is one) and passes it on explicitly to the real function,
 * held through a pointer of the variadic type. The object is the descriptor
 * opened (-1 on failure). */
enum open_kind { OPEN, OPEN64, OPENAT, OPENAT64 };

static int open_real(enum open_kind k, int dirfd, const char *path, int flags, mode_t mode)
{
    int fd;
    switch (k) {
    case OPEN:
        fd = ctr__real.open(path, flags, mode);
        break;
    case OPEN64:
        fd = ctr__real.open64(path, flags, mode);
        break;
    case OPENAT:
        fd = ctr__real.openat(dirfd, path, flags, mode);
        break;
    default:
        fd = ctr__real.openat64(dirfd, path, flags, mode);
        break;
    }
    ctr__fd_note(fd, CTR_FD_OTHER);
    return fd;
}

static CTR_WRAPPER_TEXT int open_traced(enum open_kind k, int dirfd, const char *path, int flags,
                                        mode_t mode)
{
    struct ctr_thread *t = ctr__self_traced_keeping_errno();
    if (!t)
        return open_real(k, dirfd, path, flags, mode);
    uint64_t start = ctr__ticks();
    enum ctr_reason reason = k == OPEN || k == OPEN64 ? CTR_REASON_OPEN : CTR_REASON_OPENAT;
    CTR_CALL_GUARD(g, t);
    g.marked = ctr__io_begin(t, start, reason, 0, -1, (uintptr_t)__builtin_frame_address(0));
    int fd = open_real(k, dirfd, path, flags, mode);
    ctr__io_returned(t, &g, start, reason, 0, fd);
    return fd;
}

/* ---------------------------------------------------------------------------
 * Fortified entry points (wrapped_io.h): recorded like the plain calls
 * ------------------------------------------------------------------------- */

/* glibc declares these only to _FORTIFY_SOURCE builds: declared here from
 * their table, so that each definition below is checked against it. */
#define CTR_X_DECLARE(ret, name, params, args, req) CTR_EXPORT ret name params;
CTR_WRAPPED_FORTIFIED(CTR_X_DECLARE)
#undef CTR_X_DECLARE

#define NOTE_OTHER ctr__fd_note(rc, CTR_FD_OTHER)

CTR_IO(ssize_t, __read_chk, (int fd, void *buf, size_t n, size_t buflen), (fd, buf, n, buflen), fd,
       CTR_REASON_READ, 1, NOTHING, NEVER, WAITS, NB_FD)
CTR_IO(ssize_t, __pread_chk, (int fd, void *buf, size_t n, off_t off, size_t buflen),
       (fd, buf, n, off, buflen), fd, CTR_REASON_PREAD, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(ssize_t, __pread64_chk, (int fd, void *buf, size_t n, off64_t off, size_t buflen),
       (fd, buf, n, off, buflen), fd, CTR_REASON_PREAD, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(ssize_t, __recv_chk, (int fd, void *buf, size_t n, size_t buflen, int flags),
       (fd, buf, n, buflen, flags), fd, CTR_REASON_RECV, 0, NOTHING, NEVER, DONTWAIT(flags), NB_FD)
CTR_IO(ssize_t, __recvfrom_chk,
       (int fd, void *restrict buf, size_t n, size_t buflen, int flags, __SOCKADDR_ARG addr,
        socklen_t *restrict addrlen),
       (fd, buf, n, buflen, flags, addr, addrlen), fd, CTR_REASON_RECVFROM, 0, NOTHING, NEVER,
       DONTWAIT(flags), NB_FD)
CTR_IO(int, __poll_chk, (struct pollfd * fds, nfds_t nfds, int timeout, size_t fdslen),
       (fds, nfds, timeout, fdslen), FIRST_FD(fds, nfds), CTR_REASON_POLL, 0, NOTHING, NEVER,
       POLL_NOW(timeout), ANY_FD)
CTR_IO(int, __ppoll_chk,
       (struct pollfd * fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *sigmask,
        size_t fdslen),
       (fds, nfds, timeout, sigmask, fdslen), FIRST_FD(fds, nfds), CTR_REASON_PPOLL, 0, NOTHING,
       NEVER, TS_NOW(timeout), ANY_FD)
/* The object of an open is the descriptor it returns, unknown before. */
CTR_IO(int, __open_2, (const char *path, int flags), (path, flags), -1, CTR_REASON_OPEN, 0,
       NOTE_OTHER, NEVER, WAITS, ANY_FD)
CTR_IO(int, __open64_2, (const char *path, int flags), (path, flags), -1, CTR_REASON_OPEN, 0,
       NOTE_OTHER, NEVER, WAITS, ANY_FD)
CTR_IO(int, __openat_2, (int dirfd, const char *path, int flags), (dirfd, path, flags), -1,
       CTR_REASON_OPENAT, 0, NOTE_OTHER, NEVER, WAITS, ANY_FD)
CTR_IO(int, __openat64_2, (int dirfd, const char *path, int flags), (dirfd, path, flags), -1,
       CTR_REASON_OPENAT, 0, NOTE_OTHER, NEVER, WAITS, ANY_FD)

/* A file libunwind opens is the tracer's (fdguard.c). */
static int open_for_unwinder(enum open_kind k, int dirfd, const char *path, int flags, mode_t mode)
{
    int fd = ctr__fd_adopt(open_real(k, dirfd, path, flags, mode), NULL);
    if (fd < -1) {
        errno = -fd;
        fd = -1;
    }
    return fd;
}

#define CTR_OPEN_WRAPPER(name, kind, params, dirfd)                        \
    CTR_EXPORT CTR_WRAPPER_TEXT int name params                            \
    {                                                                      \
        mode_t mode = CTR_VA_MODE(flags);                                  \
        if (CTR_UNLIKELY(ctr__from_unwinder(__builtin_return_address(0)))) \
            return open_for_unwinder(kind, dirfd, path, flags, mode);      \
        if (CTR_LIKELY(!ctr__tracing()))                                   \
            return open_real(kind, dirfd, path, flags, mode);              \
        return open_traced(kind, dirfd, path, flags, mode);                \
    }

CTR_OPEN_WRAPPER(open, OPEN, (const char *path, int flags, ...), AT_FDCWD)
CTR_OPEN_WRAPPER(open64, OPEN64, (const char *path, int flags, ...), AT_FDCWD)
CTR_OPEN_WRAPPER(openat, OPENAT, (int dirfd, const char *path, int flags, ...), dirfd)
CTR_OPEN_WRAPPER(openat64, OPENAT64, (int dirfd, const char *path, int flags, ...), dirfd)

/* ---------------------------------------------------------------------------
 * Descriptor bookkeeping only: these never wait long, and record nothing.
 * They also keep the tracer's own descriptors and the program's apart
 * (fdguard.c): the program cannot close, duplicate or take the number of a
 * tracer descriptor, and libunwind can touch nothing else.
 * ------------------------------------------------------------------------- */

static int bad_descriptor(void)
{
    errno = EBADF;
    return -1;
}

CTR_EXPORT int close(int fd)
{
    if (CTR_UNLIKELY(ctr__fd_is_tracers(fd))) {
        if (!ctr__from_unwinder(__builtin_return_address(0)))
            return bad_descriptor(); /* not one the program opened */
        int rc = ctr__fd_close(fd);
        if (rc != 0)
            errno = -rc;
        return rc ? -1 : 0;
    }
    if (CTR_UNLIKELY(ctr__from_unwinder(__builtin_return_address(0))))
        return bad_descriptor(); /* the program's now: libunwind's pipe was given up */
    int rc = ctr__real.close(fd);
    /* Whatever rc says, the number is free now (Linux releases it even on
     * EINTR): it may come back as anything. */
    ctr__fd_note(fd, CTR_FD_UNKNOWN);
    return rc;
}

CTR_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    return ctr__fd_close_range(first, last, flags);
}

CTR_EXPORT void closefrom(int lowfd)
{
    if (lowfd >= 0)
        ctr__fd_close_range((unsigned)lowfd, ~0u, 0);
}

CTR_EXPORT int socket(int domain, int type, int protocol)
{
    int rc = ctr__real.socket(domain, type, protocol);
    NOTE_SOCKET;
    return rc;
}

CTR_EXPORT int socketpair(int domain, int type, int protocol, int sv[2])
{
    int rc = ctr__real.socketpair(domain, type, protocol, sv);
    if (rc == 0) {
        ctr__fd_note(sv[0], CTR_FD_SOCKET);
        ctr__fd_note(sv[1], CTR_FD_SOCKET);
    }
    return rc;
}

/* pipe and pipe2: the program's pipes are OTHER; libunwind's (its memory
 * validation pipe) are the tracer's. */
static int pipe_made(int rc, int fds[2], const void *caller)
{
    if (rc != 0)
        return rc;
    if (CTR_UNLIKELY(ctr__from_unwinder(caller))) {
        int err = ctr__fd_adopt_pipe(fds);
        if (err) {
            errno = -err;
            return -1;
        }
        return 0;
    }
    ctr__fd_note(fds[0], CTR_FD_OTHER);
    ctr__fd_note(fds[1], CTR_FD_OTHER);
    return 0;
}

CTR_EXPORT int pipe(int fds[2])
{
    return pipe_made(ctr__real.pipe(fds), fds, __builtin_return_address(0));
}

CTR_EXPORT int pipe2(int fds[2], int flags)
{
    return pipe_made(ctr__real.pipe2(fds, flags), fds, __builtin_return_address(0));
}

CTR_EXPORT int dup(int fd)
{
    if (CTR_UNLIKELY(ctr__fd_is_tracers(fd)))
        return bad_descriptor();
    int rc = ctr__real.dup(fd);
    if (rc >= 0)
        ctr__fd_copy(fd, rc);
    return rc;
}

CTR_EXPORT int dup2(int fd, int fd2)
{
    if (CTR_UNLIKELY(ctr__fd_is_tracers(fd)))
        return bad_descriptor();
    if (fd != fd2)
        ctr__fd_evict(fd2); /* the number is the program's to take */
    int rc = ctr__real.dup2(fd, fd2);
    if (rc >= 0)
        ctr__fd_copy(fd, rc);
    return rc;
}

CTR_EXPORT int dup3(int fd, int fd2, int flags)
{
    if (CTR_UNLIKELY(ctr__fd_is_tracers(fd)))
        return bad_descriptor();
    if (fd != fd2)
        ctr__fd_evict(fd2);
    int rc = ctr__real.dup3(fd, fd2, flags);
    if (rc >= 0)
        ctr__fd_copy(fd, rc);
    return rc;
}
