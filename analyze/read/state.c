/* SPDX-License-Identifier: MIT */
/* state.c - the per-thread state machine (see state.h).
 *
 * Each thread has a walker: the interval it is in, and while it waits, the
 * last moment it was switched back in. The releases seen so far are kept as
 * one entry per object, its latest; a wait that ends looks its object up
 * there. When the wait's thread ran again before its Unblock (a SWITCH_IN
 * during the wait), the release that counts is the last one before that
 * switch-in, which is copied aside at the switch-in, since the object may be
 * released again before the Unblock arrives.
 */
#include "read/state.h"

#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"
#include "read/idmap.h"

/* An object's last release (the object is its key in by_object). */
struct release_entry {
    uint64_t ns, stack_id;
    uint32_t thread;
};

struct walker {
    struct ctr_interval cur;   /* the state being accumulated; state 0 = none */
    uint64_t resume_ns;        /* last switch-in during the current wait, 0: none */
    struct release_entry snap; /* the wait's object's last release at resume_ns */
    uint8_t has_snap;
    uint8_t started;  /* an event of the thread was seen (since the last gap) */
    uint8_t untraced; /* the wait is a SWITCH_WAIT's (FORMAT.md §4.2) */
};

struct ctr_states {
    const struct ctr_trace *t;
    ctr_interval_fn fn, begin;
    void *ctx;
    struct walker *w;
    size_t nw, wcap;
    /* The last release of each object: map object -> index in rel[]. */
    struct ctr_idmap by_object;
    struct release_entry *rel;
    size_t nrel, relcap, prune_at;
    uint64_t restart_ns; /* where threads start again after a gap */
    uint64_t now_ns;     /* the time of the last event fed */
    uint64_t odd;
};

struct ctr_states *ctr_states_new(const struct ctr_trace *t, ctr_interval_fn fn,
                                  ctr_interval_fn begin, void *ctx)
{
    struct ctr_states *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->t = t;
    s->fn = fn;
    s->begin = begin;
    s->ctx = ctx;
    s->prune_at = 4096;
    s->restart_ns = UINT64_MAX; /* t->start_ns, read when first needed */
    return s;
}

void ctr_states_free(struct ctr_states *s)
{
    if (s) {
        free(s->w);
        free(s->rel);
        ctr_idmap_free(&s->by_object);
        free(s);
    }
}

/* ---------------------------------------------------------------------------
 * The releases
 * ------------------------------------------------------------------------- */

struct prune {
    const struct release_entry *rel;
    uint64_t before;
};

static int keep_release(void *ctx, uint64_t object, uint64_t value)
{
    const struct prune *p = ctx;
    (void)object;
    return p->rel[value].ns >= p->before;
}

/* Forgets releases no wait can use any more: older than every wait going on
 * and than now (later waits start later). */
static int prune_releases(struct ctr_states *s)
{
    uint64_t before = s->now_ns;
    for (size_t i = 0; i < s->nw; i++)
        if (s->w[i].cur.state == CTR_STATE_BLOCKED && s->w[i].cur.start_ns < before)
            before = s->w[i].cur.start_ns;
    struct prune p = {s->rel, before};
    struct release_entry *kept = malloc((s->nrel ? s->nrel : 1) * sizeof(*kept));
    if (!kept || ctr_idmap_filter(&s->by_object, keep_release, &p) != 0) {
        free(kept);
        return -1;
    }
    size_t n = 0;
    for (size_t k = 0; k < s->by_object.cap; k++) {
        struct ctr_idmap_slot *slot = &s->by_object.slots[k];
        if (slot->used) {
            kept[n] = s->rel[slot->value];
            slot->value = n++;
        }
    }
    free(s->rel);
    s->rel = kept;
    s->relcap = s->nrel ? s->nrel : 1;
    s->nrel = n;
    s->prune_at = n * 2 > 4096 ? n * 2 : 4096;
    return 0;
}

static int note_release(struct ctr_states *s, uint64_t object, uint64_t ns, uint64_t stack,
                        uint32_t thread)
{
    uint64_t *at = ctr_idmap_get(&s->by_object, object);
    if (at) {
        s->rel[*at] = (struct release_entry){ns, stack, thread};
        return 0;
    }
    if (s->nrel >= s->prune_at && prune_releases(s) != 0)
        return -1;
    if (ctr_grow(&s->rel, &s->relcap, s->nrel + 1, sizeof(*s->rel)) != 0 ||
        ctr_idmap_put(&s->by_object, object, s->nrel) != 0)
        return -1;
    s->rel[s->nrel++] = (struct release_entry){ns, stack, thread};
    return 0;
}

static const struct release_entry *last_release(const struct ctr_states *s, uint64_t object)
{
    const uint64_t *at = ctr_idmap_get(&s->by_object, object);
    return at ? &s->rel[*at] : NULL;
}

/* ---------------------------------------------------------------------------
 * The walk
 * ------------------------------------------------------------------------- */

static void emit(struct ctr_states *s, const struct ctr_interval *iv)
{
    if (s->fn)
        s->fn(s->ctx, iv);
}

/* Whether w's wait was switched back in by ns (its last switch-in). */
static int switched_in(const struct walker *w, uint64_t ns)
{
    return w->resume_ns && w->resume_ns >= w->cur.start_ns && w->resume_ns <= ns;
}

/* The release w's wait takes when it ends now: switched in, the one copied
 * aside then; else its object's last. (It counts only if it came after
 * the wait's start.) */
static const struct release_entry *wait_release(const struct ctr_states *s, const struct walker *w,
                                                int switched)
{
    return switched ? (w->has_snap ? &w->snap : NULL) : last_release(s, w->cur.object);
}

/* Emits the current wait of w, ending at ns: blocked until its release,
 * runnable until the thread ran again (its last switch-in, when switches
 * were recorded; else ns), then running. An open wait has no release. */
static void end_wait(struct ctr_states *s, struct walker *w, uint64_t ns, int open)
{
    struct ctr_interval *c = &w->cur;
    int switched = switched_in(w, ns);
    uint64_t resume = switched ? w->resume_ns : ns;
    const struct release_entry *r = !open && s->fn ? wait_release(s, w, switched) : NULL;
    struct ctr_release rel;
    c->release = NULL;
    if (r && r->ns >= c->start_ns && r->ns <= resume) {
        rel = (struct ctr_release){c->object, r->ns, r->stack_id, &s->t->threads[r->thread]};
        c->release = &rel;
    }
    c->open = open;
    struct ctr_interval part = *c;
    part.end_ns = c->release ? c->release->ns : resume;
    emit(s, &part);
    if (part.end_ns < resume) {
        part.state = CTR_STATE_RUNNABLE;
        part.start_ns = part.end_ns;
        part.end_ns = resume;
        emit(s, &part);
    }
    if (resume < ns)
        emit(s, &(struct ctr_interval){.thread = c->thread,
                                       .state = CTR_STATE_RUNNING,
                                       .start_ns = resume,
                                       .end_ns = ns});
    w->resume_ns = 0;
    w->has_snap = 0;
}

/* Ends w's current interval at ns and starts `next` there (NULL: none). */
static void transition(struct ctr_states *s, struct walker *w, uint32_t thread, uint64_t ns,
                       const struct ctr_interval *next, int open)
{
    struct ctr_interval *c = &w->cur;
    c->thread = &s->t->threads[thread]; /* the table may have moved since */
    if (!s->fn) {
        /* No taker of intervals: only the states matter (the odd events). */
    } else if (c->state == CTR_STATE_BLOCKED) {
        end_wait(s, w, ns, open);
    } else if (c->state) {
        c->end_ns = ns;
        emit(s, c);
    }
    if (next) {
        *c = *next;
        c->thread = &s->t->threads[thread];
        c->start_ns = ns;
        if (s->begin)
            s->begin(s->ctx, c);
    } else {
        c->state = 0;
    }
}

static const struct ctr_interval running = {.state = CTR_STATE_RUNNING};
/* Preempted: runnable with no wait (reason 0). */
static const struct ctr_interval preempted = {.state = CTR_STATE_RUNNABLE};

int ctr_states_event(struct ctr_states *s, uint32_t thread, const struct ctr_trace_event *e)
{
    if (thread >= s->nw) {
        if (ctr_grow(&s->w, &s->wcap, (size_t)thread + 1, sizeof(*s->w)) != 0)
            return -1;
        memset(&s->w[s->nw], 0, ((size_t)thread + 1 - s->nw) * sizeof(*s->w));
        s->nw = (size_t)thread + 1;
    }
    struct walker *w = &s->w[thread];
    const struct ctr_thread_info *th = &s->t->threads[thread];
    s->now_ns = e->ns;
    int rc = 0;
    /* Releases only shape intervals: without a taker, the odd events are
     * counted all the same. */
    if (!s->fn)
        ;
    else if (e->type == CTR_EV_RELEASE)
        rc = note_release(s, e->args[0], e->ns, e->args[1], thread);
    else if (e->type == CTR_EV_THREAD_END && th->handle)
        rc = note_release(s, th->handle, e->ns, 0, thread); /* lets joiners go */
    else if (e->type == CTR_EV_BLOCK && e->args[0] == CTR_REASON_BARRIER_WAIT)
        rc = note_release(s, e->args[1], e->ns, e->args[2], thread); /* if last to arrive */
    if (rc)
        return -1;
    /* A thread whose first event is not its start was already running when
     * the trace began (or its start was lost). */
    if (!w->started) {
        w->started = 1;
        if (e->type != CTR_EV_THREAD_START)
            transition(s, w, thread, s->restart_ns == UINT64_MAX ? s->t->start_ns : s->restart_ns,
                       &running, 0);
    }
    switch (e->type) {
    case CTR_EV_THREAD_START:
        transition(s, w, thread, e->ns, &running, 0);
        break;
    case CTR_EV_THREAD_END:
        w->untraced = 0;
        transition(s, w, thread, e->ns, NULL, 0);
        break;
    case CTR_EV_BLOCK: {
        /* A wait the switches saw first (its BLOCK written late, as an I/O
         * call's is) gives way to the recorded one; else the Unblock was
         * lost: the new wait wins. */
        if (w->cur.state == CTR_STATE_BLOCKED && !w->untraced)
            s->odd++;
        w->untraced = 0;
        struct ctr_interval b = {.state = CTR_STATE_BLOCKED,
                                 .reason = (uint8_t)e->args[0],
                                 .object = e->args[1],
                                 .stack_id = e->args[2]};
        transition(s, w, thread, e->ns, &b, 0);
        break;
    }
    case CTR_EV_UNBLOCK:
        if (w->cur.state != CTR_STATE_BLOCKED || w->untraced)
            s->odd++;
        w->untraced = 0;
        transition(s, w, thread, e->ns, &running, 0);
        break;
    case CTR_EV_SWITCH_OUT:
        /* Preempted while running: runnable until switched back in. A
         * voluntary switch-out is the wait we already know of, or one whose
         * BLOCK comes later (an I/O call's, written once it returned), or
         * one no wrapper saw: which, only the writer can tell (a
         * SWITCH_WAIT, below); the CPU-time check (model/cpucheck.h)
         * catches the last kind unnamed. */
        if (w->cur.state == CTR_STATE_RUNNING && e->args[0])
            transition(s, w, thread, e->ns, &preempted, 0);
        break;
    case CTR_EV_SWITCH_WAIT:
        /* A switch-out the writer found in no recorded wait (FORMAT.md
         * §4.2): blocked until switched back in, as it named it. */
        if (w->cur.state == CTR_STATE_RUNNING) {
            struct ctr_interval b = {.state = CTR_STATE_BLOCKED,
                                     .reason = (uint8_t)e->args[0],
                                     .object = e->args[1],
                                     .stack_id = e->args[2]};
            transition(s, w, thread, e->ns, &b, 0);
            w->untraced = 1;
        }
        break;
    case CTR_EV_SWITCH_IN:
        if (w->untraced) {
            w->untraced = 0;
            transition(s, w, thread, e->ns, &running, 0);
        } else if (w->cur.state == CTR_STATE_BLOCKED) {
            w->resume_ns = e->ns;
            const struct release_entry *r = s->fn ? last_release(s, w->cur.object) : NULL;
            w->has_snap = r != NULL;
            if (r)
                w->snap = *r;
        } else if (w->cur.state == CTR_STATE_RUNNABLE) {
            transition(s, w, thread, e->ns, &running, 0);
        }
        break;
    default:
        break; /* no state change */
    }
    return 0;
}

void ctr_states_gap(struct ctr_states *s, uint64_t from_ns, uint64_t to_ns)
{
    for (size_t i = 0; i < s->nw; i++) {
        struct walker *w = &s->w[i];
        if (w->cur.state)
            transition(s, w, (uint32_t)i, from_ns, NULL, w->cur.state == CTR_STATE_BLOCKED);
        w->started = 0;
        w->untraced = 0;
        w->resume_ns = 0;
        w->has_snap = 0;
    }
    s->nrel = 0;
    ctr_idmap_free(&s->by_object);
    s->restart_ns = to_ns;
}

uint64_t ctr_states_settled(const struct ctr_states *s)
{
    uint64_t settled = s->now_ns;
    for (size_t i = 0; i < s->nw; i++) {
        const struct walker *w = &s->w[i];
        const struct ctr_interval *c = &w->cur;
        if (c->state != CTR_STATE_BLOCKED)
            continue; /* its boundaries to come are at or after now */
        /* Its release, if it ended now; ending later, it takes that one or
         * a later one (the object released again). */
        int switched = switched_in(w, s->now_ns);
        const struct release_entry *r = s->fn ? wait_release(s, w, switched) : NULL;
        if (switched && w->resume_ns < settled)
            settled = w->resume_ns;
        if (r && r->ns >= c->start_ns && r->ns < settled)
            settled = r->ns;
    }
    return settled;
}

uint64_t ctr_states_finish(struct ctr_states *s)
{
    for (size_t i = 0; i < s->nw; i++) {
        struct walker *w = &s->w[i];
        if (w->cur.state)
            transition(s, w, (uint32_t)i, s->t->end_ns, NULL, w->cur.state == CTR_STATE_BLOCKED);
    }
    return s->odd;
}
