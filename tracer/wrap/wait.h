/* SPDX-License-Identifier: MIT */
/* wait.h - the waits and I/O calls the wrappers record, and the guard that
 * ends a call a cancellation unwinds through (wait.c). */
#ifndef CTR_WAIT_H
#define CTR_WAIT_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "core/clock.h"
#include "core/common.h"
#include "core/fdclass.h"
#include "core/session.h"
#include "core/thread.h"
#include "ctrace_format.h"

/* ---------------------------------------------------------------------------
 * Waits, for the wrappers (wait.c). Each captures the stack of the code that
 * called the wrapper, so each must be called from CTR_WRAPPER_TEXT code.
 *
 * A wrapper inside the real call of a wait or an I/O call holds an open call
 * mark (call_kind, call_frame: its own frame). The trace hears the end of
 * the call however it ends: the wrapper clears the mark when the real call
 * returns; a cancellation unwinds through the wrapper's CTR_CALL_GUARD,
 * whose cleanup ends the call then; a longjmp out of a signal handler ends
 * it in the longjmp wrapper (interpose.c) when the jump leaves the wrapper's
 * frame; the thread's end ends whatever is left.
 * ------------------------------------------------------------------------- */

/* What ctr__wait_begin did, for ctr__wait_end. */
enum { CTR_WAIT_NONE = 0, CTR_WAIT_MARKED, CTR_WAIT_NESTED };

/* Block(reason, obj, stack) now: t starts a wait that may be long, in the
 * wrapper whose frame is `frame`, which holds the mark from now on unless
 * t's mark was already set. @return a CTR_WAIT_* token for ctr__wait_end
 * (CTR_WAIT_NONE: nothing written). */
int ctr__wait_begin(struct ctr_thread *t, enum ctr_reason reason, const void *obj, uintptr_t frame);
/* Unblock now, if ctr__wait_begin wrote the Block (token): the wait is over. */
void ctr__wait_end(struct ctr_thread *t, int token);
/* A wait that is only known once over (a call that may or may not have
 * blocked): Block at `start` ticks, Unblock now. */
void ctr__wait_span(struct ctr_thread *t, enum ctr_reason reason, const void *obj, uint64_t start);
/* Release(obj, stack) now: t let go of obj while other threads waited on it. */
void ctr__release(struct ctr_thread *t, const void *obj);

/* Whether a call that began at `start` ticks lasted long enough to record
 * (the session's io_min_ns): the test of every wait only known once over. */
static inline int ctr__io_long_enough(uint64_t start)
{
    /* relaxed: a threshold on its own (refined by write_clock, collector.c);
     * an older value misjudges one call at most. */
    return ctr__ticks() - start >=
           atomic_load_explicit(&ctr__session.io_min_ticks, memory_order_relaxed);
}

/* Marks t as inside I/O call `reason` on fd, under `rules`, since `start`,
 * in the wrapper whose frame is `frame`, unless t's mark is already set (a
 * signal handler's call inside another). @return 1 if marked: end with
 * ctr__io_end. */
int ctr__io_begin(struct ctr_thread *t, uint64_t start, enum ctr_reason reason, int rules, int fd,
                  uintptr_t frame);

/* ctr__io_end() : the marked I/O call returned. */
static inline void ctr__io_end(struct ctr_thread *t)
{
    /* relaxed: the next call's fields are ordered after this by the
     * release fence in ctr__io_begin (see io_start in struct ctr_thread). */
    atomic_store_explicit(&t->io_start, 0, memory_order_relaxed);
    t->call_kind = CTR_CALL_NONE;
}

/* A wrapper's guard of its open call: `marked` once it set the mark. */
struct ctr_call_guard {
    struct ctr_thread *t;
    int marked;
};
/* Ends the guarded call: a cancellation unwinds through its wrapper. */
void ctr__call_unwound_slow(struct ctr_call_guard *g);

/* The guard's cleanup: runs when the wrapper's scope ends, normally (the
 * mark is cleared by then: a load and a branch) or because a cancellation
 * unwinds through it. */
static inline void ctr__call_unwound(struct ctr_call_guard *g)
{
    /* marked: this wrapper set the mark (a nested handler's wrapper did
     * not); still set: the call did not come back through the wrapper. */
    if (CTR_UNLIKELY(g->marked && g->t->call_kind != CTR_CALL_NONE))
        ctr__call_unwound_slow(g);
}

/* CTR_CALL_GUARD(name, t) : declares, in a wrapper around a real call, the
 * guard whose cleanup ends t's open call if the call is cancelled (the
 * wrapper files are built with -fexceptions so that cleanups run during a
 * cancellation's unwinding; a normal return costs a load and a branch). */
#define CTR_CALL_GUARD(name, thread) \
    struct ctr_call_guard name __attribute__((cleanup(ctr__call_unwound))) = {(thread), 0}

/* The reason for a call on fd, which may or may not be a socket: plain's
 * NET_ variant is the next id (checked at build time below). */
static inline enum ctr_reason ctr__reason_by_fd(enum ctr_reason plain, int fd)
{
    return ctr__fd_is_socket(fd) ? (enum ctr_reason)(plain + 1) : plain;
}
/* The reason recorded for an I/O call of `reason` on fd under CTR_IO_*
 * `rules`: its NET_ variant on a socket when the rules say so. */
static inline enum ctr_reason ctr__io_reason(enum ctr_reason reason, int rules, int fd)
{
    return (rules & CTR_IO_BY_FD) ? ctr__reason_by_fd(reason, fd) : reason;
}
_Static_assert(CTR_REASON_NET_READ == CTR_REASON_READ + 1 &&
                   CTR_REASON_NET_WRITE == CTR_REASON_WRITE + 1 &&
                   CTR_REASON_NET_READV == CTR_REASON_READV + 1 &&
                   CTR_REASON_NET_WRITEV == CTR_REASON_WRITEV + 1,
               "each I/O reason's NET_ variant follows it");

/* The end of a traced I/O call that returned: its mark cleared, and the
 * call recorded if it lasted and waited (ctr__io_waited; errno kept) as a
 * wait on the descriptor fd. Inline: most calls are short. */
static inline __attribute__((always_inline)) void
ctr__io_returned(struct ctr_thread *t, struct ctr_call_guard *g, uint64_t start,
                 enum ctr_reason reason, int rules, int fd)
{
    if (g->marked)
        ctr__io_end(t);
    if (CTR_UNLIKELY(ctr__io_long_enough(start))) {
        int saved = errno;
        if (ctr__io_waited(rules, fd, 1))
            ctr__wait_span(t, ctr__io_reason(reason, rules, fd), (const void *)(intptr_t)fd, start);
        errno = saved;
    }
}

/* ---------------------------------------------------------------------------
 * The traced path of every "try, then wait" wrapper (pthread, C11, futex
 * waits: interpose_sync.c, interpose_c11.c, interpose_futex.c)
 * ------------------------------------------------------------------------- */

/* One call's arguments, so one path serves every signature. */
struct ctr_call {
    void *obj;
    void **ret;
    clockid_t clk;
    const struct timespec *at;
    long args[6]; /* a raw syscall's (interpose_futex.c) */
};

struct ctr_waitop {
    enum ctr_reason reason;
    int (*try_)(struct ctr_call *c); /* NULL: always waits; else EBUSY = would wait */
    int (*wait)(struct ctr_call *c);
    _Atomic int *waiting; /* if not NULL: counts threads in this wait */
};

/* Runs op on c, recording the wait (Block, the real call, Unblock) under the
 * object `tag` when its try says it must wait. Keeps the call's errno. */
int ctr__wait_traced(const struct ctr_waitop *op, struct ctr_call *c, const void *tag);
/* Writes a Release of obj by the calling thread if it is traced (the slow
 * path of releases: unlock, post, signal with waiters). */
void ctr__note_release(const void *obj);

/* ctr__unwrap_init() : reads CTRACE_TEST_UNWRAP, the calls whose waits
 * go unrecorded, for tests (wait.c). As a session starts, before it is
 * published. */
void ctr__unwrap_init(void);

/* ctr__syscall_wait() : what a thread blocked in system call nr with
 * arguments a (as the kernel shows them) waits in, as the wrapper of
 * syscall() would record it (interpose_futex.c), but without reading the
 * program's memory: the collector's, for a thread it found blocked
 * (collect/untraced.c). poll's object is then -1, futex_waitv's 0.
 * @return 1 with *reason and *object; 0 for a number that is no wait. */
int ctr__syscall_wait(long nr, const long *a, uint8_t *reason, uint64_t *object);

#endif /* CTR_WAIT_H */
