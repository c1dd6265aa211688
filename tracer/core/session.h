/* SPDX-License-Identifier: MIT */
/* session.h - the state of the tracing session that every layer reads:
 * whether one runs, its options, its pool and its counters. */
#ifndef CTR_SESSION_H
#define CTR_SESSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct ctr_pool;

/* ---------------------------------------------------------------------------
 * Session state (defined in session.c; started and ended by api.c)
 * ------------------------------------------------------------------------- */

struct ctr_session {
    /* 0 when not tracing; the session number otherwise. Wrappers load it
     * relaxed to decide whether to trace at all; a write section loads it
     * (acquire) once as it begins and writes only into that session's pool
     * (see "Write sections", core/emit.h). */
    _Atomic uint32_t epoch;
    uint32_t last_epoch;
    /* The session's buffers: set before the epoch is published; a writer
     * loads it in a section and checks the pool's epoch against its own. */
    _Atomic(struct ctr_pool *) pool;
    /* 1 when the last stop gave up waiting for a writer: the next session
     * must not reuse its pool or the slots of EXITED threads. */
    int tainted;
    unsigned flush_ms;
    int level;
    unsigned stack_depth;
    uint64_t start_ticks, start_mono, start_real; /* CLOCK at trace_start */
    unsigned io_min_ns;
    /* io_min_ns in ticks: from a quick calibration at the start, refined
     * by the collector from its clock samples. */
    _Atomic uint64_t io_min_ticks;
    _Atomic uint32_t wake;         /* futex word the collector sleeps on */
    _Atomic uint32_t collector_up; /* futex word: the collector reached its loop */
    _Atomic int stopping;
    _Atomic uint32_t done_seq; /* futex word: bumped as a session's final round ends */
    pthread_t collector;
    _Atomic uint64_t chunks_flushed;
    _Atomic uint64_t events_dropped;
    _Atomic uint64_t events_recorded; /* taken by the collector (genstate.c) */
    int sched;                        /* record context switches (sched.c) */
    unsigned cpu_hz;                  /* CPU samples a second, 0: none (cpu.c) */
    _Atomic uint64_t sched_failed;    /* threads whose perf event could not open */

    /* Requests: the API bumps req_seq (release) after setting what it asks
     * for (a sink attached or detached) and kicks; the collector reads
     * req_seq (acquire) as a round starts and stores it in ack_seq (release)
     * when that round is over, waking the waiters (futex on ack_seq). */
    _Atomic uint32_t req_seq, ack_seq;
};

extern struct ctr_session ctr__session;

/* ctr__tracing() : whether a session is on (one relaxed load). */
static inline int ctr__tracing(void)
{
    /* relaxed: a hint; whatever is then written checks again in a write
     * section (the acquire load in ctr__write_begin_n). */
    return atomic_load_explicit(&ctr__session.epoch, memory_order_relaxed) != 0;
}

#endif /* CTR_SESSION_H */
