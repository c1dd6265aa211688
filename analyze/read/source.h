/* SPDX-License-Identifier: MIT */
/* source.h - where a trace's bytes come from: a file, or standard input
 * ("-"), read front to back and cut into its zstd frames (FORMAT.md §2),
 * each handed out whole for a worker to decode (gen.h); or a directory of
 * LTTng traces, whose `ctrace` events ctf.h turns into such frames.
 *
 * The file header is checked before anything else is read, and a file that
 * is not a regular file (a FIFO, a directory, a device) is refused at once
 * unless it is standard input. Bytes between frames that are not a frame
 * (damage) are skipped up to the next frame's magic number and reported.
 * Standard input may be spooled to an unlinked temporary file, so that an
 * analysis that needs two passes can read it again.
 */
#ifndef CTR_SOURCE_H
#define CTR_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "read/frame.h"

struct ctr_source;

/* ctr_source_open() : opens path ("-": standard input; with `spool`, kept
 * in a temporary file for ctr_source_rewind()) and checks its header.
 * @return 0, or a negative errno with a one-line reason (naming the path)
 *         in err: missing, not a regular file, not a ctrace trace, a
 *         version this reader does not know. */
int ctr_source_open(const char *path, int spool, struct ctr_source **out, char *err, size_t errlen);

/* ctr_source_open_pid() : ctr_source_open(), and when path is a directory,
 * the LTTng (CTF) traces in it (ctf.h): the events of process pid (0: the
 * only one), as frames of a native trace. */
int ctr_source_open_pid(const char *path, int spool, uint64_t pid, struct ctr_source **out,
                        char *err, size_t errlen);
/* The same over bytes in memory (borrowed: they must outlive the source). */
int ctr_source_open_mem(const uint8_t *data, size_t len, struct ctr_source **out, char *err,
                        size_t errlen);

/* ctr_source_next() : the next frame into *f.
 * @return 1 with a frame, 0 at the end (f->skipped may still say that
 *         trailing bytes were skipped), or a negative errno (a read error,
 *         out of memory) with a reason in f->skipped. */
int ctr_source_next(struct ctr_source *s, struct ctr_frame *f);

/* ctr_source_rewind() : starts again after the header (a spooled standard
 * input is read back from its spool, once it was read to its end).
 * @return 0 or a negative errno. */
int ctr_source_rewind(struct ctr_source *s);

/* Bytes read so far, and the file's size (0 when unknown: a pipe); for an
 * LTTng trace (ctr_source_is_ctf), tracepoints read, and 0. */
uint64_t ctr_source_pos(const struct ctr_source *s);
uint64_t ctr_source_size(const struct ctr_source *s);
/* Whether s reads an LTTng trace (a directory). */
int ctr_source_is_ctf(const struct ctr_source *s);
/* Events LTTng discarded (full sub-buffers) in what was read: 0 for a
 * native trace, whose drops are in the trace itself. */
uint64_t ctr_source_discarded(const struct ctr_source *s);

void ctr_source_close(struct ctr_source *s);

#endif
