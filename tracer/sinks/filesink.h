/* SPDX-License-Identifier: MIT */
/* filesink.h - the sink that writes a trace file (filesink.c): trace_start's,
 * and the one a `ctrace ctl` client asks for (control.c). */
#ifndef CTR_FILESINK_H
#define CTR_FILESINK_H

#include <stdatomic.h>
#include <stdint.h>

#include "collect/sink.h"
#include "ctrace/trace.h"

/* ---------------------------------------------------------------------------
 * The trace file as a sink (filesink.c): trace_start's, and the one a
 * `ctrace ctl PID trace` request writes (control.c)
 * ------------------------------------------------------------------------- */

struct ctr_file_sink {
    struct ctr_sink sink; /* first (filesink.c); its name set by the owner */
    /* The file: a tracer descriptor (owned: opened from trace_options' path,
     * or given by the caller as owned_fd), else the program's descriptor
     * fd, written as it is. */
    struct ctr_owned_fd own;
    int fd;
    int owned;
    /* The giver's, while f writes its file: its scribe goes back to it
     * with the result (ctr__file_sink_result), stalled or not. */
    struct ctr_owned_fd *given;
    /* The first negative errno of a write: the collector stores it, the
     * owner reads it once detached (relaxed: the detach synchronizes). */
    _Atomic int error;
    _Atomic uint64_t bytes;
    /* The collector's: the file's compression stream, opened at the first
     * generation (the session's level is known by then). */
    struct ctr_zstream z;
    int z_open;
    unsigned frame_gens; /* generations in the open frame */
};

/* Writes the file's header and attaches f (as ctr__sink_attach, with o's
 * options if it begins the session). The file: `given` unless NULL (a file
 * of the tracer's that stays the caller's to close, which must not move
 * while f is attached: the collector's own), else o->path (created 0600, a
 * symbolic link not followed; closed by the owner with ctr__owned_close
 * once detached), else o->fd. Under the API lock.
 * @return 0, or -errno (nothing is left attached or open). */
int ctr__file_sink_start(struct ctr_file_sink *f, const struct trace_options *o,
                         struct ctr_owned_fd *given);
/* After f's detach: the first write error (0 if none), and the bytes
 * written into *bytes (unless NULL); a given file's scribe is its giver's
 * again. */
int ctr__file_sink_result(struct ctr_file_sink *f, uint64_t *bytes);

/* Stops a running trace_start as the program exits, saying why if the file
 * could not be written whole (filesink.c). */
void ctr__trace_stop_at_exit(void);
/* The trace file's descriptor while trace_start's file is open, else -1
 * (filesink.c; for tests). */
int ctr__trace_fd(void);

#endif /* CTR_FILESINK_H */
