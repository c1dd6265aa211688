/* SPDX-License-Identifier: MIT */
/* threads.h - `ctrace threads`: threads grouped by start function, with
 * where their time went (like Go's goroutine analysis), and the leak
 * finder: threads still alive and blocked when the trace ends, grouped by
 * what they wait in and from where.
 *
 * A thread's group is its start routine (THREAD_START's pc, symbolized);
 * threads with no THREAD_START in the trace (running before it began, or
 * before a flight-recorder window) form the group "(running at trace
 * start)". Times come from the state machine (state.h): running, runnable
 * (released or preempted, not yet running), and blocked by the class of
 * the wait's reason (sync, net, syscall, sleep); for a sampled trace
 * (FORMAT.md §4.1), a cpu column: the CPU its samples stand for.
 *
 * A leaked thread is one whose events end inside a wait (no UNBLOCK, no
 * THREAD_END): it is blocked when the trace ends. That includes an I/O call
 * still in progress at the end, which the writer records as a BLOCK whose
 * stack is the call site alone (FORMAT.md §4).
 */
#ifndef CTR_THREADS_H
#define CTR_THREADS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "read/engine.h"
#include "read/trace.h"

/* One group of the leak finder: threads blocked at the end of the trace in
 * the same reason at the same stack. */
struct ctr_leak_group {
    uint8_t reason;      /* enum ctr_reason */
    uint64_t stack_id;   /* 0: no stack */
    size_t count;        /* threads */
    uint64_t longest_ns; /* the longest of their waits, to the trace's end */
    uint64_t object;     /* the object (or descriptor) of the first thread */
    int same_object;     /* all of them wait on that one object */
    uint32_t *threads;   /* indexes in ctr_trace.threads, count of them */
};

/* ctr_threads_leaks() : the leak finder's groups of t, largest first (then
 * the longest wait first), into *groups (free with ctr_threads_leaks_free).
 * @return 0 or -ENOMEM. */
int ctr_threads_leaks(const struct ctr_trace *t, struct ctr_leak_group **groups, size_t *n);
void ctr_threads_leaks_free(struct ctr_leak_group *groups, size_t n);

/* ctr_threads_write() : `ctrace threads`: the groups by start function with
 * their count of threads and total running, runnable and blocked time by
 * class (the heaviest group first), then the leak finder's groups, each
 * with the call it blocks in and its stack symbolized innermost first.
 * With tsv, only the leak finder, as lines
 * "count\tcall\tinnermost function\tfile:line" after one header line
 * starting with '#' ("?" for what is unknown). Symbolization problems go to
 * `warn` (may be NULL).
 * @return 0, or a negative errno with a one-line reason in err (-ENOMEM);
 *         write errors are left in out's error flag for the caller. */
int ctr_threads_write(const struct ctr_trace *t, int tsv, FILE *out, FILE *warn, char *err,
                      size_t errlen);

/* The same as a consumer of the pipeline (engine.h): a walk of trace t's
 * states (t: the trace the pipeline fills), with the times per thread
 * (`times`; without, the leak finder alone, as for tsv). NULL if out of
 * memory. */
struct ctr_threads_walk;
struct ctr_threads_walk *ctr_threads_walk_new(const struct ctr_trace *t, int times);
struct ctr_consumer ctr_threads_consumer(struct ctr_threads_walk *w);
void ctr_threads_walk_free(struct ctr_threads_walk *w);

/* ctr_threads_report() : the report of ctr_threads_write() from walk w
 * over the whole of t (tsv when w has no times). @return as
 * ctr_threads_write(). */
int ctr_threads_report(const struct ctr_trace *t, struct ctr_threads_walk *w, FILE *out, FILE *warn,
                       char *err, size_t errlen);

#endif
