/* window.h - what the flight recorder's window (window.c) shares with its
 * dumps (dump.c), inside flightrec/: the frames it keeps and a snapshot. */
#ifndef CTR_FLIGHTREC_WINDOW_H
#define CTR_FLIGHTREC_WINDOW_H

#include "internal.h"

/* One compressed frame of a generation, as the collector wrote it. */
struct frame {
    struct frame *next;
    struct frame *grave; /* the graveyard's list (window.c) */
    size_t len;
    uint8_t data[];
};

/* A thread blocked when a generation started. */
struct blocked {
    uint64_t thread_id, reason, object, stack;
};

/* A thread's name (string id) as its events last said. */
struct fr_name {
    uint64_t thread_id;
    uint32_t name;
};

/* The window as it was at one instant: its start, the threads blocked then,
 * the names, and its frames, oldest first, which stay allocated (pinned)
 * until ctr__fr_unpin however the window moves on meanwhile. */
struct fr_snapshot {
    struct ctr_clock_sample start;
    struct blocked *blocked;
    size_t nblocked;
    struct fr_name *names;
    size_t nnames;
    const struct frame **frames;
    size_t nframes;
    int pinned;
};

/* Takes a snapshot. @return 0, -ENOENT when the window is closed (no
 * recorder, or none of its generations yet), -ENOMEM. Any thread. */
int ctr__fr_snapshot(struct fr_snapshot *s);
/* Releases a snapshot (also one that failed). */
void ctr__fr_unpin(struct fr_snapshot *s);

#endif
