/* state.c - the per-thread state machine (see state.h). */
#include "state.h"

struct walker {
    const struct ctr_trace *t;
    const struct ctr_thread_info *th;
    ctr_interval_fn fn;
    void *ctx;
    struct ctr_interval cur; /* the state being accumulated; state 0 = none */
};

/* Ends the current interval at ns and starts `next` there. */
static void transition(struct walker *w, uint64_t ns, const struct ctr_interval *next)
{
    if (w->cur.state) {
        w->cur.end_ns = ns;
        w->fn(w->ctx, &w->cur);
    }
    if (next) {
        w->cur = *next;
        w->cur.thread = w->th;
        w->cur.start_ns = ns;
    } else {
        w->cur.state = 0;
    }
}

uint64_t ctr_state_walk(const struct ctr_trace *t, ctr_interval_fn fn, void *ctx)
{
    uint64_t odd = 0;
    const struct ctr_interval running = {.state = CTR_STATE_RUNNING};
    for (size_t i = 0; i < t->nthreads; i++) {
        struct walker w = {t, &t->threads[i], fn, ctx, {0}};
        const struct ctr_thread_info *th = w.th;
        if (th->nevents == 0)
            continue;
        /* A thread whose first event is not its start was already running
         * when the trace began (or its start was lost). */
        if (th->events[0].type != CTR_EV_THREAD_START)
            transition(&w, t->start_ns, &running);
        for (size_t k = 0; k < th->nevents; k++) {
            const struct ctr_event *e = &th->events[k];
            switch (e->type) {
            case CTR_EV_THREAD_START:
                transition(&w, e->ns, &running);
                break;
            case CTR_EV_THREAD_END:
                transition(&w, e->ns, NULL);
                break;
            case CTR_EV_BLOCK: {
                if (w.cur.state == CTR_STATE_BLOCKED)
                    odd++; /* the Unblock was lost: the new wait wins */
                struct ctr_interval b = {.state = CTR_STATE_BLOCKED, .reason = (uint8_t)e->args[0],
                                         .object = e->args[1], .stack_id = e->args[2]};
                transition(&w, e->ns, &b);
                break;
            }
            case CTR_EV_UNBLOCK:
                if (w.cur.state != CTR_STATE_BLOCKED)
                    odd++;
                transition(&w, e->ns, &running);
                break;
            default:
                break; /* no state change */
            }
        }
        if (w.cur.state) {
            w.cur.open = w.cur.state == CTR_STATE_BLOCKED;
            transition(&w, t->end_ns, NULL);
        }
    }
    return odd;
}
