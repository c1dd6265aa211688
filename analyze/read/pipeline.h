/* SPDX-License-Identifier: MIT */
/* pipeline.h - the streaming analyzer: reads a trace generation by
 * generation and feeds its events, in time order, through the state machine
 * to the consumers (engine.h), in memory bounded by what is live (threads,
 * open waits, the tables, the consumers' aggregates), never by the length
 * of the trace.
 *
 *   source.c   the file (or standard input) cut into frames
 *   gen.c      a frame decoded on one of jobs - 1 worker threads, ahead of
 *              the main thread (or on it, with one job)
 *   here       the main thread, in file order: the frame's tables into the
 *              trace's, its ticks into nanoseconds, its events into the
 *              engine; a generation is drained once the next one is in
 *   engine.c   the merge, the state machine, the consumers
 *
 * The output is the same for any number of jobs: workers only decode, and
 * everything that depends on order happens on the main thread.
 *
 * A damaged frame is reported (t->damage names the first: its file offset
 * and what was wrong) and what follows it is still analysed: the span of
 * time between the last good data and the next good generation is a gap
 * (t->gaps, t->missing_ns, and the consumers' gap callback).
 */
#ifndef CTR_PIPELINE_H
#define CTR_PIPELINE_H

#include <stdio.h>

#include "read/engine.h"
#include "read/trace.h"
#include "read/source.h"

struct ctr_pipeline_opts {
    int jobs; /* threads, the main one included: jobs - 1 decode
                 ahead of it; 0: the cores available */
    /* Where to show progress (bytes read of the total, events/s) during a
     * long run (after about 2 s), when it is a terminal; NULL: nowhere. */
    FILE *progress;
    /* An LTTng trace's process to read (ctr_source_open_pid): 0 the only
     * one, CTR_CTF_ALL all of them merged. */
    uint64_t pid;
    /* The decompression's memory budget in bytes (-mem; decoders.h):
     * 0 CTR_DECODERS_MEM_DEFAULT. */
    size_t mem;
};

/* ctr_analyze() : reads src from its current place to its end into the
 * trace t (zeroed by the caller, or left by ctr_trace_free()), feeding the
 * n consumers c[]. t's tables and totals are complete when it returns.
 * @return 0 (a damaged trace included: see t->damage); -ENOMEM, or
 *         -ENOTUNIQ when an LTTng trace holds several processes and opts
 *         chose none; with a one-line reason in err. */
int ctr_analyze(struct ctr_source *src, struct ctr_trace *t, const struct ctr_consumer *c, size_t n,
                const struct ctr_pipeline_opts *opts, char *err, size_t errlen);

/* The number of cores this process may run on (at least 1). */
int ctr_cores_available(void);

#endif
