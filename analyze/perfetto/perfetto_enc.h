/* SPDX-License-Identifier: MIT */
/* perfetto_enc.h - the Perfetto export's encoder: timeline items (perfetto_out.h)
 * as TracePackets of Perfetto's trace format, one sequence, with the
 * tracks declared before their first event and names, categories,
 * argument names and stacks interned (InternedData, incremental state).
 * Field numbers are those of Perfetto's perfetto_trace.proto; the subset
 * written is tests/data/proto/perfetto.proto, which the tests decode every
 * output with.
 *
 * Not thread-safe: one owner.
 */
#ifndef CTR_PERFETTO_ENC_H
#define CTR_PERFETTO_ENC_H

#include <stdint.h>
#include <stdio.h>

#include "perfetto/item.h"

struct pf_enc;

/* pf_enc_new() : an encoder writing to out; writes the first packets (the
 * sequence's start, the root and process descriptors) into its buffer.
 * @return NULL if out of memory. */
struct pf_enc *pf_enc_new(const struct ctr_perfetto_opts *o, FILE *out);

/* Counter values that change with an item, written on its event
 * (TrackEvent's extra counters) rather than as packets of their own. */
struct pf_counters {
    int n;
    uint64_t track[2];
    int64_t value[2];
};

/* pf_enc_item() : writes a BEGIN, END or INSTANT item on its track,
 * declaring the track first if it is new (a task's track: when new_task
 * says so, since the back keeps which tasks are declared), with the counter
 * values c (may be NULL). @return 0 or a negative errno. */
int pf_enc_item(struct pf_enc *e, const struct pf_item *it, int new_task,
                const struct pf_counters *c);

/* pf_enc_counter() : writes counter track's value v at ts. @return as above. */
int pf_enc_counter(struct pf_enc *e, uint64_t track, uint64_t ts, int64_t v);

/* pf_enc_raw() : the buffer of the next packet's one message, emptied,
 * for a writer beside this one that makes its own messages (perfetto_paths.c,
 * on a sequence of its own, with nothing interned); pf_enc_raw_end() then
 * writes it as field `field` of a packet of sequence seq, at ts if has_ts.
 * @return (raw_end) 0 or a negative errno. */
struct ctr_pb;
struct ctr_pb *pf_enc_raw(struct pf_enc *e);
int pf_enc_raw_end(struct pf_enc *e, uint32_t seq, int field, uint64_t ts, int has_ts);

/* The symbols of the export's model, as the encoder has them open. */
struct ctr_profile_sym;
struct ctr_profile_sym *pf_enc_symbols(struct pf_enc *e);

/* Adds n slices a raw writer wrote to the figures. */
void pf_enc_count_slices(struct pf_enc *e, uint64_t n);

/* pf_enc_finish() : writes what is buffered and flushes the output; adds the
 * figures to *st. @return 0 or a negative errno (the output's, e.g. -ENOSPC). */
int pf_enc_finish(struct pf_enc *e, struct ctr_perfetto_stats *st);

void pf_enc_free(struct pf_enc *e);

#endif
