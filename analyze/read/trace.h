/* SPDX-License-Identifier: MIT */
/* trace.h - the model of a trace: its tables (threads, stacks, strings,
 * mappings, clock points) and totals, which the streaming analyzer
 * (pipeline.h) fills generation by generation; for tests and small tools,
 * load.h reads a whole trace into memory with every thread's events.
 *
 * The reader is the only code that interprets the wire format
 * (format/FORMAT.md), through gen.c (a frame) and pipeline.c (the
 * file); analyses work on this model: threads with their events in time
 * order (nanoseconds), and the tables those events refer to. A damaged
 * generation is skipped and named (file offset, what was wrong); only an
 * unreadable start is fatal.
 */
#ifndef CTR_TRACE_H
#define CTR_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "ctrace_format.h"
#include "read/idmap.h"

/* An event of the model. (struct ctr_event in ctrace_format.h is an event
 * as the wire has it: its time a delta, its payload a pointer.) */
struct ctr_trace_event {
    uint64_t ns;                     /* CLOCK_MONOTONIC nanoseconds */
    uint8_t type;                    /* enum ctr_event_type */
    uint64_t args[CTR_MAX_ARGS - 1]; /* the arguments after the time delta */
    uint64_t payload;                /* a LENGTH argument's bytes: their address
                                        (see ctr_event_payload) */
};

/* A CPU_TIME record (FORMAT.md §3): at `ns`, the thread had run `cpu_ns`
 * and waited for a CPU `delay_ns` (flags: CTR_CPUTIME_*) since it began. */
struct ctr_cpu_reading {
    uint64_t ns, cpu_ns, delay_ns;
    uint32_t flags;
};

struct ctr_thread_info {
    uint64_t id;
    int64_t os_tid;                 /* 0 if unknown */
    uint64_t parent_id;             /* 0 if unknown */
    uint64_t handle;                /* pthread_t, 0 if unknown */
    const char *name;               /* latest name, "" if none */
    struct ctr_trace_event *events; /* in time order: ctr_trace_read() only */
    size_t nevents, cap;
    uint64_t seen;               /* its events, read or not */
    uint64_t last_ns;            /* the time of its last event so far */
    uint64_t last_batch_ns;      /* ... of its own (not a switch): keeps them monotonic */
    uint64_t last_switch_ns;     /* ... of its context switches: the same */
    int has_record;              /* a THREAD record was read (os_tid etc. are its) */
    uint64_t dropped;            /* from DROPS records */
    uint64_t lost;               /* sum of LOST events */
    uint64_t start_pc;           /* start routine (ThreadStart), 0 if unknown */
    uint64_t nswitches;          /* context-switch events (SWITCHES records) */
    uint64_t switches_lost;      /* switches the kernel could not record */
    struct ctr_cpu_reading *cpu; /* its CPU_TIME readings: ctr_trace_read() only */
    size_t ncpu, cpu_cap;
};

struct ctr_stack_info {
    uint64_t id;
    uint32_t n;
    uint64_t *pcs; /* return addresses, innermost first */
};

struct ctr_string_info {
    uint64_t id;
    const char *s;
};

struct ctr_mapping_info {
    uint64_t id, start, limit, file_offset, bias;
    const char *path;
    uint8_t build_id[64];
    size_t build_id_len;
};

struct ctr_clock_point {
    uint64_t ticks, mono_ns, real_ns;
};

/* A span of time missing from a trace: a damaged frame was skipped. */
struct ctr_gap {
    uint64_t from_ns, to_ns; /* the last time before it, the first after */
    uint64_t file_off;       /* where the damage is */
};

#define CTR_GAPS_LISTED 8

/* A LOG message ctr_trace_read() copied (load.c): the frames it was read
 * from are freed as the pipeline goes on. ctr_trace_free() frees them. */
struct ctr_held_bytes {
    struct ctr_held_bytes *next;
    char bytes[];
};

struct ctr_trace {
    /* TRACE_INFO */
    uint64_t pid, tick_source, flags, io_min_ns;
    const char *exe;
    /* Tables: threads in the order first seen (ctr_trace_read() sorts them
     * by id), the others in the order read; one entry per id. */
    struct ctr_thread_info *threads;
    size_t nthreads;
    struct ctr_stack_info *stacks;
    size_t nstacks;
    struct ctr_string_info *strings;
    size_t nstrings;
    struct ctr_mapping_info *mappings;
    size_t nmappings;
    struct ctr_clock_point *clocks; /* in tick order, each later in both clocks */
    size_t nclocks;
    /* Extent and totals. */
    uint64_t start_ns, end_ns; /* first and last event or clock point */
    uint64_t start_real_ns;    /* wall clock at start_ns, 0 if unknown */
    uint64_t generations;
    uint64_t first_gen; /* the number of the first generation read: above 0,
                           the earlier ones are not in the file (a flight
                           recorder's window) */
    uint64_t file_bytes, stream_bytes, batch_bytes;
    uint64_t nevents, events_by_type[CTR_EV_LIMIT];
    uint64_t odd; /* events that did not fit the state machine */
    int complete; /* END record seen */
    uint64_t end_dropped, end_stack_overflows, end_untraced, end_sched_failed;
    /* SAMPLING (FORMAT.md §4.1): cpu_source 0 when the trace was not
     * sampled; the latest period; the most samples lost said (cumulative). */
    uint64_t cpu_source, cpu_period_ns, cpu_lost;
    int has_cpu_time;         /* CPU_TIME records were read (format 1.4) */
    uint64_t lttng_discarded; /* events LTTng discarded (an LTTng trace: ctf.h) */
    uint64_t ctf_tracepoints; /* an LTTng trace: the tracepoints read (file_bytes 0) */
    /* Problems: damage names the first damaged part (the output covers the
     * rest); gaps counts the spans of time missing, missing_ns their length. */
    char damage[384];
    char warning[256];
    uint64_t gaps, missing_ns;
    int starts_damaged;                       /* the first frames were damaged: what they held is
                                                 missing, for a time not known (a gap of no length
                                                 at the start) */
    struct ctr_gap gap_list[CTR_GAPS_LISTED]; /* the first ones */
    /* Private to trace.c, load.c and pipeline.c: */
    size_t threads_cap, stacks_cap, strings_cap, mappings_cap, clocks_cap;
    struct ctr_idmap thread_ix, stack_ix, string_ix, mapping_ix; /* id -> index */
    struct ctr_held_bytes *held; /* what ctr_trace_read() keeps alive (load.h) */
};

void ctr_trace_free(struct ctr_trace *t);

/* The raw bytes that follow event e (a LOG's message), *len of them; NULL
 * with *len 0 for an event without. Valid while the event is: during a
 * consumer's call (pipeline.h), or until ctr_trace_free(). */
const char *ctr_event_payload(const struct ctr_trace *t, const struct ctr_trace_event *e,
                              size_t *len);

/* Lookups by id; NULL when absent. */
const struct ctr_stack_info *ctr_trace_stack(const struct ctr_trace *t, uint64_t id);
const char *ctr_trace_string(const struct ctr_trace *t, uint64_t id);
/* The string `id` names, or "" for id 0 or a string the trace lacks. */
const char *ctr_trace_name(const struct ctr_trace *t, uint64_t id);
struct ctr_thread_info *ctr_trace_thread(const struct ctr_trace *t, uint64_t id);

/* ---------------------------------------------------------------------------
 * Building the tables (pipeline.c). Each returns 0 or -ENOMEM.
 * ------------------------------------------------------------------------- */

/* The index of thread id in t->threads, adding an entry if it is new. */
int ctr_trace_thread_index(struct ctr_trace *t, uint64_t id, uint32_t *index);
/* A string, stack or mapping entry, unless the id is already there (an id
 * means the same in every generation: FORMAT.md §3.1). Bytes are copied;
 * a mapping's path is resolved against the strings already read. */
int ctr_trace_add_string(struct ctr_trace *t, uint64_t id, const void *s, size_t len);
int ctr_trace_add_stack(struct ctr_trace *t, uint64_t id, const uint64_t *pcs, uint32_t n);
int ctr_trace_add_mapping(struct ctr_trace *t, const struct ctr_mapping_info *m, uint64_t path_id);
/* A clock point, kept in tick order with each later in both clocks than
 * the one before (a point that is not is dropped, as are repeats). */
int ctr_trace_add_clock(struct ctr_trace *t, const struct ctr_clock_point *c);
/* CLOCK_MONOTONIC nanoseconds of a tick count (FORMAT.md §6), by the clock
 * points read so far. */
uint64_t ctr_trace_ticks_to_ns(const struct ctr_trace *t, uint64_t ticks);

/* The same for runs of ticks: the cursor (zeroed before the first call)
 * keeps the last clock segment, so a run within one costs a multiply;
 * ctr_clock_seek() finds another segment (or sees there is none). */
struct ctr_clock_cursor {
    const struct ctr_clock_point *clocks;
    size_t nclocks;
    int from_first;       /* the segment extrapolates below its start */
    uint64_t above, upto; /* ticks in (above, upto] are in the segment */
    double a_ticks, a_ns, rate;
};
uint64_t ctr_clock_seek(const struct ctr_trace *t, struct ctr_clock_cursor *c, uint64_t ticks);

static inline uint64_t ctr_clock_convert(const struct ctr_trace *t, struct ctr_clock_cursor *c,
                                         uint64_t ticks)
{
    if (c->clocks != t->clocks || c->nclocks != t->nclocks ||
        !((c->from_first || ticks > c->above) && ticks <= c->upto))
        return ctr_clock_seek(t, c, ticks); /* another segment, or none */
    double ns = c->a_ns + ((double)ticks - c->a_ticks) * c->rate;
    /* Hostile clock points can put ns outside uint64_t, where the conversion
     * would be undefined (C11 6.3.1.4): clamp to the range. */
    if (!(ns > 0))
        return 0;
    return ns >= 0x1p64 ? UINT64_MAX : (uint64_t)ns;
}

#endif
