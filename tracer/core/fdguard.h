/* SPDX-License-Identifier: MIT */
/* fdguard.h - the tracer's own descriptors, kept apart from the program's
 * (fdguard.c). */
#ifndef CTR_FDGUARD_H
#define CTR_FDGUARD_H

#include <stdatomic.h>
#include <stdint.h>

/* ---------------------------------------------------------------------------
 * The tracer's own descriptors (fdguard.c): high, close-on-exec, and kept
 * apart from the program's. See fdguard.c for the rules and the protocol.

 * ------------------------------------------------------------------------- */

/* What a descriptor refers to, to check later that its number still does
 * (one closed by a raw syscall may have been reused by then): fdguard.c. */
struct ctr_fd_id {
    uint64_t dev, ino;
};

/* Adopts fd, a descriptor the tracer just made: moves it to the top of the
 * descriptor range, close-on-exec, closing fd; `holder` (or NULL) is where
 * the tracer keeps the number, updated if it must move again. Keeps errno.
 * @return the new descriptor, or -errno (fd is closed either way). */
int ctr__fd_adopt(int fd, _Atomic int *holder);
/* Adopts both ends of a pipe libunwind made (no holder: they are retired
 * together if the program takes one's number). @return 0 (fds updated) or
 * -errno (both closed). */
int ctr__fd_adopt_pipe(int fds[2]);
/* The descriptor limit (RLIMIT_NOFILE's soft one, at most 65536): the
 * tracer's descriptors go just under it. */
int ctr__fd_top(void);
/* Under this limit the tracer takes no descriptor: a program allowed so
 * few needs every one (adoption fails with -EMFILE). From it up, the tracer
 * keeps to the upper half, and under CTR_FD_TOP_FEW to one descriptor (the
 * trace file; no libunwind, whose pipe takes two: stack.c). */
#define CTR_FD_TOP_MIN 16
#define CTR_FD_TOP_FEW 512

/* Closes a descriptor of the tracer's. @return 0 or -errno. */
int ctr__fd_close(int fd);
/* fd no longer refers to what the tracer opened: the program closed it
 * behind the tracer's back (a raw close or close_range), and the number may
 * be the program's now. Forgets fd without closing it, and every number of
 * the tracer's that is no longer open (closed with it, most likely): their
 * holders read -1 (their I/O fails, and is reported), libunwind's pipes are
 * given up (it re-makes them). So that no new descriptor of the tracer's
 * lands on a number someone still holds. Keeps errno. */
void ctr__fd_lost(int fd);
/* Whether fd is the tracer's (a relaxed load). */
int ctr__fd_is_tracers(int fd);
/* @return 0 (*id set) or -errno from fstat. Keeps errno. */
int ctr__fd_identify(int fd, struct ctr_fd_id *id);
/* Whether fd still refers to id: one fstat, no lock. Keeps errno. */
int ctr__fd_is(int fd, const struct ctr_fd_id *id);
/* Before the program makes fd a copy of another descriptor (dup2, dup3):
 * moves the tracer's descriptor fd, if it is one, elsewhere. */
void ctr__fd_evict(int fd);
/* close_range(first, last, flags) for the program, passing over the
 * tracer's descriptors. @return as close_range. */
int ctr__fd_close_range(unsigned first, unsigned last, int flags);
/* In a forked child: closes and forgets every tracer descriptor. */
void ctr__fd_forget_all(void);
/* Around any use of a tracer descriptor through its holder: the number
 * does not move meanwhile. use_begin waits out a move when `wait`, else
 * returns 0 at once (the caller must then not use it). @return 1 if held. */
int ctr__fd_use_begin(int wait);
void ctr__fd_use_end(void);

/* The executable text of libunwind, once stack.c has loaded it: calls
 * returning there are libunwind's, which may touch only tracer
 * descriptors. Set once, before unwinding is published. */
extern _Atomic uintptr_t ctr__unwinder_lo, ctr__unwinder_hi;

/* ctr__from_unwinder() : whether return address ra is in libunwind. */
static inline int ctr__from_unwinder(const void *ra)
{
    /* relaxed: a call from libunwind comes after both stores (note_unwinder,
     * stack.c: the same thread, or through the acquire of backtrace_fn).
     * Any other thread may read them while they are stored, one new and one
     * still 0: such a pair (lo 0, or hi below lo) means "not libunwind",
     * else every return address below hi (or above lo) would be taken for
     * libunwind's, and the program's close() of its own descriptor refused. */
    uintptr_t lo = atomic_load_explicit(&ctr__unwinder_lo, memory_order_relaxed);
    uintptr_t hi = atomic_load_explicit(&ctr__unwinder_hi, memory_order_relaxed);
    return lo != 0 && lo < hi && (uintptr_t)ra - lo < hi - lo;
}

#endif /* CTR_FDGUARD_H */
