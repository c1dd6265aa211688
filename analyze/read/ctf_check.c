/* SPDX-License-Identifier: MIT */
/* ctf_check.c - a CTF trace's metadata and LTTng indexes checked for the
 * damage babeltrace2 loops or aborts on (see ctf_check.h). Every length read
 * from a file is checked against the file's size before it is used; a file
 * is opened without blocking (a FIFO named `metadata` is refused, not
 * waited on).
 */
#include "read/ctf_check.h"

#include <byteswap.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* CTF 1.8 §7.1: a metadata packet's header, packed. */
#define META_MAGIC 0x75d11d57u
#define META_HEADER_LEN 37      /* magic, uuid[16], checksum, content_size, packet_size, 5 bytes */
#define META_CONTENT_SIZE_AT 24 /* uint32, bits, header included */
#define META_PACKET_SIZE_AT 28  /* uint32, bits, padding included */

/* lttng-index.h: a big-endian header, then entries of packet_index_len
 * bytes that begin with offset (bytes) and packet_size (bits). */
#define INDEX_MAGIC 0xc1f1dcc1u
#define INDEX_HEADER_LEN 16
#define INDEX_ENTRY_MIN 56 /* CTF_INDEX_1_0_SIZE: what babeltrace2 requires */

/* Opens path for reading a regular file: its descriptor and size, or a
 * negative errno with the reason in err. */
static int open_regular(const char *path, off_t *size, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        if (fd >= 0)
            close(fd);
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -EINVAL;
    }
    *size = st.st_size;
    return fd;
}

/* Reads len bytes at off: 0, or -1 when the file holds fewer. */
static int read_at(int fd, void *buf, size_t len, off_t off)
{
    return pread(fd, buf, len, off) == (ssize_t)len ? 0 : -1;
}

static uint32_t u32_at(const uint8_t *p, int swap)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return swap ? bswap_32(v) : v;
}

/* The big-endian integer of n bytes at p. */
static uint64_t be_at(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

int ctr_ctf_check_metadata(const char *path, char *err, size_t errlen)
{
    off_t size;
    int fd = open_regular(path, &size, err, errlen);
    if (fd < 0)
        return fd;
    uint8_t h[META_HEADER_LEN];
    int rc = 0, swap = 0;
    if (read_at(fd, h, 4, 0) != 0 || (u32_at(h, 0) != META_MAGIC && u32_at(h, 1) != META_MAGIC))
        goto out;                      /* text (or too short to be anything): babeltrace2 says */
    swap = u32_at(h, 0) != META_MAGIC; /* babeltrace2 takes the first magic's order for all */
    for (off_t off = 0; off < size;) {
        if (size - off < META_HEADER_LEN) {
            /* babeltrace2 would take the packets before it as the whole
             * metadata, without a word. */
            snprintf(err, errlen,
                     "%s: metadata cut short at byte %lld, in the header of the packet at "
                     "byte %lld",
                     path, (long long)size, (long long)off);
            rc = -EINVAL;
            break;
        }
        if (read_at(fd, h, sizeof(h), off) != 0) {
            snprintf(err, errlen, "%s: cannot read it", path);
            rc = -EIO;
            break;
        }
        uint32_t content = u32_at(h + META_CONTENT_SIZE_AT, swap);
        uint32_t packet = u32_at(h + META_PACKET_SIZE_AT, swap);
        if (u32_at(h, swap) != META_MAGIC || content % 8 || content / 8 < META_HEADER_LEN ||
            packet < content)
            break; /* a damaged header, which babeltrace2 reports */
        if (content / 8 > size - off) {
            snprintf(err, errlen,
                     "%s: metadata cut short at byte %lld: its packet at byte %lld holds %u "
                     "bytes",
                     path, (long long)size, (long long)off, (unsigned)(content / 8));
            rc = -EINVAL;
            break;
        }
        off += packet / 8; /* at least META_HEADER_LEN: the loop ends */
    }
out:
    close(fd);
    return rc;
}

int ctr_ctf_check_index(const char *path, char *err, size_t errlen)
{
    /* The stream file: DIR/NAME for DIR/index/NAME.idx. */
    const char *base = strrchr(path, '/');
    size_t dirlen = base ? (size_t)(base - path) : 0;
    size_t namelen = strlen(base ? base + 1 : path);
    if (dirlen < 6 || strncmp(path + dirlen - 6, "/index", 6) != 0 || namelen <= 4)
        return 0;
    char stream[4096];
    if (snprintf(stream, sizeof(stream), "%.*s/%.*s", (int)(dirlen - 6), path, (int)(namelen - 4),
                 base + 1) >= (int)sizeof(stream))
        return 0;
    struct stat st;
    if (stat(stream, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    off_t size;
    int fd = open_regular(path, &size, err, errlen);
    if (fd < 0)
        return 0; /* babeltrace2 reads the stream without it */
    uint8_t h[INDEX_HEADER_LEN];
    int rc = 0;
    if (read_at(fd, h, sizeof(h), 0) != 0 || be_at(h, 4) != INDEX_MAGIC || be_at(h + 4, 4) != 1)
        goto out;
    uint64_t len = be_at(h + 12, 4);
    if (len < INDEX_ENTRY_MIN)
        goto out;
    /* babeltrace2 uses the index only if it passes its own checks
     * (data-stream-file.c, build_index_from_idx_file): sizes in whole
     * bytes, offsets rising, times in order, and the sizes summing to the
     * stream file's; else it indexes the stream itself (a stream cut short
     * is read up to the cut). It does not check that each packet lies in
     * the file. */
    if ((size - INDEX_HEADER_LEN) % len)
        goto out;
    uint64_t n = (uint64_t)(size - INDEX_HEADER_LEN) / len, total = 0, prev = 0, bad = n;
    for (uint64_t i = 0; i < n; i++) {
        uint8_t e[40]; /* offset, packet_size, content_size, timestamp_begin, _end */
        if (read_at(fd, e, sizeof(e), INDEX_HEADER_LEN + (off_t)(i * len)) != 0)
            goto out;
        uint64_t at = be_at(e, 8), bits = be_at(e + 8, 8);
        if (bits % 8 || (i && at < prev) || be_at(e + 32, 8) < be_at(e + 24, 8))
            goto out;
        if (bad == n && (at >= (uint64_t)st.st_size || bits / 8 > (uint64_t)st.st_size - at))
            bad = i;
        prev = at;
        total += bits / 8;
    }
    if (bad < n && total == (uint64_t)st.st_size) {
        snprintf(err, errlen,
                 "%s: a damaged index: its packet %llu lies past the end of %s (%lld bytes); "
                 "remove the index directory to read the trace without it",
                 path, (unsigned long long)bad, stream, (long long)st.st_size);
        rc = -EINVAL;
    }
out:
    close(fd);
    return rc;
}
