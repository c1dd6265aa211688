/* SPDX-License-Identifier: MIT */
/* decoders.h - a trace's frames decoded ahead of the analysis: the source
 * (source.h) cut into frames, each decoded (gen.h) on one of jobs - 1
 * worker threads, handed back in file order (pipeline.c takes them in).
 * With one job there are no threads: each frame is decoded when asked
 * for. At most `jobs` frames are out at once, and fewer while the decoded
 * ones already hold a memory budget, so memory stays that of the frames in
 * flight whatever the trace's length.
 *
 * The memory budget `mem` (the analyzer's -mem) bounds what decompression
 * takes, whatever `jobs`: a quarter for the frame the caller waits for, an
 * eighth shared by the frames decoded ahead of it (one that does not fit
 * is decoded later, in its turn), an eighth of free buffers kept, and the
 * rest for the two frames the caller holds (pipeline.c). So a frame needs
 * at most mem / 4 to decompress (its stream and zstd's window), or it is
 * damage; the events decoded from the streams come on top.
 *
 * Not thread-safe: one caller, which owns the threads it starts.
 */
#ifndef CTR_DECODERS_H
#define CTR_DECODERS_H

#include <stdint.h>

#include "read/gen.h"
#include "read/source.h"

struct ctr_decoders;

/* One frame decoded, or the end of the file. */
struct ctr_decoded {
    struct ctr_gen gen; /* the caller's: ctr_gen_free(&gen, ctr_decoders_buffers()) */
    int rc;             /* ctr_gen_decode()'s */
    /* Non-empty: the bytes from skipped_off up to file_off were no frame. */
    char skipped[160];
    uint64_t skipped_off, file_off;
};

/* The budget when none is given, and the least one: a frame of the writer
 * (4 MiB of records and a window of about 1 MiB) fits a quarter of it. The
 * default keeps as many free buffers as jobs + 1 frames' worth up to -j 5
 * (fewer made it slower to settle: 20 MB more at -j 2 on 8 M events). */
#define CTR_DECODERS_MEM_DEFAULT ((size_t)512 << 20)
#define CTR_DECODERS_MEM_MIN ((size_t)32 << 20)

/* ctr_decoders_new() : decoding of src's frames with `jobs` threads in all
 * (the caller's among them), within mem bytes (less than
 * CTR_DECODERS_MEM_MIN: that). @return NULL if out of memory. */
struct ctr_decoders *ctr_decoders_new(struct ctr_source *src, int jobs, size_t mem);

/* ctr_decoders_next() : the next frame in file order into *out.
 * @return 1 with a frame; 0 at the end (out->skipped may say that trailing
 *         bytes were no frame); a negative errno when reading failed (the
 *         reason in out->skipped). */
int ctr_decoders_next(struct ctr_decoders *d, struct ctr_decoded *out);

/* Where the buffers of the frames handed out go back (bufpool.h). */
struct ctr_bufpool *ctr_decoders_buffers(struct ctr_decoders *d);

/* ctr_decoders_free() : stops the threads and frees what is left; the
 * buffer pool goes with it, so frames handed out must be freed first. */
void ctr_decoders_free(struct ctr_decoders *d);

#endif
