/* SPDX-License-Identifier: MIT */
/* scribe.h - writing into a file that may stall (a frozen filesystem, a
 * hung NFS or FUSE mount) without ever stalling the tracer or the program's
 * exit (CONTROL.md §3).
 *
 * A thread blocked in write() on such a file cannot be interrupted, and the
 * process it belongs to cannot exit until it returns: the kernel reports a
 * process dead only once all its threads are. So the tracer does not write
 * its files itself: a scribe does, a small process of its own per file
 * (clone(CLONE_VM): the tracer's memory, its own copy of the descriptor
 * table with only that file left open, every signal blocked). The writer
 * hands it a piece at a time and waits for it at most CTR_SCRIBE_STALL_NS;
 * a scribe that takes longer is abandoned: the file ends there (cut short,
 * as the reader reports it), every later write fails at once, and the
 * scribe exits when its write returns, whenever that is, without holding
 * anything of the program's (not its exit, not its descriptors).
 *
 * The scribe runs code that touches nothing but its own stack, the shared
 * struct and raw system calls (scribe_child.c): it has the creating
 * thread's TLS pointer, so no libc call, no errno, no sanitizer runtime.
 * x86-64 only, and not under ThreadSanitizer; elsewhere
 * ctr__scribe_start says -ENOSYS and the caller writes directly.
 */
#ifndef CTR_SCRIBE_H
#define CTR_SCRIBE_H

#include <stddef.h>
#include <stdint.h>

/* How long a piece may take before its scribe is abandoned; a piece is at
 * most CTR_SCRIBE_PIECE bytes (so a file is abandoned when it takes less
 * than 128 KiB/s). The program's exit waits at most this long for each file
 * the tracer writes (CONTROL.md §3, ctrace(1)). */
#define CTR_SCRIBE_STALL_NS (2ull * 1000 * 1000 * 1000)
#define CTR_SCRIBE_PIECE (256u << 10)
/* Abandoned scribes still blocked: past this many, no new scribe starts
 * (each holds a few hundred KiB until its file thaws). */
#define CTR_SCRIBE_STUCK_MAX 4

/* What a stalled file's error says (-ETIMEDOUT from the calls below). */
#define CTR_SCRIBE_STALL_TEXT \
    "the file took no writes for 2 s (a frozen or hung filesystem?): abandoned, cut short there"

struct ctr_scribe;

/* Starts a scribe for the tracer's descriptor fd. Thread-safe; keeps errno.
 * @return 0 and *out; -EAGAIN when CTR_SCRIBE_STUCK_MAX abandoned scribes
 * are still blocked (do not write: that file system is not answering);
 * another -errno when no process can be made (ENOSYS off x86-64, EAGAIN
 * for RLIMIT_NPROC, EPERM under seccomp, ENOMEM): write directly then. */
int ctr__scribe_start(int fd, struct ctr_scribe **out);

/* Writes buf whole into s's file, a piece at a time, waiting at most
 * CTR_SCRIBE_STALL_NS for each. One writer at a time per scribe. Keeps
 * errno. @return 0; -errno of the write; -EPIPE if the scribe died;
 * -ETIMEDOUT when a piece stalled: s is then abandoned and no longer the
 * caller's (do not end it). */
int ctr__scribe_write(struct ctr_scribe *s, const void *buf, size_t len);

/* Ends s (not in a write): its process exits and is reaped, its memory
 * freed. In a forked child (s belongs to the parent) it is only forgotten.
 * Keeps errno. */
void ctr__scribe_end(struct ctr_scribe *s);

/* What a writing error err (positive errno) says: the stall's text for
 * ETIMEDOUT, strerror's otherwise. */
const char *ctr__scribe_strerror(int err);

/* Abandoned scribes still blocked (for `ctl status`). */
unsigned ctr__scribe_stuck(void);

/* In a forked child, alone: the list's lock, which a thread of the parent
 * may have held at the fork, is free again (the parent's scribes on the
 * list are let go by the next reap: they are not the child's). */
void ctr__scribe_forked(void);

#endif
