/* SPDX-License-Identifier: MIT */
/* cpucheck.c - running time against the kernel's CPU time (see cpucheck.h).
 *
 * Per thread, the span between two readings is a window: its CPU time (the
 * readings' difference), its run-queue delay, and the running time the
 * state machine gave the thread in it, summed from running intervals as
 * they end (an interval across a reading is split at it). A window is judged
 * once the reading has settled past its end, since intervals before a
 * reading may still come after it; the running time after a thread's
 * latest reading waits, summed, for the next one. So memory follows the
 * windows not yet settled, a few per thread.
 */
#include "model/cpucheck.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_format.h"
#include "ctrace_grow.h"
#include "read/state.h"

struct window {
    uint64_t from_ns, to_ns, cpu_ns, delay_ns, running_ns;
    int delay_known;
};

/* A judged window that moved time (kept for ctr_cpucheck_split()). */
struct verdict {
    uint64_t from_ns, to_ns, running_ns, runnable_ns, offcpu_ns;
};

struct per_thread {
    struct ctr_cpu_reading last; /* the latest reading (has_last) */
    int has_last;
    uint64_t after_last_ns;  /* running time after it, so far */
    uint64_t unexplained_ns; /* the last judged window's off-CPU time, which
                                the next window's delay may yet explain */
    struct window *open;     /* windows not judged yet, in time order */
    size_t nopen, cap;
    struct ctr_cpu_moved moved;
    struct verdict *kept; /* with keep: windows that moved time, in order */
    size_t nkept, kept_cap;
};

struct ctr_cpucheck {
    const struct ctr_trace *t;
    struct per_thread *th;
    size_t nth;
    int keep;
    int oom;
};

struct ctr_cpucheck *ctr_cpucheck_new(const struct ctr_trace *t)
{
    struct ctr_cpucheck *c = calloc(1, sizeof(*c));
    if (c)
        c->t = t;
    return c;
}

void ctr_cpucheck_free(struct ctr_cpucheck *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nth; i++) {
        free(c->th[i].open);
        free(c->th[i].kept);
    }
    free(c->th);
    free(c);
}

static struct per_thread *thread_of(struct ctr_cpucheck *c, uint32_t th)
{
    if (ctr_grow_zeroed(&c->th, &c->nth, (size_t)th + 1, sizeof(*c->th)) != 0) {
        c->oom = 1;
        return NULL;
    }
    return &c->th[th];
}

static uint64_t overlap(uint64_t a, uint64_t b, uint64_t from, uint64_t to)
{
    uint64_t lo = a > from ? a : from, hi = b < to ? b : to;
    return hi > lo ? hi - lo : 0;
}

static void on_reading(void *ctx, const struct ctr_trace *t, uint32_t th,
                       const struct ctr_cpu_reading *r)
{
    struct ctr_cpucheck *c = ctx;
    (void)t;
    struct per_thread *p = thread_of(c, th);
    if (!p)
        return;
    /* A reading no later than the last, or a clock that went back (a new
     * thread in a reused slot has its own id: never here), starts afresh. */
    if (p->has_last && r->ns > p->last.ns && r->cpu_ns >= p->last.cpu_ns) {
        if (ctr_grow(&p->open, &p->cap, p->nopen + 1, sizeof(*p->open)) != 0) {
            c->oom = 1;
            return;
        }
        /* A reading at registration has no delay: 0 (cpucheck.h). */
        int last_known = (p->last.flags & (CTR_CPUTIME_DELAY_KNOWN | CTR_CPUTIME_AT_START)) != 0;
        uint64_t last_delay = (p->last.flags & CTR_CPUTIME_DELAY_KNOWN) ? p->last.delay_ns : 0;
        int known = (r->flags & CTR_CPUTIME_DELAY_KNOWN) && last_known && r->delay_ns >= last_delay;
        p->open[p->nopen++] = (struct window){p->last.ns,
                                              r->ns,
                                              r->cpu_ns - p->last.cpu_ns,
                                              known ? r->delay_ns - last_delay : 0,
                                              p->after_last_ns,
                                              known};
    }
    p->last = *r;
    p->has_last = 1;
    p->after_last_ns = 0;
}

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_cpucheck *c = ctx;
    if (iv->state != CTR_STATE_RUNNING || iv->end_ns <= iv->start_ns)
        return;
    struct per_thread *p = thread_of(c, (uint32_t)(iv->thread - c->t->threads));
    if (!p || !p->has_last)
        return;
    for (size_t i = 0; i < p->nopen; i++)
        p->open[i].running_ns +=
            overlap(iv->start_ns, iv->end_ns, p->open[i].from_ns, p->open[i].to_ns);
    p->after_last_ns += overlap(iv->start_ns, iv->end_ns, p->last.ns, UINT64_MAX);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* The window's verdict, added to the thread's moved time (windows of a
 * thread are judged in time order).
 *
 * The kernel adds a run-queue wait to the delay only when the thread gets
 * the CPU back: a thread waiting for one at a reading has that wait in the
 * next reading's delay, not in this one's. So delay a window has beyond its
 * own excess first explains the previous window's off-CPU time, as
 * runnable. */
static void judge(struct ctr_cpucheck *c, struct per_thread *p, const struct window *w)
{
    p->moved.checked_ns += w->running_ns;
    uint64_t excess =
        w->running_ns > w->cpu_ns + CTR_CPUCHECK_SLACK_NS ? w->running_ns - w->cpu_ns : 0;
    uint64_t delay = w->delay_known ? w->delay_ns : 0;
    uint64_t runnable = min_u64(delay, excess);
    uint64_t late = min_u64(delay - runnable, p->unexplained_ns);
    p->moved.offcpu_ns -= late;
    p->moved.runnable_ns += runnable + late;
    p->moved.offcpu_ns += excess - runnable;
    p->unexplained_ns = excess - runnable;
    if (!c->keep)
        return;
    /* Late delay changes the previous window's verdict: it had off-CPU
     * time (unexplained), so it was kept, and is the last kept. */
    if (late && p->nkept) {
        p->kept[p->nkept - 1].offcpu_ns -= late;
        p->kept[p->nkept - 1].runnable_ns += late;
    }
    if (!excess)
        return;
    if (ctr_grow(&p->kept, &p->kept_cap, p->nkept + 1, sizeof(*p->kept)) != 0) {
        c->oom = 1;
        return;
    }
    p->kept[p->nkept++] =
        (struct verdict){w->from_ns, w->to_ns, w->running_ns, runnable, excess - runnable};
}

static void on_settle(void *ctx, uint64_t ns)
{
    struct ctr_cpucheck *c = ctx;
    for (size_t k = 0; k < c->nth; k++) {
        struct per_thread *p = &c->th[k];
        size_t done = 0;
        while (done < p->nopen && p->open[done].to_ns <= ns)
            judge(c, p, &p->open[done++]);
        if (done) {
            memmove(p->open, p->open + done, (p->nopen - done) * sizeof(*p->open));
            p->nopen -= done;
        }
    }
}

struct ctr_consumer ctr_cpucheck_consumer(struct ctr_cpucheck *c)
{
    return (struct ctr_consumer){
        .ctx = c, .interval = on_interval, .cputime = on_reading, .settle = on_settle};
}

void ctr_cpucheck_keep(struct ctr_cpucheck *c)
{
    c->keep = 1;
}

int ctr_cpucheck_finish(struct ctr_cpucheck *c)
{
    /* Windows the reading never settled past (it ended early). */
    on_settle(c, UINT64_MAX);
    return c->oom ? -1 : 0;
}

int ctr_cpucheck_thread(const struct ctr_cpucheck *c, uint32_t th, struct ctr_cpu_moved *out)
{
    *out = th < c->nth ? c->th[th].moved : (struct ctr_cpu_moved){0};
    return c->oom ? -1 : 0;
}

/* a * b / d without overflow for durations (d > 0, b <= d). */
static uint64_t share(uint64_t a, uint64_t b, uint64_t d)
{
    return (uint64_t)((unsigned __int128)a * b / d);
}

void ctr_cpucheck_split(const struct ctr_cpucheck *c, uint32_t th, uint64_t from_ns, uint64_t to_ns,
                        uint64_t *runnable_ns, uint64_t *offcpu_ns)
{
    *runnable_ns = *offcpu_ns = 0;
    if (th >= c->nth || to_ns <= from_ns)
        return;
    const struct per_thread *p = &c->th[th];
    /* The first kept window that ends after from_ns. */
    size_t lo = 0, hi = p->nkept;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->kept[mid].to_ns <= from_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < p->nkept && p->kept[i].from_ns < to_ns; i++) {
        const struct verdict *v = &p->kept[i];
        uint64_t ov = overlap(from_ns, to_ns, v->from_ns, v->to_ns);
        if (!ov || !v->running_ns)
            continue;
        if (ov > v->running_ns)
            ov = v->running_ns;
        *runnable_ns += share(ov, v->runnable_ns, v->running_ns);
        *offcpu_ns += share(ov, v->offcpu_ns, v->running_ns);
    }
}
