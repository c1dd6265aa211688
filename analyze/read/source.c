/* SPDX-License-Identifier: MIT */
/* source.c - reads a trace file front to back and cuts it into frames (see
 * source.h).
 *
 * A window buf[lo..hi) holds the bytes read and not yet handed out. A
 * frame's extent comes from zstd's own walk of its block headers
 * (ZSTD_findFrameCompressedSize), which needs the whole frame in the
 * window: when it says the window is too short, more is read; at the end
 * of the file what remains is a cut frame. Anything else it says means the
 * bytes at lo are no frame: the window is searched for the next frame magic
 * and what lay before it is reported as skipped.
 */
#include "read/source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "read/ctf.h"
#include "ctrace_format.h"
#include "read/gen.h"

#define READ_CHUNK ((size_t)1 << 20)
/* A frame's compressed bytes never exceed its content by much (zstd stores
 * an incompressible block raw): a longer one is not a ctrace frame. */
#define MAX_FRAME (CTR_GEN_MAX_STREAM + ((size_t)1 << 20))

static const uint8_t zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};

struct ctr_source {
    struct ctr_ctf *ctf; /* non-NULL: an LTTng trace directory (ctf.h) */
    int fd;              /* -1: bytes in memory */
    int own_fd;
    int spool_fd; /* -1: none */
    int spooled;  /* standard input was read to its end */
    const uint8_t *mem;
    size_t mem_len;
    uint8_t *buf;
    size_t lo, hi, cap;
    uint64_t buf_off; /* file offset of buf[0] */
    uint64_t size;
    int eof;
};

static int read_more(struct ctr_source *s)
{
    if (s->eof)
        return 0;
    if (s->fd < 0) {
        /* In memory: the window is the whole input. */
        s->eof = 1;
        return 0;
    }
    if (s->lo > 0 && s->lo == s->hi) {
        s->buf_off += s->lo;
        s->lo = s->hi = 0;
    } else if (s->lo > s->cap / 2) {
        memmove(s->buf, s->buf + s->lo, s->hi - s->lo);
        s->buf_off += s->lo;
        s->hi -= s->lo;
        s->lo = 0;
    }
    if (s->cap - s->hi < READ_CHUNK) {
        size_t cap = s->cap ? s->cap * 2 : 2 * READ_CHUNK;
        while (cap - s->hi < READ_CHUNK)
            cap *= 2;
        uint8_t *b = realloc(s->buf, cap);
        if (!b)
            return -ENOMEM;
        s->buf = b;
        s->cap = cap;
    }
    ssize_t n;
    do
        n = read(s->fd, s->buf + s->hi, READ_CHUNK);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    if (n == 0) {
        s->eof = 1;
        return 0;
    }
    if (s->spool_fd >= 0 && !s->spooled) {
        for (ssize_t w = 0; w < n;) {
            ssize_t k = write(s->spool_fd, s->buf + s->hi + w, (size_t)(n - w));
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0)
                return -errno;
            w += k;
        }
    }
    s->hi += (size_t)n;
    return 1;
}

static const uint8_t *window(const struct ctr_source *s)
{
    return s->fd < 0 ? s->mem : s->buf;
}

static int check_header(struct ctr_source *s, char *err, size_t errlen)
{
    while (s->hi - s->lo < CTR_FILE_HEADER_LEN) {
        int rc = read_more(s);
        if (rc < 0) {
            snprintf(err, errlen, "%s", strerror(-rc));
            return rc;
        }
        if (rc == 0)
            break;
    }
    const uint8_t *h = window(s) + s->lo;
    if (s->hi - s->lo < CTR_FILE_HEADER_LEN || memcmp(h, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN) != 0) {
        snprintf(err, errlen, "not a ctrace trace (bad magic in the first %d bytes)",
                 CTR_FILE_HEADER_LEN);
        return -EINVAL;
    }
    unsigned major = h[8] | (unsigned)h[9] << 8;
    if (major != CTR_VERSION_MAJOR) {
        snprintf(err, errlen, "trace format version %u is not supported (this reader: %u)", major,
                 (unsigned)CTR_VERSION_MAJOR);
        return -ENOTSUP;
    }
    s->lo += CTR_FILE_HEADER_LEN;
    return 0;
}

/* A spool for standard input: an unlinked file in $TMPDIR (or /tmp). */
static int open_spool(void)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
#endif
    char path[4096];
    snprintf(path, sizeof(path), "%s/ctrace-spool-XXXXXX", dir);
    fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* A directory: the CTF traces in it, read by ctf.c. */
static int open_ctf(const char *path, uint64_t pid, struct ctr_source **out, char *err,
                    size_t errlen)
{
    struct ctr_source *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    s->fd = s->spool_fd = -1;
    int rc = ctr_ctf_open(path, pid, &s->ctf, err, errlen);
    if (rc != 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int ctr_source_open(const char *path, int spool, struct ctr_source **out, char *err, size_t errlen)
{
    return ctr_source_open_pid(path, spool, 0, out, err, errlen);
}

int ctr_source_open_pid(const char *path, int spool, uint64_t pid, struct ctr_source **out,
                        char *err, size_t errlen)
{
    *out = NULL;
    int is_stdin = strcmp(path, "-") == 0;
    struct stat dst;
    if (!is_stdin && stat(path, &dst) == 0 && S_ISDIR(dst.st_mode))
        return open_ctf(path, pid, out, err, errlen);
    if (pid) {
        snprintf(err, errlen,
                 "%s: -pid picks a process of an LTTng trace (a directory); a "
                 "ctrace file holds one process",
                 path);
        return -EINVAL;
    }
    int fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        if (fd > 0)
            close(fd);
        return -e;
    }
    if (is_stdin && isatty(0)) {
        snprintf(err, errlen, "-: standard input is a terminal; redirect a trace into it");
        return -EINVAL;
    }
    if (!is_stdin && !S_ISREG(st.st_mode)) {
        snprintf(err, errlen,
                 "%s: not a regular file (%s); to read a trace from a pipe, "
                 "give - and redirect it to standard input",
                 path,
                 S_ISFIFO(st.st_mode)   ? "a FIFO"
                 : S_ISSOCK(st.st_mode) ? "a socket"
                                        : "a device");
        close(fd);
        return -EINVAL;
    }
    if (!is_stdin) /* opened without blocking, in case it was a FIFO: block now */
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    struct ctr_source *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", path);
        if (!is_stdin)
            close(fd);
        return -ENOMEM;
    }
    s->fd = fd;
    s->own_fd = !is_stdin;
    s->spool_fd = -1;
    s->size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    if (is_stdin && spool && !S_ISREG(st.st_mode)) {
        s->spool_fd = open_spool();
        if (s->spool_fd < 0) {
            snprintf(err, errlen,
                     "-: cannot make a temporary file to read standard input "
                     "twice: %s",
                     strerror(errno));
            ctr_source_close(s);
            return -EIO;
        }
        /* The header is read below: spool it too. */
    }
    char why[200];
    int rc = check_header(s, why, sizeof(why));
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        ctr_source_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

int ctr_source_open_mem(const uint8_t *data, size_t len, struct ctr_source **out, char *err,
                        size_t errlen)
{
    struct ctr_source *s = calloc(1, sizeof(*s));
    *out = NULL;
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    *s = (struct ctr_source){
        .fd = -1, .spool_fd = -1, .mem = data, .mem_len = len, .hi = len, .size = len, .eof = 1};
    int rc = check_header(s, err, errlen);
    if (rc != 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* The offset in the window of the next frame magic after lo, or hi. */
static size_t find_magic(const struct ctr_source *s, size_t from)
{
    const uint8_t *w = window(s);
    for (size_t i = from; i + 4 <= s->hi; i++)
        if (w[i] == zstd_magic[0] && memcmp(w + i, zstd_magic, 4) == 0)
            return i;
    return s->hi;
}

int ctr_source_next(struct ctr_source *s, struct ctr_frame *f)
{
    if (s->ctf)
        return ctr_ctf_next(s->ctf, f);
    *f = (struct ctr_frame){0};
    for (;;) {
        if (s->lo == s->hi) {
            int rc = read_more(s);
            if (rc < 0) {
                snprintf(f->skipped, sizeof(f->skipped), "reading: %s", strerror(-rc));
                return rc;
            }
            if (rc == 0)
                return 0;
            continue;
        }
        const uint8_t *w = window(s);
        size_t avail = s->hi - s->lo;
        size_t n = ZSTD_findFrameCompressedSize(w + s->lo, avail);
        int need_more = ZSTD_isError(n) && ZSTD_getErrorCode(n) == ZSTD_error_srcSize_wrong;
        if (need_more && !s->eof && avail < MAX_FRAME) {
            int rc = read_more(s);
            if (rc < 0) {
                snprintf(f->skipped, sizeof(f->skipped), "reading: %s", strerror(-rc));
                return rc;
            }
            continue;
        }
        int cut = need_more && s->eof && avail >= 4 && memcmp(w + s->lo, zstd_magic, 4) == 0;
        if (ZSTD_isError(n) && !cut) {
            /* Not a frame here: skip to the next magic, reading on (and
             * dropping what was searched) while the window has none. */
            if (!f->skipped[0]) {
                f->skipped_off = s->buf_off + s->lo;
                snprintf(f->skipped, sizeof(f->skipped), "not a zstd frame (%s)",
                         ZSTD_getErrorName(n));
            }
            size_t next = find_magic(s, s->lo + 1);
            while (next == s->hi && !s->eof) {
                if (s->hi - s->lo > 3)
                    s->lo = s->hi - 3; /* a magic may straddle the read */
                int rc = read_more(s);
                if (rc < 0)
                    return rc;
                next = find_magic(s, s->lo);
            }
            s->lo = next;
            continue;
        }
        if (cut)
            n = avail;
        f->data = malloc(n ? n : 1);
        if (!f->data) {
            snprintf(f->skipped, sizeof(f->skipped), "out of memory");
            return -ENOMEM;
        }
        memcpy(f->data, w + s->lo, n);
        f->len = n;
        f->file_off = s->buf_off + s->lo;
        f->cut = cut;
        s->lo += n;
        return 1;
    }
}

int ctr_source_rewind(struct ctr_source *s)
{
    if (s->ctf)
        return ctr_ctf_rewind(s->ctf);
    if (s->fd < 0) {
        s->lo = CTR_FILE_HEADER_LEN;
        s->hi = s->mem_len;
        s->eof = 1;
        return 0;
    }
    if (s->spool_fd >= 0) {
        if (!s->eof && !s->spooled) {
            /* Read the rest so the spool is whole. */
            int rc;
            s->lo = s->hi;
            while ((rc = read_more(s)) > 0)
                s->lo = s->hi;
            if (rc < 0)
                return rc;
        }
        s->spooled = 1;
        s->fd = s->spool_fd;
    }
    s->eof = 0;
    if (lseek(s->fd, 0, SEEK_SET) != 0)
        return -errno;
    s->lo = s->hi = 0;
    s->buf_off = 0;
    char err[64];
    return check_header(s, err, sizeof(err));
}

uint64_t ctr_source_pos(const struct ctr_source *s)
{
    if (s->ctf)
        return ctr_ctf_pos(s->ctf);
    return s->buf_off + s->lo;
}

uint64_t ctr_source_size(const struct ctr_source *s)
{
    return s->size;
}

int ctr_source_is_ctf(const struct ctr_source *s)
{
    return s->ctf != NULL;
}

uint64_t ctr_source_discarded(const struct ctr_source *s)
{
    return s->ctf ? ctr_ctf_discarded(s->ctf) : 0;
}

void ctr_source_close(struct ctr_source *s)
{
    if (!s)
        return;
    ctr_ctf_close(s->ctf);
    if (s->own_fd && s->fd >= 0 && s->fd != s->spool_fd)
        close(s->fd);
    if (s->spool_fd >= 0)
        close(s->spool_fd);
    free(s->buf);
    free(s);
}
