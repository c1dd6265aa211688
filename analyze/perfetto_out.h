/* SPDX-License-Identifier: MIT */
/* perfetto_out.h - the back half of the Perfetto export (perfetto.c is the
 * front): a buffer that puts the timeline's items in time order, the cut to
 * the time the user asked for, and the encoder that writes them as
 * Perfetto's TracePackets, with names, categories and stacks interned.
 *
 * The front derives items from the merged trace as it streams by: most at
 * the time of the event at hand, some earlier (the end of a wait at its
 * release, which is decided when the waiter resumes). The buffer holds
 * items until the state machine has settled their time (state.h,
 * ctr_states_settled()): then no earlier item can come, a release can gain
 * no more waiters, and the items go out in time order, so every track's
 * timestamps grow in the file. When the buffer passes its byte budget, its
 * oldest items go out anyway and later ones that would go back in time are
 * placed at the last time written, and counted.
 *
 * Tracks (uuids): the root descriptor (0: threads ordered by rank), the
 * process (1), "ctrace" (2: damage, the flight recorder's window), the
 * counters (3, 4: their changes ride on the slice events of the thread that
 * changes them, as extra counter values), per thread its state track (a thread track) and its
 * annotation track (regions, logs), per task an async track named after its
 * type (Perfetto's UI merges tracks of one name). A track is declared just
 * before its first item that is written.
 *
 * Not thread-safe: the pipeline's main thread only.
 */
#ifndef CTR_PERFETTO_OUT_H
#define CTR_PERFETTO_OUT_H

#include <stdint.h>
#include <stdio.h>

#include "perfetto.h"
#include "reader.h"
#include "windows.h"

enum pf_kind { PF_BEGIN = 1, PF_END, PF_INSTANT };

/* What an item is, which names it and shapes its fields. */
enum pf_what {
    PF_WAIT = 1,      /* thread: a wait; a = object, b = stack id; reason */
    PF_WAIT_RUNNABLE, /* thread: a wait's runnable part (nested in it) */
    PF_PREEMPTED,     /* thread: runnable, not waiting */
    PF_RUNNING,       /* thread: on a CPU (context switches recorded) */
    PF_RELEASE,       /* thread: a release; a = object, b = stack id; flows:
                         its waiters; reason: the first waiter's */
    PF_LOST,          /* thread: events lost here; a = count */
    PF_SAMPLE,        /* thread: a CPU sample; a = CPU ns, b = stack id */
    PF_REGION,        /* annotations: a = name string id, b = task id */
    PF_LOG,           /* annotations: a = category string id, b = task id,
                         ext = the message (len in c) */
    PF_TASK,          /* task track: a = type string id, b = task id, c = parent */
    PF_GAP,           /* ctrace: a part of the trace is missing */
    PF_WINDOW,        /* ctrace: a flight recorder's window starts; a = earlier
                         generations not in it */
};

/* A track by kind and index. */
enum pf_track_kind {
    PF_TR_CTRACE = 2,
    PF_TR_BLOCKED,
    PF_TR_RUNNABLE,
    PF_TR_THREAD,
    PF_TR_NOTES,
    PF_TR_TASK
};
#define PF_TRACK(kind, index) ((uint64_t)(kind) << 56 | (uint64_t)(index))
#define PF_TRACK_KIND(track) ((track) >> 56)
#define PF_TRACK_INDEX(track) ((track) & ((UINT64_C(1) << 56) - 1))

/* Per track: what is open on it, and where it stands in its windows. */
struct pf_track {
    struct pf_item *open; /* its open slices' BEGIN items, outermost first */
    uint32_t nopen;
    size_t capopen;
    uint8_t declared, inside; /* inside one of its windows now */
    size_t wi;                /* the window it is in or before */
    uint64_t until;           /* the end of that window */
};

/* A task's slice: the front makes it at TASK_BEGIN (the BEGIN item's ext)
 * and counts the regions that link to it; the back frees it once the
 * slice is closed for good. */
struct pf_task {
    struct pf_task *prev, *next; /* the back's list of live tasks */
    uint64_t seq;                /* the task's number in the export: its track */
    uint32_t nflows;             /* regions linked so far: flows PF_FLOW_TASK(seq) + k */
    uint8_t flows_written;
    struct pf_track track;
};

struct pf_item {
    uint64_t ts;
    uint64_t track; /* PF_TRACK() */
    uint64_t a, b, c;
    uint64_t flow;   /* the first flow id; flows: base + 0 .. nflows - 1 */
    void *ext;       /* owned by the item (PF_LOG) or a pf_task (PF_TASK) */
    uint32_t thread; /* PF_WAIT's END: the releasing thread's index, or
                        UINT32_MAX; others: the track's thread */
    uint32_t nflows; /* BEGIN, INSTANT: flows from it; END: flows into it */
    uint8_t kind, what, reason;
    int8_t blocked, runnable; /* how the counters change with it */
};

struct pf_out;

/* pf_out_new() : an encoder writing to out for the export described by o
 * (perfetto.h); writes the process's descriptors at once.
 * @return NULL if out of memory. */
struct pf_out *pf_out_new(const struct ctr_perfetto_opts *o, FILE *out);

/* pf_out_add() : queues *it (copied; its ext is taken over).
 * @return 0 or -ENOMEM. */
int pf_out_add(struct pf_out *p, const struct pf_item *it);

/* pf_out_task() : a new task's slice, numbered seq, which the back frees
 * (pf_out_free() frees those still live). @return NULL if out of memory. */
struct pf_task *pf_out_task(struct pf_out *p, uint64_t seq);

/* pf_out_release() : the queued PF_RELEASE of thread `thread` at ns on
 * object, to add a flow to; NULL when it has gone out already (or never
 * was). */
struct pf_item *pf_out_release(struct pf_out *p, uint32_t thread, uint64_t ns, uint64_t object);

/* pf_out_kept() : whether an item at ns on the track would be written (it
 * is inside the time and the windows the export keeps). */
int pf_out_kept(const struct pf_out *p, uint64_t track, uint64_t ns);

/* pf_out_settle() : writes the items before ns. @return 0 or a negative
 * errno (out of memory, or the output's error). */
int pf_out_settle(struct pf_out *p, uint64_t ns);

/* pf_out_end() : writes the rest and flushes; *st gets the figures.
 * @return 0 or a negative errno. */
int pf_out_end(struct pf_out *p, struct ctr_perfetto_stats *st);

void pf_out_free(struct pf_out *p);

/* Each flow's id: its kind in the top bits, then who it belongs to. */
#define PF_FLOW_RELEASE(seq) ((uint64_t)2 << 62 | (uint64_t)(seq) << 12)
#define PF_FLOW_TASK(seq) ((uint64_t)1 << 62 | (uint64_t)(seq) << 20)
#define PF_RELEASE_FLOWS_MAX 4096
#define PF_TASK_FLOWS_MAX (1u << 20)

#endif
