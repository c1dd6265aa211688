/* state.c - the per-thread state machine (see state.h).
 *
 * Releases are gathered from every thread first, sorted by (object, time),
 * so that each wait finds the release that ended it by a binary search: the
 * last release of its object at or before the wait's end, if it is not
 * before the wait's start.
 */
#include "state.h"

#include <stdlib.h>

struct ctr_states {
    const struct ctr_trace *t;
    struct ctr_release *rel;
    size_t nrel, cap;
};

/* ---------------------------------------------------------------------------
 * The release index
 * ------------------------------------------------------------------------- */

static int add_release(struct ctr_states *s, uint64_t obj, uint64_t ns, uint64_t stack,
                       const struct ctr_thread_info *th)
{
    if (s->nrel == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        struct ctr_release *r = realloc(s->rel, cap * sizeof(*r));
        if (!r)
            return -1;
        s->rel = r;
        s->cap = cap;
    }
    s->rel[s->nrel++] = (struct ctr_release){obj, ns, stack, th};
    return 0;
}

static int cmp_release(const void *a, const void *b)
{
    const struct ctr_release *x = a, *y = b;
    if (x->object != y->object)
        return x->object < y->object ? -1 : 1;
    return x->ns < y->ns ? -1 : x->ns > y->ns;
}

struct ctr_states *ctr_states_new(const struct ctr_trace *t)
{
    struct ctr_states *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->t = t;
    for (size_t i = 0; i < t->nthreads; i++) {
        const struct ctr_thread_info *th = &t->threads[i];
        for (size_t k = 0; k < th->nevents; k++) {
            const struct ctr_trace_event *e = &th->events[k];
            int rc = 0;
            if (e->type == CTR_EV_RELEASE)
                rc = add_release(s, e->args[0], e->ns, e->args[1], th);
            else if (e->type == CTR_EV_THREAD_END && th->handle)
                rc = add_release(s, th->handle, e->ns, 0, th); /* lets joiners go */
            else if (e->type == CTR_EV_BLOCK && e->args[0] == CTR_REASON_BARRIER_WAIT)
                rc = add_release(s, e->args[1], e->ns, e->args[2], th); /* if last to arrive */
            if (rc) {
                ctr_states_free(s);
                return NULL;
            }
        }
    }
    if (s->nrel > 1)
        qsort(s->rel, s->nrel, sizeof(*s->rel), cmp_release);
    return s;
}

void ctr_states_free(struct ctr_states *s)
{
    if (s) {
        free(s->rel);
        free(s);
    }
}

/* The last release of obj in [start, end], or NULL. */
static const struct ctr_release *find_release(const struct ctr_states *s, uint64_t obj,
                                              uint64_t start, uint64_t end)
{
    size_t lo = 0, hi = s->nrel; /* first index with (object, ns) > (obj, end) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct ctr_release *r = &s->rel[mid];
        if (r->object < obj || (r->object == obj && r->ns <= end))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct ctr_release *r = &s->rel[lo - 1];
    return r->object == obj && r->ns >= start ? r : NULL;
}

/* ---------------------------------------------------------------------------
 * The walk
 * ------------------------------------------------------------------------- */

struct walker {
    const struct ctr_states *s;
    const struct ctr_thread_info *th;
    ctr_interval_fn fn;
    void *ctx;
    struct ctr_interval cur; /* the state being accumulated; state 0 = none */
    uint64_t resume_ns;      /* last switch-in during the current wait, 0: none */
};

static void emit(struct walker *w, const struct ctr_interval *iv)
{
    w->fn(w->ctx, iv);
}

/* Emits the current wait, ending at ns: blocked until its release, runnable
 * until the thread ran again (its last switch-in, when switches were
 * recorded; else ns), then running. An open wait has no release. */
static void end_wait(struct walker *w, uint64_t ns, int open)
{
    struct ctr_interval *c = &w->cur;
    uint64_t resume = w->resume_ns >= c->start_ns && w->resume_ns && w->resume_ns <= ns
                          ? w->resume_ns
                          : ns;
    c->release = open ? NULL : find_release(w->s, c->object, c->start_ns, resume);
    c->open = open;
    struct ctr_interval part = *c;
    part.end_ns = c->release ? c->release->ns : resume;
    emit(w, &part);
    if (part.end_ns < resume) {
        part.state = CTR_STATE_RUNNABLE;
        part.start_ns = part.end_ns;
        part.end_ns = resume;
        emit(w, &part);
    }
    if (resume < ns)
        emit(w, &(struct ctr_interval){.thread = w->th, .state = CTR_STATE_RUNNING,
                                       .start_ns = resume, .end_ns = ns});
    w->resume_ns = 0;
}

/* Ends the current interval at ns and starts `next` there (NULL: none). */
static void transition(struct walker *w, uint64_t ns, const struct ctr_interval *next, int open)
{
    struct ctr_interval *c = &w->cur;
    if (c->state == CTR_STATE_BLOCKED) {
        end_wait(w, ns, open);
    } else if (c->state) {
        c->end_ns = ns;
        emit(w, c);
    }
    if (next) {
        *c = *next;
        c->thread = w->th;
        c->start_ns = ns;
    } else {
        c->state = 0;
    }
}

uint64_t ctr_states_walk(const struct ctr_states *s, ctr_interval_fn fn, void *ctx)
{
    const struct ctr_trace *t = s->t;
    uint64_t odd = 0;
    const struct ctr_interval running = {.state = CTR_STATE_RUNNING};
    /* Preempted: runnable with no wait (reason 0). */
    const struct ctr_interval preempted = {.state = CTR_STATE_RUNNABLE};
    for (size_t i = 0; i < t->nthreads; i++) {
        struct walker w = {s, &t->threads[i], fn, ctx, {0}, 0};
        const struct ctr_thread_info *th = w.th;
        if (th->nevents == 0)
            continue;
        /* A thread whose first event is not its start was already running
         * when the trace began (or its start was lost). */
        if (th->events[0].type != CTR_EV_THREAD_START)
            transition(&w, t->start_ns, &running, 0);
        for (size_t k = 0; k < th->nevents; k++) {
            const struct ctr_trace_event *e = &th->events[k];
            switch (e->type) {
            case CTR_EV_THREAD_START:
                transition(&w, e->ns, &running, 0);
                break;
            case CTR_EV_THREAD_END:
                transition(&w, e->ns, NULL, 0);
                break;
            case CTR_EV_BLOCK: {
                if (w.cur.state == CTR_STATE_BLOCKED)
                    odd++; /* the Unblock was lost: the new wait wins */
                struct ctr_interval b = {.state = CTR_STATE_BLOCKED, .reason = (uint8_t)e->args[0],
                                         .object = e->args[1], .stack_id = e->args[2]};
                transition(&w, e->ns, &b, 0);
                break;
            }
            case CTR_EV_UNBLOCK:
                if (w.cur.state != CTR_STATE_BLOCKED)
                    odd++;
                transition(&w, e->ns, &running, 0);
                break;
            case CTR_EV_SWITCH_OUT:
                /* Preempted while running: runnable until switched back in.
                 * (A voluntary switch-out is the wait we already know of,
                 * or one we do not trace: it stays as it is.) */
                if (w.cur.state == CTR_STATE_RUNNING && e->args[0])
                    transition(&w, e->ns, &preempted, 0);
                break;
            case CTR_EV_SWITCH_IN:
                if (w.cur.state == CTR_STATE_BLOCKED)
                    w.resume_ns = e->ns;
                else if (w.cur.state == CTR_STATE_RUNNABLE)
                    transition(&w, e->ns, &running, 0);
                break;
            default:
                break; /* no state change */
            }
        }
        if (w.cur.state)
            transition(&w, t->end_ns, NULL, w.cur.state == CTR_STATE_BLOCKED);
    }
    return odd;
}

uint64_t ctr_state_walk(const struct ctr_trace *t, ctr_interval_fn fn, void *ctx)
{
    struct ctr_states *s = ctr_states_new(t);
    if (!s)
        return UINT64_MAX;
    uint64_t odd = ctr_states_walk(s, fn, ctx);
    ctr_states_free(s);
    return odd;
}
