/* SPDX-License-Identifier: MIT */
/* wrapped_io.h - the blocking I/O calls libctrace wraps, and the calls that
 * create or close descriptors (which keep the socket/other table of fdclass.c
 * up to date). See real.h for the X-macro's columns, wrap/interpose_io.c for
 * the wrappers.
 *
 * glibc x86_64 exports open64, openat64, pread64 and pwrite64 as symbols of
 * their own (aliases of the plain ones), and -D_FILE_OFFSET_BITS=64 programs
 * call those: both names are wrapped. The open family is variadic: its real
 * function is held through a pointer of the variadic type and always called
 * with the mode (CTR_VA_MODE below), which libc reads only when it needs it.
 */
#ifndef CTR_WRAPPED_IO_H
#define CTR_WRAPPED_IO_H

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* glibc declares the sockaddr arguments as transparent unions under
 * _GNU_SOURCE; a definition must use the same types. */
#ifndef __SOCKADDR_ARG
#define __SOCKADDR_ARG struct sockaddr *restrict
#define __CONST_SOCKADDR_ARG const struct sockaddr *
#endif

/* Whether open(2) flags carry a mode argument (as glibc's __OPEN_NEEDS_MODE). */
#ifdef O_TMPFILE
#define CTR_OPEN_NEEDS_MODE(flags) ((O_CREAT & (flags)) != 0 || (O_TMPFILE & (flags)) == O_TMPFILE)
#else
#define CTR_OPEN_NEEDS_MODE(flags) ((O_CREAT & (flags)) != 0)
#endif

/* CTR_VA_MODE(flags) : the mode argument of the variadic function this is
 * used in, whose last named parameter is `flags`; 0 when flags say there is
 * none (it is then not read at all). */
#define CTR_VA_MODE(flags)                            \
    __extension__({                                   \
        mode_t ctr_mode_ = 0;                         \
        if (CTR_OPEN_NEEDS_MODE(flags)) {             \
            va_list ctr_ap_;                          \
            va_start(ctr_ap_, flags);                 \
            ctr_mode_ = (mode_t)va_arg(ctr_ap_, int); \
            va_end(ctr_ap_);                          \
        }                                             \
        ctr_mode_;                                    \
    })

/* The entry points -D_FORTIFY_SOURCE builds (Debian's packages among them)
 * call instead of the plain ones when a buffer's size is known at compile
 * time: the same calls, with the size to check. */
#define CTR_WRAPPED_FORTIFIED(X)                                                                  \
    X(ssize_t, __read_chk, (int fd, void *buf, size_t n, size_t buflen), (fd, buf, n, buflen), 1) \
    X(ssize_t, __pread_chk, (int fd, void *buf, size_t n, off_t off, size_t buflen),              \
      (fd, buf, n, off, buflen), 1)                                                               \
    X(ssize_t, __pread64_chk, (int fd, void *buf, size_t n, off64_t off, size_t buflen),          \
      (fd, buf, n, off, buflen), 1)                                                               \
    X(ssize_t, __recv_chk, (int fd, void *buf, size_t n, size_t buflen, int flags),               \
      (fd, buf, n, buflen, flags), 1)                                                             \
    X(ssize_t, __recvfrom_chk,                                                                    \
      (int fd, void *restrict buf, size_t n, size_t buflen, int flags, __SOCKADDR_ARG addr,       \
       socklen_t *restrict addrlen),                                                              \
      (fd, buf, n, buflen, flags, addr, addrlen), 1)                                              \
    X(int, __poll_chk, (struct pollfd * fds, nfds_t nfds, int timeout, size_t fdslen),            \
      (fds, nfds, timeout, fdslen), 1)                                                            \
    X(int, __ppoll_chk,                                                                           \
      (struct pollfd * fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *sigmask, \
       size_t fdslen),                                                                            \
      (fds, nfds, timeout, sigmask, fdslen), 1)                                                   \
    X(int, __open_2, (const char *path, int flags), (path, flags), 1)                             \
    X(int, __open64_2, (const char *path, int flags), (path, flags), 1)                           \
    X(int, __openat_2, (int dirfd, const char *path, int flags), (dirfd, path, flags), 1)         \
    X(int, __openat64_2, (int dirfd, const char *path, int flags), (dirfd, path, flags), 1)

#define CTR_WRAPPED_IO(X)                                                                          \
    X(ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n), 1)                               \
    X(ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n), 1)                        \
    X(ssize_t, readv, (int fd, const struct iovec *iov, int iovcnt), (fd, iov, iovcnt), 1)         \
    X(ssize_t, writev, (int fd, const struct iovec *iov, int iovcnt), (fd, iov, iovcnt), 1)        \
    X(ssize_t, pread, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), 1)              \
    X(ssize_t, pread64, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off), 1)          \
    X(ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), 1)       \
    X(ssize_t, pwrite64, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off), 1)   \
    X(ssize_t, recv, (int fd, void *buf, size_t n, int flags), (fd, buf, n, flags), 1)             \
    X(ssize_t, recvfrom,                                                                           \
      (int fd, void *restrict buf, size_t n, int flags, __SOCKADDR_ARG addr,                       \
       socklen_t *restrict addrlen),                                                               \
      (fd, buf, n, flags, addr, addrlen), 1)                                                       \
    X(ssize_t, recvmsg, (int fd, struct msghdr *msg, int flags), (fd, msg, flags), 1)              \
    X(ssize_t, send, (int fd, const void *buf, size_t n, int flags), (fd, buf, n, flags), 1)       \
    X(ssize_t, sendto,                                                                             \
      (int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG addr,                    \
       socklen_t addrlen),                                                                         \
      (fd, buf, n, flags, addr, addrlen), 1)                                                       \
    X(ssize_t, sendmsg, (int fd, const struct msghdr *msg, int flags), (fd, msg, flags), 1)        \
    X(int, accept, (int fd, __SOCKADDR_ARG addr, socklen_t *restrict addrlen),                     \
      (fd, addr, addrlen), 1)                                                                      \
    X(int, accept4, (int fd, __SOCKADDR_ARG addr, socklen_t *restrict addrlen, int flags),         \
      (fd, addr, addrlen, flags), 1)                                                               \
    X(int, connect, (int fd, __CONST_SOCKADDR_ARG addr, socklen_t addrlen), (fd, addr, addrlen),   \
      1)                                                                                           \
    X(int, poll, (struct pollfd * fds, nfds_t nfds, int timeout), (fds, nfds, timeout), 1)         \
    X(int, ppoll,                                                                                  \
      (struct pollfd * fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *sigmask), \
      (fds, nfds, timeout, sigmask), 1)                                                            \
    X(int, select,                                                                                 \
      (int nfds, fd_set *restrict rd, fd_set *restrict wr, fd_set *restrict ex,                    \
       struct timeval *restrict timeout),                                                          \
      (nfds, rd, wr, ex, timeout), 1)                                                              \
    X(int, pselect,                                                                                \
      (int nfds, fd_set *restrict rd, fd_set *restrict wr, fd_set *restrict ex,                    \
       const struct timespec *restrict timeout, const sigset_t *restrict sigmask),                 \
      (nfds, rd, wr, ex, timeout, sigmask), 1)                                                     \
    X(int, epoll_wait, (int epfd, struct epoll_event *ev, int maxev, int timeout),                 \
      (epfd, ev, maxev, timeout), 1)                                                               \
    X(int, epoll_pwait,                                                                            \
      (int epfd, struct epoll_event *ev, int maxev, int timeout, const sigset_t *sigmask),         \
      (epfd, ev, maxev, timeout, sigmask), 1)                                                      \
    CTR_WRAPPED_FORTIFIED(X)                                                                       \
    X(int, fsync, (int fd), (fd), 1)                                                               \
    X(int, fdatasync, (int fd), (fd), 1)                                                           \
    X(int, open, (const char *path, int flags, ...), (path, flags, CTR_VA_MODE(flags)), 1)         \
    X(int, open64, (const char *path, int flags, ...), (path, flags, CTR_VA_MODE(flags)), 1)       \
    X(int, openat, (int dirfd, const char *path, int flags, ...),                                  \
      (dirfd, path, flags, CTR_VA_MODE(flags)), 1)                                                 \
    X(int, openat64, (int dirfd, const char *path, int flags, ...),                                \
      (dirfd, path, flags, CTR_VA_MODE(flags)), 1)                                                 \
    X(int, close, (int fd), (fd), 1)                                                               \
    X(int, socket, (int domain, int type, int protocol), (domain, type, protocol), 1)              \
    X(int, socketpair, (int domain, int type, int protocol, int sv[2]),                            \
      (domain, type, protocol, sv), 1)                                                             \
    X(int, pipe, (int fds[2]), (fds), 1)                                                           \
    X(int, pipe2, (int fds[2], int flags), (fds, flags), 1)                                        \
    X(int, dup, (int fd), (fd), 1)                                                                 \
    X(int, dup2, (int fd, int fd2), (fd, fd2), 1)                                                  \
    X(int, dup3, (int fd, int fd2, int flags), (fd, fd2, flags), 1)                                \
    X(int, close_range, (unsigned first, unsigned last, int flags), (first, last, flags), 0)

#endif
