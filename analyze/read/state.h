/* SPDX-License-Identifier: MIT */
/* state.h - the per-thread state machine: turns each thread's events into the
 * intervals it spent in each state, and ties each wait to the release that
 * ended it.
 *
 * States: running (alive and not waiting), blocked (in a wait, with its
 * reason, object and the stack where it began) and runnable (let go by a
 * release, or preempted, and not yet running again). Preemption, and the
 * exact moment a released waiter ran again, come from context switches when
 * the trace recorded them (SWITCH_* events); a preempted interval has
 * reason 0 and no wait. A wait's release is the last one on its object
 * between the wait's start and the moment its thread ran again: a Release
 * event (unlock, post, signal), the ThreadEnd of the thread a join waits
 * for, or, for a barrier, the Block of the last thread to arrive. The
 * blocked part lasts until the release, the runnable part from the release
 * until the thread resumes; a wait with no release is blocked to its end. A
 * wait still open when the thread's events end is closed at the end of the
 * trace and flagged. Events that make no sense in the current state (an
 * Unblock with no Block, after dropped events) are skipped and counted,
 * never fatal.
 *
 * The machine is fed one event at a time in time order across all threads
 * (engine.c's merge), so that "the last release so far" of an object is the
 * last release before the moment asked about: it keeps, per object, only
 * its latest release, and memory stays bounded by the live objects and
 * threads, never by the length of the trace. At equal times the merge puts
 * releases first, so a release at the very nanosecond a waiter resumes
 * counts, as it always has.
 */
#ifndef CTR_STATE_H
#define CTR_STATE_H

#include "read/trace.h"

enum ctr_state { CTR_STATE_RUNNING = 1, CTR_STATE_BLOCKED, CTR_STATE_RUNNABLE };

/* Who let a waiter go, from where. */
struct ctr_release {
    uint64_t object, ns, stack_id;
    const struct ctr_thread_info *thread; /* the releasing thread */
};

struct ctr_interval {
    const struct ctr_thread_info *thread;
    enum ctr_state state;
    uint64_t start_ns, end_ns;
    /* CTR_STATE_BLOCKED and CTR_STATE_RUNNABLE: the wait they are part of. */
    uint8_t reason; /* enum ctr_reason */
    uint64_t object, stack_id;
    const struct ctr_release *release; /* NULL: no release seen */
    int open;                          /* still blocked when the trace ends */
};

/* Called with each interval as it ends; the interval and what it points to
 * are valid for the call only. */
typedef void (*ctr_interval_fn)(void *ctx, const struct ctr_interval *iv);

struct ctr_states;

/* ctr_states_new() : a machine over the threads of t (t->threads may grow
 * between calls; t must outlive the machine), calling fn(ctx, ...) for
 * every interval (fn may be NULL: only the odd events are counted), and
 * begin(ctx, ...) (may be NULL) as the thread enters each state: the
 * interval's thread, state, start_ns and, blocked, its reason, object and
 * stack; its end, release and open flag are not known yet. A state is
 * entered at the time of the event fed, but for the running state of a
 * thread whose first event is not its start (running since the trace's
 * start, or the end of a gap). The parts of a wait (blocked, then runnable
 * from its release, then running from its switch-in before the Unblock)
 * are decided as it ends: begin sees its blocked part only.
 * @return NULL if out of memory. Not thread-safe: one caller. */
struct ctr_states *ctr_states_new(const struct ctr_trace *t, ctr_interval_fn fn,
                                  ctr_interval_fn begin, void *ctx);
void ctr_states_free(struct ctr_states *s);

/* ctr_states_event() : feeds event e of thread index `thread` (in
 * t->threads); events must come in time order across threads, releases
 * before other events of the same time (ctr_event_is_release()). On the
 * thread's first event that is not its THREAD_START, it was already running
 * at t->start_ns (or at the end of the last gap). @return 0 or -ENOMEM. */
int ctr_states_event(struct ctr_states *s, uint32_t thread, const struct ctr_trace_event *e);

/* ctr_states_gap() : a part of the trace is missing from from_ns to to_ns:
 * every thread's interval ends at from_ns (a wait as one still open), and
 * each thread starts again with its next event (running from to_ns if that
 * is not its start). No release reaches across the gap. */
void ctr_states_gap(struct ctr_states *s, uint64_t from_ns, uint64_t to_ns);

/* ctr_states_settled() : a time before which no interval that ends from
 * now on can start or end: every boundary still to come is at or after
 * it (the time of the last event fed, or earlier while a wait may still
 * end at a release already seen, or resume at a switch-in already seen).
 * What a consumer derives from intervals before it is final. */
uint64_t ctr_states_settled(const struct ctr_states *s);

/* ctr_states_finish() : closes every thread's interval at t->end_ns (a wait
 * as still open). @return the number of events that did not fit the
 * machine. */
uint64_t ctr_states_finish(struct ctr_states *s);

/* Whether e releases waiters: a Release, a ThreadEnd (its joiners), a
 * barrier's Block (the last to arrive lets the others go). */
static inline int ctr_event_is_release(const struct ctr_trace_event *e)
{
    return e->type == CTR_EV_RELEASE || e->type == CTR_EV_THREAD_END ||
           (e->type == CTR_EV_BLOCK && e->args[0] == CTR_REASON_BARRIER_WAIT);
}

/* ctr_state_walk() : runs the machine over a trace read whole
 * (ctr_trace_read()), calling fn for every interval. @return the number of
 * events that did not fit the machine, or UINT64_MAX if out of memory. */
uint64_t ctr_state_walk(const struct ctr_trace *t, ctr_interval_fn fn, void *ctx);

#endif
