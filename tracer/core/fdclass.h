/* SPDX-License-Identifier: MIT */
/* fdclass.h - what each descriptor is (a socket or not) and whether it can
 * block, for the I/O wrappers (fdclass.c). */
#ifndef CTR_FDCLASS_H
#define CTR_FDCLASS_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/common.h"
#include "core/session.h"

/* How an I/O call's descriptor decides its wait (ctr__io_begin's `rules`,
 * ctr__io_waited): */
#define CTR_IO_BY_FD 1 /* on a socket, the reason's NET_ variant */
#define CTR_IO_NB_FD 2 /* on a descriptor that cannot block, no wait at all */

/* ---------------------------------------------------------------------------
 * Descriptor classes, for the I/O wrappers (fdclass.c). One byte per
 * descriptor says whether it is a socket, so a read or write picks its NET_
 * or plain wait reason without a syscall. See fdclass.c for the protocol.
 * ------------------------------------------------------------------------- */

enum ctr_fd_class {
    CTR_FD_UNKNOWN = 0,
    CTR_FD_SOCKET,
    CTR_FD_OTHER,
    CTR_FD_TRACER = 0x80, /* the tracer's own descriptor (fdguard.c) */
};
/* A program descriptor's byte: its class in the low bits, and the last
 * answer of ctr__fd_cannot_block (fdclass.c): known, what it was, and the
 * period (ctr__fd_period, 3 bits) it was asked in. */
#define CTR_FD_CLASS_MASK 0x03
#define CTR_FD_NB_KNOWN 0x04
#define CTR_FD_NB_CANNOT_BLOCK 0x08
#define CTR_FD_NB_PERIOD_SHIFT 4
#define CTR_FD_NB_PERIOD_MASK 0x07

#define CTR_FD_TABLE_FDS (1u << 20) /* descriptors the table covers (Linux's default nr_open) */

/* The table, NULL until a traced call first needs it; never unmapped. */
extern _Atomic(_Atomic uint8_t *) ctr__fd_table;

/* The table, mapped on first use; NULL if it cannot be. Keeps errno. */
_Atomic uint8_t *ctr__fd_table_map(void);
/* Maps the table and stores c for fd. Keeps errno. */
void ctr__fd_note_slow(int fd, enum ctr_fd_class c);
/* Whether fd is a socket: the cached class, else one fstat (whose answer is
 * cached). For the slow path of a recorded call only; may change errno. */
int ctr__fd_is_socket(int fd);
/* Whether a call on fd returns at once instead of waiting: fd is open with
 * O_NONBLOCK and is something that honours it (not a regular file or a block
 * device). Asking the kernel takes one to three syscalls; the answer is kept
 * for the rest of the collector's period, and given from there when
 * `kept_ok` (the fcntl that changes the flag is not wrapped: a kept answer
 * may be up to a period old). For the slow path of a recorded call only;
 * may change errno. */
int ctr__fd_cannot_block(int fd, int kept_ok);
/* Collector, each round: a new period, in which each descriptor's
 * O_NONBLOCK is asked of the kernel again. */
void ctr__fd_period_tick(void);

/* ctr__io_waited() : whether an I/O call under `rules` (CTR_IO_*) on fd,
 * long enough to record, waited: not when its descriptor's O_NONBLOCK
 * decides and the descriptor cannot block (it spent its time working in
 * the kernel; the thread was running). The one rule for a call that
 * returned (`returned`: the period's answer will do: at worst one call
 * lands in the other profile), one that did not (ctr__call_jump) and one
 * in progress (PENDING, a trace's trailer): for those two the kernel is
 * asked, since a stale answer could hide a thread blocked for good. May
 * change errno. */
static inline int ctr__io_waited(int rules, int fd, int returned)
{
    return !((rules & CTR_IO_NB_FD) && ctr__fd_cannot_block(fd, returned));
}

/* ctr__fd_note() : fd (if >= 0) now has class c. Once the table exists this
 * is a relaxed store whether tracing or not, so that it follows every
 * descriptor the wrappers see being created or closed; before that only a
 * traced call makes the table. Keeps errno. */
static inline void ctr__fd_note(int fd, enum ctr_fd_class c)
{
    if ((unsigned)fd >= CTR_FD_TABLE_FDS)
        return;
    /* acquire: pairs with the release CAS in ctr__fd_table_map (fdclass.c)
     * that published the mapping. */
    _Atomic uint8_t *tb = atomic_load_explicit(&ctr__fd_table, memory_order_acquire);
    if (CTR_LIKELY(tb != NULL))
        /* relaxed: the byte is self-contained; nothing is published by it. */
        atomic_store_explicit(&tb[fd], (uint8_t)c, memory_order_relaxed);
    else if (c != CTR_FD_UNKNOWN && ctr__tracing())
        ctr__fd_note_slow(fd, c);
}

/* ctr__fd_copy() : `to` is now a duplicate of `from` (dup, dup2, dup3). */
static inline void ctr__fd_copy(int from, int to)
{
    /* acquire and relaxed: as in ctr__fd_note. */
    _Atomic uint8_t *tb = atomic_load_explicit(&ctr__fd_table, memory_order_acquire);
    if (!tb || (unsigned)to >= CTR_FD_TABLE_FDS)
        return;
    uint8_t c = (unsigned)from < CTR_FD_TABLE_FDS
                    ? atomic_load_explicit(&tb[from], memory_order_relaxed)
                    : (uint8_t)CTR_FD_UNKNOWN;
    atomic_store_explicit(&tb[to], c, memory_order_relaxed);
}

/* ctr__fd_flags_changed() : fd's file status flags were just set (fcntl
 * F_SETFL): its O_NONBLOCK is asked of the kernel again at its next
 * recorded call, not taken from this period's answer. Keeps errno. */
static inline void ctr__fd_flags_changed(int fd)
{
    /* acquire and relaxed: as in ctr__fd_note; a racing answer of another
     * thread's call is at worst the period-old one (a hint, as before). */
    _Atomic uint8_t *tb = atomic_load_explicit(&ctr__fd_table, memory_order_acquire);
    if (!tb || (unsigned)fd >= CTR_FD_TABLE_FDS)
        return;
    uint8_t c = atomic_load_explicit(&tb[fd], memory_order_relaxed);
    if (c != CTR_FD_TRACER && (c & CTR_FD_NB_KNOWN))
        atomic_store_explicit(&tb[fd], (uint8_t)(c & CTR_FD_CLASS_MASK), memory_order_relaxed);
}

#endif /* CTR_FDCLASS_H */
