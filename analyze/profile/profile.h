/* SPDX-License-Identifier: MIT */
/* profile.h - delay profiles: where threads waited, as pprof profiles.
 *
 * Types, with Go's semantics where Go has them:
 *   sync, net, syscall  time blocked on a wait of that class, from the wait's
 *                       start to its release (or its end, with no release),
 *                       at the stack where the wait began;
 *   sched               time runnable: from the release to the moment the
 *                       thread ran again, at the waiting stack; and, when
 *                       the trace has context switches, time preempted,
 *                       under "preempted" at the thread's start routine;
 *   blame               the blocked time of every released wait, at the
 *                       stack of the thread that released it: the end of
 *                       the critical section others waited for;
 *   cpu                 the CPU samples (FORMAT.md §4.1): each the CPU
 *                       time it stands for, at the stack it interrupted,
 *                       as Go's CPU profile (samples/count, cpu/nanoseconds).
 * Each delay sample's leaf frame names the call (e.g. pthread_mutex_lock,
 * or for blame pthread_mutex_unlock) above the recorded stack; a CPU
 * sample's stack is the running code's own, with no synthetic leaf.
 *
 * A filter restricts a profile to the user's terms: to the time that threads
 * worked for tasks of a type, or for tasks slower than a latency (tasks.h
 * says when a thread works for a task), and/or to the time they spent inside
 * regions of a name. Each interval is clipped to the windows its thread has
 * in the filter: a wait counts once, with the part of its time inside them
 * (a blame sample with the part of the waiter's time); a CPU sample counts
 * whole when the instant it was taken is inside them. */
#ifndef CTR_PROFILE_H
#define CTR_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "read/engine.h"
#include "profile/pprof.h"
#include "symbols/tracesym.h"
#include "read/trace.h"

struct ctr_tasks;
struct ctr_windows;

enum ctr_profile_type {
    CTR_PROFILE_SYNC = 1,
    CTR_PROFILE_SCHED,
    CTR_PROFILE_NET,
    CTR_PROFILE_SYSCALL,
    CTR_PROFILE_BLAME,
    CTR_PROFILE_CPU,
    CTR_PROFILE_LIMIT
};

/* One sample: frames innermost first (a delay profile's synthetic leaf,
 * then code PCs already adjusted to the call instruction), and its two
 * values (for cpu: samples and CPU ns). The frames array lives for the call
 * only; synthetic names are static strings. */
typedef int (*ctr_sample_fn)(void *ctx, const struct ctr_pprof_frame *frames, size_t n,
                             int64_t count, int64_t delay_ns);

/* What a profile is restricted to. The zero value (or a NULL pointer)
 * keeps everything; set fields combine (the time that all of them keep). */
struct ctr_profile_filter {
    const char *task;   /* worked for a task of this type; NULL: no restriction */
    const char *region; /* inside a region of this name (any task); NULL: none */
    uint64_t latmin_ns; /* worked for a task (of `task`'s type, if set) whose
                           latency, or age if still open, is at least this; 0: none */
};

/* ---------------------------------------------------------------------------
 * Collecting: a profile is a consumer of the pipeline (engine.h)
 * ------------------------------------------------------------------------- */

struct ctr_profile_collect;

/* ctr_profile_collect_new() : a collector of profile `type` of the trace t
 * (whose tables it reads), counting only the time `keep` keeps (NULL: all;
 * it must outlive the collector). With `each`, each(each_ctx, ...) gets
 * every wait as it ends (stopping at its first non-zero return, which
 * ctr_profile_collect_end() returns); without, the waits are summed per
 * stack (memory: one entry per distinct stack), for
 * ctr_profile_collect_end() to give out. @return NULL if out of memory. */
struct ctr_profile_collect *ctr_profile_collect_new(const struct ctr_trace *t,
                                                    enum ctr_profile_type type,
                                                    const struct ctr_windows *keep,
                                                    ctr_sample_fn each, void *each_ctx);

/* The consumer that feeds c: intervals, and for cpu the CPU_SAMPLE events. */
struct ctr_consumer ctr_profile_consumer(struct ctr_profile_collect *c);

/* ctr_profile_collect_end() : calls fn once per distinct stack summed (in
 * the order first seen; fn may be NULL with `each`), expanding each stack
 * by the trace's tables. @return 0, -ENOMEM, or the first non-zero return
 * of each or fn. */
int ctr_profile_collect_end(struct ctr_profile_collect *c, ctr_sample_fn fn, void *ctx);

void ctr_profile_collect_free(struct ctr_profile_collect *c);

/* ctr_profile_filter_windows() : the windows that filter f keeps, into
 * *keep, from the tasks ts of trace t; *ntasks and *nregions (may be NULL)
 * get how many tasks and regions matched. @return 0 or -ENOMEM. */
int ctr_profile_filter_windows(const struct ctr_trace *t, const struct ctr_tasks *ts,
                               const struct ctr_profile_filter *f, struct ctr_windows *keep,
                               size_t *ntasks, size_t *nregions);

struct ctr_task;
/* ctr_profile_filter_task() : whether f keeps task (of ts): of f's type,
 * at least f's -latmin long, with a region of f's name. */
int ctr_profile_filter_task(const struct ctr_tasks *ts, const struct ctr_profile_filter *f,
                            const struct ctr_task *task);

/* ctr_profile_filter_slowest() : the tasks of ts that f keeps, slowest
 * first (ctr_task_by_slowest()), at most max of them, into a new array
 * *out (free() it) of *n. @return 0 or -ENOMEM. */
int ctr_profile_filter_slowest(const struct ctr_tasks *ts, const struct ctr_profile_filter *f,
                               size_t max, const struct ctr_task ***out, size_t *n);

/* ctr_profile_filter_is_set() : whether f restricts anything. */
int ctr_profile_filter_is_set(const struct ctr_profile_filter *f);

/* ctr_profile_filter_warn() : when f names a task type or region that
 * matched nothing (ntasks, nregions from ctr_profile_filter_windows()),
 * says so in one line on `warn` (may be NULL): `what` (the "profile", the
 * "timeline") will be empty.
 * @return how many of those problems there are (0: none). */
int ctr_profile_filter_warn(const struct ctr_profile_filter *f, size_t ntasks, size_t nregions,
                            const char *what, FILE *warn);

/* ctr_profile_check() : whether t can give profile `type`: a cpu profile
 * needs CPU samples (else a one-line reason in err, saying how to record
 * them). @return 0, or -ENODATA. */
int ctr_profile_check(const struct ctr_trace *t, enum ctr_profile_type type, char *err,
                      size_t errlen);

/* ctr_profile_emit() : a pprof profile of trace t (symbolized by its
 * mappings, over its span) with the two value types types[] and the period
 * (period_type, period), whose samples fill(ctx, builder) adds, gzip'd to
 * out; symbolization problems go to `warn` (may be NULL). The one way the
 * profiles are written (this file's, critical.h's).
 * @return 0, or a negative errno (fill's, or the output's) with a one-line
 *         reason in err. */
typedef int (*ctr_profile_fill_fn)(void *ctx, struct ctr_pprof *p);
int ctr_profile_emit(const struct ctr_trace *t, const struct ctr_pprof_value_type *types,
                     const struct ctr_pprof_value_type *period_type, int64_t period,
                     ctr_profile_fill_fn fill, void *ctx, FILE *out, FILE *warn, char *err,
                     size_t errlen);

/* ctr_profile_write_collected() : writes what c summed (made without
 * `each`) to out as gzip'd profile.proto, samples typed contentions/count
 * and delay/nanoseconds (cpu: samples/count and cpu/nanoseconds, the
 * period cpu/nanoseconds of the trace's sampling), symbolized by t's mappings (once per distinct
 * address); symbolization problems go to `warn` (may be NULL).
 * @return 0, or a negative errno with a one-line reason in err. */
int ctr_profile_write_collected(const struct ctr_trace *t, struct ctr_profile_collect *c, FILE *out,
                                FILE *warn, char *err, size_t errlen);

/* ---------------------------------------------------------------------------
 * The same over a trace read whole (ctr_trace_read())
 * ------------------------------------------------------------------------- */

/* ctr_profile_samples() : calls fn once per wait that profile `type` counts
 * and that `filter` (NULL: none) keeps, with the delay it keeps.
 * Stops at fn's first non-zero return and returns it; 0 when done, -ENOMEM. */
int ctr_profile_samples(const struct ctr_trace *t, enum ctr_profile_type type,
                        const struct ctr_profile_filter *filter, ctr_sample_fn fn, void *ctx);

/* ctr_profile_collect_whole() : collects profile `type` of t restricted by
 * filter into a new *c (as ctr_profile_collect_new() with `each`), over
 * *keep, the filter's windows (free both after *c). A filter that matches
 * nothing is said on `warn` (may be NULL). @return 0 or a negative errno. */
int ctr_profile_collect_whole(const struct ctr_trace *t, enum ctr_profile_type type,
                              const struct ctr_profile_filter *filter, ctr_sample_fn each,
                              void *each_ctx, struct ctr_windows *keep,
                              struct ctr_profile_collect **c, FILE *warn);

/* ctr_profile_collect_checked() : ctr_profile_check(), then
 * ctr_profile_collect_whole() (no `each`); a failure of the latter is said
 * in err as `doing` ("writing the profile") and its errno's text.
 * @return 0 or a negative errno. */
int ctr_profile_collect_checked(const struct ctr_trace *t, enum ctr_profile_type type,
                                const struct ctr_profile_filter *filter, struct ctr_windows *keep,
                                struct ctr_profile_collect **c, FILE *warn, const char *doing,
                                char *err, size_t errlen);

/* ctr_profile_filter_check() : when filter names a task type or region that
 * t does not have, or no task passes its latency, says so in one line on
 * `warn` (may be NULL): the profile will be empty.
 * @return how many of those problems there are (0: none), or -ENOMEM. */
int ctr_profile_filter_check(const struct ctr_trace *t, const struct ctr_profile_filter *filter,
                             FILE *warn);

/* ctr_profile_write() : writes profile `type` of t, restricted by filter
 * (NULL: none), as ctr_profile_write_collected() does; a filter that
 * matches nothing is said on `warn` too; a cpu profile of a trace without
 * samples is -ENODATA (ctr_profile_check()).
 * @return 0, or a negative errno with a one-line reason in err. */
int ctr_profile_write(const struct ctr_trace *t, enum ctr_profile_type type,
                      const struct ctr_profile_filter *filter, FILE *out, FILE *warn, char *err,
                      size_t errlen);

/* The CLI's names of the types ("sync", ...): NULL / 0 when unknown.
 * CTR_PROFILE_TYPES lists them as the usage text does. */
#define CTR_PROFILE_TYPES "sync, sched, net, syscall, blame, cpu or critical"
const char *ctr_profile_name(enum ctr_profile_type type);
enum ctr_profile_type ctr_profile_parse(const char *name);

#endif
