/* SPDX-License-Identifier: MIT */
/* interpose_futex.c - the wrapper of syscall(2): futex waits and wakes, and
 * the blocking calls a program makes by number rather than through libc.
 *
 * A hand-written lock (and a library with its own) waits with
 * syscall(SYS_futex, word, FUTEX_WAIT, ...) and wakes with FUTEX_WAKE: to
 * libc that is no wait at all, so without this wrapper the blocked thread
 * would look like it ran. A futex wait is recorded as a mutex wait is
 * (Block on the futex word as the object, the real call, Unblock: wait.c),
 * and every call that can let a waiter of a word go (FUTEX_WAKE,
 * FUTEX_WAKE_BITSET, FUTEX_WAKE_OP on both of its words, FUTEX_REQUEUE,
 * FUTEX_CMP_REQUEUE, FUTEX_CMP_REQUEUE_PI, FUTEX_UNLOCK_PI) writes a Release
 * of the word first. A wake is already the slow path of such a lock (its
 * fast path is an atomic on the word alone), so no waiter test is needed.
 * The analyzer then gives a futex lock the sync profile, the blame profile
 * and the sched time of a pthread mutex. futex_waitv waits on several
 * words: its object is the first.
 *
 * Any other number that can block (read, poll, clock_nanosleep, wait4, flock,
 * io_uring_enter waiting for completions, ...) is recorded as the wrapped
 * libc call would be: timed, and kept if it took
 * at least io_min_ns (interpose_io.c), under the same reason. Every other
 * number goes straight to the real syscall(). The real function reads six
 * arguments after the number whatever the call takes (glibc's does the
 * same, from registers and the caller's frame), so this one does too.
 */
#include "core/clock.h"
#include "core/common.h"
#include "core/emit.h"
#include "core/fdclass.h"
#include "core/real.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "ctrace_format.h"
#include "wrap/wait.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>

/* Pulls this file in with core/real.c from the static library. */
const int ctr__wrappers_futex;

#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif
#if !defined(SYS_futex_waitv) && defined(__x86_64__)
#define SYS_futex_waitv 449
#endif

/* The kernel's struct futex_waitv (linux/futex.h, 5.16): the word is uaddr. */
struct waitv_entry {
    uint64_t val, uaddr;
    uint32_t flags, reserved;
};

static int do_syscall(struct ctr_call *c)
{
    const long *a = c->args;
    return (int)ctr__real.syscall((long)(intptr_t)c->ret, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static const struct ctr_waitop futex_wait_op = {CTR_REASON_FUTEX_WAIT, NULL, do_syscall, NULL};
static const struct ctr_waitop futex_lock_pi_op = {CTR_REASON_FUTEX_LOCK_PI, NULL, do_syscall,
                                                   NULL};
static const struct ctr_waitop futex_waitv_op = {CTR_REASON_FUTEX_WAITV, NULL, do_syscall, NULL};

/* The call by number nr with arguments a, recorded as a wait of op on word. */
static CTR_WRAPPER_TEXT long wait_by_number(const struct ctr_waitop *op, long nr, const long *a,
                                            const void *word)
{
    struct ctr_call c = {.ret = (void **)(intptr_t)nr};
    memcpy(c.args, a, sizeof(c.args));
    return ctr__wait_traced(op, &c, word);
}

/* The wait a futex call of operation `op` makes; NULL for one that waits
 * for nothing. */
static const struct ctr_waitop *futex_wait_of(long op)
{
    switch (op & FUTEX_CMD_MASK) {
    case FUTEX_WAIT:
    case FUTEX_WAIT_BITSET:
    case FUTEX_WAIT_REQUEUE_PI:
        return &futex_wait_op;
    case FUTEX_LOCK_PI:
    case FUTEX_LOCK_PI2:
        return &futex_lock_pi_op;
    default:
        return NULL;
    }
}

/* The futex call of `a` (word, op, val, timeout or val2, word2, val3),
 * recorded as a wait or after a release, or made as it is. */
static CTR_WRAPPER_TEXT long futex_traced(long nr, const long *a)
{
    const void *word = (const void *)a[0];
    const struct ctr_waitop *wait = futex_wait_of(a[1]);
    if (wait)
        return wait_by_number(wait, nr, a, word);
    switch (a[1] & FUTEX_CMD_MASK) {
    case FUTEX_WAKE_OP: /* wakes waiters of both words */
        ctr__note_release((const void *)a[4]);
        ctr__note_release(word);
        break;
    case FUTEX_WAKE:
    case FUTEX_WAKE_BITSET:
    case FUTEX_REQUEUE:
    case FUTEX_CMP_REQUEUE:
    case FUTEX_CMP_REQUEUE_PI:
    case FUTEX_UNLOCK_PI:
        ctr__note_release(word);
        break;
    default:
        break;
    }
    return ctr__real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

#ifdef SYS_futex_waitv
static CTR_WRAPPER_TEXT long futex_waitv_traced(long nr, const long *a)
{
    const struct waitv_entry *w = (const struct waitv_entry *)a[0];
    const void *word = w && a[1] > 0 ? (const void *)(uintptr_t)w[0].uaddr : NULL;
    return wait_by_number(&futex_waitv_op, nr, a, word);
}
#endif

/* ---------------------------------------------------------------------------
 * Other blocking calls by number: as their libc wrappers record them
 * ------------------------------------------------------------------------- */

/* What a blocking call by number is recorded as: its reason, CTR_IO_* rules
 * and the descriptor (or pid, or signal) that is its object. */
struct by_number {
    enum ctr_reason reason;
    int rules, object;
};

#define FD_CALL(r, by_fd, nb)                               \
    (struct by_number)                                      \
    {                                                       \
        (r), ((by_fd) ? CTR_IO_BY_FD : 0) | (nb), (int)a[0] \
    }

/* Fills *w for a call that can block; 0 for every other number. Reads the
 * program's memory (poll's first descriptor) only with may_read. */
static int blocking_call(long nr, const long *a, int may_read, struct by_number *w)
{
    switch (nr) {
    case SYS_read:
        *w = FD_CALL(CTR_REASON_READ, 1, CTR_IO_NB_FD);
        return 1;
    case SYS_write:
        *w = FD_CALL(CTR_REASON_WRITE, 1, CTR_IO_NB_FD);
        return 1;
    case SYS_readv:
        *w = FD_CALL(CTR_REASON_READV, 1, CTR_IO_NB_FD);
        return 1;
    case SYS_writev:
        *w = FD_CALL(CTR_REASON_WRITEV, 1, CTR_IO_NB_FD);
        return 1;
    case SYS_pread64:
        *w = FD_CALL(CTR_REASON_PREAD, 0, 0);
        return 1;
    case SYS_pwrite64:
        *w = FD_CALL(CTR_REASON_PWRITE, 0, 0);
        return 1;
    case SYS_recvfrom:
        *w = FD_CALL(CTR_REASON_RECVFROM, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_sendto:
        *w = FD_CALL(CTR_REASON_SENDTO, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_recvmsg:
        *w = FD_CALL(CTR_REASON_RECVMSG, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_sendmsg:
        *w = FD_CALL(CTR_REASON_SENDMSG, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_accept:
        *w = FD_CALL(CTR_REASON_ACCEPT, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_accept4:
        *w = FD_CALL(CTR_REASON_ACCEPT4, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_connect:
        *w = FD_CALL(CTR_REASON_CONNECT, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_epoll_wait:
        *w = FD_CALL(CTR_REASON_EPOLL_WAIT, 0, 0);
        return 1;
    case SYS_epoll_pwait:
        *w = FD_CALL(CTR_REASON_EPOLL_PWAIT, 0, 0);
        return 1;
    case SYS_fsync:
        *w = FD_CALL(CTR_REASON_FSYNC, 0, 0);
        return 1;
    case SYS_fdatasync:
        *w = FD_CALL(CTR_REASON_FDATASYNC, 0, 0);
        return 1;
    case SYS_ppoll:
#ifdef SYS_poll
    case SYS_poll:
#endif
    {
        const struct pollfd *fds = (const struct pollfd *)a[0];
        int first = may_read && a[1] > 0 && fds ? fds[0].fd : -1;
        *w = (struct by_number){nr == SYS_ppoll ? CTR_REASON_PPOLL : CTR_REASON_POLL, 0, first};
        return 1;
    }
    case SYS_pselect6:
#ifdef SYS_select
    case SYS_select:
#endif
        *w = (struct by_number){nr == SYS_pselect6 ? CTR_REASON_PSELECT : CTR_REASON_SELECT, 0,
                                (int)a[0] - 1};
        return 1;
    case SYS_wait4:
        *w = (struct by_number){CTR_REASON_WAIT4, 0, (int)a[0]};
        return 1;
    case SYS_waitid:
        *w = (struct by_number){CTR_REASON_WAITID, 0, (int)a[1]};
        return 1;
    case SYS_nanosleep:
        *w = (struct by_number){CTR_REASON_NANOSLEEP, 0, 0};
        return 1;
    case SYS_clock_nanosleep:
        *w = (struct by_number){CTR_REASON_CLOCK_NANOSLEEP, 0, 0};
        return 1;
    case SYS_rt_sigtimedwait:
        *w = (struct by_number){CTR_REASON_SIGTIMEDWAIT, 0, 0};
        return 1;
    case SYS_rt_sigsuspend:
        *w = (struct by_number){CTR_REASON_SIGSUSPEND, 0, 0};
        return 1;
    case SYS_preadv:
        *w = FD_CALL(CTR_REASON_PREADV, 0, 0);
        return 1;
    case SYS_pwritev:
        *w = FD_CALL(CTR_REASON_PWRITEV, 0, 0);
        return 1;
    case SYS_preadv2:
        *w = FD_CALL(CTR_REASON_PREADV2, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_pwritev2:
        *w = FD_CALL(CTR_REASON_PWRITEV2, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_recvmmsg:
        *w = FD_CALL(CTR_REASON_RECVMMSG, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_sendmmsg:
        *w = FD_CALL(CTR_REASON_SENDMMSG, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_sendfile:
        *w = FD_CALL(CTR_REASON_SENDFILE, 1, CTR_IO_NB_FD);
        return 1;
    case SYS_vmsplice:
        *w = FD_CALL(CTR_REASON_VMSPLICE, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_splice:
    case SYS_copy_file_range:
        *w = (struct by_number){nr == SYS_splice ? CTR_REASON_SPLICE : CTR_REASON_COPY_FILE_RANGE,
                                0, (int)a[2]};
        return 1;
    case SYS_tee:
        *w = (struct by_number){CTR_REASON_TEE, 0, (int)a[1]};
        return 1;
    case SYS_flock:
        *w = FD_CALL(CTR_REASON_FLOCK, 0, 0);
        return 1;
    case SYS_fcntl:
        if (a[1] != F_SETLKW && a[1] != F_OFD_SETLKW)
            return 0;
        *w = FD_CALL(CTR_REASON_FCNTL, 0, 0);
        return 1;
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
        *w = FD_CALL(CTR_REASON_EPOLL_PWAIT2, 0, 0);
        return 1;
#endif
    case SYS_msgrcv:
        *w = FD_CALL(CTR_REASON_MSGRCV, 0, 0);
        return 1;
    case SYS_msgsnd:
        *w = FD_CALL(CTR_REASON_MSGSND, 0, 0);
        return 1;
    case SYS_semop:
        *w = FD_CALL(CTR_REASON_SEMOP, 0, 0);
        return 1;
    case SYS_semtimedop:
        *w = FD_CALL(CTR_REASON_SEMTIMEDOP, 0, 0);
        return 1;
    case SYS_mq_timedreceive:
        *w = FD_CALL(CTR_REASON_MQ_TIMEDRECEIVE, 0, CTR_IO_NB_FD);
        return 1;
    case SYS_mq_timedsend:
        *w = FD_CALL(CTR_REASON_MQ_TIMEDSEND, 0, CTR_IO_NB_FD);
        return 1;
#ifdef SYS_io_uring_enter
    case SYS_io_uring_enter:
        /* Waits only when asked for completions (IORING_ENTER_GETEVENTS). */
        if (!(a[3] & 1) || a[2] == 0)
            return 0;
        *w = FD_CALL(CTR_REASON_IO_URING_ENTER, 0, 0);
        return 1;
#endif
#ifdef SYS_pause
    case SYS_pause:
        *w = (struct by_number){CTR_REASON_PAUSE, 0, 0};
        return 1;
#endif
    default:
        return 0;
    }
}

static CTR_WRAPPER_TEXT long blocking_traced(struct ctr_thread *t, long nr, const long *a,
                                             const struct by_number *w)
{
    uint64_t start = ctr__ticks();
    CTR_CALL_GUARD(g, t);
    g.marked = ctr__io_begin(t, start, w->reason, w->rules, w->object,
                             (uintptr_t)__builtin_frame_address(0));
    long rc = ctr__real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    ctr__io_returned(t, &g, start, w->reason, w->rules, w->object);
    return rc;
}

CTR_EXPORT CTR_WRAPPER_TEXT long syscall(long nr, ...)
{
    va_list ap;
    long a[6];
    va_start(ap, nr);
    ctr__syscall_args(ap, a);
    va_end(ap);
    if (CTR_LIKELY(!ctr__tracing()))
        return ctr__real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    if (nr == SYS_futex)
        return futex_traced(nr, a);
#ifdef SYS_futex_waitv
    if (nr == SYS_futex_waitv)
        return futex_waitv_traced(nr, a);
#endif
    struct by_number w;
    struct ctr_thread *t;
    if (!blocking_call(nr, a, 1, &w) || !(t = ctr__self_traced_keeping_errno()))
        return ctr__real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    return blocking_traced(t, nr, a, &w);
}

int ctr__syscall_wait(long nr, const long *a, uint8_t *reason, uint64_t *object)
{
    struct by_number w;
    if (nr == SYS_futex) {
        const struct ctr_waitop *wait = futex_wait_of(a[1]);
        if (!wait)
            return 0;
        *reason = (uint8_t)wait->reason;
        *object = (uint64_t)a[0]; /* the word */
        return 1;
    }
#ifdef SYS_futex_waitv
    if (nr == SYS_futex_waitv) {
        *reason = CTR_REASON_FUTEX_WAITV;
        *object = 0; /* the first word is in the list, not read here */
        return 1;
    }
#endif
    if (!blocking_call(nr, a, 0, &w))
        return 0;
    *reason = (uint8_t)ctr__io_reason(w.reason, w.rules, w.object);
    *object = (uint64_t)(int64_t)w.object;
    return 1;
}
