/* SPDX-License-Identifier: MIT */
/* load.h - a whole trace read into memory, every event kept: for tests,
 * fuzzing and small traces. The analyses stream instead (pipeline.h); this
 * is one consumer of that pipeline, which is why it sits above it and the
 * tables it fills (trace.h) sit below.
 */
#ifndef CTR_LOAD_H
#define CTR_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "read/trace.h"

/* ctr_trace_read() : reads the whole trace at `path` into *t (zeroed
 * first): the tables, and every thread's events (ctr_thread_info.events),
 * threads sorted by id. For tests and small traces: memory grows with the
 * trace (the analyses stream instead: pipeline.h).
 * @return 0 on success, including a damaged file (then t->damage is
 *         non-empty); a negative errno when nothing could be read (missing
 *         file, not a ctrace file, unsupported version), with a one-line
 *         reason in err. */
int ctr_trace_read(const char *path, struct ctr_trace *t, char *err, size_t errlen);

/* The same from bytes in memory (for tests and fuzzing). */
int ctr_trace_read_mem(const uint8_t *data, size_t len, struct ctr_trace *t, char *err,
                       size_t errlen);

#endif
