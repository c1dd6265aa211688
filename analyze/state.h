/* state.h - the per-thread state machine: turns each thread's events into the
 * intervals it spent in each state, and ties each wait to the release that
 * ended it.
 *
 * States: running (alive and not waiting), blocked (in a wait, with its
 * reason, object and the stack where it began) and runnable (let go by a
 * release, or preempted, and not yet running again). Preemption, and the
 * exact moment a released waiter ran again, come from context switches when
 * the trace recorded them (SWITCH_* events); a preempted interval has
 * reason 0 and no wait. A wait's release is the last one on its
 * object between the wait's start and its end: a Release event (unlock,
 * post, signal), the ThreadEnd of the thread a join waits for, or, for a
 * barrier, the Block of the last thread to arrive. The blocked part lasts
 * until the release, the runnable part from the release until the thread
 * resumes; a wait with no release is blocked to its end. A wait still open
 * when the thread's events end is closed at the end of the trace and
 * flagged. Events that make no sense in the current state (an Unblock with
 * no Block, after dropped events) are skipped and counted, never fatal.
 */
#ifndef CTR_STATE_H
#define CTR_STATE_H

#include "reader.h"

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
    uint8_t reason;              /* enum ctr_reason */
    uint64_t object, stack_id;
    const struct ctr_release *release; /* NULL: no release seen */
    int open;                    /* still blocked when the trace ends */
};

typedef void (*ctr_interval_fn)(void *ctx, const struct ctr_interval *iv);

struct ctr_states;

/* ctr_states_new() : indexes the releases of trace t (which must outlive the
 * result). @return NULL if out of memory. */
struct ctr_states *ctr_states_new(const struct ctr_trace *t);
void ctr_states_free(struct ctr_states *s);

/* ctr_states_walk() : calls fn for every interval of every thread, thread by
 * thread, each thread's intervals in time order.
 * @return the number of events that did not fit the state machine. */
uint64_t ctr_states_walk(const struct ctr_states *s, ctr_interval_fn fn, void *ctx);

/* ctr_state_walk() : the same without keeping the index (one walk). @return
 * as ctr_states_walk(), or UINT64_MAX if out of memory. */
uint64_t ctr_state_walk(const struct ctr_trace *t, ctr_interval_fn fn, void *ctx);

#endif
