/* ctrace/trace.h - the public tracing API of libctrace.
 *
 * Link a program with -lctrace (or run it under `ctrace run`) and wrap the part
 * you want to see in trace_start() / trace_stop(). While tracing, every thread's
 * creation, start, end and name, and every contended pthread mutex wait, is
 * recorded with a nanosecond timestamp and the stack where it happened, into a
 * trace file that the `ctrace` analyzer reads.
 *
 * Errors are negative errno values. All functions here are thread-safe; none is
 * async-signal-safe.
 */
#ifndef CTRACE_TRACE_H
#define CTRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CTRACE_EXPORT __attribute__((visibility("default")))
#else
#define CTRACE_EXPORT
#endif

/* Options for trace_start_opts(). The zero value (`struct trace_options o = {0}`)
 * means: write to `path`, with the defaults documented on each field. */
struct trace_options {
    /* Where to write: the file at path (created or truncated, mode 0644), or,
     * when path is NULL, the descriptor fd, which must be >= 1, open for
     * writing, and is not closed by ctrace. Zero value: invalid (-EINVAL);
     * set one of them. */
    const char *path;
    int fd;

    /* Bytes of each per-thread buffer chunk. 0 = 64 KiB. Range 4 KiB..1 MiB,
     * rounded up to a power of two. */
    size_t chunk_bytes;

    /* Bytes of buffer memory shared by all threads (the chunk pool). 0 = 64 MiB.
     * Reserved up front, touched only as used. When every chunk is waiting for
     * the collector, threads drop events and the trace says how many. */
    size_t pool_bytes;

    /* How often the collector thread flushes, in milliseconds: also the length
     * of a generation and the most a buffered event waits to reach the file.
     * 0 = 100 ms. */
    unsigned flush_ms;

    /* zstd compression level for the file. 0 = 1 (fast). */
    int compression_level;

    /* Most frames recorded per stack. 0 = 32. At most 64. */
    unsigned stack_depth;

    /* I/O calls (read, recv, poll, fsync, ...) that return sooner than this,
     * in nanoseconds, are not recorded: they did not really wait, and
     * recording them would cost more than they took. 0 = 10000 (10 us);
     * set 1 to record every call. The trace says which threshold was used. */
    unsigned io_min_ns;

    /* Non-zero: also record every context switch of traced threads, with
     * perf_event (no privilege needed where perf_event_paranoid <= 2), for
     * the sched profile: preemption, and the exact time a released waiter
     * ran again. Costs about 1 us per context switch. 0 = off: the sched
     * profile then comes from release events alone. */
    int sched_switches;
};

/* trace_start() : starts tracing into the file at `path` with default options.
 * @return 0 on success;
 *         -EBUSY if tracing is already running;
 *         -EINVAL if path is NULL;
 *         a negative errno from open(2), mmap(2) or pthread_create(3).
 * Thread-safe. */
CTRACE_EXPORT int trace_start(const char *path);

/* trace_start_opts() : as trace_start(), with options (see struct trace_options).
 * @return as trace_start(), and -EINVAL for an option out of range. */
CTRACE_EXPORT int trace_start_opts(const struct trace_options *opts);

/* trace_stop() : stops tracing and writes everything still buffered, including
 * the buffers of idle and blocked threads, then closes the file (unless it was
 * given as a descriptor). Called automatically at exit if tracing is running.
 * Events that a thread was writing at the very moment of the stop may be
 * absent; every other event is in the file or counted as dropped.
 * @return 0 on success;
 *         -ENOENT if tracing was not running;
 *         the negative errno of the first write error (e.g. -ENOSPC); the file
 *         then holds a readable prefix of the trace.
 * Thread-safe. */
CTRACE_EXPORT int trace_stop(void);

/* trace_is_running() : @return 1 while tracing is running, 0 otherwise.
 * Thread-safe and async-signal-safe. */
CTRACE_EXPORT int trace_is_running(void);

/* Counters of the current or last session, for tests and `ctrace stats`-like
 * reports from inside a program. */
struct trace_counters {
    uint64_t events_dropped;  /* events that found no buffer */
    uint64_t bytes_written;   /* compressed bytes written to the file */
    uint64_t chunks_flushed;  /* chunks (full or partial) handed to the file */
};

/* trace_get_counters() : fills *out. @return 0, or -EINVAL if out is NULL.
 * Thread-safe; the figures are exact after trace_stop() returns. */
CTRACE_EXPORT int trace_get_counters(struct trace_counters *out);

#ifdef __cplusplus
}
#endif

#endif /* CTRACE_TRACE_H */
