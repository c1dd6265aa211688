/* SPDX-License-Identifier: MIT */
/* fdclass.c - which descriptors are sockets, so that a recorded read, write,
 * readv or writev lands in the net profile or the syscall one without a
 * syscall per call.
 *
 * The table holds one byte per descriptor below CTR_FD_TABLE_FDS: UNKNOWN (0),
 * SOCKET or OTHER. It is an anonymous mapping (pages cost memory only once
 * touched), made the first time a traced call needs it, published once and
 * never unmapped, so a pointer once loaded stays valid.
 *   - The wrappers that create descriptors store their class (socket, accept:
 *     SOCKET; open, pipe: OTHER); close stores UNKNOWN; dup copies the class.
 *     Once the table exists they do so whether tracing or not, so a number
 *     reused while tracing was off is not misread in the next session.
 *   - An UNKNOWN descriptor (opened before the table, or by a call we do not
 *     wrap) is classified by one fstat, and the answer cached, the first time
 *     a call on it is recorded: only calls that already waited pay it.
 *   - Bytes are relaxed atomics: each is a value of its own, and nothing else
 *     is published through it. A close racing with another thread's call on
 *     the same descriptor is the program's own race; the worst it can do here
 *     is file one wait under the other profile.
 *   - The tracer's own descriptors are CTR_FD_TRACER (fdguard.c), set and
 *     cleared only by the tracer; the program never holds those numbers.
 *   - A descriptor closed where we cannot see it (fclose, closedir,
 *     close_range, a raw syscall) keeps its byte until it is reused by a call
 *     we see; a reuse we do not see either may be misfiled. That is the price
 *     of not calling fstat on every recorded wait.
 *   - Whether a call on the descriptor can block (O_NONBLOCK, which decides
 *     whether a long call on it was a wait) is asked of the kernel (fcntl,
 *     a syscall: about a microsecond in a VM) at most once per collector
 *     round (ctr__fd_period) and kept in the byte's high bits: a server's
 *     sends that take long enough to record (a loopback send runs the
 *     receiver's network stack inline) paid one fcntl each. The flag is
 *     set with fcntl, which is not wrapped, so a change is seen at the
 *     next period (100 ms by default); a new descriptor of the same number
 *     (the wrappers above) starts with no answer. Only a call that returned
 *     takes the kept answer: one still in progress, or that never returns,
 *     is asked about afresh (ctr__io_waited), so a descriptor set blocking
 *     again is never taken for non-blocking in a thread blocked for good.
 *     The period kept is 3 bits: an answer not asked again for 8 periods
 *     passes for new in the 8th (a descriptor with no recorded call for
 *     that long, whose flag changed meanwhile, may have one wait misfiled).
 */

#include "core/fdclass.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

_Atomic(_Atomic uint8_t *) ctr__fd_table;

/* Counts the collector's rounds (the periods); relaxed: a cached answer is only as old
 * as the period it names, and whichever period a thread sees will do. */
static _Atomic uint32_t ctr__fd_period;

void ctr__fd_period_tick(void)
{
    atomic_fetch_add_explicit(&ctr__fd_period, 1, memory_order_relaxed);
}

_Atomic uint8_t *ctr__fd_table_map(void)
{
    /* acquire: pairs with the release CAS below. */
    _Atomic uint8_t *tb = atomic_load_explicit(&ctr__fd_table, memory_order_acquire);
    if (tb)
        return tb;
    int saved = errno;
    void *m = mmap(NULL, CTR_FD_TABLE_FDS, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        errno = saved;
        return NULL;
    }
    /* release: the mapping (all zero: UNKNOWN) before its pointer. A loser
     * of the race unmaps its own and uses the winner's (acquire). */
    _Atomic uint8_t *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&ctr__fd_table, &expected, m, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        munmap(m, CTR_FD_TABLE_FDS);
        m = (void *)expected;
    }
    errno = saved;
    return m;
}

void ctr__fd_note_slow(int fd, enum ctr_fd_class c)
{
    _Atomic uint8_t *tb = ctr__fd_table_map();
    if (tb && (unsigned)fd < CTR_FD_TABLE_FDS)
        /* relaxed: as in ctr__fd_note (fdclass.h). */
        atomic_store_explicit(&tb[fd], (uint8_t)c, memory_order_relaxed);
}

int ctr__fd_is_socket(int fd)
{
    if (fd < 0)
        return 0;
    _Atomic uint8_t *tb = (unsigned)fd < CTR_FD_TABLE_FDS ? ctr__fd_table_map() : NULL;
    if (tb) {
        /* relaxed (here and below): a cache of a self-contained byte, as in
         * ctr__fd_note (fdclass.h). */
        uint8_t c = atomic_load_explicit(&tb[fd], memory_order_relaxed);
        if (c == CTR_FD_TRACER)
            return 0;
        if ((c & CTR_FD_CLASS_MASK) != CTR_FD_UNKNOWN)
            return (c & CTR_FD_CLASS_MASK) == CTR_FD_SOCKET;
    }
    struct stat st;
    if (fstat(fd, &st) != 0)
        return 0; /* not open (any more): nothing to cache */
    uint8_t c = S_ISSOCK(st.st_mode) ? CTR_FD_SOCKET : CTR_FD_OTHER;
    if (tb)
        atomic_store_explicit(&tb[fd], c, memory_order_relaxed);
    return c == CTR_FD_SOCKET;
}

/* What the kernel says: see ctr__fd_cannot_block. */
static int ask_cannot_block(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || !(flags & O_NONBLOCK))
        return 0;
    if (ctr__fd_is_socket(fd))
        return 1;
    /* O_NONBLOCK means nothing to a regular file or a block device: their
     * reads still wait for the disk. Pipes, FIFOs, terminals, eventfds...
     * honour it. */
    struct stat st;
    return fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode);
}

int ctr__fd_cannot_block(int fd, int kept_ok)
{
    _Atomic uint8_t *tb = (unsigned)fd < CTR_FD_TABLE_FDS ? ctr__fd_table_map() : NULL;
    unsigned period =
        atomic_load_explicit(&ctr__fd_period, memory_order_relaxed) & CTR_FD_NB_PERIOD_MASK;
    if (tb && kept_ok) {
        /* relaxed: as in ctr__fd_is_socket. */
        uint8_t c = atomic_load_explicit(&tb[fd], memory_order_relaxed);
        if (c != CTR_FD_TRACER && (c & CTR_FD_NB_KNOWN) &&
            ((c >> CTR_FD_NB_PERIOD_SHIFT) & CTR_FD_NB_PERIOD_MASK) == period)
            return (c & CTR_FD_NB_CANNOT_BLOCK) != 0;
    }
    int answer = ask_cannot_block(fd);
    if (tb) {
        /* The answer is kept beside the class: learnt now if it is not
         * known yet (one fstat, once for the descriptor; cached after). */
        ctr__fd_is_socket(fd);
        uint8_t c = atomic_load_explicit(&tb[fd], memory_order_relaxed);
        if (c != CTR_FD_TRACER && (c & CTR_FD_CLASS_MASK) != CTR_FD_UNKNOWN)
            atomic_store_explicit(&tb[fd],
                                  (uint8_t)((c & CTR_FD_CLASS_MASK) | CTR_FD_NB_KNOWN |
                                            (answer ? CTR_FD_NB_CANNOT_BLOCK : 0) |
                                            (period << CTR_FD_NB_PERIOD_SHIFT)),
                                  memory_order_relaxed);
    }
    return answer;
}
