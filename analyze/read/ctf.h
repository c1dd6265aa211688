/* SPDX-License-Identifier: MIT */
/* ctf.h - an LTTng trace (CTF, read with the babeltrace2 library) as the
 * frames of a native trace, so that every analysis reads it through the
 * same pipeline (source.h hands these frames out for a directory).
 *
 * The `ctrace` tracepoints map back onto records and events by the rules of
 * format/ctrace_lttng.h. The collector's records of each generation
 * arrive together, after the events its threads sent during it: each
 * GEN_BEGIN .. GEN_END becomes a generation again, holding the events
 * buffered up to its closing clock (later ones wait for the next), and the
 * records that follow GEN_END (PENDING, the trailer) go with it. Stacks and
 * strings sent by threads as they were added join the next generation.
 * Each generation is compressed into a zstd frame like the writer's.
 *
 * A directory may hold several traces (a session's output: ust/uid/...,
 * ust/pid/..., a relay daemon's hosts): all are read, merged by time. The
 * events of one process are taken: the one asked for, or the only one; an
 * event's process is its `vpid` context, else its trace's `vpid`
 * environment entry (per-process buffers). A merged reading renumbers the
 * generations and sums the processes' END records into one. Times stay each
 * process's ticks: on one machine they are one clock; processes of several
 * hosts are merged, but their timelines are not aligned. Events LTTng discarded (full
 * sub-buffers) are counted: ctr_ctf_discarded().
 *
 * Not thread-safe: one caller.
 */
#ifndef CTR_CTF_H
#define CTR_CTF_H

#include <stddef.h>
#include <stdint.h>

#include "read/ctf_rebuild.h" /* CTR_CTF_ALL */

struct ctr_ctf;
struct ctr_frame;

/* ctr_ctf_open() : reads the CTF traces under directory dir, the events of
 * process pid (0: the only one there is; CTR_CTF_ALL: all, merged). @return 0, or a negative errno
 * with a one-line reason in err: no CTF trace there, damage babeltrace2
 * must not be given (ctf_check.h), babeltrace2 cannot read it or its
 * plugins are missing, CTRACE_CTF_TIMEOUT is not a number. A call into
 * babeltrace2, here or in ctr_ctf_next(), that lasts longer than
 * CTRACE_CTF_TIMEOUT seconds (default 10; 0: no bound) ends the process
 * with status 1 and a line on stderr (watchdog.h). */
int ctr_ctf_open(const char *dir, uint64_t pid, struct ctr_ctf **out, char *err, size_t errlen);
/* ctr_ctf_next() : the next generation as a frame, as ctr_source_next().
 * @return 1 with a frame, 0 at the end, a negative errno with the reason in
 *         f->skipped: -ENOTUNIQ, several processes and none chosen (nothing
 *         can be read); another, babeltrace2 failed (what came before
 *         stands). */
int ctr_ctf_next(struct ctr_ctf *c, struct ctr_frame *f);
/* ctr_ctf_rewind() : starts again from the first event. @return 0 or a
 * negative errno. */
int ctr_ctf_rewind(struct ctr_ctf *c);
/* CTF events read so far (the position shown as progress). */
uint64_t ctr_ctf_pos(const struct ctr_ctf *c);
/* Events LTTng discarded in the streams read so far (all processes). */
uint64_t ctr_ctf_discarded(const struct ctr_ctf *c);
void ctr_ctf_close(struct ctr_ctf *c);

#endif
