/* SPDX-License-Identifier: MIT */
/* interpose_file.c - the rarer blocking calls: vectored and batched I/O,
 * splices, file locks, SysV and POSIX IPC, child commands, stdio, and name
 * lookups. Each is recorded as interpose_io.c records read (CTR_IO, io.h):
 * timed, and kept with its caller's stack when it took at least io_min_ns
 * and its descriptor could block.
 *
 * Objects (FORMAT.md §5): the descriptor the call worked on (the one data
 * goes to, for sendfile, splice, tee and copy_file_range); the queue or set
 * id for msgrcv, msgsnd, semop, semtimedop; the FILE's descriptor for stdio
 * (-1 for a stream without one); -1 for system, popen, pclose and the name
 * lookups.
 *
 * glibc's stdio, popen, pclose, system and resolver reach the kernel through
 * its internal functions (__read, __waitpid, __poll), which no wrapper sees,
 * so each is wrapped as a whole: a fgets that waited for a pipe is a wait on
 * the pipe. The stdio calls keep what the FILE's buffer can serve out of the
 * trace: getc and putc whose buffer has a byte or room go straight to the
 * real function (the test glibc's own fast path makes); the others are timed.
 * These calls may make wrapped calls inside (a cookie stream's functions, an
 * NSS module's sockets), which go straight to the real functions while they
 * run (CTR_IO_OUTER): the outer call is the wait.
 */
/* This file defines fcntl, fgets, ...: it must see libc's plain
 * declarations, not fortified inline versions or 64-bit renames. */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS
/* Nor glibc's inline getline (bits/stdio.h, when optimizing), which
 * programs built with optimization have instead of a call: it calls
 * __getdelim, wrapped below. */
#ifndef __NO_INLINE__
#define __NO_INLINE__ 1
#endif

#include "core/common.h"
#include "core/real.h"
#include "core/session.h"
#include "core/thread.h"
#include "ctrace_format.h"
#include "wrap/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

/* Pulls this file in with core/real.c from the static library. */
const int ctr__wrappers_file;

_Static_assert(CTR_REASON_NET_SENDFILE == CTR_REASON_SENDFILE + 1 &&
                   CTR_REASON_NET_FREAD == CTR_REASON_FREAD + 1 &&
                   CTR_REASON_NET_PUTS == CTR_REASON_PUTS + 1,
               "each I/O reason's NET_ variant follows it");

/* ---------------------------------------------------------------------------
 * Vectored, batched and spliced I/O
 * ------------------------------------------------------------------------- */

/* Positioned I/O on a pipe fails (ESPIPE), but the v2 calls with offset -1
 * read and write at the current position, on any descriptor. */
CTR_IO(ssize_t, preadv, (int fd, const struct iovec *iov, int n, off_t off), (fd, iov, n, off), fd,
       CTR_REASON_PREADV, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(ssize_t, preadv64, (int fd, const struct iovec *iov, int n, off64_t off), (fd, iov, n, off),
       fd, CTR_REASON_PREADV, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(ssize_t, pwritev, (int fd, const struct iovec *iov, int n, off_t off), (fd, iov, n, off), fd,
       CTR_REASON_PWRITEV, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(ssize_t, pwritev64, (int fd, const struct iovec *iov, int n, off64_t off), (fd, iov, n, off),
       fd, CTR_REASON_PWRITEV, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(ssize_t, preadv2, (int fd, const struct iovec *iov, int n, off_t off, int flags),
       (fd, iov, n, off, flags), fd, CTR_REASON_PREADV2, 0, NOTHING, NEVER, RWF_NOWAIT &flags,
       NB_FD)
CTR_IO(ssize_t, preadv64v2, (int fd, const struct iovec *iov, int n, off64_t off, int flags),
       (fd, iov, n, off, flags), fd, CTR_REASON_PREADV2, 0, NOTHING, NEVER, RWF_NOWAIT &flags,
       NB_FD)
CTR_IO(ssize_t, pwritev2, (int fd, const struct iovec *iov, int n, off_t off, int flags),
       (fd, iov, n, off, flags), fd, CTR_REASON_PWRITEV2, 0, NOTHING, NEVER, RWF_NOWAIT &flags,
       NB_FD)
CTR_IO(ssize_t, pwritev64v2, (int fd, const struct iovec *iov, int n, off64_t off, int flags),
       (fd, iov, n, off, flags), fd, CTR_REASON_PWRITEV2, 0, NOTHING, NEVER, RWF_NOWAIT &flags,
       NB_FD)

CTR_IO(int, recvmmsg, (int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *tmo),
       (fd, v, n, flags, tmo), fd, CTR_REASON_RECVMMSG, 0, NOTHING, NEVER,
       DONTWAIT(flags) || TS_NOW(tmo), NB_FD)
CTR_IO(int, sendmmsg, (int fd, struct mmsghdr *v, unsigned n, int flags), (fd, v, n, flags), fd,
       CTR_REASON_SENDMMSG, 0, NOTHING, NEVER, DONTWAIT(flags), NB_FD)

/* sendfile is net when it sends to a socket. */
CTR_IO(ssize_t, sendfile, (int out, int in, off_t *off, size_t count), (out, in, off, count), out,
       CTR_REASON_SENDFILE, 1, NOTHING, NEVER, WAITS, NB_FD)
CTR_IO(ssize_t, sendfile64, (int out, int in, off64_t *off, size_t count), (out, in, off, count),
       out, CTR_REASON_SENDFILE, 1, NOTHING, NEVER, WAITS, NB_FD)
CTR_IO(ssize_t, splice,
       (int in, loff_t *offin, int out, loff_t *offout, size_t len, unsigned flags),
       (in, offin, out, offout, len, flags), out, CTR_REASON_SPLICE, 0, NOTHING, NEVER, WAITS,
       ANY_FD)
CTR_IO(ssize_t, tee, (int in, int out, size_t len, unsigned flags), (in, out, len, flags), out,
       CTR_REASON_TEE, 0, NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(ssize_t, vmsplice, (int fd, const struct iovec *iov, size_t n, unsigned flags),
       (fd, iov, n, flags), fd, CTR_REASON_VMSPLICE, 0, NOTHING, NEVER, WAITS, NB_FD)
CTR_IO(ssize_t, copy_file_range,
       (int in, off64_t *offin, int out, off64_t *offout, size_t len, unsigned flags),
       (in, offin, out, offout, len, flags), out, CTR_REASON_COPY_FILE_RANGE, 0, NOTHING, NEVER,
       WAITS, ANY_FD)

CTR_IO(int, epoll_pwait2,
       (int epfd, struct epoll_event *ev, int maxev, const struct timespec *tmo,
        const sigset_t *sigmask),
       (epfd, ev, maxev, tmo, sigmask), epfd, CTR_REASON_EPOLL_PWAIT2, 0, NOTHING, NEVER,
       TS_NOW(tmo), ANY_FD)

/* ---------------------------------------------------------------------------
 * File locks: only the calls told to wait
 * ------------------------------------------------------------------------- */

CTR_IO(int, flock, (int fd, int op), (fd, op), fd, CTR_REASON_FLOCK, 0, NOTHING, NEVER,
       (op & LOCK_NB) != 0, ANY_FD)
CTR_IO(int, lockf, (int fd, int cmd, off_t len), (fd, cmd, len), fd, CTR_REASON_LOCKF, 0, NOTHING,
       NEVER, cmd != F_LOCK, ANY_FD)
CTR_IO(int, lockf64, (int fd, int cmd, off64_t len), (fd, cmd, len), fd, CTR_REASON_LOCKF, 0,
       NOTHING, NEVER, cmd != F_LOCK, ANY_FD)

/* fcntl: only the waiting lock commands are waits; every other command
 * goes straight to the real function, the tracer's own among them. A
 * program that sets a descriptor's flags may have changed its O_NONBLOCK:
 * the next recorded call on it asks the kernel again. */
#define LOCK_WAIT(cmd) ((cmd) == F_SETLKW || (cmd) == F_OFD_SETLKW)
#define FLAGS_SET                      \
    do {                               \
        if (cmd == F_SETFL && rc == 0) \
            ctr__fd_flags_changed(fd); \
    } while (0)
CTR_IO(int, fcntl, (int fd, int cmd, ...), (fd, cmd, CTR_VA_ARG(cmd)), fd, CTR_REASON_FCNTL, 0,
       FLAGS_SET, NEVER, !LOCK_WAIT(cmd), ANY_FD)
CTR_IO(int, fcntl64, (int fd, int cmd, ...), (fd, cmd, CTR_VA_ARG(cmd)), fd, CTR_REASON_FCNTL, 0,
       FLAGS_SET, NEVER, !LOCK_WAIT(cmd), ANY_FD)

/* ---------------------------------------------------------------------------
 * SysV and POSIX IPC
 * ------------------------------------------------------------------------- */

CTR_IO(ssize_t, msgrcv, (int id, void *msg, size_t size, long type, int flags),
       (id, msg, size, type, flags), id, CTR_REASON_MSGRCV, 0, NOTHING, NEVER,
       (flags & IPC_NOWAIT) != 0, ANY_FD)
CTR_IO(int, msgsnd, (int id, const void *msg, size_t size, int flags), (id, msg, size, flags), id,
       CTR_REASON_MSGSND, 0, NOTHING, NEVER, (flags & IPC_NOWAIT) != 0, ANY_FD)
CTR_IO(int, semop, (int id, struct sembuf *ops, size_t n), (id, ops, n), id, CTR_REASON_SEMOP, 0,
       NOTHING, NEVER, WAITS, ANY_FD)
CTR_IO(int, semtimedop, (int id, struct sembuf *ops, size_t n, const struct timespec *tmo),
       (id, ops, n, tmo), id, CTR_REASON_SEMTIMEDOP, 0, NOTHING, NEVER, TS_NOW(tmo), ANY_FD)
/* A message queue descriptor is a descriptor: its O_NONBLOCK decides. */
CTR_IO(ssize_t, mq_receive, (mqd_t q, char *msg, size_t len, unsigned *prio), (q, msg, len, prio),
       q, CTR_REASON_MQ_RECEIVE, 0, NOTHING, NEVER, WAITS, NB_FD)
CTR_IO(int, mq_send, (mqd_t q, const char *msg, size_t len, unsigned prio), (q, msg, len, prio), q,
       CTR_REASON_MQ_SEND, 0, NOTHING, NEVER, WAITS, NB_FD)
CTR_IO(ssize_t, mq_timedreceive,
       (mqd_t q, char *restrict msg, size_t len, unsigned *restrict prio,
        const struct timespec *restrict tmo),
       (q, msg, len, prio, tmo), q, CTR_REASON_MQ_TIMEDRECEIVE, 0, NOTHING, NEVER, WAITS, NB_FD)
CTR_IO(int, mq_timedsend,
       (mqd_t q, const char *msg, size_t len, unsigned prio, const struct timespec *tmo),
       (q, msg, len, prio, tmo), q, CTR_REASON_MQ_TIMEDSEND, 0, NOTHING, NEVER, WAITS, NB_FD)

/* ---------------------------------------------------------------------------
 * Child commands and name lookups: waits of their own, made of calls
 * inside that no wrapper sees
 * ------------------------------------------------------------------------- */

CTR_IO_OUTER(int, system, (const char *cmd), (cmd), -1, CTR_REASON_SYSTEM, 0, WAITS, ANY_FD)
CTR_IO_OUTER(FILE *, popen, (const char *cmd, const char *mode), (cmd, mode), -1, CTR_REASON_POPEN,
             0, WAITS, ANY_FD)
CTR_IO_OUTER(int, pclose, (FILE * f), (f), -1, CTR_REASON_PCLOSE, 0, WAITS, ANY_FD)

CTR_IO_OUTER(int, getaddrinfo,
             (const char *restrict node, const char *restrict service,
              const struct addrinfo *restrict hints, struct addrinfo **restrict res),
             (node, service, hints, res), -1, CTR_REASON_GETADDRINFO, 0, WAITS, ANY_FD)
CTR_IO_OUTER(int, getnameinfo,
             (const struct sockaddr *restrict sa, socklen_t salen, char *restrict host,
              socklen_t hostlen, char *restrict serv, socklen_t servlen, int flags),
             (sa, salen, host, hostlen, serv, servlen, flags), -1, CTR_REASON_GETNAMEINFO, 0, WAITS,
             ANY_FD)
CTR_IO_OUTER(struct hostent *, gethostbyname, (const char *name), (name), -1,
             CTR_REASON_GETHOSTBYNAME, 0, WAITS, ANY_FD)
CTR_IO_OUTER(struct hostent *, gethostbyname2, (const char *name, int af), (name, af), -1,
             CTR_REASON_GETHOSTBYNAME2, 0, WAITS, ANY_FD)
CTR_IO_OUTER(int, gethostbyname_r,
             (const char *restrict name, struct hostent *restrict ret, char *restrict buf,
              size_t len, struct hostent **restrict result, int *restrict err),
             (name, ret, buf, len, result, err), -1, CTR_REASON_GETHOSTBYNAME_R, 0, WAITS, ANY_FD)
CTR_IO_OUTER(int, gethostbyname2_r,
             (const char *restrict name, int af, struct hostent *restrict ret, char *restrict buf,
              size_t len, struct hostent **restrict result, int *restrict err),
             (name, af, ret, buf, len, result, err), -1, CTR_REASON_GETHOSTBYNAME2_R, 0, WAITS,
             ANY_FD)
CTR_IO_OUTER(struct hostent *, gethostbyaddr, (const void *addr, socklen_t len, int type),
             (addr, len, type), -1, CTR_REASON_GETHOSTBYADDR, 0, WAITS, ANY_FD)

/* ---------------------------------------------------------------------------
 * stdio: a wait on the FILE's descriptor, net on a socket
 * ------------------------------------------------------------------------- */

/* The FILE's descriptor, read from glibc's public layout (fileno would set
 * errno on a stream without one); -1 for none. */
#ifdef __GLIBC__
#define FILE_FD(f) ((f) ? (f)->_fileno : -1)
/* glibc's own fast paths of getc and putc: a byte in the read buffer, room
 * in the write buffer. */
#define READ_BUFFERED(f) ((f)->_IO_read_ptr < (f)->_IO_read_end)
#define WRITE_BUFFERED(f) ((f)->_IO_write_ptr < (f)->_IO_write_end)
#else
#define FILE_FD(f) -1
#define READ_BUFFERED(f) 0
#define WRITE_BUFFERED(f) 0
#endif

/* glibc declares the fortified entry points only to _FORTIFY_SOURCE builds. */
CTR_EXPORT size_t __fread_chk(void *restrict p, size_t plen, size_t size, size_t n,
                              FILE *restrict f);
CTR_EXPORT char *__fgets_chk(char *restrict s, size_t size, int n, FILE *restrict f);

CTR_IO_OUTER(size_t, fread, (void *restrict p, size_t size, size_t n, FILE *restrict f),
             (p, size, n, f), FILE_FD(f), CTR_REASON_FREAD, 1, WAITS, NB_FD)
CTR_IO_OUTER(size_t, __fread_chk,
             (void *restrict p, size_t plen, size_t size, size_t n, FILE *restrict f),
             (p, plen, size, n, f), FILE_FD(f), CTR_REASON_FREAD, 1, WAITS, NB_FD)
CTR_IO_OUTER(size_t, fwrite, (const void *restrict p, size_t size, size_t n, FILE *restrict f),
             (p, size, n, f), FILE_FD(f), CTR_REASON_FWRITE, 1, WAITS, NB_FD)
CTR_IO_OUTER(char *, fgets, (char *restrict s, int n, FILE *restrict f), (s, n, f), FILE_FD(f),
             CTR_REASON_FGETS, 1, WAITS, NB_FD)
CTR_IO_OUTER(char *, __fgets_chk, (char *restrict s, size_t size, int n, FILE *restrict f),
             (s, size, n, f), FILE_FD(f), CTR_REASON_FGETS, 1, WAITS, NB_FD)
CTR_IO_OUTER(int, fputs, (const char *restrict s, FILE *restrict f), (s, f), FILE_FD(f),
             CTR_REASON_FPUTS, 1, WAITS, NB_FD)
CTR_IO_OUTER(ssize_t, getline, (char **restrict line, size_t *restrict n, FILE *restrict f),
             (line, n, f), FILE_FD(f), CTR_REASON_GETLINE, 1, WAITS, NB_FD)
CTR_IO_OUTER(ssize_t, getdelim,
             (char **restrict line, size_t *restrict n, int delim, FILE *restrict f),
             (line, n, delim, f), FILE_FD(f), CTR_REASON_GETDELIM, 1, WAITS, NB_FD)
/* getline, as optimized programs call it (glibc's inline getline). */
CTR_EXPORT ssize_t __getdelim(char **restrict line, size_t *restrict n, int delim,
                              FILE *restrict f);
CTR_IO_OUTER(ssize_t, __getdelim,
             (char **restrict line, size_t *restrict n, int delim, FILE *restrict f),
             (line, n, delim, f), FILE_FD(f),
             delim == '\n' ? CTR_REASON_GETLINE : CTR_REASON_GETDELIM, 1, WAITS, NB_FD)
CTR_IO_OUTER(int, fgetc, (FILE * f), (f), FILE_FD(f), CTR_REASON_FGETC, 1, READ_BUFFERED(f), NB_FD)
CTR_IO_OUTER(int, getc, (FILE * f), (f), FILE_FD(f), CTR_REASON_GETC, 1, READ_BUFFERED(f), NB_FD)
CTR_IO_OUTER(int, fputc, (int c, FILE *f), (c, f), FILE_FD(f), CTR_REASON_FPUTC, 1,
             WRITE_BUFFERED(f), NB_FD)
CTR_IO_OUTER(int, putc, (int c, FILE *f), (c, f), FILE_FD(f), CTR_REASON_PUTC, 1, WRITE_BUFFERED(f),
             NB_FD)
CTR_IO_OUTER(int, fflush, (FILE * f), (f), FILE_FD(f), CTR_REASON_FFLUSH, 1, WAITS, NB_FD)
CTR_IO_OUTER(int, puts, (const char *s), (s), FILE_FD(stdout), CTR_REASON_PUTS, 1, WAITS, NB_FD)
