/* SPDX-License-Identifier: MIT */
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
 *
 * ABI. The structs passed to the library (trace_options, trace_counters,
 * and flightrec.h's) can grow without breaking programs built against an
 * older header: fields are only ever added at the end, and a new field's
 * zero value keeps the older behaviour. The functions that take them are
 * inline here and pass the library the struct's size as the program was
 * compiled (trace__start_opts and the like: call the inline ones). A
 * library newer than the header takes the fields the program does not have
 * as zero, and fills only the fields of an output struct that the program
 * has. A library older than the header fails with -E2BIG if the program
 * set a field it does not know (non-zero), and otherwise works. So that no
 * field ever lands in padding whose bytes a program left undefined, each
 * struct's fields fill it exactly (a `reserved` field where needed: a later
 * field takes its place), and
 * fields are added 8 bytes at a time. Start a struct from its zero value
 * (`= {0}` or a designated initializer). See ctrace/version.h for the
 * versions, and libctrace(3).
 */
#ifndef CTRACE_TRACE_H
#define CTRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "ctrace/version.h"

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
    /* Where to write: the file at path (created or truncated, mode 0600: it
     * holds the program's logs and paths; a symbolic link there is not
     * followed: -ELOOP), or, when path is NULL, the descriptor fd, which
     * must be >= 1, open for writing, and is not closed by ctrace. Zero
     * value: invalid (-EINVAL); set one of them, unless `lttng` is set. */
    const char *path;
    int fd;

    /* Bytes of each per-thread buffer chunk. 0 = 64 KiB. Range 4 KiB..1 MiB,
     * rounded up to a power of two. */
    size_t chunk_bytes;

    /* Bytes of buffer memory shared by all threads (the chunk pool). 0 = 256 MiB.
     * At least 4 chunks (of chunk_bytes, as rounded). Reserved up front,
     * touched only as used. When every chunk is waiting for the collector,
     * threads drop events and the trace says how many. */
    size_t pool_bytes;

    /* How often the collector thread flushes, in milliseconds: also the length
     * of a generation and the most a buffered event waits to reach the file.
     * 0 = 100 ms. */
    unsigned flush_ms;

    /* zstd compression level for the file. 0 = 1 (fast). At most 22. */
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

    /* Bytes of each traced thread's context-switch ring (with
     * sched_switches): the kernel's buffer, which the collector empties every
     * flush_ms. Switches that do not fit are lost, and the trace counts them
     * (`ctrace stats`); a thread that switches more than about
     * sched_ring_bytes / 24 times per flush needs a bigger ring. The rings
     * are locked memory: beyond perf_event_mlock_kb per user (RLIMIT_MEMLOCK
     * after that), more threads get none, which the trace also counts.
     * 0 = 64 KiB. Range 4 KiB..256 MiB, rounded up to a power of two. */
    size_t sched_ring_bytes;

    /* Non-zero: also send every event to LTTng-UST, as the `ctrace`
     * tracepoints (an LTTng session records them: `lttng enable-event -u
     * 'ctrace:*'`), loading the provider library libctrace-lttng (beside
     * libctrace, or named by CTRACE_LTTNG_PROVIDER) with dlopen. With
     * neither path nor fd set, events go to LTTng only. trace_start_opts
     * returns -ELIBACC when the provider cannot be loaded. 0 = off: lttng-ust
     * is never loaded. */
    int lttng;

    /* CPU samples per second of each traced thread's own CPU time: every
     * 1/cpu_hz s that a thread runs, its stack is recorded (a CPU_SAMPLE
     * event, for `ctrace -pprof=cpu`). 0 = off; TRACE_CPU_HZ_DEFAULT (100)
     * is the usual rate. Range 1..10000. Samples come from a perf_event on
     * each thread (no privilege needed where perf_event_paranoid <= 2; time
     * in the kernel is not sampled), else from the timer of cpu_timer. */
    unsigned cpu_hz;

    /* Non-zero: take the CPU samples with a per-thread CPU-time timer and
     * SIGPROF, whose handler records the stack, instead of perf_event (which
     * is also the fallback where perf_event cannot be used). Only while the
     * program leaves SIGPROF at its default: a program with a SIGPROF handler
     * of its own keeps it, and its threads are not sampled by timer. Like any
     * SIGPROF profiler, a sample landing as a thread enters a blocking call
     * that a signal interrupts (nanosleep, epoll_wait, ...) makes it return
     * EINTR. 0 = perf_event where it works. */
    int cpu_timer;

    /* Non-zero: also open the control channel, through which `ctrace ctl
     * PID` (the process's user, or root) asks for what is recorded, for the
     * flight recorder's window, or for a trace of the next seconds: a Unix
     * socket, mode 0600, in $XDG_RUNTIME_DIR/ctrace (else /tmp/ctrace-UID),
     * served by the collector thread. Once open it stays open until the
     * process exits (keeping that thread, even when nothing records), and
     * opening it again is a no-op. The start fails with the channel's
     * -errno when it cannot open. 0 = no channel. */
    int control;
};

/* The CPU sampling rate to set in trace_options.cpu_hz when no other is
 * wanted (what `ctrace run -cpu` alone uses). */
#define TRACE_CPU_HZ_DEFAULT 100

/* The smallest struct trace_options that trace__start_opts takes: the
 * fields up to sched_ring_bytes, those of ctrace before LTTng and CPU
 * samples. */
#define TRACE_OPTIONS_SIZE_VER0 offsetof(struct trace_options, lttng)

/* ctrace_version() : @return the library's CTRACE_VERSION_NUMBER (see
 * ctrace/version.h), which may differ from the header's. Thread-safe and
 * async-signal-safe. */
CTRACE_EXPORT unsigned ctrace_version(void);

/* ctrace_version_string() : @return the library's CTRACE_VERSION_STRING, a
 * static string. Thread-safe and async-signal-safe. */
CTRACE_EXPORT const char *ctrace_version_string(void);

/* trace_start() : starts tracing into the file at `path` with default options.
 * @return 0 on success;
 *         -EBUSY if tracing is already running;
 *         -EINVAL if path is NULL;
 *         a negative errno from open(2), mmap(2) or pthread_create(3).
 * Thread-safe. */
CTRACE_EXPORT int trace_start(const char *path);

/* trace__start_opts() : trace_start_opts() for a struct of opts_size bytes
 * (see ABI above). @return as trace_start_opts(); -EINVAL if opts_size is
 * below TRACE_OPTIONS_SIZE_VER0; -E2BIG if the struct sets a field this
 * library does not know. */
CTRACE_EXPORT int trace__start_opts(const struct trace_options *opts, size_t opts_size);

/* trace_start_opts() : as trace_start(), with options (see struct trace_options).
 * @return as trace_start(), and -EINVAL for an option out of range (or opts
 *         NULL); -E2BIG if run with an older libctrace that does not know a
 *         field set here. Thread-safe. */
static inline int trace_start_opts(const struct trace_options *opts)
{
    return trace__start_opts(opts, sizeof(*opts));
}

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
    uint64_t events_dropped; /* events that found no buffer */
    uint64_t bytes_written;  /* compressed bytes written to the file */
    uint64_t chunks_flushed; /* chunks (full or partial) handed to the file */
};

/* trace__get_counters() : trace_get_counters() into a struct of out_size
 * bytes (see ABI above): fills the fields both know, zeroes the rest.
 * @return 0; -EINVAL if out is NULL or out_size is below the size of 0.1's
 * struct (its three fields). */
CTRACE_EXPORT int trace__get_counters(struct trace_counters *out, size_t out_size);

/* trace_get_counters() : fills *out. @return 0, or -EINVAL if out is NULL.
 * Thread-safe; the figures are exact after trace_stop() returns. */
static inline int trace_get_counters(struct trace_counters *out)
{
    return trace__get_counters(out, sizeof(*out));
}

/* ---------------------------------------------------------------------------
 * User annotations: tasks, regions and logs (in the spirit of Go's
 * trace.NewTask, trace.WithRegion and trace.Log). When no trace or flight
 * recorder runs, each call costs a load and a branch (inline below).
 * ------------------------------------------------------------------------- */

/* A task: a logical operation, such as one request, that may cross threads.
 * 0 is "no task". */
typedef uint64_t trace_task_t;

/* Non-zero while a trace or the flight recorder runs (read-only for users). */
CTRACE_EXPORT extern int trace__active;

CTRACE_EXPORT trace_task_t trace__task_begin(const char *type, trace_task_t parent);
CTRACE_EXPORT void trace__task_end(trace_task_t task);
CTRACE_EXPORT void trace__region(trace_task_t task, const char *name, int begin);
CTRACE_EXPORT void trace__log(trace_task_t task, const char *category, const char *message);
CTRACE_EXPORT void trace__logf(trace_task_t task, const char *category, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* relaxed: a hint only; the library checks the session again (api.c). */
#define TRACE__ACTIVE() __builtin_expect(__atomic_load_n(&trace__active, __ATOMIC_RELAXED), 0)

/* trace_task_begin() : begins a task of `type` (a short constant string such
 * as "request"), a child of `parent` (0: none). It may be ended on any
 * thread. @return the task, or 0 when not tracing (then every call below
 * with it is a no-op). Thread-safe. */
static inline trace_task_t trace_task_begin(const char *type, trace_task_t parent)
{
    return TRACE__ACTIVE() ? trace__task_begin(type, parent) : 0;
}

/* trace_task_end() : ends task (0: no-op). Thread-safe. */
static inline void trace_task_end(trace_task_t task)
{
    if (TRACE__ACTIVE() && task)
        trace__task_end(task);
}

/* trace_region_begin() / trace_region_end() : a named phase of task (0 for
 * none) on the calling thread. Regions nest per thread: end the innermost
 * first, with the same name. Thread-safe (per thread). */
static inline void trace_region_begin(trace_task_t task, const char *name)
{
    if (TRACE__ACTIVE())
        trace__region(task, name, 1);
}

static inline void trace_region_end(trace_task_t task, const char *name)
{
    if (TRACE__ACTIVE())
        trace__region(task, name, 0);
}

/* trace_log() : a message (at most 1024 bytes are kept) in a category,
 * attached to task (0: none). Thread-safe. */
static inline void trace_log(trace_task_t task, const char *category, const char *message)
{
    if (TRACE__ACTIVE())
        trace__log(task, category, message);
}

/* trace_logf() : trace_log() with printf formatting, done only while
 * tracing. */
#define trace_logf(task, category, ...)               \
    do {                                              \
        if (TRACE__ACTIVE())                          \
            trace__logf(task, category, __VA_ARGS__); \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif /* CTRACE_TRACE_H */
