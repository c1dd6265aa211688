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
#include "internal.h"
#include "sink.h"
#include "window.h"

#include <errno.h>
#include <stdlib.h>

static int write_to_fd(void *ctx, const void *buf, size_t n)
{
    return ctr__write_all(*(const int *)ctx, buf, n);
}

static int write_dump(int fd, const struct fr_snapshot *s)
{
    uint8_t header[CTR_FILE_HEADER_LEN];
    ctr__file_header(header);
    int rc = ctr__write_all(fd, header, sizeof(header));
    for (size_t i = 0; i < s->nframes && rc == 0; i++)
        rc = ctr__write_all(fd, s->frames[i]->data, s->frames[i]->len);
    /* Threads inside a call that may never return (a write nobody reads)
     * are waiting: their Blocks go after all their events. */
    return rc ? rc : ctr__sink_trailer(write_to_fd, &fd);
}

/* The dump, to the caller's descriptor fd, or (holder) to the tracer
 * descriptor in *holder, which must still refer to *id. */
static int dump_to(int fd, _Atomic int *holder, const struct ctr_fd_id *id)
{
    struct fr_snapshot s;
    int rc = ctr__fr_snapshot(&s);
    if (rc)
        return rc;
    /* A tracer descriptor's number may move (fdguard.c): not while it is
     * written. */
    if (holder)
        ctr__fd_use_begin(1);
    /* relaxed: the use keeps a move off; the mover's update of the holder
     * happens before it (fdguard.c). */
    int out = holder ? atomic_load_explicit(holder, memory_order_relaxed) : fd;
    rc = holder && !ctr__fd_is(out, id) ? -EBADF : write_dump(out, &s);
    if (holder)
        ctr__fd_use_end();
    ctr__fr_unpin(&s);
    return rc;
}

int ctr__fr_dump(int fd)
{
    return dump_to(fd, NULL, NULL);
}

int ctr__fr_dump_file(int fd)
{
    if (fd < 0)
        return -errno;
    _Atomic int holder;
    int own = ctr__fd_adopt(fd, &holder);
    if (own < 0)
        return own;
    struct ctr_fd_id id;
    int rc = ctr__fd_identify(own, &id);
    if (rc == 0)
        rc = dump_to(-1, &holder, &id);
    /* relaxed: the value a move stored under the registry's lock, or ours;
     * note that no use is held here, so a move between this load and the
     * close is not excluded (the order cannot exclude it either). */
    int crc = ctr__fd_close(atomic_load_explicit(&holder, memory_order_relaxed));
    return rc ? rc : crc;
}
