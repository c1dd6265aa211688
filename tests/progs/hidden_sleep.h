/* SPDX-License-Identifier: MIT */
/* hidden_sleep.h - a wait no wrapper can see: nanosleep made by the
 * program's own syscall instruction (neither libc's nanosleep nor syscall()
 * is called), as a library with its own system calls, or a libc call
 * ctrace does not wrap, would block. What the tests of off-CPU time
 * (model/cpucheck.h) block in. Plain C, for test programs and unit tests. */
#ifndef CTR_HIDDEN_SLEEP_H
#define CTR_HIDDEN_SLEEP_H

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline void ctr_test_hidden_sleep(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    long ret;
#if defined(__x86_64__)
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
                     : "rcx", "r11", "memory");
#else
    ret = syscall(SYS_nanosleep, &ts, NULL); /* wrapped: not hidden here */
#endif
    (void)ret;
}

#endif
