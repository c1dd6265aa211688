/* SPDX-License-Identifier: MIT */
/* windows.h - per thread, the time ranges that a filter keeps: sets of
 * [start, end) windows, merged, intersected and measured against an
 * interval.
 *
 * The profile filters (profile.c: -task, -region, -latmin) keep the time
 * their windows cover, and a task's breakdown counts the states that fall
 * in its windows; tasks.h makes windows from tasks and regions. The
 * algebra itself knows nothing of tasks: a window is a thread's index and
 * a range of trace time.
 */
#ifndef CTR_WINDOWS_H
#define CTR_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

struct ctr_window {
    uint32_t thread;           /* index in ctr_trace.threads */
    uint64_t start_ns, end_ns; /* [start, end) */
};

/* Windows sorted by thread then start, disjoint per thread once finished:
 * thread i's are w[first[i] .. first[i+1]-1]. */
struct ctr_windows {
    struct ctr_window *w;
    size_t n, cap;
    size_t *first; /* nthreads + 1 entries, set by ctr_windows_finish() */
    size_t nthreads;
};

/* ctr_windows_add() : adds [start, end) on thread (empty ranges are
 * dropped). @return 0 or -ENOMEM. */
int ctr_windows_add(struct ctr_windows *ws, uint32_t thread, uint64_t start, uint64_t end);

/* ctr_windows_finish() : sorts and merges the windows added so far and
 * indexes them by thread (threads are 0 .. nthreads-1). @return 0 or -ENOMEM. */
int ctr_windows_finish(struct ctr_windows *ws, size_t nthreads);

/* ctr_windows_intersect() : *out (zeroed first) = the time that both
 * finished a and b keep, finished. @return 0 or -ENOMEM. */
int ctr_windows_intersect(const struct ctr_windows *a, const struct ctr_windows *b,
                          struct ctr_windows *out);

/* ctr_windows_overlap() : @return how much of [start, end) on thread the
 * finished ws keep, in ns. */
uint64_t ctr_windows_overlap(const struct ctr_windows *ws, uint32_t thread, uint64_t start,
                             uint64_t end);

/* ctr_windows_keep_sample() : whether the finished ws keep a CPU sample
 * taken at ns on thread. A sample stands for the CPU time just before it
 * (FORMAT.md §4.1), so it is kept when a window holds ns in (start, end]:
 * the sample a task's last period gives at its very end is the task's. */
static inline int ctr_windows_keep_sample(const struct ctr_windows *ws, uint32_t thread,
                                          uint64_t ns)
{
    return ns > 0 && ctr_windows_overlap(ws, thread, ns - 1, ns) > 0;
}

void ctr_windows_free(struct ctr_windows *ws);

#endif
