/* SPDX-License-Identifier: MIT */
/* fdguard.c - the tracer's own descriptors, kept out of the program's way.
 *
 * The program's descriptors are its own: it picks numbers (`exec 3>file`,
 * dup2(fd, 5)), closes ranges of them (daemons close everything >= 3), and
 * expects the numbers it gets from open() to be those it would get untraced.
 * So every descriptor the tracer makes (the trace file, a dump, a perf_event
 * ring, libunwind's validation pipe and the files it opens) is adopted the
 * moment it exists:
 *   - moved to the top of the descriptor range (just under RLIMIT_NOFILE,
 *     at most 65536), close-on-exec, and the low number closed at once;
 *   - marked in the descriptor table (fdclass.c, bit CTR_FD_TRACER) and
 *     recorded with where the tracer keeps its number (the holder).
 * The wrappers then keep the program and the tracer apart:
 *   - close, close_range and closefrom by the program pass over the tracer's
 *     descriptors: the program gets what it would untraced (EBADF for a
 *     number it never opened; success for a range), and the trace survives;
 *   - dup2/dup3 onto a tracer descriptor first move it elsewhere
 *     (ctr__fd_evict) and update its holder, so the program gets its number;
 *     one used as the source is EBADF, as untraced;
 *   - libunwind (called by stack.c, its calls recognised by their return
 *     address) may touch only tracer descriptors: its pipe and files are
 *     adopted, and its read/write/close of any other number fail with EBADF
 *     without touching it (a pipe the program took over is re-made by
 *     libunwind itself when its read fails).
 *
 * Moving a descriptor while the tracer writes to it would send trace bytes
 * into the program's file. Users of tracer descriptors (the collector's and
 * a dump's writes, libunwind, perf ioctls) hold a use (ctr__fd_use_begin/
 * end): a count that a move waits to see drop to zero after raising
 * `moving`, which new users then wait out (libunwind's are skipped instead:
 * the stack falls back to frame pointers). Both sides are seq_cst RMW or
 * loads, so either the user sees `moving` or the mover sees the user. The
 * registry is under a lock that close_range also holds while it works
 * around the tracer's numbers, so none appears in the middle.
 *
 * Not covered: raw syscalls (syscall(SYS_close, ...)), fcntl(F_DUPFD) with
 * a tracer descriptor as source, and close_range's CLOSE_RANGE_UNSHARE
 * split into several calls (the first one unshares). A descriptor closed by
 * a raw syscall is noticed when the tracer gets its number again (its holder
 * then reads -1), and before every write of the trace or a dump
 * (ctr__fd_is: the number must still refer to the file it did), so the
 * trace never goes into the program's file: the writer then opens its file
 * again by its path (sink.c) after ctr__fd_lost() has given up every number
 * found closed, so that the new descriptor cannot land on a number that
 * libunwind or another holder still uses.
 */
#include "core/fdguard.h"

#include "core/fdclass.h"
#include "core/lock.h"
#include "core/real.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

struct owned {
    int fd;
    int partner;         /* the other end of a pipe whose holder is unknown, or -1 */
    _Atomic int *holder; /* where the tracer keeps the number; NULL: libunwind's */
};

static struct {
    struct ctr_lock lock;
    struct owned *v;
    size_t n, cap;
} R;

static _Atomic uint32_t users; /* holders of a use */
static _Atomic int moving;     /* a move is waiting for users to leave */

_Atomic uintptr_t ctr__unwinder_lo, ctr__unwinder_hi;

/* ---------------------------------------------------------------------------
 * The registry (under R.lock)
 * ------------------------------------------------------------------------- */

static void mark(int fd, int tracer)
{
    _Atomic uint8_t *tb = ctr__fd_table_map();
    if (tb && (unsigned)fd < CTR_FD_TABLE_FDS)
        /* relaxed: the byte is read without ordering by the wrappers; the
         * lock orders the registry itself. */
        atomic_store_explicit(&tb[fd], tracer ? CTR_FD_TRACER : CTR_FD_UNKNOWN,
                              memory_order_relaxed);
}

static struct owned *find(int fd)
{
    for (size_t i = 0; i < R.n; i++)
        if (R.v[i].fd == fd)
            return &R.v[i];
    return NULL;
}

static int add(int fd, int partner, _Atomic int *holder)
{
    /* The number is registered already: that descriptor was closed behind
     * our back (a raw syscall). Its holder must not use the new one: -1
     * makes its I/O fail, and the failure is reported (a lost trace is
     * said, never written into another file). */
    struct owned *stale = find(fd);
    if (stale) {
        if (stale->holder)
            /* relaxed: the value is the whole message; nothing is
             * published with it. */
            atomic_store_explicit(stale->holder, -1, memory_order_relaxed);
        *stale = R.v[--R.n];
    }
    if (R.n == R.cap) {
        size_t cap = R.cap ? 2 * R.cap : 16;
        struct owned *v = realloc(R.v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        R.v = v;
        R.cap = cap;
    }
    R.v[R.n++] = (struct owned){fd, partner, holder};
    mark(fd, 1);
    return 0;
}

static void forget(struct owned *o)
{
    mark(o->fd, 0);
    *o = R.v[--R.n];
}

int ctr__fd_top(void)
{
    struct rlimit rl;
    int top = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)top)
        top = (int)rl.rlim_cur;
    return top;
}

/* A copy of fd at the top of the descriptor range, close-on-exec. */
static int dup_high(int fd)
{
    long top = ctr__fd_top();
    if (top < CTR_FD_TOP_MIN)
        return -EMFILE; /* every number is the program's */
    /* F_DUPFD takes the lowest free number from `from` up: start just below
     * the numbers already ours, step down past any the program holds (by
     * 64, or less under a small limit), and never below the upper half of
     * the range. */
    long from = top - 1 - (long)R.n, step = top >= 1024 ? 64 : top / 16;
    for (long floor = top / 2; from >= floor; from -= step) {
        int nfd = fcntl(fd, F_DUPFD_CLOEXEC, (int)from);
        if (nfd >= 0)
            return nfd;
        if (errno != EMFILE && errno != EINVAL)
            return -errno;
    }
    return -EMFILE;
}

/* ---------------------------------------------------------------------------
 * Adopting and closing
 * ------------------------------------------------------------------------- */

int ctr__fd_adopt(int fd, _Atomic int *holder)
{
    if (fd < 0)
        return fd;
    int saved = errno;
    ctr_lock_acquire(&R.lock);
    int nfd = dup_high(fd);
    if (nfd >= 0 && add(nfd, -1, holder) != 0) {
        ctr__real.close(nfd);
        nfd = -ENOMEM;
    }
    ctr_lock_release(&R.lock);
    ctr__real.close(fd);
    if (nfd >= 0 && holder)
        /* relaxed: the adopter's own variable, which it publishes along with
         * what holds it (perf_fd: the release store of perf_ring in
         * ctr__sched_open). */
        atomic_store_explicit(holder, nfd, memory_order_relaxed);
    errno = saved;
    return nfd;
}

int ctr__fd_adopt_pipe(int fds[2])
{
    int saved = errno;
    ctr_lock_acquire(&R.lock);
    int a = dup_high(fds[0]);
    int b = a >= 0 ? dup_high(fds[1]) : a;
    int rc = b < 0 ? b : 0;
    if (rc == 0 && (add(a, b, NULL) != 0 || add(b, a, NULL) != 0))
        rc = -ENOMEM;
    if (rc != 0) {
        struct owned *o;
        if (a >= 0 && (o = find(a)))
            forget(o);
        if (a >= 0)
            ctr__real.close(a);
        if (b >= 0)
            ctr__real.close(b);
    }
    ctr_lock_release(&R.lock);
    ctr__real.close(fds[0]);
    ctr__real.close(fds[1]);
    if (rc == 0) {
        fds[0] = a;
        fds[1] = b;
    }
    errno = saved;
    return rc;
}

int ctr__fd_close(int fd)
{
    ctr_lock_acquire(&R.lock);
    struct owned *o = find(fd);
    if (o)
        forget(o);
    ctr_lock_release(&R.lock);
    return ctr__real.close(fd) == 0 ? 0 : -errno;
}

/* Forgets o, whose number the tracer no longer holds (not closed here):
 * its holder reads -1; libunwind's pipe is given up whole, its other end
 * closed if it is still open. Called with the lock held; o's slot is then
 * another entry's. */
static void give_up(struct owned *o)
{
    if (o->holder)
        /* relaxed: the value is the whole message (as in add). */
        atomic_store_explicit(o->holder, -1, memory_order_relaxed);
    int partner = o->holder ? -1 : o->partner;
    forget(o);
    struct owned *p = partner >= 0 ? find(partner) : NULL;
    if (p) {
        forget(p);
        ctr__real.close(partner);
    }
}

void ctr__fd_lost(int fd)
{
    int saved = errno;
    ctr_lock_acquire(&R.lock);
    struct owned *o = find(fd);
    if (o)
        give_up(o);
    for (size_t i = 0; i < R.n;) {
        if (fcntl(R.v[i].fd, F_GETFD) < 0 && errno == EBADF)
            give_up(&R.v[i]); /* another entry moved into slot i */
        else
            i++;
    }
    ctr_lock_release(&R.lock);
    errno = saved;
}

int ctr__fd_identify(int fd, struct ctr_fd_id *id)
{
    int saved = errno;
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? 0 : -errno;
    *id = rc ? (struct ctr_fd_id){0, 0} : (struct ctr_fd_id){st.st_dev, st.st_ino};
    errno = saved;
    return rc;
}

int ctr__fd_is(int fd, const struct ctr_fd_id *id)
{
    struct ctr_fd_id now;
    return ctr__fd_identify(fd, &now) == 0 && now.dev == id->dev && now.ino == id->ino;
}

int ctr__fd_is_tracers(int fd)
{
    /* acquire and relaxed: as in ctr__fd_note (fdclass.h). */
    _Atomic uint8_t *tb = atomic_load_explicit(&ctr__fd_table, memory_order_acquire);
    return tb && (unsigned)fd < CTR_FD_TABLE_FDS &&
           atomic_load_explicit(&tb[fd], memory_order_relaxed) == CTR_FD_TRACER;
}

void ctr__fd_forget_all(void)
{
    /* In a forked child, alone: no lock holder exists here any more. */
    R.lock = (struct ctr_lock){0};
    for (size_t i = 0; i < R.n; i++) {
        mark(R.v[i].fd, 0);
        ctr__real.close(R.v[i].fd);
    }
    R.n = 0;
    /* relaxed: alone in the child; nothing to order. */
    atomic_store_explicit(&users, 0, memory_order_relaxed);
    atomic_store_explicit(&moving, 0, memory_order_relaxed);
}

/* ---------------------------------------------------------------------------
 * Uses and moves
 * ------------------------------------------------------------------------- */

int ctr__fd_use_begin(int wait)
{
    for (;;) {
        /* seq_cst: the count before the load of `moving` (the mover does
         * the opposite: its store, then its load of the count). */
        atomic_fetch_add_explicit(&users, 1, memory_order_seq_cst);
        if (!atomic_load_explicit(&moving, memory_order_seq_cst))
            return 1;
        /* release: as in ctr__fd_use_end (here no I/O was done). */
        atomic_fetch_sub_explicit(&users, 1, memory_order_release);
        if (!wait)
            return 0;
        /* acquire: pairs with the release store of 0 in ctr__fd_evict: the
         * holder's new number is visible once the move is over. */
        while (atomic_load_explicit(&moving, memory_order_acquire))
            sched_yield();
    }
}

void ctr__fd_use_end(void)
{
    /* release: the use's I/O before a mover's load that sees 0 (the seq_cst
     * load in drain_users). */
    atomic_fetch_sub_explicit(&users, 1, memory_order_release);
}

/* Waits until no use is held: a write of a frame or a dump, a libunwind
 * call. Bounded (about 2 s): a use held by a thread that a signal handler
 * never lets go must not hang the program's dup2. */
static void drain_users(void)
{
    struct timespec ts = {0, 200000};
    /* seq_cst: after the mover's seq_cst store of `moving` (ctr__fd_evict);
     * pairs with ctr__fd_use_begin's seq_cst add and load (see the top). */
    for (int i = 0; atomic_load_explicit(&users, memory_order_seq_cst) != 0; i++) {
        if (i < 1000)
            sched_yield();
        else if (i < 11000)
            ctr__real.nanosleep(&ts, NULL);
        else
            break;
    }
}

void ctr__fd_evict(int fd)
{
    if (!ctr__fd_is_tracers(fd))
        return;
    int saved = errno;
    ctr_lock_acquire(&R.lock);
    struct owned *o = find(fd);
    if (o) {
        /* seq_cst: before drain_users' load of the count (the user side does
         * the opposite, in ctr__fd_use_begin). */
        atomic_store_explicit(&moving, 1, memory_order_seq_cst);
        drain_users();
        if (o->holder) {
            /* Move: a new number for the same file, then the holder. */
            int nfd = dup_high(fd);
            _Atomic int *holder = o->holder;
            forget(o);
            if (nfd >= 0 && add(nfd, -1, holder) == 0)
                /* relaxed: published by the release store of `moving`
                 * below to the users that waited (ctr__fd_use_begin), and
                 * to later ones whose seq_cst load reads it. */
                atomic_store_explicit(holder, nfd, memory_order_relaxed);
            else if (nfd >= 0)
                ctr__real.close(nfd);
        } else {
            /* libunwind's pipe: its numbers cannot be changed under it.
             * Give both ends up; it re-makes the pipe when its read of the
             * old one fails (a read of a number not ours: EBADF). */
            int partner = o->partner;
            forget(o);
            struct owned *p = partner >= 0 ? find(partner) : NULL;
            if (p) {
                forget(p);
                ctr__real.close(partner);
            }
        }
        /* release: the move (the holder's new number) before users waiting
         * in ctr__fd_use_begin go on. */
        atomic_store_explicit(&moving, 0, memory_order_release);
    }
    ctr_lock_release(&R.lock);
    errno = saved;
}

/* ---------------------------------------------------------------------------
 * Closing ranges around the tracer's descriptors
 * ------------------------------------------------------------------------- */

/* close_range on [lo, hi], none of which is the tracer's. */
static int close_gap(unsigned lo, unsigned hi, int flags)
{
    int rc = ctr__real.close_range(lo, hi, flags);
    if (rc == 0 || (rc == -1 && errno != ENOSYS))
        return rc;
    /* No close_range (kernels before 5.9, glibc before 2.34): one by one,
     * up to the descriptor limit. */
    struct rlimit rl;
    unsigned max =
        getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (unsigned)rl.rlim_cur : 65536;
    for (unsigned fd = lo; fd <= hi && fd < max; fd++)
        if (flags & CLOSE_RANGE_CLOEXEC)
            fcntl((int)fd, F_SETFD, FD_CLOEXEC);
        else
            ctr__real.close((int)fd);
    return 0;
}

int ctr__fd_close_range(unsigned first, unsigned last, int flags)
{
    ctr_lock_acquire(&R.lock);
    int rc = 0;
    unsigned lo = first;
    while (rc == 0 && lo <= last) {
        /* The lowest tracer descriptor left in [lo, last], if any. */
        long next = -1;
        for (size_t i = 0; i < R.n; i++) {
            unsigned fd = (unsigned)R.v[i].fd;
            if (fd >= lo && fd <= last && (next < 0 || fd < (unsigned long)next))
                next = fd;
        }
        if (next < 0) {
            rc = close_gap(lo, last, flags);
            break;
        }
        if ((unsigned)next > lo)
            rc = close_gap(lo, (unsigned)next - 1, flags);
        lo = (unsigned)next + 1;
    }
    ctr_lock_release(&R.lock);
    return rc;
}
