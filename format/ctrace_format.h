/* SPDX-License-Identifier: MIT */
/* ctrace_format.h - the ctrace wire format: the one table of records, events and
 * wait reasons that both the writer (tracer/) and the reader (analyze/) use,
 * and the decoders (and the event encoder) that read it.
 *
 * FORMAT.md beside this file is the prose specification; section numbers in
 * comments below (e.g. "FORMAT.md §4") point into it. Ids in these tables are
 * part of the released format: they MUST NOT change once released. New events,
 * records and reasons are appended with new ids; a reader older than an event
 * type takes it for damage (FORMAT.md §4), so one needs a new minor version at
 * least.
 *
 * This header, ctrace_options.h (the options table) and ctrace_grow.h (a
 * growing array) are all that tracer/ and analyze/ share. Everything here is a constant, a table or
 * a small static inline helper, so including it costs no link-time coupling.
 */
#ifndef CTRACE_FORMAT_H
#define CTRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------------
 * File header (FORMAT.md §2)
 * ------------------------------------------------------------------------- */

/* clang-format off */
#define CTR_FILE_MAGIC "\x89" "CTRACE\n"     /* 8 bytes, no NUL in the file */
#define CTR_FILE_MAGIC_LEN 8
#define CTR_FILE_HEADER_LEN 16               /* magic, u16 major, u16 minor, u32 flags */
#define CTR_VERSION_MAJOR 1
#define CTR_VERSION_MINOR 5
/* clang-format on */

/* The most bytes a frame decompresses to (FORMAT.md §2): a reader takes a
 * larger one for damage, and so bounds its memory by one frame. */
#define CTR_FRAME_MAX_CONTENT ((size_t)256 << 20)

/* ctr_frame_cut_at_flush() : whether p[0..len), the start of a zstd frame
 * that the file ends inside, stops right after one of its blocks, with
 * nothing of a later block or of the frame's end begun: where a writer
 * that keeps a frame open flushed it (FORMAT.md §2). Walks the frame
 * header and block headers of RFC 8878 §3.1.1; trusts nothing else. */
static inline int ctr_frame_cut_at_flush(const uint8_t *p, size_t len)
{
    static const uint8_t dict_id_len[4] = {0, 1, 2, 4}, content_size_len[4] = {0, 2, 4, 8};
    if (len < 6 || p[0] != 0x28 || p[1] != 0xb5 || p[2] != 0x2f || p[3] != 0xfd)
        return 0;
    unsigned fhd = p[4], size_flag = fhd >> 6, single_segment = (fhd >> 5) & 1;
    size_t off = 5 + !single_segment + dict_id_len[fhd & 3] +
                 (size_flag == 0 ? single_segment : content_size_len[size_flag]);
    unsigned blocks = 0;
    while (off + 3 <= len) {
        uint32_t h = p[off] | (uint32_t)p[off + 1] << 8 | (uint32_t)p[off + 2] << 16;
        unsigned type = (h >> 1) & 3;
        if ((h & 1) || type == 3)
            return 0; /* the frame's last block (so not cut at a flush), or no block */
        off += 3 + (type == 1 ? 1 : (size_t)(h >> 3)); /* an RLE block holds one byte */
        blocks++;
    }
    return off == len && blocks > 0;
}

/* ---------------------------------------------------------------------------
 * Kinds of record fields and event arguments (FORMAT.md §3, §4)
 *
 * Every field of a record and every argument of an event is a uvarint; its
 * kind says what it means. The decoders check the kinds that have a range,
 * and the tests check that the tables use the kinds where their names say.
 * ------------------------------------------------------------------------- */

enum ctr_arg_kind {
    CTR_ARG_NONE = 0,
    CTR_ARG_TIME,   /* tick delta */
    CTR_ARG_THREAD, /* thread id (THREAD record) */
    CTR_ARG_STACK,  /* stack id (STACK record), 0 = no stack */
    CTR_ARG_STRING, /* string id (STRING record), 0 = empty */
    CTR_ARG_REASON, /* wait reason, CTR_REASONS below */
    CTR_ARG_OBJECT, /* address of the object waited on */
    CTR_ARG_PC,     /* a code address (start routine) */
    CTR_ARG_COUNT,  /* a plain count */
    CTR_ARG_TASK,   /* a task id (TASK_BEGIN), 0 = none */
    CTR_ARG_LENGTH, /* a byte count: that many raw bytes follow (an event's
                       last argument, or a record's tail) */
    /* Kinds that only records use: */
    CTR_ARG_TICKS,       /* a time in ticks (§6) */
    CTR_ARG_NS,          /* nanoseconds: a CLOCK_MONOTONIC or CLOCK_REALTIME
                            time, or a duration */
    CTR_ARG_OS_ID,       /* a process id or a kernel thread id */
    CTR_ARG_TICK_SOURCE, /* enum ctr_tick_source */
    CTR_ARG_FLAGS,       /* TRACE_INFO's CTR_INFO_* bits */
    CTR_ARG_GEN,         /* a generation number (§3.1) */
    CTR_ARG_MAPPING,     /* mapping id (MAPPING record) */
    CTR_ARG_ADDR,        /* an address in the traced process */
    CTR_ARG_OFFSET,      /* a file offset, or a load bias */
    /* Record tails, after the fields (besides LENGTH): */
    CTR_ARG_UVARINTS, /* a count n, then n uvarints */
    CTR_ARG_BYTES,    /* raw bytes to the end of the body */
    CTR_ARG_EVENTS,   /* events (§4) to the end of the body */
    CTR_ARG_LIMIT
};

#define CTR_UNPAREN(...) __VA_ARGS__

/* ---------------------------------------------------------------------------
 * Records (FORMAT.md §3): the decompressed stream is a sequence of
 *   kind:u8  length:uvarint  body[length]
 * A body is the record's fields, uvarints of the kinds listed below, then
 * its tail: nothing (CTR_ARG_NONE); LENGTH, a count and that many bytes;
 * UVARINTS, a count and that many uvarints; BYTES or EVENTS, the rest of
 * the body. The writer's field counts are checked against these lists at
 * compile time (format/ctrace_record.h); the reader decodes by them.
 * ------------------------------------------------------------------------- */

/* clang-format off */
/* CPU_TIME's flags: the time waiting for a CPU is known (the kernel's
 * schedstat was read; else it is 0 and means nothing); the reading was
 * taken by the thread itself as it began to be traced (its CPU time then;
 * its delay is unknown, and a reader may take it as 0, which counts the
 * wait before the thread first ran in its first span). */
#define CTR_CPUTIME_DELAY_KNOWN 0x1u
#define CTR_CPUTIME_AT_START 0x2u

/*  id  name         fields                                               tail */
#define CTR_RECORDS(X)                                                                         \
    /* pid, tick_source, flags, exe, io_min_ns: I/O calls shorter than this many ns       */ \
    /* are not recorded                                                                     */ \
    X(1, TRACE_INFO, (CTR_ARG_OS_ID, CTR_ARG_TICK_SOURCE, CTR_ARG_FLAGS, CTR_ARG_STRING,        \
                      CTR_ARG_NS), CTR_ARG_NONE)                                                \
    X(2, GEN_BEGIN,  (CTR_ARG_GEN), CTR_ARG_NONE)                                               \
    X(3, GEN_END,    (CTR_ARG_GEN), CTR_ARG_NONE)                                               \
    /* ticks, CLOCK_MONOTONIC ns, CLOCK_REALTIME ns, read at one instant                    */ \
    X(4, CLOCK,      (CTR_ARG_TICKS, CTR_ARG_NS, CTR_ARG_NS), CTR_ARG_NONE)                     \
    /* id, then the string's bytes                                                          */ \
    X(5, STRING,     (CTR_ARG_STRING), CTR_ARG_BYTES)                                           \
    /* id, then n and n return addresses, innermost first                                   */ \
    X(6, STACK,      (CTR_ARG_STACK), CTR_ARG_UVARINTS)                                         \
    /* id, os tid, parent thread id (0 = unknown), name, pthread_t handle (what             */ \
    /* pthread_join waits on)                                                               */ \
    X(7, THREAD,     (CTR_ARG_THREAD, CTR_ARG_OS_ID, CTR_ARG_THREAD, CTR_ARG_STRING,            \
                      CTR_ARG_OBJECT), CTR_ARG_NONE)                                            \
    /* id, start, limit, file offset, load bias, path, then the build-id's length and bytes */ \
    X(8, MAPPING,    (CTR_ARG_MAPPING, CTR_ARG_ADDR, CTR_ARG_ADDR, CTR_ARG_OFFSET,              \
                      CTR_ARG_OFFSET, CTR_ARG_STRING), CTR_ARG_LENGTH)                          \
    /* thread id, base ticks, then the thread's events                                      */ \
    X(9, BATCH,      (CTR_ARG_THREAD, CTR_ARG_TICKS), CTR_ARG_EVENTS)                           \
    /* thread id, events it dropped so far (cumulative)                                     */ \
    X(10, DROPS,     (CTR_ARG_THREAD, CTR_ARG_COUNT), CTR_ARG_NONE)                             \
    /* events dropped, stack-table overflows, threads left untraced, threads whose          */ \
    /* context switches could not be recorded; only in a complete trace                     */ \
    X(11, END,       (CTR_ARG_COUNT, CTR_ARG_COUNT, CTR_ARG_COUNT, CTR_ARG_COUNT), CTR_ARG_NONE) \
    /* thread id, base CLOCK_MONOTONIC ns, then SWITCH_* and LOST events whose deltas are   */ \
    /* nanoseconds                                                                          */ \
    X(12, SWITCHES,  (CTR_ARG_THREAD, CTR_ARG_NS), CTR_ARG_EVENTS)                              \
    /* thread id, ticks, reason, object, stack: a call in progress as the generation        */ \
    /* ends (1.1)                                                                           */ \
    X(13, PENDING,   (CTR_ARG_THREAD, CTR_ARG_TICKS, CTR_ARG_REASON, CTR_ARG_OBJECT,            \
                      CTR_ARG_STACK), CTR_ARG_NONE)                                             \
    /* thread id, ticks, reason, object, stack: a wait going on as the generation begins,   */ \
    /* which a BLOCK at ticks began in an earlier one (1.2)                                 */ \
    X(14, WAITING,   (CTR_ARG_THREAD, CTR_ARG_TICKS, CTR_ARG_REASON, CTR_ARG_OBJECT,            \
                      CTR_ARG_STACK), CTR_ARG_NONE)                                             \
    /* CPU sampling is on: its sources (bits of enum ctr_cpu_source), its period in CPU    */ \
    /* ns, samples lost so far in the trace (a running total) (1.3)                         */ \
    X(15, SAMPLING,  (CTR_ARG_COUNT, CTR_ARG_NS, CTR_ARG_COUNT), CTR_ARG_NONE)                 \
    /* thread id, ticks, the thread's CPU time so far (ns), its time waiting for a CPU so  */ \
    /* far (ns), flags (CTR_CPUTIME_*): read by the kernel's clocks at ticks (1.4)          */ \
    X(16, CPU_TIME,  (CTR_ARG_THREAD, CTR_ARG_TICKS, CTR_ARG_NS, CTR_ARG_NS, CTR_ARG_FLAGS),     \
                     CTR_ARG_NONE)

enum ctr_record_kind {
#define CTR_X_REC(id, name, fields, tail) CTR_REC_##name = id,
    CTR_RECORDS(CTR_X_REC)
#undef CTR_X_REC
    CTR_REC_LIMIT
};

/* Each record's field count and tail as constants (CTR_REC_THREAD_NFIELDS,
 * CTR_REC_THREAD_TAIL, ...), for the writer's checks at compile time. */
enum {
#define CTR_X_REC_CONST(id, name, fields, tail)                                   \
    CTR_REC_##name##_NFIELDS = sizeof((uint8_t[]){CTR_UNPAREN fields}),           \
    CTR_REC_##name##_TAIL = tail,
    CTR_RECORDS(CTR_X_REC_CONST)
#undef CTR_X_REC_CONST
};

#define CTR_MAX_FIELDS 6 /* MAPPING's; a tail's count comes after them */

#define CTR_X_REC_FITS(id, name, fields, tail)                                    \
    _Static_assert(CTR_REC_##name##_NFIELDS <= CTR_MAX_FIELDS,                    \
                   #name " has more fields than CTR_MAX_FIELDS");
CTR_RECORDS(CTR_X_REC_FITS)
#undef CTR_X_REC_FITS

struct ctr_record_spec {
    const char *name;               /* NULL for an unused id */
    uint8_t nfields;                /* the uvarints before the tail */
    uint8_t fields[CTR_MAX_FIELDS]; /* enum ctr_arg_kind */
    uint8_t tail;                   /* enum ctr_arg_kind: NONE, LENGTH, UVARINTS,
                                       BYTES or EVENTS */
};

#define CTR_X_REC_SPEC(id, name, fields, tail)                                    \
    [id] = {#name, CTR_REC_##name##_NFIELDS, {CTR_UNPAREN fields}, tail},
static const struct ctr_record_spec ctr_record_specs[CTR_REC_LIMIT] = {
    CTR_RECORDS(CTR_X_REC_SPEC)
};
#undef CTR_X_REC_SPEC
/* clang-format on */

/* tick_source in TRACE_INFO: what the "ticks" of timestamps count. */
enum ctr_tick_source {
    CTR_TICKS_MONOTONIC_NS = 0, /* ticks are CLOCK_MONOTONIC nanoseconds */
    CTR_TICKS_TSC = 1           /* ticks are rdtsc cycles; see CLOCK records */
};

/* flags in TRACE_INFO. */
#define CTR_INFO_STACKS_FRAME_POINTER 0x1u /* stacks by frame-pointer walk */
#define CTR_INFO_STACKS_DWARF 0x2u         /* stacks by .eh_frame unwinding (libunwind) */
#define CTR_INFO_SCHED_SWITCHES 0x4u       /* context switches recorded (SWITCHES records) */

/* sources in SAMPLING: bits, what took the CPU samples (FORMAT.md §4.1). */
enum ctr_cpu_source {
    CTR_CPU_PERF = 1, /* perf_event on each thread's CPU clock; samples in SWITCHES */
    CTR_CPU_TIMER = 2 /* a CPU-time timer and a signal on each thread; samples in BATCH */
};

/* ---------------------------------------------------------------------------
 * Events (FORMAT.md §4): inside a BATCH body, each event is
 *   type:u8  dt:uvarint  arg:uvarint ...
 * dt is ticks since the previous event of the batch (the first one: since the
 * batch's base ticks). Every event is timed, so args[0] is always CTR_ARG_TIME.
 * ------------------------------------------------------------------------- */

/* The most raw bytes an event carries (a LOG message is cut to this). */
#define CTR_MAX_EVENT_PAYLOAD 1024

#define CTR_MAX_ARGS 5 /* including the time delta */

/* clang-format off */
/*  id  name           arguments after the type byte */
#define CTR_EVENTS(X)                                                             \
    X(1, THREAD_CREATE, (CTR_ARG_TIME, CTR_ARG_THREAD, CTR_ARG_STACK))            \
    X(2, THREAD_START,  (CTR_ARG_TIME, CTR_ARG_THREAD, CTR_ARG_PC))               \
    X(3, THREAD_END,    (CTR_ARG_TIME))                                           \
    X(4, THREAD_NAME,   (CTR_ARG_TIME, CTR_ARG_THREAD, CTR_ARG_STRING))           \
    X(5, BLOCK,         (CTR_ARG_TIME, CTR_ARG_REASON, CTR_ARG_OBJECT, CTR_ARG_STACK)) \
    X(6, UNBLOCK,       (CTR_ARG_TIME))                                           \
    X(7, LOST,          (CTR_ARG_TIME, CTR_ARG_COUNT))                            \
    X(8, RELEASE,       (CTR_ARG_TIME, CTR_ARG_OBJECT, CTR_ARG_STACK))            \
    X(9, SWITCH_OUT,    (CTR_ARG_TIME, CTR_ARG_COUNT))                            \
    X(10, SWITCH_IN,    (CTR_ARG_TIME))                                           \
    X(11, TASK_BEGIN,   (CTR_ARG_TIME, CTR_ARG_TASK, CTR_ARG_TASK, CTR_ARG_STRING)) \
    X(12, TASK_END,     (CTR_ARG_TIME, CTR_ARG_TASK))                             \
    X(13, REGION_BEGIN, (CTR_ARG_TIME, CTR_ARG_TASK, CTR_ARG_STRING))             \
    X(14, REGION_END,   (CTR_ARG_TIME, CTR_ARG_TASK, CTR_ARG_STRING))             \
    X(15, LOG,          (CTR_ARG_TIME, CTR_ARG_TASK, CTR_ARG_STRING, CTR_ARG_LENGTH)) \
    X(16, CPU_SAMPLE,   (CTR_ARG_TIME, CTR_ARG_STACK, CTR_ARG_COUNT))            \
    X(17, SWITCH_WAIT,  (CTR_ARG_TIME, CTR_ARG_REASON, CTR_ARG_OBJECT, CTR_ARG_STACK))

enum ctr_event_type {
#define CTR_X_EV(id, name, args) CTR_EV_##name = id,
    CTR_EVENTS(CTR_X_EV)
#undef CTR_X_EV
    CTR_EV_LIMIT
};

struct ctr_event_spec {
    const char *name;             /* NULL for an unused id */
    uint8_t nargs;                /* including the time delta */
    uint8_t args[CTR_MAX_ARGS];   /* enum ctr_arg_kind */
};

#define CTR_X_SPEC(id, name, argl)                                              \
    [id] = {#name, sizeof((uint8_t[]){CTR_UNPAREN argl}), {CTR_UNPAREN argl}},
static const struct ctr_event_spec ctr_event_specs[CTR_EV_LIMIT] = {
    CTR_EVENTS(CTR_X_SPEC)
};
#undef CTR_X_SPEC
/* clang-format on */

/* ---------------------------------------------------------------------------
 * Wait reasons (FORMAT.md §5): what a BLOCK waits for, and which delay profile
 * counts it. `call` is the function the program called; the analyzer uses it
 * as the leaf frame of every sample. `release` is what the thread that ended
 * a sync wait did (a RELEASE event's call, or a thread's exit): the leaf of
 * the blame profile; NULL where no RELEASE is recorded (spin locks, whose
 * unlock cannot see waiters, and every wait that is not sync).
 * ------------------------------------------------------------------------- */

enum ctr_wait_class {
    CTR_CLASS_SYNC = 1, /* -pprof=sync */
    CTR_CLASS_SCHED,    /* -pprof=sched */
    CTR_CLASS_NET,      /* -pprof=net */
    CTR_CLASS_SYSCALL,  /* -pprof=syscall */
    CTR_CLASS_SLEEP     /* in no profile, as in Go */
};

/* clang-format off */
/* An I/O call has two reasons, one per class: the tracer picks NET_* when
 * the descriptor is a socket, so one call can land in either profile.
 *  id  name                call                          class              release */
#define CTR_REASONS(X)                                                         \
    X(1,  MUTEX_LOCK,         "pthread_mutex_lock",         CTR_CLASS_SYNC,    "pthread_mutex_unlock") \
    X(2,  MUTEX_TIMEDLOCK,    "pthread_mutex_timedlock",    CTR_CLASS_SYNC,    "pthread_mutex_unlock") \
    X(3,  MUTEX_CLOCKLOCK,    "pthread_mutex_clocklock",    CTR_CLASS_SYNC,    "pthread_mutex_unlock") \
    X(4,  COND_WAIT,          "pthread_cond_wait",          CTR_CLASS_SYNC,    "pthread_cond_signal") \
    X(5,  COND_TIMEDWAIT,     "pthread_cond_timedwait",     CTR_CLASS_SYNC,    "pthread_cond_signal") \
    X(6,  COND_CLOCKWAIT,     "pthread_cond_clockwait",     CTR_CLASS_SYNC,    "pthread_cond_signal") \
    X(7,  RWLOCK_RDLOCK,      "pthread_rwlock_rdlock",      CTR_CLASS_SYNC,    "pthread_rwlock_unlock") \
    X(8,  RWLOCK_WRLOCK,      "pthread_rwlock_wrlock",      CTR_CLASS_SYNC,    "pthread_rwlock_unlock") \
    X(9,  RWLOCK_TIMEDRDLOCK, "pthread_rwlock_timedrdlock", CTR_CLASS_SYNC,    "pthread_rwlock_unlock") \
    X(10, RWLOCK_TIMEDWRLOCK, "pthread_rwlock_timedwrlock", CTR_CLASS_SYNC,    "pthread_rwlock_unlock") \
    X(11, RWLOCK_CLOCKRDLOCK, "pthread_rwlock_clockrdlock", CTR_CLASS_SYNC,    "pthread_rwlock_unlock") \
    X(12, RWLOCK_CLOCKWRLOCK, "pthread_rwlock_clockwrlock", CTR_CLASS_SYNC,    "pthread_rwlock_unlock") \
    X(13, SEM_WAIT,           "sem_wait",                   CTR_CLASS_SYNC,    "sem_post") \
    X(14, SEM_TIMEDWAIT,      "sem_timedwait",              CTR_CLASS_SYNC,    "sem_post") \
    X(15, SEM_CLOCKWAIT,      "sem_clockwait",              CTR_CLASS_SYNC,    "sem_post") \
    X(16, BARRIER_WAIT,       "pthread_barrier_wait",       CTR_CLASS_SYNC,    "pthread_barrier_wait") \
    X(17, JOIN,               "pthread_join",               CTR_CLASS_SYNC,    "thread exit") \
    X(18, TIMEDJOIN,          "pthread_timedjoin_np",       CTR_CLASS_SYNC,    "thread exit") \
    X(19, CLOCKJOIN,          "pthread_clockjoin_np",       CTR_CLASS_SYNC,    "thread exit") \
    X(20, SPIN_LOCK,          "pthread_spin_lock",          CTR_CLASS_SYNC,    NULL) \
    X(21, NANOSLEEP,          "nanosleep",                  CTR_CLASS_SLEEP,   NULL) \
    X(22, CLOCK_NANOSLEEP,    "clock_nanosleep",            CTR_CLASS_SLEEP,   NULL) \
    X(23, USLEEP,             "usleep",                     CTR_CLASS_SLEEP,   NULL) \
    X(24, SLEEP,              "sleep",                      CTR_CLASS_SLEEP,   NULL) \
    X(25, READ,               "read",                       CTR_CLASS_SYSCALL, NULL) \
    X(26, NET_READ,           "read",                       CTR_CLASS_NET,     NULL) \
    X(27, WRITE,              "write",                      CTR_CLASS_SYSCALL, NULL) \
    X(28, NET_WRITE,          "write",                      CTR_CLASS_NET,     NULL) \
    X(29, READV,              "readv",                      CTR_CLASS_SYSCALL, NULL) \
    X(30, NET_READV,          "readv",                      CTR_CLASS_NET,     NULL) \
    X(31, WRITEV,             "writev",                     CTR_CLASS_SYSCALL, NULL) \
    X(32, NET_WRITEV,         "writev",                     CTR_CLASS_NET,     NULL) \
    X(33, PREAD,              "pread",                      CTR_CLASS_SYSCALL, NULL) \
    X(34, PWRITE,             "pwrite",                     CTR_CLASS_SYSCALL, NULL) \
    X(35, RECV,               "recv",                       CTR_CLASS_NET,     NULL) \
    X(36, RECVFROM,           "recvfrom",                   CTR_CLASS_NET,     NULL) \
    X(37, RECVMSG,            "recvmsg",                    CTR_CLASS_NET,     NULL) \
    X(38, SEND,               "send",                       CTR_CLASS_NET,     NULL) \
    X(39, SENDTO,             "sendto",                     CTR_CLASS_NET,     NULL) \
    X(40, SENDMSG,            "sendmsg",                    CTR_CLASS_NET,     NULL) \
    X(41, ACCEPT,             "accept",                     CTR_CLASS_NET,     NULL) \
    X(42, ACCEPT4,            "accept4",                    CTR_CLASS_NET,     NULL) \
    X(43, CONNECT,            "connect",                    CTR_CLASS_NET,     NULL) \
    X(44, POLL,               "poll",                       CTR_CLASS_NET,     NULL) \
    X(45, PPOLL,              "ppoll",                      CTR_CLASS_NET,     NULL) \
    X(46, SELECT,             "select",                     CTR_CLASS_NET,     NULL) \
    X(47, PSELECT,            "pselect",                    CTR_CLASS_NET,     NULL) \
    X(48, EPOLL_WAIT,         "epoll_wait",                 CTR_CLASS_NET,     NULL) \
    X(49, EPOLL_PWAIT,        "epoll_pwait",                CTR_CLASS_NET,     NULL) \
    X(50, FSYNC,              "fsync",                      CTR_CLASS_SYSCALL, NULL) \
    X(51, FDATASYNC,          "fdatasync",                  CTR_CLASS_SYSCALL, NULL) \
    X(52, OPEN,               "open",                       CTR_CLASS_SYSCALL, NULL) \
    X(53, OPENAT,             "openat",                     CTR_CLASS_SYSCALL, NULL) \
    X(54, WAIT,               "wait",                       CTR_CLASS_SYSCALL, NULL) \
    X(55, WAITPID,            "waitpid",                    CTR_CLASS_SYSCALL, NULL) \
    X(56, WAIT3,              "wait3",                      CTR_CLASS_SYSCALL, NULL) \
    X(57, WAIT4,              "wait4",                      CTR_CLASS_SYSCALL, NULL) \
    X(58, WAITID,             "waitid",                     CTR_CLASS_SYSCALL, NULL) \
    X(59, SIGWAIT,            "sigwait",                    CTR_CLASS_SYSCALL, NULL) \
    X(60, SIGWAITINFO,        "sigwaitinfo",                CTR_CLASS_SYSCALL, NULL) \
    X(61, SIGTIMEDWAIT,       "sigtimedwait",               CTR_CLASS_SYSCALL, NULL) \
    X(62, PAUSE,              "pause",                      CTR_CLASS_SYSCALL, NULL) \
    X(63, SIGSUSPEND,         "sigsuspend",                 CTR_CLASS_SYSCALL, NULL) \
    X(64, MTX_LOCK,           "mtx_lock",                   CTR_CLASS_SYNC,    "mtx_unlock") \
    X(65, MTX_TIMEDLOCK,      "mtx_timedlock",              CTR_CLASS_SYNC,    "mtx_unlock") \
    X(66, CND_WAIT,           "cnd_wait",                   CTR_CLASS_SYNC,    "cnd_signal") \
    X(67, CND_TIMEDWAIT,      "cnd_timedwait",              CTR_CLASS_SYNC,    "cnd_signal") \
    X(68, THRD_JOIN,          "thrd_join",                  CTR_CLASS_SYNC,    "thread exit") \
    X(69, THRD_SLEEP,         "thrd_sleep",                 CTR_CLASS_SLEEP,   NULL) \
    X(70, CALL_ONCE,          "call_once",                  CTR_CLASS_SYNC,    "call_once") \
    X(71, PTHREAD_ONCE,       "pthread_once",               CTR_CLASS_SYNC,    "pthread_once") \
    X(72, FUTEX_WAIT,         "futex_wait",                 CTR_CLASS_SYNC,    "futex_wake") \
    X(73, FUTEX_LOCK_PI,      "futex_lock_pi",              CTR_CLASS_SYNC,    "futex_unlock_pi") \
    X(74, FUTEX_WAITV,        "futex_waitv",                CTR_CLASS_SYNC,    "futex_wake") \
    X(75, PREADV,             "preadv",                     CTR_CLASS_SYSCALL, NULL) \
    X(76, PWRITEV,            "pwritev",                    CTR_CLASS_SYSCALL, NULL) \
    X(77, PREADV2,            "preadv2",                    CTR_CLASS_SYSCALL, NULL) \
    X(78, PWRITEV2,           "pwritev2",                   CTR_CLASS_SYSCALL, NULL) \
    X(79, RECVMMSG,           "recvmmsg",                   CTR_CLASS_NET,     NULL) \
    X(80, SENDMMSG,           "sendmmsg",                   CTR_CLASS_NET,     NULL) \
    X(81, SENDFILE,           "sendfile",                   CTR_CLASS_SYSCALL, NULL) \
    X(82, NET_SENDFILE,       "sendfile",                   CTR_CLASS_NET,     NULL) \
    X(83, SPLICE,             "splice",                     CTR_CLASS_SYSCALL, NULL) \
    X(84, TEE,                "tee",                        CTR_CLASS_SYSCALL, NULL) \
    X(85, VMSPLICE,           "vmsplice",                   CTR_CLASS_SYSCALL, NULL) \
    X(86, COPY_FILE_RANGE,    "copy_file_range",            CTR_CLASS_SYSCALL, NULL) \
    X(87, FLOCK,              "flock",                      CTR_CLASS_SYSCALL, NULL) \
    X(88, LOCKF,              "lockf",                      CTR_CLASS_SYSCALL, NULL) \
    X(89, FCNTL,              "fcntl",                      CTR_CLASS_SYSCALL, NULL) \
    X(90, EPOLL_PWAIT2,       "epoll_pwait2",               CTR_CLASS_NET,     NULL) \
    X(91, MSGRCV,             "msgrcv",                     CTR_CLASS_SYSCALL, NULL) \
    X(92, MSGSND,             "msgsnd",                     CTR_CLASS_SYSCALL, NULL) \
    X(93, SEMOP,              "semop",                      CTR_CLASS_SYSCALL, NULL) \
    X(94, SEMTIMEDOP,         "semtimedop",                 CTR_CLASS_SYSCALL, NULL) \
    X(95, MQ_RECEIVE,         "mq_receive",                 CTR_CLASS_SYSCALL, NULL) \
    X(96, MQ_SEND,            "mq_send",                    CTR_CLASS_SYSCALL, NULL) \
    X(97, MQ_TIMEDRECEIVE,    "mq_timedreceive",            CTR_CLASS_SYSCALL, NULL) \
    X(98, MQ_TIMEDSEND,       "mq_timedsend",               CTR_CLASS_SYSCALL, NULL) \
    X(99, SYSTEM,             "system",                     CTR_CLASS_SYSCALL, NULL) \
    X(100, POPEN,              "popen",                      CTR_CLASS_SYSCALL, NULL) \
    X(101, PCLOSE,             "pclose",                     CTR_CLASS_SYSCALL, NULL) \
    X(102, GETADDRINFO,        "getaddrinfo",                CTR_CLASS_NET,     NULL) \
    X(103, GETNAMEINFO,        "getnameinfo",                CTR_CLASS_NET,     NULL) \
    X(104, GETHOSTBYNAME,      "gethostbyname",              CTR_CLASS_NET,     NULL) \
    X(105, GETHOSTBYNAME2,     "gethostbyname2",             CTR_CLASS_NET,     NULL) \
    X(106, GETHOSTBYNAME_R,    "gethostbyname_r",            CTR_CLASS_NET,     NULL) \
    X(107, GETHOSTBYNAME2_R,   "gethostbyname2_r",           CTR_CLASS_NET,     NULL) \
    X(108, GETHOSTBYADDR,      "gethostbyaddr",              CTR_CLASS_NET,     NULL) \
    X(109, FREAD,              "fread",                      CTR_CLASS_SYSCALL, NULL) \
    X(110, NET_FREAD,          "fread",                      CTR_CLASS_NET,     NULL) \
    X(111, FWRITE,             "fwrite",                     CTR_CLASS_SYSCALL, NULL) \
    X(112, NET_FWRITE,         "fwrite",                     CTR_CLASS_NET,     NULL) \
    X(113, FGETS,              "fgets",                      CTR_CLASS_SYSCALL, NULL) \
    X(114, NET_FGETS,          "fgets",                      CTR_CLASS_NET,     NULL) \
    X(115, FPUTS,              "fputs",                      CTR_CLASS_SYSCALL, NULL) \
    X(116, NET_FPUTS,          "fputs",                      CTR_CLASS_NET,     NULL) \
    X(117, GETLINE,            "getline",                    CTR_CLASS_SYSCALL, NULL) \
    X(118, NET_GETLINE,        "getline",                    CTR_CLASS_NET,     NULL) \
    X(119, GETDELIM,           "getdelim",                   CTR_CLASS_SYSCALL, NULL) \
    X(120, NET_GETDELIM,       "getdelim",                   CTR_CLASS_NET,     NULL) \
    X(121, FGETC,              "fgetc",                      CTR_CLASS_SYSCALL, NULL) \
    X(122, NET_FGETC,          "fgetc",                      CTR_CLASS_NET,     NULL) \
    X(123, GETC,               "getc",                       CTR_CLASS_SYSCALL, NULL) \
    X(124, NET_GETC,           "getc",                       CTR_CLASS_NET,     NULL) \
    X(125, FPUTC,              "fputc",                      CTR_CLASS_SYSCALL, NULL) \
    X(126, NET_FPUTC,          "fputc",                      CTR_CLASS_NET,     NULL) \
    X(127, PUTC,               "putc",                       CTR_CLASS_SYSCALL, NULL) \
    X(128, NET_PUTC,           "putc",                       CTR_CLASS_NET,     NULL) \
    X(129, FFLUSH,             "fflush",                     CTR_CLASS_SYSCALL, NULL) \
    X(130, NET_FFLUSH,         "fflush",                     CTR_CLASS_NET,     NULL) \
    X(131, PUTS,               "puts",                       CTR_CLASS_SYSCALL, NULL) \
    X(132, NET_PUTS,           "puts",                       CTR_CLASS_NET,     NULL) \
    X(133, IO_URING_ENTER,     "io_uring_enter",             CTR_CLASS_SYSCALL, NULL) \
    X(134, UNTRACED,           "untraced wait",              CTR_CLASS_SYSCALL, NULL)

enum ctr_reason {
#define CTR_X_REASON(id, name, call, cls, release) CTR_REASON_##name = id,
    CTR_REASONS(CTR_X_REASON)
#undef CTR_X_REASON
    CTR_REASON_LIMIT
};

/* The waits for children and for signals are two runs of ids, whose
 * objects are not descriptors (FORMAT.md §5). */
_Static_assert(CTR_REASON_WAITID - CTR_REASON_WAIT == 4 &&
                   CTR_REASON_SIGSUSPEND - CTR_REASON_SIGWAIT == 4,
               "the wait and signal reasons are contiguous");

struct ctr_reason_spec {
    const char *call;    /* NULL for an unused id */
    uint8_t wait_class;  /* enum ctr_wait_class */
    const char *release; /* NULL: no RELEASE ends such a wait */
};

#define CTR_X_RSPEC(id, name, call, cls, release) [id] = {call, cls, release},
static const struct ctr_reason_spec ctr_reason_specs[CTR_REASON_LIMIT] = {
    CTR_REASONS(CTR_X_RSPEC)
};
#undef CTR_X_RSPEC
/* clang-format on */

/* ---------------------------------------------------------------------------
 * Unsigned LEB128 varints (FORMAT.md §1)
 * ------------------------------------------------------------------------- */

#define CTR_VARINT_MAX 10 /* bytes for a uint64_t */

/* Encodes v at p, which must have CTR_VARINT_MAX bytes; returns the end. */
static inline uint8_t *ctr_put_uvarint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Decodes one varint from [p, end). Returns the number of bytes used, or 0 if
 * the input ends inside the varint or the value does not fit in 64 bits. */
static inline size_t ctr_get_uvarint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    /* One bound for the loop, not one per byte: this is the readers' and
     * the collector's inner loop. */
    size_t avail = p < end ? (size_t)(end - p) : 0;
    size_t limit = avail < CTR_VARINT_MAX ? avail : CTR_VARINT_MAX;
    for (size_t i = 0; i < limit; i++) {
        uint8_t b = p[i];
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            if (i == CTR_VARINT_MAX - 1 && b > 1)
                return 0; /* bits beyond 64 */
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

/* Largest encoded event: type byte plus CTR_MAX_ARGS varints. */
#define CTR_MAX_EVENT_BYTES (1 + CTR_MAX_ARGS * CTR_VARINT_MAX)

/* ---------------------------------------------------------------------------
 * Decoding records and events, encoding events (FORMAT.md §3, §4)
 *
 * Everyone who reads the format decodes with these (the analyzer's reader,
 * the flight recorder, the fuzz harnesses), so the tables above are read in
 * one place. The decoders take hostile bytes: every count is checked against
 * what remains before it is used, a varint never runs past the end, nothing
 * is allocated, and damage is reported, never read through.
 * ------------------------------------------------------------------------- */

/* ctr_arg_in_range() : whether v is a value of kind (enum ctr_arg_kind) that
 * an event may carry (§4): a wait reason must be in CTR_REASONS, a LENGTH at
 * most CTR_MAX_EVENT_PAYLOAD; the other kinds take any value. */
static inline int ctr_arg_in_range(uint8_t kind, uint64_t v)
{
    switch (kind) {
    case CTR_ARG_REASON:
        return v < CTR_REASON_LIMIT && ctr_reason_specs[v].call != NULL;
    case CTR_ARG_LENGTH:
        return v <= CTR_MAX_EVENT_PAYLOAD;
    default:
        return 1;
    }
}

/* One record of the stream, as ctr_decode_record() finds it. */
struct ctr_record {
    uint8_t kind;              /* enum ctr_record_kind, or one this header does
                                  not know (a reader skips it, §3) */
    const uint8_t *body, *end; /* the body, [body, end) */
};

/* ctr_decode_record() : finds the record at [p, end): its kind and the bounds
 * of its body (FORMAT.md §3). The body is not looked into.
 * @return the bytes the record takes (> 0), or 0 when the input is damaged:
 *         empty, a length cut or over 64 bits, a body running past end. */
static inline size_t ctr_decode_record(const uint8_t *p, const uint8_t *end, struct ctr_record *rec)
{
    uint64_t len;
    size_t n = p < end ? ctr_get_uvarint(p + 1, end, &len) : 0;
    if (n == 0 || len > (uint64_t)(end - (p + 1 + n)))
        return 0;
    rec->kind = p[0];
    rec->body = p + 1 + n;
    rec->end = rec->body + len;
    return 1 + n + (size_t)len;
}

/* A record's body, decoded by its spec in ctr_record_specs. */
struct ctr_record_fields {
    uint64_t v[CTR_MAX_FIELDS + 1]; /* the fields in the table's order; after
                                       them, a LENGTH or UVARINTS tail's count;
                                       0 past those */
    const uint8_t *tail, *tail_end; /* LENGTH: its bytes. UVARINTS: the bytes
                                       that hold its uvarints, not yet decoded
                                       (there are at least as many bytes as the
                                       count says). BYTES, EVENTS: the rest of
                                       the body. NONE: what a later minor
                                       version added, to be ignored (§3). */
};

/* ctr_decode_record_fields() : decodes the fields of rec, a record of a kind
 * in ctr_record_specs, and finds its tail. Values are not range-checked: a
 * record's length already says where the next one starts, so what a value
 * means is the reader's to judge.
 * @return 0; or -1 - i when the body is damaged at field i: cut, or over 64
 *         bits, or (i == nfields) a tail whose count claims more than the
 *         body holds; -1 for a kind without a spec. */
static inline int ctr_decode_record_fields(const struct ctr_record *rec,
                                           struct ctr_record_fields *f)
{
    if (rec->kind >= CTR_REC_LIMIT || !ctr_record_specs[rec->kind].name)
        return -1;
    const struct ctr_record_spec *s = &ctr_record_specs[rec->kind];
    const uint8_t *p = rec->body;
    for (int i = 0; i < CTR_MAX_FIELDS + 1; i++)
        f->v[i] = 0;
    for (int i = 0; i < s->nfields; i++) {
        size_t used = ctr_get_uvarint(p, rec->end, &f->v[i]);
        if (used == 0)
            return -1 - i;
        p += used;
    }
    f->tail = p;
    f->tail_end = rec->end;
    if (s->tail == CTR_ARG_LENGTH || s->tail == CTR_ARG_UVARINTS) {
        uint64_t *count = &f->v[s->nfields];
        size_t used = ctr_get_uvarint(p, rec->end, count);
        /* A uvarint takes at least one byte, so a UVARINTS count is bounded
         * by the bytes left too: what a reader allocates for it is justified
         * by the body, never by the count alone. */
        if (used == 0 || *count > (uint64_t)(rec->end - (p + used)))
            return -1 - s->nfields;
        f->tail = p + used;
        if (s->tail == CTR_ARG_LENGTH)
            f->tail_end = f->tail + *count;
    }
    return 0;
}

/* One event, as ctr_decode_event() decodes it. */
struct ctr_event {
    uint8_t type;                /* enum ctr_event_type */
    uint8_t nargs;               /* ctr_event_specs[type].nargs */
    uint64_t args[CTR_MAX_ARGS]; /* args[0] is the time delta */
    const uint8_t *payload;      /* raw bytes of a LENGTH argument, else NULL */
    size_t payload_len;
};

/* ctr_decode_event() : decodes the event at [p, end) (FORMAT.md §4). On
 * success, args past nargs are 0; on damage *ev is unspecified.
 * @return the bytes it takes (> 0), or 0 when the input is damaged: empty,
 *         an unknown type, a varint running past end or over 64 bits, a
 *         LENGTH running past end, an argument out of range for its kind
 *         (ctr_arg_in_range: an unknown wait reason, a LENGTH over
 *         CTR_MAX_EVENT_PAYLOAD). */
static inline size_t ctr_decode_event(const uint8_t *p, const uint8_t *end, struct ctr_event *ev)
{
    if (p >= end || p[0] >= CTR_EV_LIMIT || !ctr_event_specs[p[0]].name)
        return 0;
    const struct ctr_event_spec *s = &ctr_event_specs[p[0]];
    const uint8_t *q = p + 1;
    unsigned n = s->nargs;
    ev->type = p[0];
    ev->nargs = (uint8_t)n;
    ev->payload = NULL;
    ev->payload_len = 0;
    for (unsigned i = 0; i < CTR_MAX_ARGS; i++) /* a constant count: stores, no call */
        ev->args[i] = 0;
    for (unsigned i = 0; i < n; i++) {
        /* Most arguments (deltas, reasons, ids) take one byte: no loop for
         * them. This loop is the analyzer's and the collector's inner one. */
        if (q < end && *q < 0x80) {
            ev->args[i] = *q++;
        } else {
            size_t used = ctr_get_uvarint(q, end, &ev->args[i]);
            if (used == 0)
                return 0;
            q += used;
        }
        if (!ctr_arg_in_range(s->args[i], ev->args[i]))
            return 0;
    }
    /* §4: a LENGTH is the last argument, and its bytes follow the event. */
    if (s->args[n - 1] == CTR_ARG_LENGTH) {
        uint64_t len = ev->args[n - 1];
        if (len > (uint64_t)(end - q))
            return 0;
        ev->payload = q;
        ev->payload_len = (size_t)len;
        q += len;
    }
    return (size_t)(q - p);
}

/* ctr_encode_event() : writes event `type` (a type in ctr_event_specs) with
 * time delta dt and the arguments after it, args[0 .. nargs-2], at p, which
 * must have CTR_MAX_EVENT_BYTES; the bytes of a LENGTH argument are the
 * caller's to append. The tracer's hot path (tracer/core/emit.h) writes with this:
 * with `type` a constant the loop unrolls, so keep it this plain.
 * @return the end of what it wrote. */
static inline uint8_t *ctr_encode_event(uint8_t *p, uint8_t type, uint64_t dt, const uint64_t *args)
{
    *p++ = type;
    p = ctr_put_uvarint(p, dt);
    for (unsigned i = 1; i < ctr_event_specs[type].nargs; i++)
        p = ctr_put_uvarint(p, args[i - 1]);
    return p;
}

#endif /* CTRACE_FORMAT_H */
