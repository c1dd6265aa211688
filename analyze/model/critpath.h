/* SPDX-License-Identifier: MIT */
/* critpath.h - the critical path of a task: why it took as long as it did,
 * across threads, through the releases the trace records (critpath.c;
 * docs/internals.md, "The critical path of a task").
 *
 * The path tiles the task's latency, from its TASK_BEGIN to its TASK_END,
 * with segments: every nanosecond is on exactly one (thread, state, reason,
 * object, stack). It is found walking back from the task's end on the
 * thread that ended it:
 *  - while that thread runs, is runnable, or waits with no release (a
 *    sleep, an I/O call, a wait whose release the trace lacks), the time is
 *    that thread's, a segment;
 *  - when it waits and a release by another thread ended the wait, the
 *    time from the wait's start (or the part of the range being explained)
 *    to the release is explained by the releaser's own history over the
 *    same span, walked back the same way from the release (a hop); then
 *    the walk goes on, on the waiter, before the wait. A mutex's wait is
 *    cut by the mutex's releases during it: its holders in turn, each over
 *    the span from the release before its own, or rather from when it can
 *    have taken the lock: a thread takes a lock while running, so a holder
 *    that was waiting (or preempted) when the release before its own came
 *    took it later, and the time up to then is the waiter's own (the lock
 *    was between holders, or with one whose release was not recorded); a
 *    holder woken by that release, waiting for a CPU, is on the path; and
 *    with regions (ctr_cp_history_use_phases()), a holder that entered
 *    the outermost region of its release after the release before its own
 *    took the lock inside it: what it did before, for another task, is not
 *    this task's.
 * Hops recurse (the releaser waited on a third thread), so a convoy (each
 * waiter let go by the one released before it) leads through its members'
 * short critical sections to what held the queue up. The releaser's time
 * is only walked within the wait it explains: work it did before the
 * waiter began waiting is not this task's.
 *
 * What the data cannot tell: uncontended acquisitions are not recorded, so
 * a holder's critical section shows as its running (and waits) before its
 * release, back to the wait being explained; time a thread was running
 * that the trace does not cover (before its first event, in a gap, outside
 * a flight recorder's window) is "unknown", never another state.
 */
#ifndef CTR_CRITPATH_H
#define CTR_CRITPATH_H

#include <stddef.h>
#include <stdint.h>

#include "read/engine.h"
#include "read/trace.h"

struct ctr_region;

/* A segment's state: the state machine's (state.h), or no data. */
enum ctr_cp_state {
    CTR_CP_RUNNING = 1, /* CTR_STATE_RUNNING */
    CTR_CP_BLOCKED,     /* a wait the path did not hop out of */
    CTR_CP_RUNNABLE,
    CTR_CP_UNKNOWN /* the trace has nothing of this thread then */
};

/* "running", "blocked", "runnable" or "unknown". */
const char *ctr_cp_state_name(uint8_t state);

struct ctr_cp_segment {
    uint32_t thread; /* index in ctr_trace.threads */
    uint8_t state;   /* enum ctr_cp_state */
    uint8_t reason;  /* blocked, runnable: the wait's (enum ctr_reason) */
    uint16_t hops;   /* releases followed to get here: 0 on the task's thread */
    uint64_t object;
    /* Blocked, runnable: where the wait began. Running: where the running
     * ended (the release that made it a hop's end, or the next wait), 0 if
     * unknown. */
    uint64_t stack_id;
    uint64_t start_ns, end_ns;
    /* The first hop that led here (index in the path's hops), or
     * UINT32_MAX on the task's own thread before any hop. */
    uint32_t via;
    /* The innermost region open on its thread then, of whichever task, or
     * NULL (set by ctr_region_line_split(); the walk leaves it NULL). */
    const struct ctr_region *region;
};

/* A wait of the task's own thread that the path left through its release. */
struct ctr_cp_hop {
    uint8_t reason;
    uint64_t object, stack_id; /* the wait's */
    uint32_t releaser;         /* thread index */
    uint64_t release_stack;
    uint64_t start_ns, end_ns; /* the part of the wait the path explains */
};

struct ctr_cp_path {
    uint64_t task;
    uint64_t begin_ns, end_ns;
    struct ctr_cp_segment *seg; /* latest first, as walked */
    size_t nseg, seg_cap;
    struct ctr_cp_hop *hop; /* the task thread's own hops, latest first */
    size_t nhop, hop_cap;
    uint64_t unknown_ns; /* time in CTR_CP_UNKNOWN segments */
    int cut;             /* a chain of hops longer than the walk follows */
    /* Part of the history it needed was let go to keep within the memory
     * budget: its unknown time includes that. */
    int forgotten;
};

/* A task and its path, as the reports take them. */
struct ctr_task;
struct ctr_cp_task {
    const struct ctr_task *task;
    struct ctr_cp_path path;
};

/* A task whose path a reading is to walk: its id, span and the thread that
 * ended it (for an open task: the trace's end on the thread that began
 * it). */
struct ctr_cp_want {
    uint64_t task, begin_ns, end_ns;
    uint32_t end_thread;
};

/* A window of time to keep intervals in (the wants' spans, merged). */
struct ctr_cp_window {
    uint64_t begin_ns, end_ns;
};

/* Takes the path of want `index` as soon as it is walked; *p is then the
 * callee's (free with ctr_cp_path_free()). @return 0, or a negative errno
 * that stops the walks. */
typedef int (*ctr_cp_path_fn)(void *ctx, size_t index, struct ctr_cp_path *p);

/* What the history keeps at most (intervals and releases), unless told:
 * beyond it, the oldest half goes, and the paths that needed it say so. */
#define CTR_CP_BUDGET_DEFAULT ((size_t)32 << 20)

struct ctr_cp_history;

/* ctr_cp_history_new() : a store of the intervals of trace t's threads that
 * overlap the span of one of w[0..n-1] (copied), as the reading goes.
 * With fn, each want's path is walked as soon as the reading has settled
 * past its end (engine.h) and handed to fn, and what no task left needs is
 * let go: memory stays within what the tasks open at one time need, and
 * `budget` bytes (0: CTR_CP_BUDGET_DEFAULT). Without fn, everything in the
 * windows is kept for ctr_cp_walk(). @return NULL if out of memory. */
struct ctr_cp_history *ctr_cp_history_new(const struct ctr_trace *t, const struct ctr_cp_want *w,
                                          size_t n, size_t budget, ctr_cp_path_fn fn, void *ctx);
/* Where the phase (the outermost region, regionline.h) that thread was in
 * at ns began; 0 if it was in none. */
typedef uint64_t (*ctr_cp_phase_fn)(void *ctx, uint32_t thread, uint64_t ns);

/* ctr_cp_history_use_phases() : lets h's walks assume that a critical
 * section does not straddle the start of the phase its release is in: a
 * holder's span then starts no earlier than that phase. Without it, no
 * such assumption. */
void ctr_cp_history_use_phases(struct ctr_cp_history *h, ctr_cp_phase_fn fn, void *ctx);

/* The consumer that fills h (engine.h), and walks as the reading settles. */
struct ctr_consumer ctr_cp_history_consumer(struct ctr_cp_history *h);
/* 0, or the negative errno that stopped h (-ENOMEM, or fn's). */
int ctr_cp_history_error(const struct ctr_cp_history *h);
/* The bytes of history h keeps now. */
size_t ctr_cp_history_kept(const struct ctr_cp_history *h);
/* How many wants are still to walk (after a complete reading: none). */
size_t ctr_cp_history_left(const struct ctr_cp_history *h);
void ctr_cp_history_free(struct ctr_cp_history *h);

/* ctr_cp_walk() : the critical path of the task that began at begin_ns and
 * ended at end_ns on thread index end_thread, from what h keeps (every
 * interval before end_ns must be in).
 * Fills *p (zeroed first; free with ctr_cp_path_free()).
 * @return 0 or -ENOMEM. */
int ctr_cp_walk(const struct ctr_cp_history *h, uint64_t task, uint32_t end_thread,
                uint64_t begin_ns, uint64_t end_ns, struct ctr_cp_path *p);
void ctr_cp_path_free(struct ctr_cp_path *p);

#endif
