/* SPDX-License-Identifier: MIT */
/* records.h - the records that describe the traced process rather than its
 * events (records.c), written into a record buffer (ctrace_record.h). */
#ifndef CTR_RECORDS_H
#define CTR_RECORDS_H

#include <stddef.h>
#include <stdint.h>

struct ctr_intern_entry;
struct ctr_outbuf;
struct ctr_thread;

/* A CLOCK record's calibration point: ticks, CLOCK_MONOTONIC and
 * CLOCK_REALTIME ns read together (ctr__clock_sample). */
struct ctr_clock_sample {
    uint64_t ticks, mono, real;
};

/* The records of records.c, into o; any thread. */
/* TRACE_INFO. @return the string id of the executable's path (0: none). */
uint32_t ctr__rec_trace_info(struct ctr_outbuf *o);
void ctr__rec_clock(struct ctr_outbuf *o, const struct ctr_clock_sample *c);
void ctr__rec_mapping(struct ctr_outbuf *o, uint64_t id, uint64_t start, uint64_t limit,
                      uint64_t file_offset, uint64_t bias, uint32_t path, const uint8_t *build_id,
                      size_t build_id_len);
/* The STRING / STACK record of an intern table's entry. */
void ctr__rec_string(struct ctr_outbuf *o, const struct ctr_intern_entry *e);
void ctr__rec_stack(struct ctr_outbuf *o, const struct ctr_intern_entry *e);
/* t's THREAD record, with name (a string id). */
void ctr__rec_thread(struct ctr_outbuf *o, const struct ctr_thread *t, uint32_t name);
/* WAITING: the thread is inside a wait begun at `ticks` as a generation
 * begins. */
void ctr__rec_waiting(struct ctr_outbuf *o, uint64_t thread_id, uint64_t ticks, uint64_t reason,
                      uint64_t object, uint64_t stack);
/* A BATCH of one BLOCK event at `ticks`: a wait that began there. */
void ctr__rec_block(struct ctr_outbuf *o, uint64_t thread_id, uint64_t ticks, uint64_t reason,
                    uint64_t object, uint64_t stack);
/* For each thread inside an I/O call (or a wait for a child or a signal)
 * for io_min_ns or more: a PENDING record, which a reader uses only when the
 * trace has no END (the process died, by a signal, before it could close
 * the file); noted() is told each one's slot, thread and call site's stack
 * (records the generation must hold). Takes ctr__threads.reclaim. */
void ctr__rec_pending(struct ctr_outbuf *o,
                      void (*noted)(uint32_t slot, uint64_t thread_id, uint64_t stack));
/* What ends a complete trace, after its last generation (FORMAT.md §3.1):
 * for each thread inside such a call, the STACK of its call site and a
 * BATCH with one BLOCK at the call's start (a call that never returns, a
 * write nobody reads, is thus a wait still open at the end); a CLOCK of
 * now; END. Takes ctr__threads.reclaim. */
void ctr__rec_trailer(struct ctr_outbuf *o, uint64_t events_dropped);

#endif /* CTR_RECORDS_H */
