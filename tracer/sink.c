/* sink.c - where the collector's bytes go: zstd frames, written whole to a
 * descriptor. A compression stream (ctr_zstream) belongs to one thread: the
 * collector has its own (ctr__sink_begin/ctr__sink_compress), a dump makes
 * one for itself. The trace file's writer (ctr__sink_write, collector only)
 * remembers its first error, after which the file ends at a frame boundary
 * and nothing more is written to it; a dump writes with ctr__write_all.
 */
#include "interpose.h"
#include "internal.h"
#include "record.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zstd.h>

static struct ctr_zstream Z; /* the collector's */

int ctr__zstream_open(struct ctr_zstream *z, int level)
{
    if (!z->cctx && !(z->cctx = ZSTD_createCCtx()))
        return -ENOMEM;
    ZSTD_CCtx_reset(z->cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1);
    return 0;
}

void ctr__zstream_close(struct ctr_zstream *z)
{
    ZSTD_freeCCtx(z->cctx);
    free(z->buf);
    *z = (struct ctr_zstream){0};
}

int ctr__sink_begin(int level)
{
    return ctr__zstream_open(&Z, level);
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

int ctr__sink_write(const void *buf, size_t len)
{
    if (atomic_load_explicit(&ctr__session.write_error, memory_order_relaxed))
        return -EIO; /* after a failure the file ends at a frame boundary */
    /* The file's number may move (the program dup2'd onto it): not while
     * this write uses it. */
    ctr__fd_use_begin(1);
    int fd = atomic_load_explicit(&ctr__session.fd, memory_order_relaxed);
    /* The file the trace started in, not whatever holds its number now. */
    int err = ctr__session.close_fd && !ctr__fd_is(fd, &ctr__session.file_id)
                  ? -EBADF
                  : ctr__write_all(fd, buf, len);
    ctr__fd_use_end();
    if (err) {
        int zero = 0;
        atomic_compare_exchange_strong(&ctr__session.write_error, &zero, err);
        return err;
    }
    atomic_fetch_add_explicit(&ctr__session.bytes_written, (uint64_t)len, memory_order_relaxed);
    return 0;
}

int ctr__zstream_frame(struct ctr_zstream *zs, const struct ctr_outbuf *a,
                       const struct ctr_outbuf *b, const void **z, size_t *zn)
{
    size_t in = a->len + (b ? b->len : 0);
    size_t bound = ZSTD_compressBound(in);
    if (bound > zs->cap) {
        uint8_t *p = realloc(zs->buf, bound);
        if (!p)
            return -ENOMEM;
        zs->buf = p;
        zs->cap = bound;
    }
    /* One frame from two buffers: stream both, then end the frame. */
    ZSTD_outBuffer out = {zs->buf, zs->cap, 0};
    ZSTD_inBuffer ia = {a->p, a->len, 0};
    size_t rc = ZSTD_compressStream2(zs->cctx, &out, &ia, ZSTD_e_continue);
    if (!ZSTD_isError(rc) && b && b->len) {
        ZSTD_inBuffer ib = {b->p, b->len, 0};
        rc = ZSTD_compressStream2(zs->cctx, &out, &ib, ZSTD_e_continue);
    }
    ZSTD_inBuffer none = {NULL, 0, 0};
    while (!ZSTD_isError(rc) && (rc = ZSTD_compressStream2(zs->cctx, &out, &none, ZSTD_e_end)) > 0)
        ;
    if (ZSTD_isError(rc)) {
        ZSTD_CCtx_reset(zs->cctx, ZSTD_reset_session_only);
        return -EIO;
    }
    *z = zs->buf;
    *zn = out.pos;
    return 0;
}

int ctr__sink_compress(const struct ctr_outbuf *a, const struct ctr_outbuf *b, const void **z,
                       size_t *zn)
{
    return ctr__zstream_frame(&Z, a, b, z, zn);
}

