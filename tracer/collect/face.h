/* SPDX-License-Identifier: MIT */
/* face.h - the face's functions (api.c, control.c, autostart.c) that the
 * collector and the sinks call: the tracer's set-up, the API lock, a
 * session's beginning and end, the options' checks (and their reading from
 * CTRACE_* variables, which the flight recorder's start-up does too), the
 * file header, the control channel's opening and its collector side.
 * Declared here, below their definers, because the collector serves the
 * channel between rounds and a sink (the file, the flight recorder) begins
 * and ends sessions; the rest of the face's is in tracer/face.h.
 */
#ifndef CTR_COLLECT_FACE_H
#define CTR_COLLECT_FACE_H

#include <stdint.h>

#include "ctrace/trace.h"
#include "ctrace_format.h"

/* The tracer's one-time set-up (api.c: wrappers, clock, threads' slab and
 * exit key, tables); again, a no-op. @return 0 or -errno. */
int ctr__init(void);

/* Session lifecycle (api.c), under the API lock: begin starts the buffers and
 * the collector with options o; end stops them (a final round first). */
void ctr__api_lock(void);
void ctr__api_unlock(void);
/* Takes the API lock if it is free (the collector, which must never wait
 * for it: its holder may be waiting for a round). @return 1 if taken. */
int ctr__api_trylock(void);
int ctr__session_begin(const struct trace_options *o);
void ctr__session_end(void);
/* Bytes of address space the tracer's buffers and tables hold now: the
 * thread slab, the chunk pool and the intern tables, each mapped as it
 * fills (core/segarr.h). Any thread. */
size_t ctr__mapped_bytes(void);

/* o's options as a session uses them (ctrace_options.h): the default for
 * each 0, sizes rounded; path and fd copied. Into *r. @return 0, or -EINVAL
 * for an option out of its range or a pool of fewer than CTR_POOL_MIN_CHUNKS
 * chunks. */
int ctr__options_resolve(const struct trace_options *o, struct trace_options *r);
/* ctr__options_resolve without the result: 0 or -EINVAL. */
int ctr__options_check(const struct trace_options *o);

/* The 16 bytes a trace file starts with (FORMAT.md §2). */
void ctr__file_header(uint8_t h[CTR_FILE_HEADER_LEN]);

/* At exit, the result of stopping the trace: said on stderr when it failed
 * and the session was started for `ctrace run` (autostart.c). */
void ctr__autostart_stopped(int rc);

/* Fills o's numeric options from their CTRACE_* variables (unset: 0, the
 * default) and checks CTRACE_UNWIND (autostart.c). @return 0, or -EINVAL
 * after saying on stderr which variable is bad and why. */
int ctr__options_from_env(struct trace_options *o);

/* The control channel (control.c, CONTROL.md). open, under the API lock:
 * listens for `ctrace ctl`, and keeps the collector's thread up to serve it;
 * a session that a `trace` request begins takes o's options. Idempotent.
 * @return 0 or -errno. */
int ctr__control_open(const struct trace_options *o);
/* The collector's side: wait sleeps up to timeout_ns (UINT64_MAX: no end)
 * until a kick or a client (@return 0; -1 when the channel is closed, and
 * nothing was done); serve runs what clients asked, between rounds. */
int ctr__control_wait(uint64_t timeout_ns);
void ctr__control_serve(void);
/* Wakes the collector if it sleeps in ctr__control_wait (through the
 * channel's eventfd, if one was made). Any thread. */
void ctr__control_kick(void);

#endif /* CTR_COLLECT_FACE_H */
