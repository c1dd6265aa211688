/* SPDX-License-Identifier: MIT */
/* sink.c - the sinks' registry and the frames they are handed.
 *
 * The API attaches and detaches sinks (sink.h) in wanted[]; the collector
 * reads it as each round starts (ctr__sinks_wanted) and feeds the sinks it
 * finds there; a sink whose detach was asked for (state LEAVING) is fed one
 * more generation, then told (`detached`) and taken out of wanted[] by the
 * collector. So an attach needs no answer from the collector, and a detach
 * waits for one round.
 *
 * Also here: zstd frames (a compression stream belongs to one thread: the
 * collector has its own, a dump makes one for itself), writing a buffer
 * whole to a descriptor, and to a file of the tracer's own (ctr_owned_fd).
 */
#include "collect/sink.h"

#include "collect/collector.h"
#include "collect/face.h"
#include "collect/records.h"
#include "core/emit.h"
#include "core/fdguard.h"
#include "core/scribe.h"
#include "core/hooks.h"
#include "core/real.h"
#include "core/session.h"
#include "ctrace/trace.h"
#include "ctrace_record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* A sink's state_ in wanted[]: set by the API, read by the collector. */
enum { SINK_OFF = 0, SINK_WANTED, SINK_LEAVING };

/* The API stores a sink (release) into a free entry; the collector loads the
 * entries (acquire: the sink's fields set before are seen) and stores NULL
 * (release) once it has detached it, which the API's detach waits for. */
static _Atomic(struct ctr_sink *) wanted[CTR_SINKS_MAX];

/* Where events go, from the sinks wanted now (not leaving): called by the
 * API, under its lock, as a sink comes or once one has gone. */
static void inline_mode_update(void)
{
    int inline_sinks = 0, chunk_sinks = 0;
    for (int i = 0; i < CTR_SINKS_MAX; i++) {
        /* acquire: as in ctr__sink_attach. relaxed state_: as there. */
        struct ctr_sink *w = atomic_load_explicit(&wanted[i], memory_order_acquire);
        if (!w || atomic_load_explicit(&w->state_, memory_order_relaxed) != SINK_WANTED)
            continue;
        if (w->inline_events)
            inline_sinks++;
        else
            chunk_sinks++;
    }
    /* relaxed: the writers' load is a hint of where to write (core/emit.h,
     * ctr__emit_payload); what an inline sink needs is published apart. */
    atomic_store_explicit(&ctr__inline_mode,
                          !inline_sinks ? CTR_INLINE_OFF
                          : chunk_sinks ? CTR_INLINE_ALSO
                                        : CTR_INLINE_ONLY,
                          memory_order_relaxed);
}

int ctr__sink_attach(struct ctr_sink *s, const struct trace_options *o)
{
    /* relaxed: state_ is stored only by the API's calls here, under the API
     * lock; the collector's load of it is the acquire in ctr__sink_leaving. */
    if (atomic_load_explicit(&s->state_, memory_order_relaxed) != SINK_OFF)
        return -EBUSY;
    int free_at = -1, others = 0;
    for (int i = 0; i < CTR_SINKS_MAX; i++) {
        /* acquire: pairs with the collector's release store of NULL. */
        struct ctr_sink *w = atomic_load_explicit(&wanted[i], memory_order_acquire);
        if (!w && free_at < 0)
            free_at = i;
        others += w != NULL;
    }
    if (free_at < 0)
        return -ENOSPC;
    /* relaxed: published by the release store of wanted[] below. */
    atomic_store_explicit(&s->state_, SINK_WANTED, memory_order_relaxed);
    /* release: the sink's fields before the collector reads them (pairs
     * with the acquire load in ctr__sinks_wanted). */
    atomic_store_explicit(&wanted[free_at], s, memory_order_release);
    inline_mode_update();
    /* The session runs while any sink is wanted (or one still leaves: its
     * round will come). */
    if (others) {
        ctr__collector_kick();
        return 0;
    }
    int rc = ctr__session_begin(o);
    if (rc != 0) {
        /* relaxed: no collector runs, and the API lock is held. */
        atomic_store_explicit(&wanted[free_at], NULL, memory_order_relaxed);
        atomic_store_explicit(&s->state_, SINK_OFF, memory_order_relaxed);
        inline_mode_update();
    }
    return rc;
}

/* Whether s is still in wanted[] (the collector has not detached it). */
static int still_wanted(const struct ctr_sink *s)
{
    for (int i = 0; i < CTR_SINKS_MAX; i++)
        /* acquire: pairs with the collector's release store of NULL, so what
         * the sink's `detached` did is seen once it is out. */
        if (atomic_load_explicit(&wanted[i], memory_order_acquire) == s)
            return 1;
    return 0;
}

int ctr__sinks_detach(struct ctr_sink *const *s, int n)
{
    /* relaxed loads of state_: as in ctr__sink_attach. acquire on wanted[]:
     * as in ctr__sink_attach. */
    int leaving = 0;
    for (int k = 0; k < n; k++)
        if (atomic_load_explicit(&s[k]->state_, memory_order_relaxed) == SINK_WANTED) {
            /* release: pairs with the collector's acquire load
             * (ctr__sink_leaving). */
            atomic_store_explicit(&s[k]->state_, SINK_LEAVING, memory_order_release);
            leaving++;
        }
    if (!leaving)
        return -ENOENT;
    int others = 0;
    for (int i = 0; i < CTR_SINKS_MAX; i++) {
        struct ctr_sink *w = atomic_load_explicit(&wanted[i], memory_order_acquire);
        others += w && atomic_load_explicit(&w->state_, memory_order_relaxed) == SINK_WANTED;
    }
    if (others) {
        /* The session goes on: one round ends these sinks. */
        for (int k = 0; k < n; k++)
            while (still_wanted(s[k]))
                ctr__collector_sync();
    } else {
        ctr__session_end(); /* its final round ends every sink */
    }
    /* relaxed: the collector is done with the sinks (its release store of
     * NULL, seen by still_wanted's acquire, or the joined final round). */
    for (int k = 0; k < n; k++)
        if (atomic_load_explicit(&s[k]->state_, memory_order_relaxed) == SINK_LEAVING)
            atomic_store_explicit(&s[k]->state_, SINK_OFF, memory_order_relaxed);
    inline_mode_update();
    return 0;
}

int ctr__sink_detach(struct ctr_sink *s)
{
    return ctr__sinks_detach(&s, 1);
}

int ctr__sink_is_attached(const struct ctr_sink *s)
{
    /* relaxed: an answer about the sink's state alone; the callers read
     * nothing on its strength. */
    return atomic_load_explicit(&s->state_, memory_order_relaxed) == SINK_WANTED;
}

unsigned ctr__sinks_wanted(struct ctr_sink *sinks[CTR_SINKS_MAX])
{
    unsigned n = 0;
    for (int i = 0; i < CTR_SINKS_MAX; i++) {
        /* acquire: pairs with ctr__sink_attach's release store. */
        struct ctr_sink *w = atomic_load_explicit(&wanted[i], memory_order_acquire);
        if (w)
            sinks[n++] = w;
    }
    return n;
}

int ctr__sink_leaving(const struct ctr_sink *s)
{
    /* acquire: pairs with ctr__sink_detach's release store. */
    return atomic_load_explicit(&s->state_, memory_order_acquire) == SINK_LEAVING;
}

void ctr__sink_remove(struct ctr_sink *s)
{
    /* relaxed load: compares the pointer only (s itself came through the
     * acquire in ctr__sinks_wanted). */
    for (int i = 0; i < CTR_SINKS_MAX; i++)
        if (atomic_load_explicit(&wanted[i], memory_order_relaxed) == s)
            /* release: what `detached` did, before the detach sees it out
             * (pairs with the acquire load in still_wanted). */
            atomic_store_explicit(&wanted[i], NULL, memory_order_release);
}

void ctr__sinks_forked(void)
{
    /* relaxed: the child's only thread; nothing to order. */
    for (int i = 0; i < CTR_SINKS_MAX; i++) {
        struct ctr_sink *w = atomic_load_explicit(&wanted[i], memory_order_relaxed);
        if (!w)
            continue;
        atomic_store_explicit(&wanted[i], NULL, memory_order_relaxed);
        atomic_store_explicit(&w->state_, SINK_OFF, memory_order_relaxed);
        if (w->ops->forked)
            w->ops->forked(w);
    }
    atomic_store_explicit(&ctr__inline_mode, CTR_INLINE_OFF, memory_order_relaxed);
}

int ctr__zstream_open(struct ctr_zstream *z, int level)
{
    if (!z->cctx && !(z->cctx = ZSTD_createCCtx()))
        return -ENOMEM;
    ZSTD_CCtx_reset(z->cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1);
    z->frame_in = 0;
    return 0;
}

void ctr__zstream_close(struct ctr_zstream *z)
{
    ZSTD_freeCCtx(z->cctx);
    free(z->buf);
    *z = (struct ctr_zstream){0};
}

int ctr__write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = ctr__real.write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Notes where o's file is, to find it again (ctr_owned_fd): its path, as
 * the kernel names it, if it is a regular file, and its offset. */
static void note_path(struct ctr_owned_fd *o, int fd)
{
    o->path[0] = 0;
    o->next_off = -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    char link[32];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, o->path, sizeof(o->path));
    off_t off = lseek(fd, 0, SEEK_CUR);
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof(deleted) - 1;
    if (n <= 0 || (size_t)n >= sizeof(o->path) || o->path[0] != '/' || off < 0 ||
        ((size_t)n >= dl && memcmp(o->path + n - dl, deleted, dl) == 0)) {
        o->path[0] = 0;
        return;
    }
    o->path[n] = 0;
    o->next_off = off;
}

int ctr__owned_adopt(struct ctr_owned_fd *o, int fd)
{
    if (fd < 0)
        return -errno;
    int own = ctr__fd_adopt(fd, &o->fd);
    if (own < 0)
        return own;
    int saved = errno;
    int rc = ctr__fd_identify(own, &o->id);
    o->scribe = NULL;
    o->stalled = 0;
    if (rc == 0) {
        note_path(o, own);
        /* Without a scribe (none can be made here) the writer writes
         * itself, as a file that stalls would then hold it; but not where
         * files already stalled. */
        rc = ctr__scribe_start(own, &o->scribe) == -EAGAIN ? -EAGAIN : 0;
    }
    if (rc != 0)
        ctr__fd_close(own);
    errno = saved;
    return rc;
}

/* One try at writing buf whole into o's file by its number. */
static int owned_write_once(struct ctr_owned_fd *o, const void *buf, size_t len)
{
    /* The number may move (the program dup2'd onto it): not while this
     * write uses it. */
    ctr__fd_use_begin(1);
    /* relaxed: the use keeps a move off; the mover's update of fd happens
     * before it (fdguard.c). */
    int fd = atomic_load_explicit(&o->fd, memory_order_relaxed);
    int rc = ctr__fd_is(fd, &o->id) ? ctr__write_all(fd, buf, len) : -EBADF;
    ctr__fd_use_end();
    return rc;
}

/* o's number no longer refers to its file: the file opened again by its
 * path, if that is still the same file, and adopted in its place, at the
 * offset where the writing stopped. The old number is no longer the
 * tracer's (the program may hold it now). Called without a use held (the
 * adoption takes the registry's lock, which a move holds while it waits
 * for uses to end). @return 0 or -EBADF. */
static int owned_reopen(struct ctr_owned_fd *o)
{
    if (!o->path[0] || o->next_off < 0)
        return -EBADF;
    int fd = ctr__real.open(o->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    struct ctr_fd_id id;
    if (fd >= 0 && (ctr__fd_identify(fd, &id) != 0 || id.dev != o->id.dev || id.ino != o->id.ino ||
                    lseek(fd, (off_t)o->next_off, SEEK_SET) < 0)) {
        ctr__real.close(fd);
        fd = -1;
    }
    if (fd < 0)
        return -EBADF;
    /* relaxed: the writer's own number (see owned_write_once). */
    ctr__fd_lost(atomic_load_explicit(&o->fd, memory_order_relaxed));
    return ctr__fd_adopt(fd, &o->fd) >= 0 ? 0 : -EBADF;
}

int ctr__owned_write(struct ctr_owned_fd *o, const void *buf, size_t len)
{
    if (o->stalled)
        return -ETIMEDOUT;
    if (o->scribe) {
        int rc = ctr__scribe_write(o->scribe, buf, len);
        if (rc == -ETIMEDOUT) { /* abandoned: no longer ours */
            o->scribe = NULL;
            o->stalled = 1;
        }
        return rc;
    }
    int saved = errno;
    int rc = owned_write_once(o, buf, len);
    if (rc == -EBADF && owned_reopen(o) == 0)
        rc = owned_write_once(o, buf, len);
    if (rc == 0 && o->next_off >= 0)
        o->next_off += (int64_t)len;
    errno = saved;
    return rc;
}

/* Whether o's file is still where it was (its path names the same file):
 * what a reopen would have found, when its number was lost. */
static int still_there(const struct ctr_owned_fd *o)
{
    struct stat st;
    return o->path[0] && stat(o->path, &st) == 0 && st.st_dev == o->id.dev &&
           st.st_ino == o->id.ino;
}

int ctr__owned_close(struct ctr_owned_fd *o)
{
    /* A scribe wrote through a number of its own: the file is whole even
     * if the program closed the tracer's (a raw close_range). */
    int scribed = o->scribe != NULL;
    if (o->scribe)
        ctr__scribe_end(o->scribe);
    o->scribe = NULL;
    /* relaxed: the value a move stored under the registry's lock, or ours;
     * the owner is done writing (no use is held, none will be). */
    int fd = atomic_load_explicit(&o->fd, memory_order_relaxed);
    if (fd < 0 || !ctr__fd_is(fd, &o->id)) {
        /* Closed behind our back (given up: -1), and maybe the program's
         * number now. */
        if (fd >= 0)
            ctr__fd_lost(fd);
        return scribed && still_there(o) ? 0 : -EBADF;
    }
    return ctr__fd_close(fd);
}

int ctr__zstream_put(struct ctr_zstream *zs, const void *p, size_t n, int end_frame, const void **z,
                     size_t *zn)
{
    /* Room for the whole output at once, as a rule (a flush may add a few
     * block headers more than the bound of one frame: the loop grows the
     * buffer then). */
    size_t bound = ZSTD_compressBound(n) + 64;
    ZSTD_outBuffer out = {zs->buf, zs->cap, 0};
    ZSTD_inBuffer in = {p, n, 0};
    size_t rc = 1;
    while (rc != 0) {
        if (out.size - out.pos < (out.pos ? 64 : bound)) {
            size_t ncap = out.pos ? zs->cap * 2 : bound;
            uint8_t *b = realloc(zs->buf, ncap);
            if (!b) {
                ZSTD_CCtx_reset(zs->cctx, ZSTD_reset_session_only);
                zs->frame_in = 0;
                return -ENOMEM;
            }
            zs->buf = b;
            zs->cap = ncap;
            out.dst = b;
            out.size = ncap;
        }
        rc = ZSTD_compressStream2(zs->cctx, &out, &in, end_frame ? ZSTD_e_end : ZSTD_e_flush);
        if (ZSTD_isError(rc)) {
            ZSTD_CCtx_reset(zs->cctx, ZSTD_reset_session_only);
            zs->frame_in = 0;
            return -EIO;
        }
    }
    zs->frame_in = end_frame ? 0 : zs->frame_in + n;
    *z = zs->buf;
    *zn = out.pos;
    return 0;
}

int ctr__zstream_frame(struct ctr_zstream *zs, const struct ctr_outbuf *a, const void **z,
                       size_t *zn)
{
    return ctr__zstream_put(zs, a->p, a->len, 1, z, zn);
}

int ctr__sink_trailer(int (*write)(void *ctx, const void *frame, size_t n), void *ctx)
{
    struct ctr_outbuf o = {0};
    struct ctr_zstream z = {0};
    const void *frame;
    size_t n;
    ctr__rec_trailer(&o, atomic_load_explicit(&ctr__session.events_dropped, memory_order_relaxed));
    int rc = o.oom ? -ENOMEM : ctr__zstream_open(&z, ctr__session.level);
    if (rc == 0 && (rc = ctr__zstream_frame(&z, &o, &frame, &n)) == 0)
        rc = write(ctx, frame, n);
    ctr__zstream_close(&z);
    free(o.p);
    return rc;
}
