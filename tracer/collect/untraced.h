/* SPDX-License-Identifier: MIT */
/* untraced.h - naming a wait no wrapper recorded (untraced.c, FORMAT.md
 * §4.2): the collector's, as it reads a thread's context switches. */
#ifndef CTR_UNTRACED_H
#define CTR_UNTRACED_H

#include <stdint.h>

struct ctr_thread;

/* What a thread blocked outside every recorded wait waits in. */
struct ctr_untraced {
    uint8_t reason;  /* §5's, or CTR_REASON_UNTRACED */
    uint64_t object; /* as §5 says for the reason; 0 for UNTRACED */
    uint32_t stack;  /* interned; 0: none could be taken */
};

/* ctr__untraced_name() : names the wait of thread t, whose context switches
 * were just drained and ended with a switch-out that was not a preemption:
 * from the system call the kernel shows it blocked in
 * (/proc/self/task/TID/syscall), the stack unwound from the user stack
 * pointer and program counter it shows. Collector thread only, with t's
 * slot live. @return 0 with *out; -1 when the thread is not (or no longer
 * known to be) blocked in that switch-out, or is inside an I/O call its
 * wrapper will record. */
int ctr__untraced_name(struct ctr_thread *t, struct ctr_untraced *out);

#endif /* CTR_UNTRACED_H */
