/* SPDX-License-Identifier: MIT */
/* gen.h - one frame of a trace file decoded on its own: the unit of work of
 * the streaming analyzer (pipeline.c), done on a worker thread.
 *
 * A frame (FORMAT.md §2) holds whole generations (§3.1) in a 1.2 trace.
 * Decoding it needs nothing from the rest of the file: it decompresses the
 * frame, splits it into records, loads the table records as they are, and
 * decodes the batches' events per thread, their ticks turned into
 * nanoseconds where the frame's own clock points are enough (the rest needs
 * the clock points of the whole trace, which the main thread has:
 * pipeline.c). Every byte is hostile:
 * lengths are checked before use and arrays grow as entries are decoded.
 * Damage stops the frame where it is; what was decoded before it stays, and
 * `damage` says what and where.
 */
#ifndef CTR_GEN_H
#define CTR_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "ctrace_format.h"
#include "read/idmap.h"
#include "read/trace.h"

/* One thread's events of one kind in the frame, in the order read. */
struct ctr_gen_stream {
    uint64_t thread_id;
    uint8_t switches;           /* SWITCHES records: times in ns already */
    struct ctr_trace_event *ev; /* in a BATCH stream, ns holds ticks for the first
                                   in_ticks, nanoseconds after (gen.c) */
    size_t n, cap, in_ticks;
    uint64_t lost;     /* LOST events' counts */
    uint64_t start_pc; /* the last THREAD_START's routine, 0: none */
};

struct ctr_gen_string {
    uint64_t id;
    size_t off, len; /* bytes in stream[] */
};

struct ctr_gen_stack {
    uint64_t id;
    uint32_t n;
    size_t pc0; /* its pcs: pcs[pc0 .. pc0+n-1] */
};

struct ctr_gen_thread {
    uint64_t id, os_tid, parent, name_id, handle;
};

struct ctr_gen_count {
    uint64_t thread_id, count;
};

/* A CPU_TIME record, its time still in ticks. */
struct ctr_gen_cputime {
    uint64_t thread_id, ticks, cpu_ns, delay_ns;
    uint32_t flags;
};

/* A PENDING or WAITING record, with where it stood among the frame's
 * generation markers. */
struct ctr_gen_wait {
    uint64_t thread_id, ticks, reason, object, stack;
    uint32_t begins_before, ends_before;
};

/* A THREAD_NAME event: thread `thread_id` is now named string `name_id`. */
struct ctr_gen_name {
    uint64_t thread_id, name_id;
};

struct ctr_gen {
    uint64_t file_off, file_len; /* the frame's place in the file */
    uint8_t *stream;             /* the decompressed records */
    size_t stream_len, stream_cap;
    /* TRACE_INFO (the frame's last) */
    int has_info;
    uint64_t pid, tick_source, flags, exe_id, io_min_ns;
    /* Generation markers */
    uint32_t begins, ends;
    uint64_t first_gen; /* the number of its first GEN_BEGIN */
    /* SAMPLING (the frame's latest; lost is cumulative, FORMAT.md §3) */
    int has_sampling;
    uint64_t cpu_source, cpu_period_ns, cpu_lost;
    /* END */
    int has_end;
    uint64_t end_dropped, end_stack_overflows, end_untraced, end_sched_failed;
    /* Tables, as read (repeats included) */
    struct ctr_gen_string *strings;
    size_t nstrings, strings_cap;
    struct ctr_gen_stack *stacks;
    size_t nstacks, stacks_cap;
    uint64_t *pcs;
    size_t npcs, pcs_cap;
    struct ctr_mapping_info *mappings; /* path: a string id */
    size_t nmappings, mappings_cap;
    struct ctr_gen_thread *threads;
    size_t nthreads, threads_cap;
    struct ctr_gen_count *drops;
    size_t ndrops, drops_cap;
    struct ctr_gen_cputime *cputimes;
    size_t ncputimes, cputimes_cap;
    struct ctr_clock_point *clocks;
    size_t nclocks, clocks_cap;
    struct ctr_gen_wait *pending, *waiting;
    size_t npending, pending_cap, nwaiting, waiting_cap;
    struct ctr_gen_name *names;
    size_t nnames, names_cap;
    /* Events */
    struct ctr_gen_stream *streams;
    size_t nstreams, streams_cap;
    uint64_t nevents, events_by_type[CTR_EV_LIMIT], batch_bytes;
    /* Stack ids that events refer to and this frame has no STACK record
     * of: id -> how many references (checked against the whole trace's
     * table at the end: a 1.1 trace need not repeat them). */
    struct ctr_idmap foreign_stacks;
    /* Bytes held, for the pipeline's memory budget. */
    size_t mem;
    char damage[200];  /* why it is damaged; empty: it decoded whole */
    size_t damage_off; /* where in its stream */
    /* The file ends inside this frame, after whole blocks: what they held
     * was read, and it is no damage if that was whole generations (a
     * writer flushes an open frame at the end of each: FORMAT.md §2). */
    int unfinished;
};

/* What one frame may take of the reader's memory: decoders.c keeps the
 * account across its threads, so that a hostile file (72 KB of zstd frames
 * that say "256 MiB of zeros") costs the budget at most, whatever -j. */
struct ctr_gen_budget {
    /* Most bytes a frame may need to decompress: its stream, and the zstd
     * window while it decodes. More is taken for damage. */
    size_t frame_max;
    /* account(arg, bytes) : the frame takes `bytes` more (> 0) or gives
     * them back (< 0). @return 0 granted (always when giving back), or
     * -EAGAIN: not now; the decoding stops with -EAGAIN and the caller
     * decodes the frame again later. NULL: every request granted. */
    int (*account)(void *arg, ptrdiff_t bytes);
    void *arg;
};

/* ctr_gen_decode() : decodes the frame data[0..len-1], found at file offset
 * file_off, into *g (zeroed first), with the decompression context dctx (a
 * thread's own, reused from frame to frame; a frame with a window over
 * CTR_GEN_SHARED_WINDOW gets a context of its own, freed with its
 * decoding, so that a thread's context stays small; NULL: one made for the
 * call). `cut`: the file ends inside this frame (the bytes are all there
 * is). Its big buffers come from pool (bufpool.h; NULL: malloc), within
 * budget (NULL: CTR_GEN_MAX_STREAM a frame, granted): what it keeps of it
 * when it returns is its stream buffer's size (g->stream_cap). Damage is
 * reported in g->damage.
 * @return 0, -ENOMEM (then g holds what it decoded, and damage says so), or
 *         -EAGAIN when budget->account() said so (g is to be freed with
 *         ctr_gen_free(), and holds g->stream_cap of the budget). */
struct ZSTD_DCtx_s;
struct ctr_bufpool;
int ctr_gen_decode(struct ctr_gen *g, const uint8_t *data, size_t len, uint64_t file_off, int cut,
                   struct ZSTD_DCtx_s *dctx, struct ctr_bufpool *pool,
                   const struct ctr_gen_budget *budget);

/* ctr_gen_free() : frees g, its big buffers back to pool (bufpool.h; NULL:
 * freed). */
void ctr_gen_free(struct ctr_gen *g, struct ctr_bufpool *pool);

/* Most bytes a frame may decompress to: the writer cuts a frame at a few
 * MiB (a round's output); more is not a ctrace frame. */
#define CTR_GEN_MAX_STREAM CTR_FRAME_MAX_CONTENT

/* A decompression window up to this size is decoded in the thread's own
 * context, which keeps it for the next frame (the writer's frames need
 * about 1 MiB); a bigger one in a context of its own. */
#define CTR_GEN_SHARED_WINDOW ((size_t)4 << 20)

#endif
