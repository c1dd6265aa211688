/* SPDX-License-Identifier: MIT */
/* sink.h - the seam between the collector and its outputs.
 *
 * The collector (collector.c) turns the threads' buffers into one
 * generation per round (several in a burst; FORMAT.md §3.1) and hands each
 * generation to every sink attached to it, through the callbacks below, all
 * on the collector thread: gen_begin, then each batch of events as it is
 * taken (for a sink that wants the events themselves), the generation's
 * compressed frame (for a sink that keeps or writes the encoded trace), and
 * gen_end. The generation stands alone (FORMAT.md §3.1): a sink may start at
 * any one, and needs nothing from the collector beyond what it is handed.
 * What ends a trace (the calls still in progress, END) is not part of any
 * generation: a sink that writes a complete trace adds it itself
 * (ctr__sink_trailer).
 *
 * The trace file (filesink.c), the flight recorder (flightrec/) and LTTng
 * (lttng.c) are sinks. A new output implements the callbacks it needs and is attached
 * with ctr__sink_attach; nothing in tracer/ knows which sinks exist.
 *
 * Lifetime. ctr__sink_attach (under the API lock) starts the session if
 * none runs and asks the collector to feed the sink from its next round on;
 * it does not wait (a trace_start in a constructor that dlopen runs must not
 * wait for a collector that may need the loader's lock). ctr__sink_detach
 * waits until the collector has fed the sink its last generation and
 * called `detached`; the last sink's detach ends the session, whose final
 * round is that last generation. Each sink is attached at most once at a
 * time; its struct must stay valid while attached.
 */
#ifndef CTR_SINK_H
#define CTR_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "collect/records.h"
#include "core/fdguard.h"
#include "ctrace/trace.h"

struct ctr_outbuf;
struct ctr_owned_fd;

/* The most sinks attached at once. */
#define CTR_SINKS_MAX 8

/* One batch of one thread's events, as the collector takes it. */
struct ctr_sink_batch {
    uint8_t kind; /* CTR_REC_BATCH (ticks) or CTR_REC_SWITCHES (ns) */
    uint64_t thread_id;
    uint64_t base;         /* the time the first event's delta counts from */
    const uint8_t *events; /* complete events (FORMAT.md §4), valid during the call */
    size_t len;
};

/* A generation as it ends. */
struct ctr_gen_summary {
    uint64_t number;
    struct ctr_clock_sample start, end; /* the clock as it began and ended */
    /* When each wait that is still going on began (ticks, ascending): the
     * threads blocked now, but for sleeps (no slow request sleeps). */
    const uint64_t *open_waits;
    size_t nopen_waits;
};

struct ctr_sink;

/* The callbacks; any may be NULL. All run on the collector thread, except
 * `forked`, which runs in a forked child (alone, the sink detached). */
struct ctr_sink_ops {
    /* Generation `gen` begins; `start` is the clock as it began. */
    void (*gen_begin)(struct ctr_sink *s, uint64_t gen, const struct ctr_clock_sample *start);
    void (*batch)(struct ctr_sink *s, const struct ctr_sink_batch *b);
    /* The generation's records (FORMAT.md §3), valid during the call: for
     * a sink that sends them on in another form (LTTng) or compresses them
     * its own way (the file, whose frames span generations). */
    void (*records)(struct ctr_sink *s, const uint8_t *raw, size_t n);
    /* The generation as one zstd frame (FORMAT.md §2), valid during the
     * call; compressed only when an attached sink has this callback. */
    void (*frame)(struct ctr_sink *s, const void *z, size_t n);
    /* The generation is over (its last frame was handed over). */
    void (*gen_end)(struct ctr_sink *s, const struct ctr_gen_summary *g);
    /* The sink has had its last generation: the collector never calls it
     * again. */
    void (*detached)(struct ctr_sink *s);
    void (*forked)(struct ctr_sink *s);
    /* For `ctrace ctl PID status` (control.c, on the collector thread):
     * writes the sink's "key=value\n" lines (CONTROL.md) into buf, at most
     * cap bytes. @return the bytes written (0: none, or they do not fit). */
    size_t (*status)(struct ctr_sink *s, char *buf, size_t cap);
    /* For `ctrace ctl PID dump` (control.c, on the collector thread, between
     * rounds): writes what the sink keeps of the trace (a window) into
     * `out`, as a trace file. @return 0 or -errno (-EBUSY: a dump of the
     * program's own is being written). */
    int (*dump)(struct ctr_sink *s, struct ctr_owned_fd *out);
};

struct ctr_sink {
    /* Public: set by the sink's owner before attaching. */
    const struct ctr_sink_ops *ops;
    /* What the sink is, in a word, for `ctrace ctl PID status`'s `state`
     * (CONTROL.md): "trace", "recorder", "lttng", "ctl-trace". */
    const char *name;
    /* Raw bytes after which the collector cuts a frame mid-generation for
     * this sink's sake (a window that must hold several); 0: the default. */
    size_t frame_bytes;
    /* Non-zero: the sink takes each event as its thread writes it
     * (ctr__inline_mode, core/emit.h), not from the chunks; while only such
     * sinks are attached, threads write no chunks at all. */
    int inline_events;
    /* Private to sink.c: SINK_OFF, _WANTED, _LEAVING (sink.c). Written by
     * the API under its lock; the collector reads it (ctr__sink_leaving). */
    _Atomic int state_;
};

/* Attaches s, beginning a session with options o if none runs. Under the API
 * lock. @return 0, -EBUSY if s is attached, -ENOSPC when CTR_SINKS_MAX are,
 * or -errno from starting the session. */
int ctr__sink_attach(struct ctr_sink *s, const struct trace_options *o);
/* Detaches s; returns once its `detached` has run. Under the API lock.
 * @return 0, or -ENOENT if s is not attached. */
int ctr__sink_detach(struct ctr_sink *s);
/* Detaches the sinks of s[0..n-1] that are attached, all in the same round
 * (each gets the same last generation). Under the API lock. @return 0, or
 * -ENOENT if none was attached. */
int ctr__sinks_detach(struct ctr_sink *const *s, int n);
/* Whether s is attached (a relaxed load: a hint outside the API lock). */
int ctr__sink_is_attached(const struct ctr_sink *s);

/* The collector's view of the sinks: what the API wants attached now,
 * copied into sinks[] (acquire). @return how many. Collector thread. */
unsigned ctr__sinks_wanted(struct ctr_sink *sinks[CTR_SINKS_MAX]);
/* Whether s is to be fed its last generation this round (its detach was
 * asked for). Collector thread. */
int ctr__sink_leaving(const struct ctr_sink *s);
/* Takes s out of wanted[] once its `detached` has run: its detach returns.
 * Collector thread. */
void ctr__sink_remove(struct ctr_sink *s);
/* In a forked child: tells every attached sink (forked) and detaches all. */
void ctr__sinks_forked(void);

/* ---------------------------------------------------------------------------
 * Frames: compressing and writing (sink.c)
 * ------------------------------------------------------------------------- */

/* A zstd compression stream: one thread's at a time. */
struct ctr_zstream {
    void *cctx;   /* ZSTD_CCtx */
    uint8_t *buf; /* the last output */
    size_t cap;
    size_t frame_in; /* bytes put into the frame still open (0: none is) */
};

/* Prepares z (zero-initialised or used before) for frames at `level`.
 * @return 0 or -ENOMEM. */
int ctr__zstream_open(struct ctr_zstream *z, int level);
void ctr__zstream_close(struct ctr_zstream *z);
/* Compresses n bytes at p into z's frame (opening one if none is open),
 * then either ends the frame (end_frame) or flushes it: the output so far
 * is then whole zstd blocks, which decode to every byte put so far, while
 * the frame stays open and later data can match what came before. The
 * output is in *out / *outn, which z owns until its next call. @return 0
 * or -errno (the open frame is then abandoned: the next call opens one). */
int ctr__zstream_put(struct ctr_zstream *z, const void *p, size_t n, int end_frame,
                     const void **out, size_t *outn);
/* One whole zstd frame of a's bytes (ctr__zstream_put, ended). */
int ctr__zstream_frame(struct ctr_zstream *z, const struct ctr_outbuf *a, const void **out,
                       size_t *outn);

/* The trailer that ends a complete trace (ctr__rec_trailer: the calls in
 * progress now, a CLOCK, END) as one zstd frame at the session's level,
 * handed to write(ctx, frame, n). Any thread; for a sink that writes a
 * complete trace, as it is detached. @return write's result, or -errno. */
int ctr__sink_trailer(int (*write)(void *ctx, const void *frame, size_t n), void *ctx);

/* Writes all of buf to fd (EINTR and short writes handled). @return 0 or
 * -errno. */
int ctr__write_all(int fd, const void *buf, size_t len);

/* ---------------------------------------------------------------------------
 * Files the tracer writes by its own descriptor (sink.c)
 * ------------------------------------------------------------------------- */

/* A file the tracer writes into by its own descriptor (the trace file it
 * opened, a dump's file, one a `ctrace ctl` client passed): adopted, and
 * checked before each write to be the file it was, so that a number the
 * program took over (a raw close, then an open) never gets trace bytes.
 * A regular file is found again by its path when the program closed the
 * number behind the tracer's back (a raw close_range: the glibc wrappers
 * pass over the tracer's numbers), and the writing goes on where it
 * stopped: the trace loses nothing. */
#define CTR_OWNED_PATH_MAX 512
struct ctr_owned_fd {
    _Atomic int fd; /* the holder (fdguard.c): a move updates it */
    struct ctr_fd_id id;
    /* The file's absolute path when adopted ("": none, or longer than
     * this, or not a regular file), and the offset the next byte goes to;
     * both the writer's alone. */
    char path[CTR_OWNED_PATH_MAX];
    int64_t next_off;
    /* The process that writes it (core/scribe.h), so that a file that
     * stalls never holds the writer; NULL when none could be made (then
     * the writer writes itself) or once it stalled (stalled: every write
     * fails at once with -ETIMEDOUT). */
    struct ctr_scribe *scribe;
    int stalled;
};
/* Adopts fd (ctr__fd_adopt) into o, notes what it refers to, and starts
 * its scribe. Keeps errno. @return 0, or -errno (fd closed; for fd < 0,
 * errno's; -EAGAIN: too many files already stalled). */
int ctr__owned_adopt(struct ctr_owned_fd *o, int fd);
/* Writes buf whole into o's file: by its scribe, which holds a number of
 * its own, or else by o's number (under a use, as fdguard.c asks), opening
 * the file again by its path if that number was closed behind the
 * tracer's back. Keeps errno. @return 0; -ETIMEDOUT when the file stalled
 * (CTR_SCRIBE_STALL_TEXT); -EBADF when its number no longer refers to it
 * and the file cannot be found again; -errno. */
int ctr__owned_write(struct ctr_owned_fd *o, const void *buf, size_t len);
/* Ends o's scribe and closes o's descriptor. @return 0 or -errno. */
int ctr__owned_close(struct ctr_owned_fd *o);

#endif
