/* SPDX-License-Identifier: MIT */
/* frame.h - one zstd frame of a trace (FORMAT.md §2) as the sources hand it
 * to the decoders: a file's (source.h) or one rebuilt from an LTTng trace's
 * events (ctf.h, ctf_rebuild.h). Its own header so that the LTTng readers,
 * below the file source that opens them, need nothing of it.
 */
#ifndef CTR_FRAME_H
#define CTR_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* One frame, or a damaged stretch of the file. */
struct ctr_frame {
    uint8_t *data; /* malloc'd: the caller frees it */
    size_t len;
    uint64_t file_off; /* where it starts */
    int cut;           /* the file ends inside it */
    /* Non-empty: the bytes from skipped_off up to file_off were not a
     * frame and were skipped (data may still hold the frame after them). */
    char skipped[160];
    uint64_t skipped_off;
};

#endif
