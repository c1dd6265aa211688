/* sink.c - where the collector's bytes go: zstd frames (one compression
 * context, reused), written whole to a descriptor. The trace file's writer
 * (ctr__sink_write) remembers its first error, after which the file ends at
 * a frame boundary and nothing more is written to it; a dump writes with
 * ctr__write_all directly. Collector thread only, like its callers.
 */
#include "internal.h"
#include "record.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zstd.h>

static struct {
    ZSTD_CCtx *cctx;
    uint8_t *zbuf;
    size_t zcap;
} Z;

int ctr__sink_begin(int level)
{
    if (!Z.cctx && !(Z.cctx = ZSTD_createCCtx()))
        return -ENOMEM;
    ZSTD_CCtx_reset(Z.cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(Z.cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(Z.cctx, ZSTD_c_checksumFlag, 1);
    return 0;
}

int ctr__write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
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
    int err = ctr__write_all(ctr__session.fd, buf, len);
    if (err) {
        int zero = 0;
        atomic_compare_exchange_strong(&ctr__session.write_error, &zero, err);
        return err;
    }
    atomic_fetch_add_explicit(&ctr__session.bytes_written, (uint64_t)len, memory_order_relaxed);
    return 0;
}

int ctr__sink_compress(const struct ctr_outbuf *a, const struct ctr_outbuf *b,
                            const void **z, size_t *zn)
{
    size_t in = a->len + (b ? b->len : 0);
    size_t bound = ZSTD_compressBound(in);
    if (bound > Z.zcap) {
        uint8_t *p = realloc(Z.zbuf, bound);
        if (!p)
            return -ENOMEM;
        Z.zbuf = p;
        Z.zcap = bound;
    }
    /* One frame from two buffers: stream both, then end the frame. */
    ZSTD_outBuffer out = {Z.zbuf, Z.zcap, 0};
    ZSTD_inBuffer ia = {a->p, a->len, 0};
    size_t rc = ZSTD_compressStream2(Z.cctx, &out, &ia, ZSTD_e_continue);
    if (!ZSTD_isError(rc) && b && b->len) {
        ZSTD_inBuffer ib = {b->p, b->len, 0};
        rc = ZSTD_compressStream2(Z.cctx, &out, &ib, ZSTD_e_continue);
    }
    ZSTD_inBuffer none = {NULL, 0, 0};
    while (!ZSTD_isError(rc) && (rc = ZSTD_compressStream2(Z.cctx, &out, &none, ZSTD_e_end)) > 0)
        ;
    if (ZSTD_isError(rc)) {
        ZSTD_CCtx_reset(Z.cctx, ZSTD_reset_session_only);
        return -EIO;
    }
    *z = Z.zbuf;
    *zn = out.pos;
    return 0;
}

