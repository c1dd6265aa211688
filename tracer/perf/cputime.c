/* SPDX-License-Identifier: MIT */
/* cputime.c - each thread's CPU time from the kernel, read by the collector
 * at the end of every round for the threads that may have run in it, and by
 * each thread itself as it ends (CPU_TIME records, FORMAT.md §3).
 *
 * The analyzer models a thread as running whenever no recorded wait holds
 * it; a wait no wrapper saw (a library's own syscall, an unwrapped call) or
 * time spent preempted would then read as running. The kernel's count of
 * the thread's CPU time bounds what can have been running: between two
 * readings the analyzer shows at most their difference as running, and the
 * rest as waiting for a CPU (up to what the kernel's run-queue delay, from
 * schedstat, says) or as off-CPU time it cannot name.
 *
 * Cost (measured on a 2-vCPU VM: a clock read 1.3 us, a schedstat read
 * 6-9 us): on the collector, per round, for each thread that had events in
 * it or is not inside a recorded wait (a thread blocked all round long
 * cannot have run: it is not read), a clock_gettime on the thread's CPU
 * clock and, where the kernel has schedstat, a read of
 * /proc/self/task/TID/schedstat; on each program thread, one clock read as
 * it registers and a clock and schedstat read as it ends. The schedstat
 * file is open for the read alone (ctr__real: not traced).
 */
#include "perf/cputime.h"

#include "core/clock.h"
#include "core/hooks.h"
#include "core/real.h"
#include "core/thread.h"
#include "ctrace_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Whether schedstat is worth opening: once it failed, it never is.
 * relaxed: a hint any thread may set; a stale 0 costs one failed open. */
static _Atomic int no_schedstat;

/* A read that took longer than this (the reader was preempted in it) has no
 * instant to pin its values to: it is not used. */
#define READ_SPAN_MAX_NS 1000000.0

/* Reads thread tid's schedstat (tid 0: the calling thread's): its time on a
 * CPU and its run-queue delay, both as of one instant, the tick in the
 * middle of the read() that took them. Keeps errno. @return 0, or -1 if it
 * cannot be read (no schedstat, the thread is gone, a read too long). */
static int read_schedstat(int tid, struct ctr_cputime *c)
{
    if (atomic_load_explicit(&no_schedstat, memory_order_relaxed))
        return -1;
    int saved = errno, rc = -1;
    char path[48], buf[96];
    if (tid)
        snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
    else
        snprintf(path, sizeof(path), "/proc/thread-self/schedstat");
    int fd = ctr__real.open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
        if (access("/proc/self/schedstat", R_OK) != 0)
            atomic_store_explicit(&no_schedstat, 1, memory_order_relaxed);
        errno = saved;
        return -1;
    }
    uint64_t before = ctr__ticks();
    ssize_t n = ctr__real.read(fd, buf, sizeof(buf) - 1);
    uint64_t after = ctr__ticks();
    ctr__real.close(fd);
    if (n > 0 && (double)(after - before) / ctr__clock_ticks_per_ns() <= READ_SPAN_MAX_NS) {
        buf[n] = '\0';
        char *on_cpu_end, *delay_end;
        unsigned long long on_cpu = strtoull(buf, &on_cpu_end, 10);
        unsigned long long delay = strtoull(on_cpu_end, &delay_end, 10);
        if (on_cpu_end != buf && delay_end != on_cpu_end) {
            *c = (struct ctr_cputime){before + (after - before) / 2, on_cpu, delay,
                                      CTR_CPUTIME_DELAY_KNOWN};
            rc = 0;
        }
    }
    errno = saved;
    return rc;
}

/* Thread tid's CPU time by its clock (tid 0: the calling thread's), the tick
 * in the middle of the read. @return 0, or -1 (the thread is gone). */
static int read_clock(int tid, struct ctr_cputime *c)
{
    struct timespec ts;
    uint64_t before = ctr__ticks();
    if (clock_gettime(tid ? ctr__thread_cpu_clock(tid) : CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return -1;
    uint64_t after = ctr__ticks();
    *c = (struct ctr_cputime){before + (after - before) / 2,
                              (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, 0, 0};
    return 0;
}

/* A reading of thread tid (0: the calling thread): schedstat's, whose time
 * on a CPU and delay are of one instant (`with_delay`), or else the clock's
 * alone. *c's ticks are 0 when there is none. */
static void read_thread(int tid, int with_delay, struct ctr_cputime *c)
{
    *c = (struct ctr_cputime){0};
    if ((!with_delay || read_schedstat(tid, c) != 0) && read_clock(tid, c) != 0)
        c->ticks = 0;
}

void ctr__cputime_thread_start(struct ctr_thread *t)
{
    struct ctr_cputime c;
    read_thread(0, 0, &c);
    t->start_cpu_ns = c.cpu_ns;
    t->start_cpu_ticks = c.ticks;
}

void ctr__cputime_thread_end(struct ctr_thread *t)
{
    struct ctr_cputime c;
    read_thread(0, 1, &c);
    t->end_cpu_ns = c.cpu_ns;
    t->end_cpu_ticks = c.ticks;
    t->end_cpu_delay_ns = c.delay_ns;
    t->end_cpu_flags = c.flags;
}

int ctr__cputime_started(const struct ctr_thread *t, struct ctr_cputime *c)
{
    *c = (struct ctr_cputime){t->start_cpu_ticks, t->start_cpu_ns, 0, CTR_CPUTIME_AT_START};
    return t->start_cpu_ticks ? 0 : -1;
}

int ctr__cputime_read(const struct ctr_thread *t, int exited, struct ctr_cputime *c)
{
    *c = (struct ctr_cputime){0};
    if (exited) {
        if (!t->end_cpu_ticks)
            return -1;
        c->ticks = t->end_cpu_ticks;
        c->cpu_ns = t->end_cpu_ns;
        c->delay_ns = t->end_cpu_delay_ns;
        c->flags = t->end_cpu_flags;
        return 0;
    }
    read_thread(t->os_tid, 1, c);
    return c->ticks ? 0 : -1; /* gone meanwhile: its own reading comes with its end */
}
