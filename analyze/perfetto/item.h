/* SPDX-License-Identifier: MIT */
/* item.h - what the Perfetto export is made of, shared by its three
 * stages: the options and figures of an export (perfetto.h's), and the
 * items the front (perfetto.c) derives from the trace, the back
 * (perfetto_out.c) puts in time order and the encoder (perfetto_enc.c)
 * writes: their kinds, tracks and flows. Its own header so that each stage
 * includes only the ones below it.
 */
#ifndef CTR_PF_ITEM_H
#define CTR_PF_ITEM_H

#include <stddef.h>
#include <stdint.h>

#include "model/windows.h"
#include "read/trace.h"

struct ctr_perfetto_opts {
    /* A first reading of the same trace: its threads (names, tids) and
     * mappings (symbols) are complete; thread indexes are the same. */
    const struct ctr_trace *model;
    const uint64_t *busy_ns;        /* per thread index: its rank's key, the busiest
                                       first; NULL: trace order */
    uint64_t from_ns, to_ns;        /* the time kept: [from_ns, to_ns); 0, UINT64_MAX: all */
    const struct ctr_windows *keep; /* per thread, the time a filter keeps; NULL: all */
    const uint64_t *tasks;          /* ids of the tasks shown, sorted; NULL: all */
    size_t ntasks;
    uint64_t window_gens; /* generations before a flight recorder's window
                             (0: the trace starts with its first) */
    size_t budget;        /* bytes the time-order buffer may hold; 0: a default */
};

struct ctr_perfetto_stats {
    uint64_t events;         /* events of the trace read */
    uint64_t packets, bytes; /* written */
    uint64_t slices, instants, counters, flows;
    uint64_t late;     /* items placed later than they happened (budget) */
    uint64_t unlinked; /* waits whose release had gone out (budget) */
};

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

/* Each flow's id: its kind in the top bits, then who it belongs to. */
#define PF_FLOW_RELEASE(seq) ((uint64_t)2 << 62 | (uint64_t)(seq) << 12)
#define PF_FLOW_TASK(seq) ((uint64_t)1 << 62 | (uint64_t)(seq) << 20)
#define PF_RELEASE_FLOWS_MAX 4096
#define PF_TASK_FLOWS_MAX (1u << 20)

#endif
