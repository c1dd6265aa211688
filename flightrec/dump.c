/* SPDX-License-Identifier: MIT */
/* dump.c - writes the flight recorder's window out as a normal trace file,
 * from whatever thread asked (flightrec_dump, or the collector for the
 * latency trigger), in the time it takes to write it: the window is already
 * compressed in memory, and a pinned snapshot (window.h) lets the collector
 * go on meanwhile.
 *
 * The file: the header; the window's whole generations as they are (each
 * stands alone: FORMAT.md §3.1); and the trailer (ctr__rec_trailer, made
 * now): a Block for each thread inside an I/O call that may never return,
 * a CLOCK record of now, and END.
 */
#include "collect/face.h"
#include "collect/sink.h"
#include "ctrace_format.h"
#include "window.h"

#include <errno.h>
#include <stdlib.h>

/* Where a dump goes: the caller's descriptor, or a file of the tracer's. */
struct dump_out {
    int fd;
    struct ctr_owned_fd *own;
};

static int out_write(void *ctx, const void *buf, size_t n)
{
    const struct dump_out *o = ctx;
    return o->own ? ctr__owned_write(o->own, buf, n) : ctr__write_all(o->fd, buf, n);
}

static int write_dump(int fd, struct ctr_owned_fd *own, const struct fr_snapshot *s)
{
    struct dump_out o = {fd, own};
    uint8_t header[CTR_FILE_HEADER_LEN];
    ctr__file_header(header);
    int rc = out_write(&o, header, sizeof(header));
    for (size_t i = 0; i < s->nframes && rc == 0; i++)
        rc = out_write(&o, s->frames[i]->data, s->frames[i]->len);
    /* Threads inside a call that may never return (a write nobody reads)
     * are waiting: their Blocks go after all their events. */
    return rc ? rc : ctr__sink_trailer(out_write, &o);
}

/* The dump, to the caller's descriptor fd, or (own) to a file of the
 * tracer's own. */
static int dump_to(int fd, struct ctr_owned_fd *own)
{
    struct fr_snapshot s;
    int rc = ctr__fr_snapshot(&s);
    if (rc)
        return rc;
    rc = write_dump(fd, own, &s);
    ctr__fr_unpin(&s);
    return rc;
}

int ctr__fr_dump(int fd)
{
    return dump_to(fd, NULL);
}

int ctr__fr_dump_owned(struct ctr_owned_fd *own)
{
    return dump_to(-1, own);
}

int ctr__fr_dump_file(int fd)
{
    struct ctr_owned_fd own;
    int rc = ctr__owned_adopt(&own, fd);
    if (rc != 0)
        return rc;
    rc = dump_to(-1, &own);
    int crc = ctr__owned_close(&own);
    return rc ? rc : crc;
}
