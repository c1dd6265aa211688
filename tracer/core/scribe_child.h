/* SPDX-License-Identifier: MIT */
/* scribe_child.h - what the tracer (scribe.c) and a scribe process
 * (scribe_child.c) share: the struct at the head of a scribe's mapping and
 * the protocol on its state word. Internal to those two files.
 *
 * state (a futex word):
 *   IDLE  -> WRITE  the writer, after filling buf/len (release; the
 *                   scribe's acquire load pairs with it), then wakes it;
 *   WRITE -> DONE   the scribe, after the write, with result set (CAS,
 *                   release; the writer's acquire load pairs with it);
 *   WRITE -> QUIT   the writer, when the piece stalled (CAS): the scribe's
 *                   own CAS then fails, and it exits;
 *   DONE  -> IDLE   the writer, once it read result;
 *   IDLE  -> QUIT   the writer, at the end.
 * The scribe also exits when the process that made it is gone or has
 * exec'd (checked each second while idle): it must not outlive it idle.
 */
#ifndef CTR_SCRIBE_CHILD_H
#define CTR_SCRIBE_CHILD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum { CTR_SCRIBE_IDLE, CTR_SCRIBE_WRITE, CTR_SCRIBE_DONE, CTR_SCRIBE_QUIT };

struct ctr_scribe {
    _Atomic uint32_t state;
    /* The scribe's tid: set by the kernel before it runs (CLONE_PARENT_SETTID),
     * cleared and futex-woken when it exits (CLONE_CHILD_CLEARTID). */
    _Atomic int32_t tid;
    /* Set before the clone, read-only afterwards. */
    int fd;            /* the file, the same number in the scribe's table */
    int parent;        /* the process that made it */
    unsigned fd_limit; /* descriptors to close when close_range is missing */
    uint8_t *buf;      /* CTR_SCRIBE_PIECE bytes */
    size_t map_bytes;  /* the whole mapping: this, the stack, buf */
    /* The writer's, under the protocol above. */
    size_t len;
    long result; /* 0 or -errno */
    /* The tracer's alone (scribe.c). */
    int pid; /* as clone returned it (tid is 0 once the scribe is gone) */
    struct ctr_scribe *next_stuck;
};

/* The scribe's body (scribe_child.c), clone's fn. */
int ctr__scribe_main(void *arg);

#endif
