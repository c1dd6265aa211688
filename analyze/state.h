/* state.h - the per-thread state machine: turns each thread's events into the
 * intervals it spent in each state.
 *
 * States so far: running (alive and not waiting) and blocked (in a wait with
 * a reason, an object and the stack where the wait began). A wait still open
 * when the thread's events end is closed at the end of the trace and flagged,
 * which is what a thread blocked forever looks like. Events that make no
 * sense in the current state (an Unblock with no Block, after dropped events)
 * are skipped and counted, never fatal.
 */
#ifndef CTR_STATE_H
#define CTR_STATE_H

#include "reader.h"

enum ctr_state { CTR_STATE_RUNNING = 1, CTR_STATE_BLOCKED };

struct ctr_interval {
    const struct ctr_thread_info *thread;
    enum ctr_state state;
    uint64_t start_ns, end_ns;
    /* CTR_STATE_BLOCKED only: */
    uint8_t reason;              /* enum ctr_reason */
    uint64_t object, stack_id;
    int open;                    /* still blocked when the trace ends */
};

typedef void (*ctr_interval_fn)(void *ctx, const struct ctr_interval *iv);

/* ctr_state_walk() : calls fn for every interval of every thread, thread by
 * thread, each thread's intervals in time order.
 * @return the number of events that did not fit the state machine. */
uint64_t ctr_state_walk(const struct ctr_trace *t, ctr_interval_fn fn, void *ctx);

#endif
