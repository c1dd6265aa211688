/* SPDX-License-Identifier: MIT */
/* filesink.c - the trace file: the sink behind trace_start / trace_stop
 * (ctrace/trace.h).
 *
 * trace_start opens the file (or takes the caller's descriptor), writes the
 * header, and attaches the sink (sink.h), which starts the session unless
 * the flight recorder runs one already. The collector then hands it every
 * generation's records, which it compresses into frames of its own: a
 * frame stays open across generations, up to FILE_FRAME_BYTES of records,
 * and is flushed at the end of each (FORMAT.md §2). So every generation is
 * on disk as soon as it is made, readable up to there if the program dies,
 * while the tables that each generation repeats to stand alone (§3.1) cost
 * little: zstd finds them in the generations before, in the same frame.
 * (The flight recorder keeps one frame per generation instead: it drops
 * its oldest generations one by one.) When trace_stop detaches the sink,
 * the open frame ends and the trailer (the calls still in progress, END:
 * ctr__rec_trailer) follows in a frame of its own. The file remembers its
 * first write error, after which nothing more is written to it.
 */
#include "abi.h"
#include "ctrace/trace.h"
#include "interpose.h"
#include "internal.h"
#include "sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

static struct file_sink {
    struct ctr_sink sink;
    /* A tracer descriptor (fdguard.c; it may move, used under
     * ctr__fd_use_begin) when trace_start opened it (close_fd), else the
     * caller's. */
    _Atomic int fd;
    int close_fd;
    struct ctr_fd_id id; /* what fd referred to when trace_start opened it */
    /* The first negative errno of a write: the collector stores it, the
     * API reads it (relaxed: trace_stop reads it after the detach, which
     * synchronizes with the collector). */
    _Atomic int error;
    _Atomic uint64_t bytes;
    /* The collector's: the file's compression stream, opened at the first
     * generation (the session's level is known by then), and whether it
     * has been for this trace (trace_start clears it). */
    struct ctr_zstream z;
    int z_open;
    unsigned frame_gens; /* generations in the open frame */
} F;

/* One frame of the file holds at most FILE_FRAME_BYTES of records (a
 * reader holds a frame whole in memory, and frames are what it decodes in
 * parallel) and FILE_FRAME_GENS generations (damage to a frame costs the
 * rest of it: a reader goes on at the next frame). */
#define FILE_FRAME_BYTES (4u << 20)
#define FILE_FRAME_GENS 16

/* Writes buf whole to the file, unless a write failed before. */
static int file_write(const void *buf, size_t len)
{
    /* relaxed (error here and below): see the field. */
    if (atomic_load_explicit(&F.error, memory_order_relaxed))
        return -EIO; /* after a failure the file ends at a frame boundary */
    /* The file's number may move (the program dup2'd onto it): not while
     * this write uses it. */
    ctr__fd_use_begin(1);
    /* relaxed: the use keeps a move off; the mover's update of fd happens
     * before it (fdguard.c). */
    int fd = atomic_load_explicit(&F.fd, memory_order_relaxed);
    /* The file the trace started in, not whatever holds its number now. */
    int err = F.close_fd && !ctr__fd_is(fd, &F.id) ? -EBADF : ctr__write_all(fd, buf, len);
    ctr__fd_use_end();
    if (err) {
        atomic_store_explicit(&F.error, err, memory_order_relaxed);
        return err;
    }
    /* relaxed: a counter read only for statistics (trace_get_counters). */
    atomic_fetch_add_explicit(&F.bytes, (uint64_t)len, memory_order_relaxed);
    return 0;
}

/* Puts n bytes of records into the open frame, and what that gives out
 * into the file: the frame flushed, or ended when it is full or `end`. */
static void file_put(const void *raw, size_t n, int end)
{
    const void *z;
    size_t zn;
    if (n == 0 && (!F.z_open || F.z.frame_in == 0))
        return; /* no frame is open: nothing to end */
    if (!F.z_open) {
        if (ctr__zstream_open(&F.z, ctr__session.level) != 0)
            return; /* out of memory: this generation is lost, the next tries again */
        F.z_open = 1;
        F.frame_gens = 0;
    }
    F.frame_gens++;
    end |= F.z.frame_in + n >= FILE_FRAME_BYTES || F.frame_gens >= FILE_FRAME_GENS;
    if (end)
        F.frame_gens = 0;
    /* An error abandons the open frame: its part on disk reads as a frame
     * cut short, the next generation starts a new one. */
    if (ctr__zstream_put(&F.z, raw, n, end, &z, &zn) == 0)
        file_write(z, zn);
}

/* A generation's records (one call each, sink.h). */
static void on_records(struct ctr_sink *s, const uint8_t *raw, size_t n)
{
    (void)s;
    file_put(raw, n, 0);
}

static int write_frame(void *ctx, const void *frame, size_t n)
{
    (void)ctx;
    return file_write(frame, n);
}

/* The trace is complete: what ends it, in a frame of its own. */
static void on_detached(struct ctr_sink *s)
{
    (void)s;
    file_put(NULL, 0, 1);
    ctr__zstream_close(&F.z);
    F.z_open = 0;
    int rc = ctr__sink_trailer(write_frame, NULL);
    /* relaxed: F.error is the collector's to write, and this is it
     * (trace_stop reads it after the detach). */
    if (rc && !atomic_load_explicit(&F.error, memory_order_relaxed))
        atomic_store_explicit(&F.error, rc, memory_order_relaxed); /* not a write's: say it */
}

static void on_forked(struct ctr_sink *s)
{
    (void)s;
    /* The descriptor is gone (ctr__fd_forget_all): the child's trace, if
     * it starts one, is a file of its own. */
    F.close_fd = 0;
    F.z_open = 0; /* the parent's frame is not the child's */
}

static const struct ctr_sink_ops file_ops = {
    .records = on_records,
    .detached = on_detached,
    .forked = on_forked,
};

int trace_start(const char *path)
{
    if (!path)
        return -EINVAL;
    struct trace_options o = {.path = path};
    return trace_start_opts(&o);
}

/* The file's part of trace_start_opts (API lock held). */
static int file_start(const struct trace_options *o)
{
    if (o->path) {
        /* The trace holds the program's log messages and paths: only its
         * owner reads it. A symlink planted at the path is not followed. */
        int fd = ctr__fd_adopt(
            ctr__real.open(o->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600),
            &F.fd);
        if (fd < 0)
            return fd == -1 ? -errno : fd;
        ctr__fd_identify(fd, &F.id);
        F.close_fd = 1;
    } else {
        /* relaxed (fd, error, bytes): the collector sees them through
         * ctr__sink_attach's release store (see below). */
        atomic_store_explicit(&F.fd, o->fd, memory_order_relaxed);
        F.close_fd = 0;
    }
    atomic_store_explicit(&F.error, 0, memory_order_relaxed);
    atomic_store_explicit(&F.bytes, 0, memory_order_relaxed);
    F.z_open = 0; /* a new stream for the new file */
    uint8_t h[CTR_FILE_HEADER_LEN];
    ctr__file_header(h);
    int rc = file_write(h, sizeof(h));
    if (rc == 0) {
        F.sink.ops = &file_ops;
        /* The file's fields above before the collector calls the sink
         * (ctr__sink_attach publishes it with a release store). */
        if ((rc = ctr__sink_attach(&F.sink, o)) == 0)
            return 0;
    }
    if (F.close_fd) /* relaxed: stored by this thread, no collector has it */
        ctr__fd_close(atomic_load_explicit(&F.fd, memory_order_relaxed));
    return rc;
}

int trace__start_opts(const struct trace_options *opts, size_t opts_size)
{
    if (!opts)
        return -EINVAL;
    struct trace_options own;
    int copied = ctr__options_copy_in(&own, opts, opts_size);
    if (copied != 0)
        return copied;
    const struct trace_options *o = &own;
    int to_file = o && (o->path || o->fd >= 1);
    if ((!to_file && (!o->lttng || o->fd < 0)) || ctr__options_check(o) != 0)
        return -EINVAL;
    ctr__api_lock();
    int rc = 0;
    if (ctr__sink_is_attached(&F.sink) || ctr__sink_is_attached(ctr__lttng_sink())) {
        rc = -EBUSY;
        goto out;
    }
    /* LTTng first: a provider that does not load fails the start before a
     * file is created. */
    if (o->lttng && (rc = ctr__lttng_start(o)) != 0)
        goto out;
    if (to_file && (rc = file_start(o)) != 0 && o->lttng)
        ctr__sink_detach(ctr__lttng_sink());
out:
    ctr__api_unlock();
    return rc;
}

int trace_stop(void)
{
    ctr__api_lock();
    /* The file and LTTng end with the same generation. */
    struct ctr_sink *both[2] = {&F.sink, ctr__lttng_sink()};
    int to_file = ctr__sink_is_attached(&F.sink);
    int none = ctr__sinks_detach(both, 2) != 0;
    if (none || !to_file) {
        ctr__api_unlock();
        return none ? -ENOENT : 0;
    }
    /* relaxed: see the field (the detach above synchronized). */
    int rc = atomic_load_explicit(&F.error, memory_order_relaxed);
    /* relaxed: the detach has synchronized with the collector (as error). */
    int crc = F.close_fd ? ctr__fd_close(atomic_load_explicit(&F.fd, memory_order_relaxed)) : 0;
    if (crc != 0 && rc == 0)
        rc = crc;
    ctr__api_unlock();
    return rc;
}

int trace_is_running(void)
{
    return ctr__sink_is_attached(&F.sink) || ctr__sink_is_attached(ctr__lttng_sink());
}

int trace__get_counters(struct trace_counters *out, size_t out_size)
{
    if (!out)
        return -EINVAL;
    struct trace_counters c;
    /* relaxed: counters read only for statistics. */
    c.events_dropped = atomic_load_explicit(&ctr__session.events_dropped, memory_order_relaxed);
    c.bytes_written = atomic_load_explicit(&F.bytes, memory_order_relaxed);
    c.chunks_flushed = atomic_load_explicit(&ctr__session.chunks_flushed, memory_order_relaxed);
    return ctr__abi_copy_out(out, out_size, &c, sizeof(c), sizeof(c));
}

int ctr__trace_fd(void)
{
    /* relaxed: a number for comparisons; nothing is read on its strength. */
    return ctr__sink_is_attached(&F.sink) ? atomic_load_explicit(&F.fd, memory_order_relaxed) : -1;
}

void ctr__trace_stop_at_exit(void)
{
    if (trace_is_running())
        ctr__autostart_stopped(trace_stop());
}

/* Flush a running trace when the program exits normally. */
__attribute__((destructor)) static void trace_at_exit(void)
{
    ctr__trace_stop_at_exit();
}
