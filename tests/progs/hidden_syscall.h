/* SPDX-License-Identifier: MIT */
/* hidden_syscall.h - waits no wrapper can see: system calls made by the
 * program's own syscall instruction (neither libc's function nor syscall()
 * is called), as a library with its own system calls, or a libc call
 * ctrace does not wrap, would block. What the tests of off-CPU time
 * (model/cpucheck.h) and of untraced waits (FORMAT.md §4.2) block in. Plain
 * C, for test programs and unit tests. */
#ifndef CTR_HIDDEN_SYSCALL_H
#define CTR_HIDDEN_SYSCALL_H

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* System call nr with up to four arguments. Elsewhere than on x86_64, by
 * syscall(), which ctrace wraps: not hidden there. */
static inline long ctr_test_hidden_syscall(long nr, long a0, long a1, long a2, long a3)
{
#if defined(__x86_64__)
    long ret;
    register long r10 __asm__("r10") = a3;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(nr), "D"(a0), "S"(a1), "d"(a2), "r"(r10)
                     : "rcx", "r11", "memory");
    return ret;
#else
    return syscall(nr, a0, a1, a2, a3);
#endif
}

static inline void ctr_test_hidden_sleep(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    ctr_test_hidden_syscall(SYS_nanosleep, (long)&ts, 0, 0, 0);
}

#endif
