/* SPDX-License-Identifier: MIT */
/* filesink.c - the trace file: the sink behind trace_start / trace_stop
 * (ctrace/trace.h), and behind `ctrace ctl PID trace` (control.c), each with
 * a struct ctr_file_sink of its own (sink.h).
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
#include "sinks/filesink.h"

#include "collect/face.h"
#include "collect/sink.h"
#include "core/abi.h"
#include "core/real.h"
#include "core/session.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "sinks/lttng.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One frame of the file holds at most FILE_FRAME_BYTES of records (a
 * reader holds a frame whole in memory, and frames are what it decodes in
 * parallel) and FILE_FRAME_GENS generations (damage to a frame costs the
 * rest of it: a reader goes on at the next frame). */
#define FILE_FRAME_BYTES (4u << 20)
#define FILE_FRAME_GENS 16

/* Writes buf whole to f's file, unless a write failed before. */
static int file_write(struct ctr_file_sink *f, const void *buf, size_t len)
{
    /* relaxed (error here and below): see the field. */
    if (atomic_load_explicit(&f->error, memory_order_relaxed))
        return -EIO; /* after a failure the file ends at a frame boundary */
    /* The file the trace started in, not whatever holds its number now. */
    int err = f->owned ? ctr__owned_write(&f->own, buf, len) : ctr__write_all(f->fd, buf, len);
    if (err) {
        atomic_store_explicit(&f->error, err, memory_order_relaxed);
        return err;
    }
    /* relaxed: a counter read only for statistics (trace_get_counters). */
    atomic_fetch_add_explicit(&f->bytes, (uint64_t)len, memory_order_relaxed);
    return 0;
}

/* Puts n bytes of records into f's open frame, and what that gives out
 * into the file: the frame flushed, or ended when it is full or `end`. */
static void file_put(struct ctr_file_sink *f, const void *raw, size_t n, int end)
{
    const void *z;
    size_t zn;
    if (n == 0 && (!f->z_open || f->z.frame_in == 0))
        return; /* no frame is open: nothing to end */
    if (!f->z_open) {
        if (ctr__zstream_open(&f->z, ctr__session.level) != 0)
            return; /* out of memory: this generation is lost, the next tries again */
        f->z_open = 1;
        f->frame_gens = 0;
    }
    f->frame_gens++;
    end |= f->z.frame_in + n >= FILE_FRAME_BYTES || f->frame_gens >= FILE_FRAME_GENS;
    if (end)
        f->frame_gens = 0;
    /* An error abandons the open frame: its part on disk reads as a frame
     * cut short, the next generation starts a new one. */
    if (ctr__zstream_put(&f->z, raw, n, end, &z, &zn) == 0)
        file_write(f, z, zn);
}

/* The file sink whose `sink` s is (its first member). */
_Static_assert(offsetof(struct ctr_file_sink, sink) == 0, "sink must come first");
static struct ctr_file_sink *file_of(struct ctr_sink *s)
{
    return (struct ctr_file_sink *)(void *)s;
}

/* A generation's records (one call each, sink.h). */
static void on_records(struct ctr_sink *s, const uint8_t *raw, size_t n)
{
    file_put(file_of(s), raw, n, 0);
}

static int write_frame(void *ctx, const void *frame, size_t n)
{
    return file_write(ctx, frame, n);
}

/* The trace is complete: what ends it, in a frame of its own. */
static void on_detached(struct ctr_sink *s)
{
    struct ctr_file_sink *f = file_of(s);
    file_put(f, NULL, 0, 1);
    ctr__zstream_close(&f->z);
    f->z_open = 0;
    int rc = ctr__sink_trailer(write_frame, f);
    /* relaxed: f->error is the collector's to write, and this is it (the
     * stop reads it after the detach). */
    if (rc && !atomic_load_explicit(&f->error, memory_order_relaxed))
        atomic_store_explicit(&f->error, rc, memory_order_relaxed); /* not a write's: say it */
}

static void on_forked(struct ctr_sink *s)
{
    struct ctr_file_sink *f = file_of(s);
    /* The descriptor is gone (ctr__fd_forget_all): the child's trace, if
     * it starts one, is a file of its own. */
    f->owned = 0;
    f->z_open = 0; /* the parent's frame is not the child's */
}

/* For `ctrace ctl PID status` (control.c): how much is written. */
static size_t on_status(struct ctr_sink *s, char *buf, size_t cap)
{
    struct ctr_file_sink *f = file_of(s);
    /* relaxed: a counter read only for statistics. */
    int n = snprintf(buf, cap, "%s.bytes=%llu\n", s->name,
                     (unsigned long long)atomic_load_explicit(&f->bytes, memory_order_relaxed));
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static const struct ctr_sink_ops file_ops = {
    .records = on_records,
    .detached = on_detached,
    .forked = on_forked,
    .status = on_status,
};

/* Opens and adopts the trace file at path into f->own, empty. The trace
 * holds the program's log messages and paths: only its owner reads it. A
 * symlink planted at the path is not followed. When it cannot be adopted
 * (no descriptor left under the program's limit), no file is left behind:
 * one made here is removed, one that was there is not truncated. */
static int open_trace(struct ctr_file_sink *f, const char *path)
{
    const int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW;
    int fd = ctr__real.open(path, flags | O_CREAT | O_EXCL, 0600), made = fd >= 0;
    if (fd < 0 && errno == EEXIST)
        fd = ctr__real.open(path, flags);
    int rc = ctr__owned_adopt(&f->own, fd);
    if (rc != 0) {
        if (made)
            unlink(path);
        return rc;
    }
    /* What O_TRUNC did: a regular file only (a device, /dev/full, has no
     * length to cut). relaxed: this thread's own number, not yet published. */
    int fd_now = atomic_load_explicit(&f->own.fd, memory_order_relaxed);
    struct stat st;
    if (!made && fstat(fd_now, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd_now, 0) != 0) {
        rc = -errno;
        ctr__owned_close(&f->own);
    }
    return rc;
}

int ctr__file_sink_start(struct ctr_file_sink *f, const struct trace_options *o,
                         struct ctr_owned_fd *given)
{
    f->owned = given != NULL;
    f->given = given;
    if (given) {
        /* relaxed: the collector sees it through ctr__sink_attach's release
         * store (as every field here). */
        atomic_store_explicit(&f->own.fd, atomic_load_explicit(&given->fd, memory_order_relaxed),
                              memory_order_relaxed);
        f->own.id = given->id;
        /* Not found again by its path: the number is its giver's, who
         * closes it (and who would close the wrong one after a reopen). */
        f->own.path[0] = 0;
        f->own.next_off = -1;
        f->own.scribe = given->scribe;
        f->own.stalled = given->stalled;
    } else if (o->path) {
        int rc = open_trace(f, o->path);
        if (rc != 0)
            return rc;
        f->owned = 1;
    } else {
        f->fd = o->fd;
    }
    atomic_store_explicit(&f->error, 0, memory_order_relaxed);
    atomic_store_explicit(&f->bytes, 0, memory_order_relaxed);
    f->z_open = 0; /* a new stream for the new file */
    uint8_t h[CTR_FILE_HEADER_LEN];
    ctr__file_header(h);
    int rc = file_write(f, h, sizeof(h));
    if (rc == 0) {
        f->sink.ops = &file_ops;
        /* The file's fields above before the collector calls the sink
         * (ctr__sink_attach publishes it with a release store). */
        if ((rc = ctr__sink_attach(&f->sink, o)) == 0)
            return 0;
    }
    if (f->owned && !given) /* ours to close; a given one stays its giver's */
        ctr__owned_close(&f->own);
    ctr__file_sink_result(f, NULL);
    return rc;
}

int ctr__file_sink_result(struct ctr_file_sink *f, uint64_t *bytes)
{
    if (f->given) {
        f->given->scribe = f->own.scribe;
        f->given->stalled = f->own.stalled;
        f->given = NULL;
    }
    /* relaxed: the detach synchronized with the collector (see the field). */
    if (bytes)
        *bytes = atomic_load_explicit(&f->bytes, memory_order_relaxed);
    return atomic_load_explicit(&f->error, memory_order_relaxed);
}

/* trace_start's file. */
static struct ctr_file_sink F = {.sink = {.name = "trace"}};

int trace_start(const char *path)
{
    if (!path)
        return -EINVAL;
    struct trace_options o = {.path = path};
    return trace_start_opts(&o);
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
    /* The channel, then LTTng: either failing fails the start before a
     * file is created (a channel that opened stays open: trace.h). */
    if ((o->control && (rc = ctr__control_open(o)) != 0) ||
        (o->lttng && (rc = ctr__lttng_start(o)) != 0))
        goto out;
    if (to_file && (rc = ctr__file_sink_start(&F, o, NULL)) != 0 && o->lttng)
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
    int rc = ctr__file_sink_result(&F, NULL);
    int crc = F.owned ? ctr__owned_close(&F.own) : 0;
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
    return !ctr__sink_is_attached(&F.sink) ? -1
           : F.owned                       ? atomic_load_explicit(&F.own.fd, memory_order_relaxed)
                                           : F.fd;
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
