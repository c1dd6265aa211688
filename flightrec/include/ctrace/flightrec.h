/* SPDX-License-Identifier: MIT */
/* ctrace/flightrec.h - the flight recorder: the last moments of a program's
 * trace, kept in memory all the time and written out on demand.
 *
 * flightrec_start() keeps a rolling window of the trace in memory, cut into
 * generations of flush_ms (default 100 ms). flightrec_dump() (from a
 * slow-request hook, say) or the latency trigger writes the window out as a
 * normal, self-contained trace file that every `ctrace` command reads. The
 * recorder runs on the same per-thread buffers as trace_start(), and both
 * can run at once.
 *
 * The window's semantics:
 *   - min_age: the window keeps at least the last min_age of the trace...
 *   - max_bytes: ...unless that needs more than max_bytes of memory: the
 *     memory the window holds NEVER exceeds max_bytes (MaxBytes wins, as in
 *     Go). When it would, the oldest generation goes first.
 *   - Beyond min_age, the window keeps older generations only while a
 *     thread is still blocked in a wait (not a sleep) that began in them
 *     (the start of a slow request): up to twice min_age, and never beyond
 *     max_bytes.
 *   - The window is kept compressed (zstd level 1): how much more history
 *     that buys depends on the events: 54x for a synthetic storm of
 *     similar events (tests/bench/bench_flightrec), never less than 1x.
 *   - Besides the window, tracing uses the per-thread buffer pool of
 *     trace_options (pool_bytes, default 256 MiB reserved, touched only as
 *     used: about one chunk_bytes, 64 KiB by default, per thread that wrote
 *     events, plus the chunks waiting for the collector) and one compressed
 *     frame of the current generation in the collector.
 * A dump contains: the trace's tables (strings, stacks, threads with their
 * current names, memory mappings with build-ids), the clock calibration,
 * the window's generations in full, and the state of each thread at the
 * window's start: a thread blocked since before the window shows as blocked
 * from the window's start, with the stack where it began to wait. The
 * window starts at its oldest generation's clock point; that generation's
 * batches may carry a few events from just before it (what threads had
 * buffered). Older events are not in the dump.
 *
 * Errors are negative errno values. All functions are thread-safe; none is
 * async-signal-safe. The structs here grow as trace.h's do (its "ABI"):
 * the inline functions pass the library their sizes.
 */
#ifndef CTRACE_FLIGHTREC_H
#define CTRACE_FLIGHTREC_H

#include <stddef.h>
#include <stdint.h>

#include "ctrace/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The zero value means the defaults below. */
struct flightrec_config {
    uint64_t min_age_ns; /* 0 = 10 s */
    uint64_t max_bytes;  /* 0 = 16 MiB; at least 64 KiB */
    /* Buffers, stacks, I/O threshold... when the recorder starts the
     * tracing session (path and fd are ignored); NULL = the defaults. When
     * trace_start() already runs, its session's options stay. */
    const struct trace_options *trace;
};

/* flightrec__start() : flightrec_start() for a config of cfg_size bytes
 * whose `trace` points to options of opts_size bytes (trace.h's ABI). */
CTRACE_EXPORT int flightrec__start(const struct flightrec_config *cfg, size_t cfg_size,
                                   size_t opts_size);

/* flightrec_start() : starts the flight recorder; cfg NULL: the defaults.
 * @return 0; -EBUSY if it already runs; -EINVAL for a bad config; -E2BIG if
 *         run with an older libctrace that does not know a field set here;
 *         a negative errno from mmap(2) or pthread_create(3). Thread-safe. */
static inline int flightrec_start(const struct flightrec_config *cfg)
{
    return flightrec__start(cfg, sizeof(*cfg), sizeof(struct trace_options));
}

/* flightrec_stop() : stops the recorder and frees its window (and the
 * latency trigger). Called at exit if it still runs.
 * @return 0, or -ENOENT if it was not running. Thread-safe. */
CTRACE_EXPORT int flightrec_stop(void);

/* flightrec_dump() : writes the window to the file at path, with the
 * events up to about now (the collector first closes the generation in
 * progress). The dump is written beside path (mode 0600: it holds the
 * program's logs) and renamed over it: a reader never sees half a dump, and
 * a symbolic link at path is replaced, not followed. The calling thread
 * waits for the dump (a few milliseconds for a few MiB).
 * @return 0; -EINVAL if path is NULL; -ENAMETOOLONG if path is too long;
 *         -ENOENT if the recorder is not running; -EBUSY if another dump
 *         is in progress (that one is written, this one is not);
 *         -ETIMEDOUT if the file took no writes for 2 s (a frozen or hung
 *         filesystem: the dump is abandoned there, never renamed over
 *         path; ctrace(1), "Files that stall"); a negative errno from
 *         open(2), write(2) or rename(2). Thread-safe. */
CTRACE_EXPORT int flightrec_dump(const char *path);

/* flightrec_dump_fd() : the same into an open, writable descriptor, which
 * is not closed. @return as flightrec_dump(), and -EBADF if fd < 0. */
CTRACE_EXPORT int flightrec_dump_fd(int fd);

/* The latency trigger: when a caller reports (flightrec_latency) a request,
 * task or region that took latency_ns or longer, the collector thread (never
 * the caller) dumps the window into `dir`, as ctrace-PID-SECONDS-N.bin, at
 * most once per min_interval_ns. */
struct flightrec_trigger {
    const char *dir;          /* must exist; copied */
    uint64_t latency_ns;      /* > 0 */
    uint64_t min_interval_ns; /* 0 = 10 s */
};

/* flightrec__trigger_latency() : flightrec_trigger_latency() for a
 * trigger of t_size bytes (trace.h's ABI). */
CTRACE_EXPORT int flightrec__trigger_latency(const struct flightrec_trigger *t, size_t t_size);

/* flightrec_trigger_latency() : arms the trigger (NULL disarms it).
 * @return 0; -ENOENT if the recorder is not running; -EINVAL for a bad
 *         trigger or a dir longer than 4000 bytes; -E2BIG as
 *         flightrec_start(). Thread-safe. */
static inline int flightrec_trigger_latency(const struct flightrec_trigger *t)
{
    return flightrec__trigger_latency(t, sizeof(*t));
}

/* flightrec_latency() : reports a latency the caller measured. Cheap when
 * below the threshold (two loads and a compare).
 * @return 1 if it triggered a dump (written by the collector shortly after),
 *         0 if not (below threshold, not armed, or rate-limited).
 * Thread-safe. */
CTRACE_EXPORT int flightrec_latency(uint64_t latency_ns);

struct flightrec_stats {
    uint64_t window_bytes;     /* memory the window holds now */
    uint64_t window_span_ns;   /* time it covers, to its newest frame */
    uint64_t generations;      /* generations in it */
    uint64_t dumps_written;    /* by the trigger, the dump signal, `ctrace ctl` */
    uint64_t dumps_failed;     /* by the same */
    uint64_t triggers_limited; /* triggers dropped by the rate limit */
};

/* flightrec__get_stats() : flightrec_get_stats() into a struct of
 * out_size bytes (trace.h's ABI): fills the fields both know, zeroes the
 * rest. */
CTRACE_EXPORT int flightrec__get_stats(struct flightrec_stats *out, size_t out_size);

/* flightrec_get_stats() : @return 0, -EINVAL if out is NULL. Thread-safe. */
static inline int flightrec_get_stats(struct flightrec_stats *out)
{
    return flightrec__get_stats(out, sizeof(*out));
}

/* flightrec_is_running() : @return 1 while the recorder runs, else 0. */
CTRACE_EXPORT int flightrec_is_running(void);

#ifdef __cplusplus
}
#endif

#endif
