/* SPDX-License-Identifier: MIT */
/* ctf_rebuild.h - the `ctrace` tracepoints, in the order LTTng recorded
 * them, made into a native trace's frames again (the half of reading an
 * LTTng trace that knows nothing of babeltrace2: ctf.c feeds it).
 *
 * The collector's records of each generation arrive together, after the
 * events its threads sent during it: each GEN_BEGIN .. GEN_END becomes a
 * generation again, holding the events buffered up to its closing clock
 * (later ones wait for the next), and the records that follow GEN_END
 * (PENDING, the trailer) go with it. Stacks, strings and mappings sent
 * outside a generation join the next one. Each generation is compressed
 * into a zstd frame like the writer's. The processes are kept apart: one is
 * read (the one asked for, or the only one), or all of them merged, their
 * ids (threads, stacks, strings, mappings, tasks, sync objects) tagged by
 * process, their generations renumbered, their END records summed.
 *
 * Not thread-safe: one caller.
 */
#ifndef CTR_CTF_REBUILD_H
#define CTR_CTF_REBUILD_H

#include <stddef.h>
#include <stdint.h>

/* ctr_ctf_open()'s pid for all the processes of the trace, merged: their
 * ids (threads, stacks, tasks, ...) are told apart, so that one analysis
 * covers them all (a merged profile). */
#define CTR_CTF_ALL UINT64_MAX

struct ctr_frame;
struct ctr_rebuild;

/* What a tracepoint is (ctr_rebuild_classify): kind << 16 | its event type
 * or record kind. */
enum { CTR_TP_NONE = 1, CTR_TP_EVENT, CTR_TP_SCHED, CTR_TP_RECORD };

/* ctr_rebuild_classify() : what the tracepoint named `name` ("ctrace:block")
 * is, by ctrace_lttng.h's names; CTR_TP_NONE << 16 for any other. */
uint64_t ctr_rebuild_classify(const char *name);

/* ctr_rebuild_new() : a rebuilding of process pid's events (0: the only one;
 * CTR_CTF_ALL, ctf.h: all of them, merged). @return NULL if out of memory. */
struct ctr_rebuild *ctr_rebuild_new(uint64_t pid);
void ctr_rebuild_free(struct ctr_rebuild *r);

/* ctr_rebuild_point() : the next tracepoint: `what` from
 * ctr_rebuild_classify, the process it came from (0: nothing says), its
 * integer fields v[0..nv-1] in declaration order (changed by the call), its
 * sequence's bytes (8 per element of a sequence of wider integers), and
 * `pos`, how many tracepoints were read so far (the frames' position). */
void ctr_rebuild_point(struct ctr_rebuild *r, uint64_t what, uint64_t pid, uint64_t *v, int nv,
                       const uint8_t *seq, size_t seq_len, uint64_t pos);
/* n events LTTng discarded. */
void ctr_rebuild_discarded(struct ctr_rebuild *r, uint64_t n);
/* The tracepoints ended: what is buffered makes the last frames. */
void ctr_rebuild_finish(struct ctr_rebuild *r, uint64_t pos);
/* ctr_rebuild_take() : a frame made, into *f (its data the caller's to free).
 * @return 1 with one, 0 when none is ready. */
int ctr_rebuild_take(struct ctr_rebuild *r, struct ctr_frame *f);
/* Whether the input finished (ctr_rebuild_finish). */
int ctr_rebuild_done(const struct ctr_rebuild *r);
/* What went wrong ("" if nothing), and whether it is that several processes
 * are there and none was chosen. */
const char *ctr_rebuild_error(const struct ctr_rebuild *r, int *ambiguous);
/* Events LTTng discarded so far. */
uint64_t ctr_rebuild_discards(const struct ctr_rebuild *r);

#endif
