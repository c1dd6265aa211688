/* SPDX-License-Identifier: MIT */
/* tasks.h - the user's tasks, regions and logs as the analyses see them, the
 * time windows they give each thread (windows.h), and where that time went.
 * `ctrace tasks` prints them (tasks_report.h); the profile filters keep
 * their windows (profile.h).
 *
 * Rules (docs/analyzer.md, "Tasks, regions and logs", says the same):
 *
 *  - A task's latency is its TASK_END time minus its TASK_BEGIN time,
 *    wherever each happened. A task never ended is open: its age is the end
 *    of the trace minus its TASK_BEGIN, and it ranks among the slowest (and
 *    passes -latmin) by that age. A TASK_END whose task has no TASK_BEGIN in
 *    the trace (begun before the trace or the flight recorder's window) is
 *    ignored and counted; so is a second TASK_END of one task.
 *  - Regions nest per thread. A REGION_END ends the innermost open region of
 *    its thread with the same task and name (else the innermost with the
 *    same name; else it is ignored and counted). A region still open when
 *    its thread ends is closed at the thread's end, and one open at the end
 *    of the trace at the trace's end; both are flagged open. A region's time
 *    is inclusive: a nested region's time counts in it and in the enclosing
 *    one.
 *  - "Worked for the task" (as Go's trace tool does it): a thread's time
 *    counts for task T while the thread is inside a region of T (the union
 *    of T's regions on that thread, nesting counted once). A task that has
 *    no region at all counts the time of the thread that began it, from its
 *    TASK_BEGIN to its TASK_END (even when another thread ended it; the
 *    ending thread's time counts only inside regions of the task), or to the
 *    end of the trace while it is open. Its breakdown is that time, summed
 *    over the threads, split by state: running, runnable, and blocked by
 *    the wait's class (sync, net, syscall, sleep).
 */
#ifndef CTR_TASKS_H
#define CTR_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include "model/cpufuncs.h"
#include "read/engine.h"
#include "read/trace.h"
#include "model/threadtime.h"
#include "model/windows.h"

/* ---------------------------------------------------------------------------
 * The model
 * ------------------------------------------------------------------------- */

struct ctr_task {
    uint64_t id, parent; /* parent 0: none */
    const char *type;    /* "" if the string is missing */
    uint64_t begin_ns;
    uint64_t end_ns; /* TASK_END; the end of the trace when open */
    int ended;
    uint32_t begin_thread;    /* index in ctr_trace.threads */
    uint32_t end_thread;      /* index; UINT32_MAX when open */
    size_t region0, nregions; /* its regions: ctr_tasks.regions[region0 ..] */
    size_t log0, nlogs;       /* its logs: ctr_tasks.logs[log0 ..] */
};

struct ctr_region {
    uint64_t task; /* 0: no task */
    const char *name;
    uint32_t thread; /* index in ctr_trace.threads */
    uint64_t thread_id;
    unsigned depth; /* 0: outermost on its thread */
    uint64_t start_ns, end_ns;
    int open; /* never ended: closed at its thread's or the trace's end */
};

struct ctr_task_log {
    uint64_t task, ns;
    uint32_t thread;
    uint64_t thread_id;
    const char *category; /* "" if none */
    const char *msg;      /* not NUL-terminated: len bytes (owned) */
    size_t len;
};

struct ctr_tasks {
    struct ctr_task *tasks; /* sorted by id */
    size_t ntasks;
    struct ctr_region *regions; /* sorted by task, thread, start */
    size_t nregions;
    struct ctr_task_log *logs; /* sorted by task, time */
    size_t nlogs;
    uint64_t ends_without_begin;        /* TASK_END of a task not begun in the trace */
    uint64_t region_ends_without_begin; /* REGION_END with no open region of that name */
    uint64_t open_regions;              /* regions closed at a thread's or the trace's end */
};

/* A region open on a thread: what the task model, and the Perfetto export
 * (perfetto.c), keep of a REGION_BEGIN until its REGION_END. */
struct ctr_open_region {
    uint64_t task, name_id, start_ns;
    const char *name; /* name_id's string ("" if missing) */
};

/* ctr_region_ending() : which of a thread's open regions r[0..n-1]
 * (outermost first) the REGION_END of `task` and name `name_id` (whose
 * string is `name`) ends, by the rule above: the innermost of that task and
 * name, else the innermost of that name; names match by id or by text.
 * @return its index, or n when none is open. */
size_t ctr_region_ending(const struct ctr_open_region *r, size_t n, uint64_t task, uint64_t name_id,
                         const char *name);

/* Building the model as a consumer of the pipeline (engine.h): events in
 * time order. */
struct ctr_tasks_builder;

/* ctr_tasks_builder_new() : a builder of *ts (zeroed). @return NULL if out
 * of memory. */
struct ctr_tasks_builder *ctr_tasks_builder_new(struct ctr_tasks *ts);
struct ctr_consumer ctr_tasks_consumer(struct ctr_tasks_builder *b);

/* ctr_tasks_builder_end() : finishes *ts once every event of trace t went
 * through (open tasks and regions end at t->end_ns) and frees b. Names
 * point into t's strings, so t must outlive ts.
 * @return 0, or -ENOMEM (then ts holds nothing to free). */
int ctr_tasks_builder_end(struct ctr_tasks_builder *b, const struct ctr_trace *t);

/* ctr_tasks_build() : the same over a trace read whole (ctr_trace_read()).
 * @return 0, or -ENOMEM (then ts holds nothing to free). */
int ctr_tasks_build(const struct ctr_trace *t, struct ctr_tasks *ts);
void ctr_tasks_free(struct ctr_tasks *ts);

/* ctr_tasks_find() : @return the task with that id, or NULL. */
const struct ctr_task *ctr_tasks_find(const struct ctr_tasks *ts, uint64_t id);

/* ctr_task_latency() : @return TASK_END - TASK_BEGIN, or the age at the end
 * of the trace of an open task (0 if the clocks disagree). */
uint64_t ctr_task_latency(const struct ctr_task *task);

/* ctr_task_by_slowest() : qsort's order for an array of pointers to tasks:
 * slowest first (an open task by its age), then by id. */
int ctr_task_by_slowest(const void *pa, const void *pb);

/* ---------------------------------------------------------------------------
 * Windows: per thread, the time that tasks and regions keep
 * ------------------------------------------------------------------------- */

/* ctr_task_windows() : adds the time that threads worked for `task` (the
 * rule above) to ws. @return 0 or -ENOMEM. */
int ctr_task_windows(const struct ctr_tasks *ts, const struct ctr_task *task,
                     struct ctr_windows *ws);

/* ctr_tasks_windows() : the finished windows of every task of `type` (NULL:
 * any) whose latency (an open task's age) is at least latmin_ns; *matched
 * (may be NULL) gets how many tasks that is. @return 0 or -ENOMEM. */
int ctr_tasks_windows(const struct ctr_trace *t, const struct ctr_tasks *ts, const char *type,
                      uint64_t latmin_ns, struct ctr_windows *ws, size_t *matched);

/* ctr_region_windows() : the finished windows of every region named `name`,
 * of any task or none; *matched (may be NULL) gets how many regions.
 * @return 0 or -ENOMEM. */
int ctr_region_windows(const struct ctr_trace *t, const struct ctr_tasks *ts, const char *name,
                       struct ctr_windows *ws, size_t *matched);

/* ---------------------------------------------------------------------------
 * Breakdowns
 * ------------------------------------------------------------------------- */

/* Where the threads that worked for a task spent that time, in ns, and
 * the CPU samples taken in it (ctr_windows_keep_sample), by innermost PC.
 * Free with ctr_task_breakdowns_free(). */
struct ctr_task_breakdown {
    uint64_t times[CTR_TIME_N]; /* by kind (threadtime.h), off-cpu apportioned */
    size_t nthreads;            /* threads that worked for it */
    struct ctr_cpu_leaves cpu;
};

/* Frees what the breakdowns b[0..n-1] hold (not b). */
void ctr_task_breakdowns_free(struct ctr_task_breakdown *b, size_t n);

/* Breakdowns as a consumer of the pipeline: a walk of the states. */
struct ctr_tasks_breakdown_walk;

/* ctr_tasks_breakdown_new() : a walk that fills out[i] with the breakdown
 * of tasks[i], i < n, of the model ts of trace t. @return NULL if out of
 * memory; a walk that runs out later leaves its breakdowns' CPU short and
 * says so: ctr_tasks_breakdown_finish(). */
struct ctr_tasks_breakdown_walk *ctr_tasks_breakdown_new(const struct ctr_trace *t,
                                                         const struct ctr_tasks *ts,
                                                         const struct ctr_task *const *tasks,
                                                         size_t n, struct ctr_task_breakdown *out);

/* The consumer that feeds w, over `walked`: t itself, or the same file read
 * again (its threads then have the same indexes). */
struct ctr_consumer ctr_tasks_breakdown_consumer(struct ctr_tasks_breakdown_walk *w,
                                                 const struct ctr_trace *walked);
/* ctr_tasks_breakdown_finish() : after the reading ended, moves from each
 * breakdown's running time what the CPU check found off the CPU or waiting
 * for one (model/cpucheck.h, ctr_cpucheck_split()). @return 0, or -ENOMEM
 * if the walk ran out of memory at any point. */
int ctr_tasks_breakdown_finish(struct ctr_tasks_breakdown_walk *w);
void ctr_tasks_breakdown_free(struct ctr_tasks_breakdown_walk *w);

/* ctr_tasks_breakdown() : the same in one walk of a trace read whole.
 * @return 0 or -ENOMEM. */
int ctr_tasks_breakdown(const struct ctr_trace *t, const struct ctr_tasks *ts,
                        const struct ctr_task *const *tasks, size_t n,
                        struct ctr_task_breakdown *out);

#endif
