/* SPDX-License-Identifier: MIT */
/* window.c - the flight recorder's window: the newest generations of the
 * trace, as the collector compressed them, in memory.
 *
 * The recorder's sink (flightrec.c) hands over each generation: its start
 * (ctr__fr_gen_begin), its frames (ctr__fr_frame) and its end
 * (ctr__fr_gen_end, with when the waits still going on began). The
 * generations stand alone (FORMAT.md §3.1), so the window needs nothing
 * else to be a trace. A dump (dump.c) runs on whatever thread asked for it:
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
 */
#include "window.h"

#include "collect/records.h"
#include "core/clock.h"
#include "core/lock.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct gen {
    struct gen *next;
    struct gen *grave; /* the graveyard's list */
    uint64_t number;
    struct ctr_clock_sample start;
    uint64_t end_mono;   /* 0 while it is being written */
    uint64_t frame_mono; /* when its last frame came (0: none yet) */
    struct frame *frames, *last;
    size_t bytes; /* all of the above that counts against max_bytes */
};

static struct {
    struct ctr_lock lock;
    int open; /* generations are coming (between the first gen_begin and clear) */
    uint64_t min_age_ns, max_bytes;
    struct gen *oldest, *newest;
    size_t bytes;
    unsigned pins;
    struct gen *grave_gens;
    struct frame *grave_frames;
} W;

static _Atomic uint64_t st_bytes, st_span, st_gens;

/* ---------------------------------------------------------------------------
 * Generations and eviction
 * ------------------------------------------------------------------------- */

static void publish_stats(void)
{
    /* relaxed (the three stores): figures read only for statistics
     * (ctr__fr_stats), each on its own. */
    atomic_store_explicit(&st_bytes, W.bytes, memory_order_relaxed);
    uint64_t gens = 0;
    for (struct gen *g = W.oldest; g; g = g->next)
        gens++;
    atomic_store_explicit(&st_gens, gens, memory_order_relaxed);
    uint64_t span = 0;
    if (W.oldest && W.newest) {
        /* The generation being written counts up to its last frame's
         * arrival (its data is older), or its start: a long generation
         * holds much of the window before it ends. */
        uint64_t end = W.newest->end_mono     ? W.newest->end_mono
                       : W.newest->frame_mono ? W.newest->frame_mono
                                              : W.newest->start.mono;
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
    while (W.bytes + extra > W.max_bytes && W.oldest) {
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

/* Whether a wait still going on (open_waits, ascending ticks) began in g. */
static int holds_open_wait(const struct gen *g, const uint64_t *open_waits, size_t n)
{
    uint64_t from = g->start.ticks, to = g->next ? g->next->start.ticks : UINT64_MAX;
    for (size_t i = 0; i < n && open_waits[i] < to; i++)
        if (open_waits[i] >= from)
            return 1;
    return 0;
}

void ctr__fr_configure(uint64_t min_age_ns, uint64_t max_bytes)
{
    ctr_lock_acquire(&W.lock);
    W.min_age_ns = min_age_ns;
    W.max_bytes = max_bytes;
    ctr_lock_release(&W.lock);
}

void ctr__fr_bounds(uint64_t *min_age_ns, uint64_t *max_bytes)
{
    ctr_lock_acquire(&W.lock);
    *min_age_ns = W.min_age_ns;
    *max_bytes = W.max_bytes;
    ctr_lock_release(&W.lock);
}

void ctr__fr_gen_begin(uint64_t number, const struct ctr_clock_sample *at)
{
    ctr_lock_acquire(&W.lock);
    W.open = 1;
    struct gen *g = calloc(1, sizeof(*g));
    if (!g) {
        ctr_lock_release(&W.lock);
        return; /* this generation's frames are lost to the window */
    }
    g->number = number;
    g->start = *at;
    g->bytes = malloc_usable_size(g);
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
    uint64_t mono_now = ctr__clock_ns(CLOCK_MONOTONIC); /* ctr_clock_sample.mono's clock */
    ctr_lock_acquire(&W.lock);
    struct gen *g = W.newest;
    if (!g || g->end_mono) {
        ctr_lock_release(&W.lock);
        free(f);
        return;
    }
    evict_to_fit(fb);
    if (W.bytes + fb > W.max_bytes) {
        free(f); /* larger than the whole window may be */
    } else {
        if (g->last)
            g->last->next = f;
        else
            g->frames = f;
        g->last = f;
        g->bytes += fb;
        W.bytes += fb;
        g->frame_mono = mono_now;
    }
    publish_stats();
    ctr_lock_release(&W.lock);
}

void ctr__fr_gen_end(uint64_t end_mono, const uint64_t *open_waits, size_t nopen)
{
    ctr_lock_acquire(&W.lock);
    if (W.newest && !W.newest->end_mono) {
        W.newest->end_mono = end_mono;
        /* Older generations go once the rest spans min_age, unless they hold
         * the start of a wait that is still going on. */
        uint64_t min_age = W.min_age_ns;
        while (W.oldest && W.oldest != W.newest) {
            const struct gen *next = W.oldest->next;
            uint64_t age_without = end_mono - next->start.mono;
            if (age_without < min_age ||
                (age_without < 2 * min_age && holds_open_wait(W.oldest, open_waits, nopen)))
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
    /* relaxed: see publish_stats. */
    *bytes = atomic_load_explicit(&st_bytes, memory_order_relaxed);
    *span_ns = atomic_load_explicit(&st_span, memory_order_relaxed);
    *generations = atomic_load_explicit(&st_gens, memory_order_relaxed);
}

/* ---------------------------------------------------------------------------
 * Snapshots, for dumps (dump.c)
 * ------------------------------------------------------------------------- */

int ctr__fr_window_begun(void)
{
    ctr_lock_acquire(&W.lock);
    int open = W.open;
    ctr_lock_release(&W.lock);
    return open;
}

int ctr__fr_snapshot(struct fr_snapshot *s)
{
    *s = (struct fr_snapshot){0};
    ctr_lock_acquire(&W.lock);
    if (!W.open) {
        ctr_lock_release(&W.lock);
        return -ENOENT;
    }
    /* Whole generations only: one still being written lacks its tables,
     * which come at its end. */
    size_t nframes = 0;
    for (const struct gen *g = W.oldest; g && g->end_mono; g = g->next)
        for (const struct frame *f = g->frames; f; f = f->next)
            nframes++;
    int rc = 0;
    if (nframes && !(s->frames = malloc(nframes * sizeof(*s->frames))))
        rc = -ENOMEM;
    for (const struct gen *g = W.oldest; rc == 0 && g && g->end_mono; g = g->next)
        for (const struct frame *f = g->frames; f; f = f->next)
            s->frames[s->nframes++] = f;
    if (rc == 0) {
        W.pins++; /* the frames stay allocated until ctr__fr_unpin */
        s->pinned = 1;
    }
    ctr_lock_release(&W.lock);
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
    *s = (struct fr_snapshot){0};
}
