/* reader.h - reads a ctrace trace file into memory, validating every byte.
 *
 * The reader is the only code that interprets the wire format
 * (tracer/format/FORMAT.md); analyses work on the model below: threads with
 * their events in time order (nanoseconds), and the tables those events refer
 * to. A damaged or truncated file yields everything before the damage plus a
 * message naming the byte offset; only an unreadable start is fatal.
 */
#ifndef CTR_READER_H
#define CTR_READER_H

#include <stddef.h>
#include <stdint.h>

#include "ctrace_format.h"

/* An event of the model. (struct ctr_event in ctrace_format.h is an event
 * as the wire has it: its time a delta, its payload a pointer.) */
struct ctr_trace_event {
    uint64_t ns;                        /* CLOCK_MONOTONIC nanoseconds */
    uint8_t type;                       /* enum ctr_event_type */
    uint64_t args[CTR_MAX_ARGS - 1];    /* the arguments after the time delta */
    uint64_t payload;                   /* a LENGTH argument's bytes: offset in
                                           ctr_trace.stream (see ctr_event_payload) */
};

struct ctr_thread_info {
    uint64_t id;
    int64_t os_tid;              /* 0 if unknown */
    uint64_t parent_id;          /* 0 if unknown */
    uint64_t handle;             /* pthread_t, 0 if unknown */
    const char *name;            /* latest name, "" if none */
    struct ctr_trace_event *events; /* in time order */
    size_t nevents, cap;
    uint64_t dropped;            /* from DROPS records */
    uint64_t lost;               /* sum of LOST events */
    uint64_t start_pc;           /* start routine (ThreadStart), 0 if unknown */
    uint64_t nswitches;          /* context-switch events (SWITCHES records) */
    uint64_t switches_lost;      /* switches the kernel could not record */
};

struct ctr_stack_info {
    uint64_t id;
    uint32_t n;
    uint64_t *pcs;               /* return addresses, innermost first */
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

struct ctr_trace {
    /* TRACE_INFO */
    uint64_t pid, tick_source, flags, io_min_ns;
    const char *exe;
    /* Tables, each sorted by id. */
    struct ctr_thread_info *threads;
    size_t nthreads;
    struct ctr_stack_info *stacks;
    size_t nstacks;
    struct ctr_string_info *strings;
    size_t nstrings;
    struct ctr_mapping_info *mappings;
    size_t nmappings;
    struct ctr_clock_point *clocks;
    size_t nclocks;
    /* Extent and totals. */
    uint64_t start_ns, end_ns;   /* first and last event or clock point */
    uint64_t start_real_ns;      /* wall clock at start_ns, 0 if unknown */
    uint64_t generations;
    uint64_t file_bytes, stream_bytes, batch_bytes;
    uint64_t nevents, events_by_type[CTR_EV_LIMIT];
    int complete;                /* END record seen */
    uint64_t end_dropped, end_stack_overflows, end_untraced, end_sched_failed;
    /* Problems: damage is set when reading stopped early (partial result). */
    char damage[256];
    char warning[256];
    /* Owned memory. */
    uint8_t *stream;
    size_t stream_len;
};

/* ctr_trace_read() : reads the trace at `path` into *t (zeroed first).
 * @return 0 on success, including a partial read of a damaged file (then
 *         t->damage is non-empty); a negative errno when nothing could be
 *         read (missing file, not a ctrace file, unsupported version), with a
 *         one-line reason in err. */
int ctr_trace_read(const char *path, struct ctr_trace *t, char *err, size_t errlen);

/* The same from bytes in memory (for tests and fuzzing). */
int ctr_trace_read_mem(const uint8_t *data, size_t len, struct ctr_trace *t, char *err, size_t errlen);

void ctr_trace_free(struct ctr_trace *t);

/* The raw bytes that follow event e (a LOG's message), *len of them; NULL
 * with *len 0 for an event without. Valid until ctr_trace_free(). */
const char *ctr_event_payload(const struct ctr_trace *t, const struct ctr_trace_event *e,
                              size_t *len);

/* Lookups by id; NULL when absent. */
const struct ctr_stack_info *ctr_trace_stack(const struct ctr_trace *t, uint64_t id);
const char *ctr_trace_string(const struct ctr_trace *t, uint64_t id);
struct ctr_thread_info *ctr_trace_thread(const struct ctr_trace *t, uint64_t id);

#endif
