/* SPDX-License-Identifier: MIT */
/* untraced.c - naming a wait no wrapper recorded (see untraced.h).
 *
 * With context switches recorded, a switch-out that was no preemption
 * while no recorded wait holds the thread is a wait no wrapper saw (a
 * library's own syscall instruction, a libc call ctrace does not wrap, a
 * page fault): the analyzer counts it blocked, not running (FORMAT.md
 * §4.2). When the collector drains such a switch-out as the thread's last,
 * the thread may still be in it, and the kernel says where:
 * /proc/self/task/TID/syscall holds the system call's number and
 * arguments, the user stack pointer and the program counter (or "running";
 * or -1 and the two when blocked outside a system call). The number and
 * arguments give the reason and object as for a call by number (the
 * syscall() wrapper's table, wrap/wait.h); the stack is unwound as a CPU
 * sample's is (perf/cpu.h), from a copy of the thread's stack taken with
 * process_vm_readv, which fails cleanly where memory is not mapped, since
 * the thread may wake and return meanwhile. The kernel does not show the
 * frame pointer, which the frames of code built with frame pointers need
 * (a blocking libc function leaves the register alone, so at the system
 * call it is still its caller's): the unwinder guesses it
 * (ctr__unwind_copy_guess_bp).
 *
 * The thread must still be in that switch-out after the file was read:
 * its ring empty since the drain (a switch-in would be in it), else the
 * reading may be of a later wait, and is dropped.
 *
 * Cost, on the collector alone: an open, a read and a close of a /proc
 * file (9.1 us on a 2-vCPU VM, mean of 1000), a copy of up to
 * UNTRACED_STACK_COPY bytes (3.6 us for a page) and the unwinding of a CPU
 * sample's, once per wait and round, for the threads whose last switch of
 * the round is such a switch-out: a thread blocked for long is looked at
 * once (later rounds drain no switch of it).
 */
#include "collect/untraced.h"

#include "core/perfring.h"
#include "core/real.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "ctrace_format.h"
#include "ctrace_options.h"
#include "perf/cpu.h"
#include "wrap/wait.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* The most of the stack copied, in pages (each its own iovec, so that a
 * copy that meets unmapped memory keeps the pages before it). */
#define UNTRACED_STACK_PAGES 4
#define UNTRACED_PAGE 4096u
#define UNTRACED_STACK_COPY (UNTRACED_STACK_PAGES * UNTRACED_PAGE)

/* What the kernel shows of a blocked thread. */
struct in_kernel {
    long nr; /* -1: blocked outside a system call */
    long args[6];
    uint64_t sp, pc;
};

/* Parses the syscall file's line: "NR A1 .. A6 SP PC", or "-1 SP PC".
 * @return 0, or -1 for "running" or anything else. */
static int parse_syscall(const char *s, struct in_kernel *k)
{
    char *end;
    memset(k, 0, sizeof(*k));
    errno = 0;
    k->nr = strtol(s, &end, 10);
    if (end == s || errno)
        return -1;
    uint64_t v[8];
    int n = 0;
    for (s = end; n < 8; s = end) {
        unsigned long long x = strtoull(s, &end, 16);
        if (end == s)
            break;
        v[n++] = x;
    }
    if (k->nr == -1 && n == 2) {
        k->sp = v[0];
        k->pc = v[1];
        return 0;
    }
    if (k->nr < 0 || n != 8)
        return -1;
    for (int i = 0; i < 6; i++)
        k->args[i] = (long)v[i];
    k->sp = v[6];
    k->pc = v[7];
    return 0;
}

/* Reads thread tid's syscall file. Keeps errno. @return 0 or -1. */
static int read_in_kernel(int tid, struct in_kernel *k)
{
    int saved = errno, rc = -1;
    char path[48], buf[256];
    snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
    int fd = ctr__real.open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd >= 0) {
        ssize_t n = ctr__real.read(fd, buf, sizeof(buf) - 1);
        ctr__real.close(fd);
        if (n > 0) {
            buf[n] = '\0';
            rc = parse_syscall(buf, k);
        }
    }
    errno = saved;
    return rc;
}

/* The stack of a thread blocked at k: unwound from a copy of its stack.
 * @return its interned id, 0 if none. */
static uint32_t stack_of(const struct in_kernel *k)
{
    static uint8_t copy[UNTRACED_STACK_COPY]; /* the collector's alone */
    struct iovec local = {copy, sizeof(copy)}, remote[UNTRACED_STACK_PAGES];
    uint64_t at = k->sp;
    for (int i = 0; i < UNTRACED_STACK_PAGES; i++) {
        /* The first iovec ends at a page boundary: the others are pages. */
        uint64_t len = UNTRACED_PAGE - (at & (UNTRACED_PAGE - 1));
        remote[i] = (struct iovec){(void *)(uintptr_t)at, (size_t)len};
        at += len;
    }
    int saved = errno;
    long got = ctr__real.syscall(SYS_process_vm_readv, (long)getpid(), (long)&local, 1L,
                                 (long)remote, (long)UNTRACED_STACK_PAGES, 0L);
    errno = saved;
    /* The program counter is after the syscall instruction: as a return
     * address is (FORMAT.md §4.2), so the unwinding starts one before,
     * inside the instruction, and gives it back as the first PC. */
    uintptr_t pcs[CTR_STACK_MAX];
    unsigned n = ctr__unwind_copy_guess_bp(k->pc - 1, k->sp, copy, got > 0 ? (size_t)got : 0, pcs,
                                           ctr__session.stack_depth);
    return n ? ctr__stack_intern(pcs, n) : 0;
}

int ctr__untraced_name(struct ctr_thread *t, struct ctr_untraced *out)
{
    /* acquire: pairs with ctr__io_begin's release store (records.c reads
     * it so too). An I/O call in progress is recorded once it returns. */
    if (atomic_load_explicit(&t->io_start, memory_order_acquire) != 0)
        return -1;
    struct in_kernel k;
    if (read_in_kernel(t->os_tid, &k) != 0 || k.pc < 65536)
        return -1;
    /* A switch since the drain: what was read may be another wait's. */
    if (ctr__perf_has_records(&t->sched_ring))
        return -1;
    *out = (struct ctr_untraced){CTR_REASON_UNTRACED, 0, 0};
    if (k.nr >= 0 && !ctr__syscall_wait(k.nr, k.args, &out->reason, &out->object)) {
        out->reason = CTR_REASON_UNTRACED;
        out->object = 0;
    }
    out->stack = stack_of(&k);
    return 0;
}
