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

#include "perfetto/item.h"

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

/* pf_out_paths() : writes every item queued, then the critical paths of
 * w[0..n-1] (perfetto_paths.h), cut to the export's time.
 * @return 0 or a negative errno. */
struct ctr_cp_task;
int pf_out_paths(struct pf_out *p, const struct ctr_cp_task *w, size_t n);

/* pf_out_end() : writes the rest and flushes; *st gets the figures.
 * @return 0 or a negative errno. */
int pf_out_end(struct pf_out *p, struct ctr_perfetto_stats *st);

void pf_out_free(struct pf_out *p);

#endif
