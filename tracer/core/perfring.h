/* SPDX-License-Identifier: MIT */
/* perfring.h - one perf_event of one thread and its ring buffer (perfring.c):
 * what the context-switch recorder (sched.c) and the CPU sampler (cpu.c)
 * share.
 *
 * The owner of a ring (the thread whose slot holds it, or the session's
 * start on its behalf) opens and publishes it; only the collector reads it
 * (ctr__perf_drain); it is unmapped when its slot is reused, in a forked
 * child, or by ctr__perf_close from whoever owns the slot then, never while
 * the collector may read it. */
#ifndef CTR_PERFRING_H
#define CTR_PERFRING_H

#include <linux/perf_event.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct ctr_perf_ring {
    _Atomic(void *) meta; /* the mapping; owner: release once mapped */
    size_t bytes;         /* of the mapping: a page, then the data */
    _Atomic int fd;       /* a tracer descriptor (fdguard.c): may move */
    /* Whether read() of fd counts the records the kernel lost
     * (PERF_FORMAT_LOST, Linux 6.0), and how many of them the trace has
     * (the collector's; set by the opener before meta is published). */
    int counts_lost;
    uint64_t lost_seen;
};

/* ctr__perf_open() : opens the event `a` (its read_format is set here) on
 * thread `tid` (0: the caller) with a ring of data_bytes (a power of two, at
 * least a page) and publishes it in r. @return 0, or a negative errno
 * (perf_event_open's, or mmap's: locked memory is limited per user). */
int ctr__perf_open(struct ctr_perf_ring *r, struct perf_event_attr *a, int tid, size_t data_bytes);
/* ctr__perf_close() : unmaps and closes r's event, if open. Not while the
 * collector may read it (see the top). */
void ctr__perf_close(struct ctr_perf_ring *r);
/* ctr__perf_forget() : a forked child's: forgets the parent's event (its
 * descriptor went with the tracer's others, and its mapping was never
 * copied into the child). */
void ctr__perf_forget(struct ctr_perf_ring *r);
/* ctr__perf_is_open() : whether r holds an event (acquire: its size and
 * descriptor are the opener's). */
int ctr__perf_is_open(struct ctr_perf_ring *r);
/* ctr__perf_restart() : drops what r recorded so far and enables it again
 * (an earlier session's event, kept for the next). */
void ctr__perf_restart(struct ctr_perf_ring *r);
/* ctr__perf_period() : sets r's sampling period (which restarts its
 * count). Collector. */
void ctr__perf_period(struct ctr_perf_ring *r, uint64_t period);
/* ctr__perf_disable() : stops r's event; what overflowed since the last
 * drain is no later session's. Collector. */
void ctr__perf_disable(struct ctr_perf_ring *r);
/* ctr__perf_has_records() : whether the kernel wrote records to r since
 * its last drain. Collector thread only. */
int ctr__perf_has_records(struct ctr_perf_ring *r);
/* ctr__perf_drain() : each complete record of r to on_record (the header,
 * then the body, contiguous even where the ring wraps), then frees their
 * space. Collector thread only. @return records the kernel lost since the
 * last drain (its LOST records, or PERF_FORMAT_LOST's count). */
uint64_t ctr__perf_drain(struct ctr_perf_ring *r,
                         void (*on_record)(void *ctx, const struct perf_event_header *h,
                                           const uint8_t *body, size_t len),
                         void *ctx);

#endif
