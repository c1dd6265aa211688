/* SPDX-License-Identifier: MIT */
/* bt2read.h - a native trace file as the babeltrace2 source (bt2plugin.c)
 * reads it: frame by frame, each frame's tracepoints (the mapping of
 * format/ctrace_lttng.h, by ctr_lttng_transcribe) handed out in time
 * order, each with a time in CLOCK_MONOTONIC nanoseconds.
 *
 * Times: an event's is its ticks converted by linear interpolation between
 * the CLOCK records around it (FORMAT.md §6; ticks are the nanoseconds
 * themselves when TRACE_INFO's tick_source is 0), a context switch's is
 * already nanoseconds, and a record's is the CLOCK record's before it in
 * its frame (the frame's first CLOCK for those before that one: a
 * generation's GEN_BEGIN, TRACE_INFO and tables at its start, its closing
 * CLOCK, GEN_END and PENDING at its end, its events in between). Handed-out
 * times never go backwards, across frames too (an event that a thread
 * buffered for long, or a call in progress in the trailer, is moved up to
 * the time before it), and never pass INT64_MAX nanoseconds from the Unix
 * epoch: babeltrace2 requires both.
 *
 * Memory is one frame (at most CTR_FRAME_MAX_CONTENT decompressed) and its
 * plan: 16 bytes per record and per event. The file is hostile: damage ends
 * the reading with a message naming the file and the offset, after what
 * came before it.
 */
#ifndef CTRACE_BT2READ_H
#define CTRACE_BT2READ_H

#include <stddef.h>
#include <stdint.h>

#include "ctrace_lttng.h"

struct ctrbt_reader;

/* ctrbt_is_trace() : whether path is a regular file that begins with the
 * ctrace magic (FORMAT.md §2). @return 1 or 0 (0 for one it cannot read). */
int ctrbt_is_trace(const char *path);

/* ctrbt_open() : opens path and checks its header. @return 0, or -1 with a
 * one-line reason naming the path in err: unreadable, not a ctrace trace,
 * a major version this reader does not know, out of memory. */
int ctrbt_open(const char *path, struct ctrbt_reader **out, char *err, size_t errlen);

/* ctrbt_next_frame() : reads the next frame and orders its tracepoints
 * (any left of the frame before are dropped). A frame damaged inside
 * keeps the tracepoints before the damage, and the next call reports it.
 * @return 1 (a frame, maybe with no tracepoint), 0 at the end of the file,
 *         or -1 with the reason in err: a damaged frame or record, a file
 *         cut inside a frame, a frame over CTR_FRAME_MAX_CONTENT, a read
 *         error, out of memory; every later call returns -1 again. */
int ctrbt_next_frame(struct ctrbt_reader *r, char *err, size_t errlen);

/* ctrbt_next() : sends the frame's next tracepoint to e (one call of
 * e->event or e->record, during which ctrbt_time() is its time).
 * @return 1, or 0 when the frame has no more. */
int ctrbt_next(struct ctrbt_reader *r, const struct ctr_lttng_emitter *e);

/* The time of the tracepoint ctrbt_next() sends (or sent last), in
 * CLOCK_MONOTONIC nanoseconds. */
uint64_t ctrbt_time(const struct ctrbt_reader *r);

/* What the first frame says, fixed once ctrbt_next_frame() has returned:
 * CLOCK_REALTIME minus CLOCK_MONOTONIC at its first CLOCK record (0 if it
 * has none); the traced process's id (TRACE_INFO), 0 if unknown. */
int64_t ctrbt_clock_offset(const struct ctrbt_reader *r);
uint64_t ctrbt_pid(const struct ctrbt_reader *r);

void ctrbt_close(struct ctrbt_reader *r);

#endif
