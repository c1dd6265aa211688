/* dump.c - writes the flight recorder's window out as a normal trace file,
 * from whatever thread asked (flightrec_dump, or the collector for the
 * latency trigger), in the time it takes to write it: the window is already
 * compressed in memory, and a pinned snapshot (window.h) lets the collector
 * go on meanwhile.
 *
 * The file: the header; a prologue frame made now (every table, the clock at
 * the window's start, THREAD records with the names the window's events
 * gave, and a one-event batch per thread that was blocked when the window
 * starts); the window's frames as they are; and a last frame: a Block for
 * each thread inside an I/O call that may never return, a CLOCK record of
 * now, and an END record.
 */
#include "internal.h"
#include "record.h"
#include "window.h"

#include <errno.h>
#include <stdlib.h>

/* A thread's name as the window's events last gave it, else `registered`. */
static uint32_t name_of(void *ctx, uint64_t thread_id, uint32_t registered)
{
    const struct fr_snapshot *s = ctx;
    for (size_t i = 0; i < s->nnames; i++)
        if (s->names[i].thread_id == thread_id)
            return s->names[i].name;
    return registered;
}

/* Compresses o into one frame and writes it to fd. */
static int write_frame(struct ctr_zstream *z, int fd, const struct ctr_outbuf *o)
{
    const void *out;
    size_t n;
    if (o->oom)
        return -ENOMEM;
    int rc = ctr__zstream_frame(z, o, NULL, &out, &n);
    return rc ? rc : ctr__write_all(fd, out, n);
}

/* The prologue of snapshot s into o. */
static void prologue(struct ctr_outbuf *o, struct fr_snapshot *s)
{
    ctr__rec_prologue(o, &s->start, name_of, s);
    for (size_t i = 0; i < s->nblocked; i++) {
        const struct blocked *b = &s->blocked[i];
        ctr__rec_block(o, b->thread_id, s->start.ticks, b->reason, b->object, b->stack);
    }
}

static int write_dump(int fd, struct fr_snapshot *s, struct ctr_zstream *z,
                      struct ctr_outbuf *head, struct ctr_outbuf *tail)
{
    uint8_t header[CTR_FILE_HEADER_LEN];
    ctr__file_header(header);
    int rc = ctr__write_all(fd, header, sizeof(header));
    if (rc == 0)
        rc = write_frame(z, fd, head);
    for (size_t i = 0; i < s->nframes && rc == 0; i++)
        rc = ctr__write_all(fd, s->frames[i]->data, s->frames[i]->len);
    return rc ? rc : write_frame(z, fd, tail);
}

/* The dump, to the caller's descriptor fd, or (holder) to the tracer
 * descriptor in *holder, which must still refer to *id. */
static int dump_to(int fd, _Atomic int *holder, const struct ctr_fd_id *id)
{
    struct fr_snapshot s;
    struct ctr_outbuf head = {0}, tail = {0};
    struct ctr_zstream z = {0};
    /* The snapshot and the scans of the thread slab under its reclaim lock:
     * a thread whose last events (and THREAD record) the collector writes
     * after the snapshot keeps its slot until the scans have seen it. */
    ctr_lock_acquire(&ctr__threads.reclaim);
    int rc = ctr__fr_snapshot(&s);
    if (rc == 0) {
        /* Threads inside a call that may never return (a write nobody
         * reads) are waiting: they go last, after all their events, but are
         * taken first, so that the prologue has their call sites' stacks. */
        ctr__pending_io(&tail);
        prologue(&head, &s);
    }
    ctr_lock_release(&ctr__threads.reclaim);
    if (rc)
        return rc;
    struct ctr_clock_sample now;
    ctr__clock_sample(&now.ticks, &now.mono, &now.real);
    ctr__rec_clock(&tail, &now);
    CTR_REC(&tail, CTR_REC_END,
            atomic_load_explicit(&ctr__session.events_dropped, memory_order_relaxed),
            atomic_load_explicit(&ctr__stacks.overflows, memory_order_relaxed),
            atomic_load_explicit(&ctr__threads.unregistered, memory_order_relaxed),
            atomic_load_explicit(&ctr__session.sched_failed, memory_order_relaxed));
    rc = ctr__zstream_open(&z, ctr__session.level);
    if (rc == 0) {
        /* A tracer descriptor's number may move (fdguard.c): not while it
         * is written. */
        if (holder)
            ctr__fd_use_begin(1);
        int out = holder ? atomic_load_explicit(holder, memory_order_relaxed) : fd;
        rc = holder && !ctr__fd_is(out, id) ? -EBADF : write_dump(out, &s, &z, &head, &tail);
        if (holder)
            ctr__fd_use_end();
    }
    ctr__zstream_close(&z);
    free(head.p);
    free(tail.p);
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
    int crc = ctr__fd_close(atomic_load_explicit(&holder, memory_order_relaxed));
    return rc ? rc : crc;
}
