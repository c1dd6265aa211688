/* SPDX-License-Identifier: MIT */
/* scribe_child.c - the body of a scribe process (scribe.h): it closes every
 * descriptor but its file, then writes what the tracer hands it until told
 * to stop, or until the process that made it is gone.
 *
 * It runs with the creating thread's TLS pointer, on a stack of its own, in
 * the tracer's memory: so only raw system calls (errno is that thread's),
 * no libc, and this file is built without sanitizers or stack protector
 * (their runtimes keep per-thread state behind that TLS pointer; see
 * tracer/CMakeLists.txt). Plain C11 atomics compile to plain instructions.
 */
#include "core/scribe_child.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/syscall.h>
#include <time.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#define KCMP_VM 1

#if defined(__x86_64__)
static inline __attribute__((always_inline)) long raw(long n, long a, long b, long c, long d,
                                                      long e)
{
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
}

/* Closes every descriptor but s->fd in the scribe's own table (the
 * program's is not touched: the scribe has a copy). */
static void close_others(const struct ctr_scribe *s)
{
    long rc = 0;
    if (s->fd > 0)
        rc = raw(SYS_close_range, 0, s->fd - 1, 0, 0, 0);
    if (rc == 0)
        rc = raw(SYS_close_range, s->fd + 1, ~0u, 0, 0, 0);
    if (rc == 0)
        return;
    for (unsigned fd = 0; fd < s->fd_limit; fd++) /* kernels before 5.9 */
        if ((int)fd != s->fd)
            raw(SYS_close, fd, 0, 0, 0, 0);
}

/* Whether the process that made s is still there, as it was: not gone (the
 * scribe then has another parent) and not exec'd (another memory). */
static int parent_there(const struct ctr_scribe *s)
{
    if (raw(SYS_getppid, 0, 0, 0, 0, 0) != s->parent)
        return 0;
    long same = raw(SYS_kcmp, raw(SYS_getpid, 0, 0, 0, 0, 0), s->parent, KCMP_VM, 0, 0);
    return same <= 0; /* 0: the same memory; < 0: kcmp unavailable, trust getppid */
}

static int abandoned(struct ctr_scribe *s)
{
    /* acquire: pairs with the writer's CAS to QUIT (scribe.c). */
    return atomic_load_explicit(&s->state, memory_order_acquire) == CTR_SCRIBE_QUIT;
}

/* Writes s->buf[0, s->len) whole. @return 0 or -errno. */
static long write_piece(struct ctr_scribe *s)
{
    const uint8_t *p = s->buf;
    size_t left = s->len;
    while (left > 0) {
        long n = raw(SYS_write, s->fd, (long)p, (long)left, 0, 0);
        if (n == -EINTR)
            continue;
        if (n == -EAGAIN) { /* a non-blocking descriptor: wait, a second at a time */
            struct pollfd pfd = {s->fd, POLLOUT, 0};
            raw(SYS_poll, (long)&pfd, 1, 1000, 0, 0);
            if (abandoned(s))
                return -ETIMEDOUT;
            continue;
        }
        if (n <= 0)
            return n < 0 ? n : -EIO;
        p += n;
        left -= (size_t)n;
    }
    return 0;
}

int ctr__scribe_main(void *arg)
{
    struct ctr_scribe *s = arg;
    close_others(s);
    for (;;) {
        /* acquire: pairs with the writer's release store of WRITE (buf,
         * len) or QUIT. */
        uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == CTR_SCRIBE_QUIT)
            break;
        if (st != CTR_SCRIBE_WRITE) {
            struct timespec second = {1, 0};
            raw(SYS_futex, (long)&s->state, FUTEX_WAIT_PRIVATE, st, (long)&second, 0);
            if (!parent_there(s))
                break;
            continue;
        }
        s->result = write_piece(s);
        uint32_t expected = CTR_SCRIBE_WRITE;
        /* release: result before DONE (the writer's acquire load); fails
         * when the writer gave up on this piece (QUIT): then exit. */
        if (!atomic_compare_exchange_strong_explicit(&s->state, &expected, CTR_SCRIBE_DONE,
                                                     memory_order_release, memory_order_relaxed))
            break;
        raw(SYS_futex, (long)&s->state, FUTEX_WAKE_PRIVATE, 1, 0, 0);
    }
    raw(SYS_exit, 0, 0, 0, 0, 0);
    return 0;
}
#else
int ctr__scribe_main(void *arg)
{
    (void)arg;
    return 0; /* never started: ctr__scribe_start says -ENOSYS */
}
#endif
