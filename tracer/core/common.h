/* SPDX-License-Identifier: MIT */
/* common.h - what every file of libctrace needs: the branch hints and the
 * mark of an exported symbol.
 *
 * The moving parts (the file format they produce is format/FORMAT.md):
 *   - ctr_thread: one per traced thread, in a slab that is never unmapped
 *     (core/thread.h). Its owner writes events into its current ctr_chunk
 *     with plain stores, inside a write section (core/emit.h).
 *   - ctr_chunk: fixed-size buffers from the session's pool (core/pool.h). A
 *     full chunk goes to the collector through a lock-free queue; the
 *     collector also copies the committed prefix of chunks that are still
 *     being filled (idle threads).
 *   - ctr_intern: insert-only, lock-free tables (stacks, strings).
 *   - the collector thread turns all of that into generations (collect/:
 *     collector.c, round.c, genstate.c, with the records of records.c) and
 *     hands them to the sinks attached to it (collect/sink.h): the trace
 *     file (sinks/filesink.c), the flight recorder (flightrec/, which
 *     tracer/ never calls); the tracer's own descriptors are kept apart
 *     (core/fdguard.c).
 * Each room includes its own headers and lower rooms' only: core/, then
 * wrap/ and perf/, collect/, sinks/, the face (tracer/). What core/ calls in
 * the rooms above, it declares in core/hooks.h.
 * Internal non-static functions and globals carry the ctr__ prefix; types are
 * ctr_ (they never leave the library).
 */
#ifndef CTR_COMMON_H
#define CTR_COMMON_H

#define CTR_LIKELY(x) __builtin_expect(!!(x), 1)
#define CTR_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CTR_EXPORT __attribute__((visibility("default")))

#endif /* CTR_COMMON_H */
