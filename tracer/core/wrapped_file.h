/* SPDX-License-Identifier: MIT */
/* wrapped_file.h - the rarer blocking calls libctrace wraps: vectored and
 * batched I/O, splices, file locks, SysV and POSIX IPC, child commands,
 * stdio on descriptors that block, and name lookups. See real.h for the
 * X-macro's columns, wrap/interpose_file.c for the wrappers.
 *
 * The 64-bit-offset names (preadv64, sendfile64, lockf64, fcntl64) are
 * symbols of their own in glibc, which -D_FILE_OFFSET_BITS=64 programs
 * call: both names are wrapped. fcntl is variadic: its real function is
 * always called with the one argument glibc's reads (CTR_VA_ARG), a pointer
 * or an int, passed in the same register. The fortified stdio entry points
 * (__fgets_chk, __fread_chk) are what -D_FORTIFY_SOURCE builds call.
 */
#ifndef CTR_WRAPPED_FILE_H
#define CTR_WRAPPED_FILE_H

#include <mqueue.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* CTR_VA_ARG(last) : the one argument after `last` of the variadic function
 * this is used in, as glibc's fcntl reads it. */
#define CTR_VA_ARG(last)                          \
    __extension__({                               \
        va_list ctr_ap_;                          \
        va_start(ctr_ap_, last);                  \
        void *ctr_arg_ = va_arg(ctr_ap_, void *); \
        va_end(ctr_ap_);                          \
        ctr_arg_;                                 \
    })

/* clang-format off */
#define CTR_WRAPPED_FILE(X)                                                                        \
    X(ssize_t, preadv, (int fd, const struct iovec *iov, int n, off_t off), (fd, iov, n, off), 1)  \
    X(ssize_t, preadv64, (int fd, const struct iovec *iov, int n, off64_t off), (fd, iov, n, off), 1) \
    X(ssize_t, pwritev, (int fd, const struct iovec *iov, int n, off_t off), (fd, iov, n, off), 1) \
    X(ssize_t, pwritev64, (int fd, const struct iovec *iov, int n, off64_t off), (fd, iov, n, off), 1) \
    X(ssize_t, preadv2, (int fd, const struct iovec *iov, int n, off_t off, int flags),           \
      (fd, iov, n, off, flags), 0)                                                                 \
    X(ssize_t, preadv64v2, (int fd, const struct iovec *iov, int n, off64_t off, int flags),      \
      (fd, iov, n, off, flags), 0)                                                                 \
    X(ssize_t, pwritev2, (int fd, const struct iovec *iov, int n, off_t off, int flags),          \
      (fd, iov, n, off, flags), 0)                                                                 \
    X(ssize_t, pwritev64v2, (int fd, const struct iovec *iov, int n, off64_t off, int flags),     \
      (fd, iov, n, off, flags), 0)                                                                 \
    X(int, recvmmsg, (int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *tmo),    \
      (fd, v, n, flags, tmo), 1)                                                                   \
    X(int, sendmmsg, (int fd, struct mmsghdr *v, unsigned n, int flags), (fd, v, n, flags), 1)    \
    X(ssize_t, sendfile, (int out, int in, off_t *off, size_t count), (out, in, off, count), 1)   \
    X(ssize_t, sendfile64, (int out, int in, off64_t *off, size_t count), (out, in, off, count), 1) \
    X(ssize_t, splice, (int in, loff_t *offin, int out, loff_t *offout, size_t len, unsigned flags), \
      (in, offin, out, offout, len, flags), 1)                                                     \
    X(ssize_t, tee, (int in, int out, size_t len, unsigned flags), (in, out, len, flags), 1)      \
    X(ssize_t, vmsplice, (int fd, const struct iovec *iov, size_t n, unsigned flags),             \
      (fd, iov, n, flags), 1)                                                                      \
    X(ssize_t, copy_file_range,                                                                    \
      (int in, off64_t *offin, int out, off64_t *offout, size_t len, unsigned flags),             \
      (in, offin, out, offout, len, flags), 0)                                                     \
    X(int, flock, (int fd, int op), (fd, op), 1)                                                   \
    X(int, lockf, (int fd, int cmd, off_t len), (fd, cmd, len), 1)                                 \
    X(int, lockf64, (int fd, int cmd, off64_t len), (fd, cmd, len), 1)                             \
    X(int, fcntl, (int fd, int cmd, ...), (fd, cmd, CTR_VA_ARG(cmd)), 1)                           \
    X(int, fcntl64, (int fd, int cmd, ...), (fd, cmd, CTR_VA_ARG(cmd)), 0)                         \
    X(int, epoll_pwait2,                                                                           \
      (int epfd, struct epoll_event *ev, int maxev, const struct timespec *tmo,                   \
       const sigset_t *sigmask),                                                                   \
      (epfd, ev, maxev, tmo, sigmask), 0)                                                          \
    X(ssize_t, msgrcv, (int id, void *msg, size_t size, long type, int flags),                    \
      (id, msg, size, type, flags), 1)                                                             \
    X(int, msgsnd, (int id, const void *msg, size_t size, int flags), (id, msg, size, flags), 1)  \
    X(int, semop, (int id, struct sembuf *ops, size_t n), (id, ops, n), 1)                        \
    X(int, semtimedop, (int id, struct sembuf *ops, size_t n, const struct timespec *tmo),        \
      (id, ops, n, tmo), 1)                                                                        \
    X(ssize_t, mq_receive, (mqd_t q, char *msg, size_t len, unsigned *prio), (q, msg, len, prio), 0) \
    X(int, mq_send, (mqd_t q, const char *msg, size_t len, unsigned prio), (q, msg, len, prio), 0) \
    X(ssize_t, mq_timedreceive,                                                                    \
      (mqd_t q, char *restrict msg, size_t len, unsigned *restrict prio,                           \
       const struct timespec *restrict tmo),                                                       \
      (q, msg, len, prio, tmo), 0)                                                                 \
    X(int, mq_timedsend,                                                                           \
      (mqd_t q, const char *msg, size_t len, unsigned prio, const struct timespec *tmo),           \
      (q, msg, len, prio, tmo), 0)                                                                 \
    X(int, system, (const char *cmd), (cmd), 1)                                                    \
    X(FILE *, popen, (const char *cmd, const char *mode), (cmd, mode), 1)                          \
    X(int, pclose, (FILE * f), (f), 1)                                                             \
    X(int, getaddrinfo,                                                                            \
      (const char *restrict node, const char *restrict service,                                    \
       const struct addrinfo *restrict hints, struct addrinfo **restrict res),                     \
      (node, service, hints, res), 1)                                                              \
    X(int, getnameinfo,                                                                            \
      (const struct sockaddr *restrict sa, socklen_t salen, char *restrict host,                   \
       socklen_t hostlen, char *restrict serv, socklen_t servlen, int flags),                      \
      (sa, salen, host, hostlen, serv, servlen, flags), 1)                                         \
    X(struct hostent *, gethostbyname, (const char *name), (name), 1)                              \
    X(struct hostent *, gethostbyname2, (const char *name, int af), (name, af), 1)                 \
    X(int, gethostbyname_r,                                                                        \
      (const char *restrict name, struct hostent *restrict ret, char *restrict buf, size_t len,   \
       struct hostent **restrict result, int *restrict err),                                       \
      (name, ret, buf, len, result, err), 1)                                                       \
    X(int, gethostbyname2_r,                                                                       \
      (const char *restrict name, int af, struct hostent *restrict ret, char *restrict buf,       \
       size_t len, struct hostent **restrict result, int *restrict err),                           \
      (name, af, ret, buf, len, result, err), 1)                                                   \
    X(struct hostent *, gethostbyaddr, (const void *addr, socklen_t len, int type),               \
      (addr, len, type), 1)                                                                        \
    CTR_WRAPPED_STDIO(X)

#define CTR_WRAPPED_STDIO(X)                                                                       \
    X(size_t, fread, (void *restrict p, size_t size, size_t n, FILE *restrict f), (p, size, n, f), 1) \
    X(size_t, __fread_chk, (void *restrict p, size_t plen, size_t size, size_t n, FILE *restrict f), \
      (p, plen, size, n, f), 1)                                                                    \
    X(size_t, fwrite, (const void *restrict p, size_t size, size_t n, FILE *restrict f),          \
      (p, size, n, f), 1)                                                                          \
    X(char *, fgets, (char *restrict s, int n, FILE *restrict f), (s, n, f), 1)                   \
    X(char *, __fgets_chk, (char *restrict s, size_t size, int n, FILE *restrict f),              \
      (s, size, n, f), 1)                                                                          \
    X(int, fputs, (const char *restrict s, FILE *restrict f), (s, f), 1)                          \
    X(ssize_t, getline, (char **restrict line, size_t *restrict n, FILE *restrict f), (line, n, f), 1) \
    X(ssize_t, getdelim, (char **restrict line, size_t *restrict n, int delim, FILE *restrict f), \
      (line, n, delim, f), 1)                                                                      \
    X(ssize_t, __getdelim, (char **restrict line, size_t *restrict n, int delim, FILE *restrict f), \
      (line, n, delim, f), 1)                                                                      \
    X(int, fgetc, (FILE * f), (f), 1)                                                              \
    X(int, getc, (FILE * f), (f), 1)                                                               \
    X(int, fputc, (int c, FILE *f), (c, f), 1)                                                     \
    X(int, putc, (int c, FILE *f), (c, f), 1)                                                      \
    X(int, fflush, (FILE * f), (f), 1)                                                             \
    X(int, puts, (const char *s), (s), 1)
/* clang-format on */

#endif
