/* window.c - the flight recorder's window: the newest generations of the
 * trace, compressed, in memory, and what each thread is doing.
 *
 * The collector (tracer/collector.c) hands over each generation's compressed
 * frames as it writes them (ctr__fr_frame), brackets them with
 * ctr__fr_gen_begin/end, and shows us every batch so that we know, at each
 * generation's start, which threads are blocked, on what and since when
 * (ctr__fr_observe). A dump (dump.c) runs on whatever thread asked for it:
 * it takes a snapshot of the window (fr_snapshot) and writes it out without
 * holding anything but the snapshot's pin. W.lock guards all of W, for
 * both; the counters read by flightrec_get_stats are relaxed atomics.
 *
 * Pins: while a snapshot is pinned, what eviction removes from the window
 * (generations, frames) goes to a graveyard instead of being freed, so the
 * dump can still read it; the last unpin frees the graveyard. The window's
 * own bytes (the max_bytes bound) no longer count it; for the length of a
 * dump the process holds that much more.
 *
 * Memory is counted as the allocator gives it (malloc_usable_size), not as
 * asked for, so the bound holds for what the process really holds.
 *
 * Eviction keeps the promises of ctrace/flightrec.h: after each frame, the
 * oldest data goes while the window holds more than max_bytes (a hard
 * bound, even inside the current generation); after each generation, the
 * oldest generation goes while the window would still span min_age without
 * it, unless a thread is still blocked in a wait that began in it and the
 * window spans less than twice min_age.
 *
 * A dump is a normal trace file: the header, a prologue frame made now (all
 * tables, the clock at the window's start, and a one-event batch per thread
 * that was blocked when the window starts), the window's frames as they
 * are, and a last frame: a Block for each thread inside an I/O call that
 * may never return, and an END record.
 */
#include "internal.h"
#include "record.h"
#include "window.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

struct gen {
    struct gen *next;
    struct gen *grave; /* the graveyard's list */
    uint64_t number;
    struct ctr_clock_sample start;
    uint64_t end_mono; /* 0 while it is being written */
    struct frame *frames, *last;
    struct blocked *blocked;
    size_t nblocked;
    size_t bytes; /* all of the above that counts against max_bytes */
};

/* What a thread is doing, as far as its events said. */
struct tstate {
    uint64_t id; /* 0: nothing known */
    int blocked;
    uint64_t reason, object, stack, since_ticks;
    uint32_t name; /* latest ThreadName, 0 if none */
};

static struct {
    struct ctr_lock lock;
    int open; /* generations are coming (between the first gen_begin and clear) */
    struct gen *oldest, *newest;
    size_t bytes;
    struct tstate *threads;
    uint32_t nthreads;
    unsigned pins;
    struct gen *grave_gens;
    struct frame *grave_frames;
} W;

static _Atomic uint64_t st_bytes, st_span, st_gens;

/* ---------------------------------------------------------------------------
 * Following threads' states
 * ------------------------------------------------------------------------- */

static struct tstate *tstate_of(uint32_t slot)
{
    if (slot >= W.nthreads) {
        uint32_t n = W.nthreads ? W.nthreads : 64;
        while (n <= slot)
            n *= 2;
        struct tstate *t = realloc(W.threads, n * sizeof(*t));
        if (!t)
            return NULL;
        memset(t + W.nthreads, 0, (n - W.nthreads) * sizeof(*t));
        W.threads = t;
        W.nthreads = n;
    }
    return &W.threads[slot];
}

static void observe(uint32_t slot, uint64_t thread_id, uint64_t base_ticks, const uint8_t *p,
                    size_t n)
{
    struct tstate *ts = tstate_of(slot);
    if (!ts)
        return;
    if (ts->id != thread_id)
        *ts = (struct tstate){.id = thread_id};
    const uint8_t *end = p + n;
    uint64_t ticks = base_ticks;
    /* The bytes are our own writer's (complete events, FORMAT.md §4); still,
     * stop at anything unexpected rather than read past the batch. */
    while (p < end) {
        uint8_t type = *p++;
        if (type >= CTR_EV_LIMIT || !ctr_event_specs[type].name)
            return;
        const struct ctr_event_spec *spec = &ctr_event_specs[type];
        uint64_t a[CTR_MAX_ARGS] = {0};
        for (int i = 0; i < spec->nargs; i++) {
            size_t used = ctr_get_uvarint(p, end, &a[i]);
            if (!used)
                return;
            p += used;
        }
        if (spec->args[spec->nargs - 1] == CTR_ARG_LENGTH) {
            if (a[spec->nargs - 1] > (uint64_t)(end - p))
                return;
            p += a[spec->nargs - 1]; /* the event's raw bytes (a log message) */
        }
        ticks += a[0];
        switch (type) {
        case CTR_EV_BLOCK:
            ts->blocked = 1;
            ts->reason = a[1];
            ts->object = a[2];
            ts->stack = a[3];
            ts->since_ticks = ticks;
            break;
        case CTR_EV_UNBLOCK:
        case CTR_EV_THREAD_END:
            ts->blocked = 0;
            break;
        case CTR_EV_THREAD_NAME:
            for (uint32_t i = 0; i < W.nthreads; i++)
                if (W.threads[i].id == a[1])
                    W.threads[i].name = (uint32_t)a[2];
            break;
        default:
            break;
        }
    }
}

void ctr__fr_observe(uint32_t slot, uint64_t thread_id, uint64_t base_ticks, const uint8_t *p,
                     size_t n)
{
    ctr_lock_acquire(&W.lock);
    observe(slot, thread_id, base_ticks, p, n);
    ctr_lock_release(&W.lock);
}

void ctr__fr_forget(uint32_t slot)
{
    ctr_lock_acquire(&W.lock);
    if (slot < W.nthreads)
        W.threads[slot] = (struct tstate){0};
    ctr_lock_release(&W.lock);
}

uint32_t ctr__fr_thread_name(uint32_t slot, uint32_t registered_name)
{
    ctr_lock_acquire(&W.lock);
    uint32_t name = slot < W.nthreads && W.threads[slot].name ? W.threads[slot].name
                                                               : registered_name;
    ctr_lock_release(&W.lock);
    return name;
}

/* ---------------------------------------------------------------------------
 * Generations and eviction
 * ------------------------------------------------------------------------- */

static void publish_stats(void)
{
    atomic_store_explicit(&st_bytes, W.bytes, memory_order_relaxed);
    uint64_t gens = 0;
    for (struct gen *g = W.oldest; g; g = g->next)
        gens++;
    atomic_store_explicit(&st_gens, gens, memory_order_relaxed);
    uint64_t span = 0;
    if (W.oldest && W.newest) {
        /* The generation being written counts up to its start. */
        uint64_t end = W.newest->end_mono ? W.newest->end_mono : W.newest->start.mono;
        span = end > W.oldest->start.mono ? end - W.oldest->start.mono : 0;
    }
    atomic_store_explicit(&st_span, span, memory_order_relaxed);
}

static void free_gen(struct gen *g)
{
    for (struct frame *f = g->frames, *next; f; f = next) {
        next = f->next;
        free(f);
    }
    free(g->blocked);
    free(g);
}

/* Frees what pinned snapshots kept alive, once none is left. */
static void free_graveyard(void)
{
    if (W.pins)
        return;
    for (struct gen *g = W.grave_gens, *next; g; g = next) {
        next = g->grave;
        free_gen(g);
    }
    for (struct frame *f = W.grave_frames, *next; f; f = next) {
        next = f->grave;
        free(f);
    }
    W.grave_gens = NULL;
    W.grave_frames = NULL;
}

static void drop_oldest_gen(void)
{
    struct gen *g = W.oldest;
    W.oldest = g->next;
    if (!W.oldest)
        W.newest = NULL;
    W.bytes -= g->bytes;
    if (W.pins) {
        g->grave = W.grave_gens; /* g->next and its frames stay as they are */
        W.grave_gens = g;
    } else {
        free_gen(g);
    }
}

/* The hard bound: the oldest data goes until the window and `extra` more
 * bytes fit max_bytes. */
static void evict_to_fit(size_t extra)
{
    while (W.bytes + extra > ctr__session.fr_max_bytes && W.oldest) {
        struct gen *g = W.oldest;
        if (g != W.newest) {
            drop_oldest_gen();
            continue;
        }
        if (!g->frames)
            break; /* the current generation's bookkeeping stays: it is small */
        /* The generation being written is too big alone: its oldest frames
         * go (the window then starts inside it). */
        struct frame *f = g->frames;
        g->frames = f->next;
        if (!g->frames)
            g->last = NULL;
        size_t fb = malloc_usable_size(f);
        g->bytes -= fb;
        W.bytes -= fb;
        if (W.pins) {
            f->grave = W.grave_frames;
            W.grave_frames = f;
        } else {
            free(f);
        }
    }
}

/* Whether a thread is still blocked in a wait that began in g: a wait in a
 * delay profile's class, not a sleep (a sleeping thread is no slow request). */
static int holds_open_wait(const struct gen *g)
{
    uint64_t from = g->start.ticks, to = g->next ? g->next->start.ticks : UINT64_MAX;
    for (uint32_t i = 0; i < W.nthreads; i++) {
        const struct tstate *t = &W.threads[i];
        if (t->id && t->blocked && t->since_ticks >= from && t->since_ticks < to &&
            t->reason < CTR_REASON_LIMIT && ctr_reason_specs[t->reason].wait_class != CTR_CLASS_SLEEP)
            return 1;
    }
    return 0;
}

void ctr__fr_gen_begin(uint64_t number, const struct ctr_clock_sample *at)
{
    ctr_lock_acquire(&W.lock);
    W.open = 1;
    size_t nb = 0;
    for (uint32_t i = 0; i < W.nthreads; i++)
        nb += W.threads[i].id && W.threads[i].blocked;
    struct gen *g = calloc(1, sizeof(*g));
    struct blocked *b = nb ? malloc(nb * sizeof(*b)) : NULL;
    if (!g || (nb && !b)) {
        free(g);
        free(b);
        ctr_lock_release(&W.lock);
        return; /* this generation's frames are lost to the window */
    }
    g->number = number;
    g->start = *at;
    g->blocked = b;
    for (uint32_t i = 0; i < W.nthreads; i++) {
        const struct tstate *t = &W.threads[i];
        if (t->id && t->blocked)
            b[g->nblocked++] = (struct blocked){t->id, t->reason, t->object, t->stack};
    }
    g->bytes = malloc_usable_size(g) + (b ? malloc_usable_size(b) : 0);
    evict_to_fit(g->bytes);
    if (W.newest && W.newest->end_mono == 0)
        W.newest->end_mono = at->mono; /* a generation left open by a failure */
    W.bytes += g->bytes;
    if (W.newest)
        W.newest->next = g;
    else
        W.oldest = g;
    W.newest = g;
    ctr_lock_release(&W.lock);
}

void ctr__fr_frame(const void *z, size_t n)
{
    struct frame *f = malloc(sizeof(*f) + n);
    if (!f)
        return;
    f->next = f->grave = NULL;
    f->len = n;
    memcpy(f->data, z, n);
    size_t fb = malloc_usable_size(f);
    ctr_lock_acquire(&W.lock);
    struct gen *g = W.newest;
    if (!g || g->end_mono) {
        ctr_lock_release(&W.lock);
        free(f);
        return;
    }
    evict_to_fit(fb);
    if (W.bytes + fb > ctr__session.fr_max_bytes) {
        free(f); /* larger than the whole window may be */
    } else {
        if (g->last)
            g->last->next = f;
        else
            g->frames = f;
        g->last = f;
        g->bytes += fb;
        W.bytes += fb;
    }
    publish_stats();
    ctr_lock_release(&W.lock);
}

void ctr__fr_gen_end(uint64_t end_mono)
{
    ctr_lock_acquire(&W.lock);
    if (W.newest && !W.newest->end_mono) {
        W.newest->end_mono = end_mono;
        /* Older generations go once the rest spans min_age, unless they hold
         * the start of a wait that is still going on. */
        uint64_t min_age = ctr__session.fr_min_age_ns;
        while (W.oldest && W.oldest != W.newest) {
            const struct gen *next = W.oldest->next;
            uint64_t age_without = end_mono - next->start.mono;
            if (age_without < min_age ||
                (age_without < 2 * min_age && holds_open_wait(W.oldest)))
                break;
            drop_oldest_gen();
        }
        publish_stats();
    }
    ctr_lock_release(&W.lock);
}

void ctr__fr_clear(void)
{
    ctr_lock_acquire(&W.lock);
    W.open = 0;
    while (W.oldest)
        drop_oldest_gen();
    free_graveyard();
    free(W.threads);
    W.threads = NULL;
    W.nthreads = 0;
    publish_stats();
    ctr_lock_release(&W.lock);
}

void ctr__fr_forked(void)
{
    /* A dump that held the lock or a pin was on a thread of the parent. */
    W.lock = (struct ctr_lock){0};
    W.pins = 0;
    ctr__fr_clear();
}

void ctr__fr_stats(uint64_t *bytes, uint64_t *span_ns, uint64_t *generations)
{
    *bytes = atomic_load_explicit(&st_bytes, memory_order_relaxed);
    *span_ns = atomic_load_explicit(&st_span, memory_order_relaxed);
    *generations = atomic_load_explicit(&st_gens, memory_order_relaxed);
}

/* ---------------------------------------------------------------------------
 * Snapshots, for dumps (dump.c)
 * ------------------------------------------------------------------------- */

int ctr__fr_snapshot(struct fr_snapshot *s)
{
    *s = (struct fr_snapshot){0};
    ctr_lock_acquire(&W.lock);
    if (!W.open) {
        ctr_lock_release(&W.lock);
        return -ENOENT;
    }
    int rc = -ENOMEM;
    const struct gen *first = W.oldest;
    s->start = first ? first->start
                     : (struct ctr_clock_sample){ctr__session.start_ticks, ctr__session.start_mono,
                                                 ctr__session.start_real};
    size_t nframes = 0, nnames = 0;
    for (const struct gen *g = first; g; g = g->next)
        for (const struct frame *f = g->frames; f; f = f->next)
            nframes++;
    for (uint32_t i = 0; i < W.nthreads; i++)
        nnames += W.threads[i].id && W.threads[i].name;
    s->nblocked = first ? first->nblocked : 0;
    if ((nframes && !(s->frames = malloc(nframes * sizeof(*s->frames)))) ||
        (nnames && !(s->names = malloc(nnames * sizeof(*s->names)))) ||
        (s->nblocked && !(s->blocked = malloc(s->nblocked * sizeof(*s->blocked)))))
        goto out;
    for (const struct gen *g = first; g; g = g->next)
        for (const struct frame *f = g->frames; f; f = f->next)
            s->frames[s->nframes++] = f;
    for (uint32_t i = 0; i < W.nthreads; i++)
        if (W.threads[i].id && W.threads[i].name)
            s->names[s->nnames++] = (struct fr_name){W.threads[i].id, W.threads[i].name};
    if (s->nblocked)
        memcpy(s->blocked, first->blocked, s->nblocked * sizeof(*s->blocked));
    W.pins++; /* the frames stay allocated until ctr__fr_unpin */
    s->pinned = 1;
    rc = 0;
out:
    ctr_lock_release(&W.lock);
    if (rc)
        ctr__fr_unpin(s);
    return rc;
}

void ctr__fr_unpin(struct fr_snapshot *s)
{
    if (s->pinned) {
        ctr_lock_acquire(&W.lock);
        if (--W.pins == 0)
            free_graveyard();
        ctr_lock_release(&W.lock);
    }
    free(s->frames);
    free(s->names);
    free(s->blocked);
    *s = (struct fr_snapshot){0};
}
