/* SPDX-License-Identifier: MIT */
/* window.h - the flight recorder's window (window.c), for its sink
 * (flightrec.c) and its dumps (dump.c), inside flightrec/: the newest
 * generations' compressed frames, and snapshots of them. */
#ifndef CTR_FLIGHTREC_WINDOW_H
#define CTR_FLIGHTREC_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "collect/records.h"
#include "collect/sink.h"

/* One compressed frame of a generation, as the collector made it. */
struct frame {
    struct frame *next;
    struct frame *grave; /* the graveyard's list (window.c) */
    size_t len;
    uint8_t data[];
};

/* The window's whole generations at one instant, their frames oldest
 * first, which stay allocated (pinned) until ctr__fr_unpin however the
 * window moves on meanwhile. */
struct fr_snapshot {
    const struct frame **frames;
    size_t nframes;
    int pinned;
};

/* The window's bounds (ctrace/flightrec.h), before its first generation. */
void ctr__fr_configure(uint64_t min_age_ns, uint64_t max_bytes);
/* The bounds it was last given (for tests). */
void ctr__fr_bounds(uint64_t *min_age_ns, uint64_t *max_bytes);
/* A generation starts (at clock sample `at`) / ends; frames in between are
 * its compressed data. gen_end evicts what the window no longer needs,
 * keeping the start of the waits still going on (open_waits: when each
 * began, ticks ascending). Collector thread. */
void ctr__fr_gen_begin(uint64_t gen, const struct ctr_clock_sample *at);
void ctr__fr_frame(const void *z, size_t n);
void ctr__fr_gen_end(uint64_t end_mono, const uint64_t *open_waits, size_t nopen);
/* Empties the window and closes it: dumps fail with -ENOENT until the next
 * generation begins. */
void ctr__fr_clear(void);
/* In a forked child: the window empty and closed, its lock free. */
void ctr__fr_forked(void);
/* The window's size and span, for flightrec_get_stats. */
void ctr__fr_stats(uint64_t *bytes, uint64_t *span_ns, uint64_t *generations);

/* Whether the window has begun (at the recorder's first generation, which
 * the collector begins a moment after flightrec_start). */
int ctr__fr_window_begun(void);

/* Takes a snapshot. @return 0, -ENOENT when the window is closed (no
 * recorder, or none of its generations yet), -ENOMEM. Any thread. */
int ctr__fr_snapshot(struct fr_snapshot *s);
/* Releases a snapshot (also one that failed). */
void ctr__fr_unpin(struct fr_snapshot *s);

/* Writes a dump of the window as it is now to the caller's descriptor fd.
 * Any thread, the collector included. @return 0, -ENOENT when the window is
 * closed, or -errno. */
int ctr__fr_dump(int fd);
/* The same into a file the recorder just created, whose descriptor is fd
 * (or -1 with errno set, passed on): adopted (fdguard.c), written, closed.
 * @return as ctr__fr_dump. */
int ctr__fr_dump_file(int fd);
/* The same into a file of the tracer's that stays open (a `ctrace ctl`
 * client's). @return as ctr__fr_dump. */
int ctr__fr_dump_owned(struct ctr_owned_fd *own);

#endif
