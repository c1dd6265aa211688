/* SPDX-License-Identifier: MIT */
/* bt2read.c - a native trace file read frame by frame, each frame's
 * tracepoints in time order (see bt2read.h).
 *
 * A frame is decompressed whole (ZSTD_decompressStream, the file read in
 * chunks), then planned in two walks of its records: the first finds the
 * CLOCK records that convert ticks, the second makes a "run" of every
 * record (a BATCH's or SWITCHES' events are one run, any other record a
 * run of one) and an item {time, run} of every tracepoint. The items are
 * sorted by time, then run: runs are numbered in file order, so ties keep
 * the file's order, and a run's own times never decrease (made so as they
 * are planned), so its items come out in its order. Handing out an item
 * steps its run's cursor: ctr_lttng_transcribe_event for one event, or
 * ctr_lttng_transcribe over the single record.
 */
#include "bt2read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "ctrace_format.h"
#include "ctrace_grow.h"

/* A CLOCK record: ticks and CLOCK_MONOTONIC at one instant (FORMAT.md §6). */
struct clock_pt {
    uint64_t ticks, mono;
};

/* A record of the frame, and where its cursor is. */
struct run {
    uint32_t off;  /* the record, from the frame's start */
    uint32_t q;    /* events: the next one's offset */
    uint64_t time; /* events: the time of the one before q */
};

struct item {
    uint64_t ns;
    uint32_t run;
};

/* What babeltrace2 can take from the Unix epoch in nanoseconds (an
 * int64), and the clock offset kept well inside it (146 years). */
#define OFFSET_LIMIT ((int64_t)1 << 62)

struct ctrbt_reader {
    char *path;
    int fd;
    ZSTD_DCtx *dctx;
    /* Compressed input: in[pos, len) not yet decompressed, in[0] at
     * file offset in_off. */
    uint8_t *in;
    size_t in_pos, in_len, in_cap;
    uint64_t in_off;
    int eof;
    /* The frame: its content, and where it began in the file. */
    uint8_t *frame;
    size_t frame_len, frame_cap;
    uint64_t frame_off;
    /* The file ends inside the frame, at byte cut_at: frame holds what
     * its whole blocks decoded to (FORMAT.md §2: whole generations, when
     * the writer was stopped between two). */
    int frame_cut, cut_at_flush;
    uint64_t cut_at;
    /* Time: the frame's CLOCK points with the last two of the frames
     * before (sorted by ticks), and what earlier frames said. */
    struct clock_pt *pts;
    size_t npts, pts_cap;
    struct clock_pt carry[2];
    size_t ncarry;
    int ticks_are_ns; /* TRACE_INFO's tick_source is 0 */
    uint64_t anchor;  /* the last record's time */
    int first_done;   /* the first frame was planned: offset and pid fixed */
    int64_t offset;
    uint64_t pid;
    uint64_t floor, ceiling, now;
    /* The plan. */
    struct run *runs;
    size_t nruns, runs_cap;
    struct item *items;
    size_t nitems, items_cap, next_item;
    /* Damage found inside the frame, reported after its tracepoints. */
    char damage[320];
    int failed;
};

static void say(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------------------
 * Opening
 * ------------------------------------------------------------------------- */

/* Reads up to n bytes at the file's current offset; short only at its end.
 * @return the bytes read, or -errno. */
static ssize_t read_full(int fd, uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, p + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

int ctrbt_is_trace(const char *path)
{
    /* Non-blocking, and regular files only: asking must not wait on a
     * FIFO's writer, nor eat its bytes. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    uint8_t magic[CTR_FILE_MAGIC_LEN];
    int yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              read_full(fd, magic, sizeof(magic)) == (ssize_t)sizeof(magic) &&
              memcmp(magic, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN) == 0;
    close(fd);
    return yes;
}

int ctrbt_open(const char *path, struct ctrbt_reader **out, char *err, size_t errlen)
{
    *out = NULL;
    struct ctrbt_reader *r = calloc(1, sizeof(*r));
    if (r)
        r->fd = -1;
    if (!r || !(r->path = strdup(path)) || !(r->dctx = ZSTD_createDCtx())) {
        say(err, errlen, "%s: out of memory", path);
        ctrbt_close(r);
        return -1;
    }
    r->in_cap = ZSTD_DStreamInSize();
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) {
        say(err, errlen, "%s: %s", path, strerror(errno));
        ctrbt_close(r);
        return -1;
    }
    /* FORMAT.md §2: the magic, then the major version this reader knows
     * (a higher minor only adds record kinds, which transcription skips). */
    uint8_t h[CTR_FILE_HEADER_LEN];
    ssize_t n = read_full(r->fd, h, sizeof(h));
    if (n < 0) {
        say(err, errlen, "%s: %s", path, strerror((int)-n));
    } else if (n < CTR_FILE_MAGIC_LEN || memcmp(h, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN) != 0) {
        say(err, errlen, "%s: not a ctrace trace (no ctrace magic at its start)", path);
    } else if (n < CTR_FILE_HEADER_LEN) {
        say(err, errlen, "%s: cut short inside its %d-byte header", path, CTR_FILE_HEADER_LEN);
    } else if ((h[8] | h[9] << 8) != CTR_VERSION_MAJOR) {
        say(err, errlen, "%s: format version %d.%d, which this reader (%d.%d) does not read", path,
            h[8] | h[9] << 8, h[10] | h[11] << 8, CTR_VERSION_MAJOR, CTR_VERSION_MINOR);
    } else if (!(r->in = malloc(r->in_cap))) {
        say(err, errlen, "%s: out of memory", path);
    } else {
        r->in_off = CTR_FILE_HEADER_LEN;
        r->ticks_are_ns = 1; /* until a TRACE_INFO says otherwise: CLOCKs agree then */
        r->ceiling = INT64_MAX;
        *out = r;
        return 0;
    }
    ctrbt_close(r);
    return -1;
}

void ctrbt_close(struct ctrbt_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    ZSTD_freeDCtx(r->dctx);
    free(r->in);
    free(r->frame);
    free(r->pts);
    free(r->runs);
    free(r->items);
    free(r->path);
    free(r);
}

/* ---------------------------------------------------------------------------
 * Frames (FORMAT.md §2)
 * ------------------------------------------------------------------------- */

/* Whether the frame the file ends inside stops where its writer flushed
 * it (ctr_frame_cut_at_flush), read again from the file: its start may
 * have left the input buffer. */
static int frame_cut_at_flush(const struct ctrbt_reader *r)
{
    size_t n = (size_t)(r->cut_at - r->frame_off);
    uint8_t *z = n <= CTR_FRAME_MAX_CONTENT ? malloc(n ? n : 1) : NULL;
    int clean =
        z && pread(r->fd, z, n, (off_t)r->frame_off) == (ssize_t)n && ctr_frame_cut_at_flush(z, n);
    free(z);
    return clean;
}

/* Decompresses the next frame into r->frame. @return 1, 0 at the end of the
 * file (nothing of a frame after the last), -1 with err set. */
static int read_frame(struct ctrbt_reader *r, char *err, size_t errlen)
{
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->frame_len = 0;
    r->frame_cut = 0;
    r->frame_off = r->in_off + r->in_pos;
    for (;;) {
        /* Room for the content, and one byte past the bound to see it
         * passed. */
        if (r->frame_len == r->frame_cap) {
            if (r->frame_cap > CTR_FRAME_MAX_CONTENT) {
                say(err, errlen, "%s: the frame at byte %llu decompresses to more than %zu MiB",
                    r->path, (unsigned long long)r->frame_off, CTR_FRAME_MAX_CONTENT >> 20);
                return -1;
            }
            size_t cap = r->frame_cap ? r->frame_cap * 2 : (size_t)1 << 20;
            if (cap > CTR_FRAME_MAX_CONTENT)
                cap = CTR_FRAME_MAX_CONTENT + 1;
            uint8_t *p = realloc(r->frame, cap);
            if (!p) {
                say(err, errlen, "%s: out of memory for the frame at byte %llu", r->path,
                    (unsigned long long)r->frame_off);
                return -1;
            }
            r->frame = p;
            r->frame_cap = cap;
        }
        if (r->in_pos == r->in_len && !r->eof) {
            r->in_off += r->in_len;
            r->in_pos = r->in_len = 0;
            ssize_t n = read_full(r->fd, r->in, r->in_cap);
            if (n < 0) {
                say(err, errlen, "%s: reading at byte %llu: %s", r->path,
                    (unsigned long long)r->in_off, strerror((int)-n));
                return -1;
            }
            r->in_len = (size_t)n;
            r->eof = r->in_len < r->in_cap;
        }
        ZSTD_inBuffer in = {r->in, r->in_len, r->in_pos};
        ZSTD_outBuffer out = {r->frame, r->frame_cap, r->frame_len};
        size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
        int moved = in.pos != r->in_pos || out.pos != r->frame_len;
        r->in_pos = in.pos;
        r->frame_len = out.pos;
        if (ZSTD_isError(ret)) {
            say(err, errlen, "%s: the frame at byte %llu is damaged: %s", r->path,
                (unsigned long long)r->frame_off, ZSTD_getErrorName(ret));
            return -1;
        }
        if (ret == 0)
            return 1; /* the frame ended (its checksum checked) */
        if (!moved && r->in_pos == r->in_len && r->eof) {
            if (r->in_off + r->in_pos == r->frame_off)
                return 0;
            /* What the whole blocks gave is handed out; plan() judges it. */
            r->frame_cut = 1;
            r->cut_at = r->in_off + r->in_len;
            r->cut_at_flush = frame_cut_at_flush(r);
            return 1;
        }
    }
}

/* ---------------------------------------------------------------------------
 * Time (FORMAT.md §6)
 * ------------------------------------------------------------------------- */

static int pt_cmp(const void *a, const void *b)
{
    const struct clock_pt *x = a, *y = b;
    return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

/* ticks to CLOCK_MONOTONIC ns: the line through the two points around
 * them, or the nearest two outside them. long double holds any uint64
 * exactly; the result is clamped before its conversion. */
static uint64_t to_ns(const struct ctrbt_reader *r, uint64_t ticks)
{
    if (r->ticks_are_ns || r->npts == 0)
        return ticks;
    const struct clock_pt *a = &r->pts[0], *b = NULL;
    if (r->npts > 1) {
        size_t lo = 0, hi = r->npts - 1; /* the last point at or before ticks, within [0, n-2] */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (r->pts[mid].ticks <= ticks)
                lo = mid;
            else
                hi = mid;
        }
        a = &r->pts[lo];
        b = &r->pts[lo + 1];
    }
    long double slope = b ? ((long double)b->mono - (long double)a->mono) /
                                ((long double)b->ticks - (long double)a->ticks)
                          : 1.0L;
    long double ns = (long double)a->mono + ((long double)ticks - (long double)a->ticks) * slope;
    if (!(ns > 0))
        return 0;
    if (ns >= 18446744073709551615.0L)
        return UINT64_MAX;
    return (uint64_t)ns;
}

/* The first walk: the frame's CLOCK points (and the last two before it),
 * its tick source; the first frame's clock offset and pid. Stops at
 * damage, which the second walk reports. */
static int find_clocks(struct ctrbt_reader *r)
{
    r->npts = 0;
    if (ctr_grow(&r->pts, &r->pts_cap, r->ncarry, sizeof(*r->pts)) != 0)
        return -1;
    for (size_t i = 0; i < r->ncarry; i++)
        r->pts[i] = r->carry[i];
    r->npts = r->ncarry;
    int first_clock = 1;
    const uint8_t *p = r->frame, *end = r->frame + r->frame_len;
    while (p < end) {
        struct ctr_record rec;
        struct ctr_record_fields f;
        size_t n = ctr_decode_record(p, end, &rec);
        if (n == 0)
            break;
        p += n;
        if ((rec.kind != CTR_REC_CLOCK && rec.kind != CTR_REC_TRACE_INFO) ||
            ctr_decode_record_fields(&rec, &f) != 0)
            continue;
        if (rec.kind == CTR_REC_TRACE_INFO) {
            r->ticks_are_ns = f.v[1] == CTR_TICKS_MONOTONIC_NS;
            if (!r->first_done && !r->pid)
                r->pid = f.v[0];
            continue;
        }
        if (ctr_grow(&r->pts, &r->pts_cap, r->npts + 1, sizeof(*r->pts)) != 0)
            return -1;
        r->pts[r->npts++] = (struct clock_pt){f.v[0], f.v[1]};
        if (first_clock) {
            /* The time of the records before the frame's first CLOCK. */
            r->anchor = f.v[1];
            first_clock = 0;
            if (!r->first_done) {
                /* realtime - monotonic, within what babeltrace2 can add up. */
                uint64_t real = f.v[2], mono = f.v[1];
                uint64_t d = real >= mono ? real - mono : mono - real;
                int64_t off = d > (uint64_t)OFFSET_LIMIT ? OFFSET_LIMIT : (int64_t)d;
                r->offset = real >= mono ? off : -off;
            }
        }
    }
    if (r->npts > 1) /* (qsort takes no NULL, even for nothing) */
        qsort(r->pts, r->npts, sizeof(*r->pts), pt_cmp);
    size_t k = 0; /* equal ticks say nothing about the rate: keep the first */
    for (size_t i = 0; i < r->npts; i++)
        if (k == 0 || r->pts[i].ticks != r->pts[k - 1].ticks)
            r->pts[k++] = r->pts[i];
    r->npts = k;
    r->ncarry = r->npts < 2 ? r->npts : 2;
    for (size_t i = 0; i < r->ncarry; i++)
        r->carry[i] = r->pts[r->npts - r->ncarry + i];
    if (!r->first_done) {
        r->first_done = 1;
        r->ceiling = INT64_MAX - (r->offset > 0 ? (uint64_t)r->offset : 0);
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * The plan
 * ------------------------------------------------------------------------- */

/* While planning: the run being planned, the last time it gave. */
struct planner {
    struct ctrbt_reader *r;
    uint64_t last;
    int oom;
};

static void add_item(struct planner *pl, uint64_t ns)
{
    struct ctrbt_reader *r = pl->r;
    if (ns < pl->last)
        ns = pl->last; /* a run's times never decrease: see the top */
    pl->last = ns;
    if (ctr_grow(&r->items, &r->items_cap, r->nitems + 1, sizeof(*r->items)) != 0) {
        pl->oom = 1;
        return;
    }
    r->items[r->nitems++] = (struct item){ns, (uint32_t)(r->nruns - 1)};
}

static void plan_event(void *ctx, uint64_t thread, uint64_t time, uint8_t type, int sched,
                       const uint64_t *args, const void *payload, uint32_t len)
{
    (void)thread, (void)type, (void)args, (void)payload, (void)len;
    struct planner *pl = ctx;
    add_item(pl, sched ? time : to_ns(pl->r, time));
}

static void plan_record(void *ctx, uint8_t kind, const uint64_t *fields, const uint64_t *tail_u,
                        const void *tail_b, uint32_t tail_n)
{
    (void)tail_u, (void)tail_b, (void)tail_n;
    struct planner *pl = ctx;
    if (kind == CTR_REC_CLOCK && fields[1] > pl->r->anchor)
        pl->r->anchor = fields[1];
    add_item(pl, pl->r->anchor);
}

static int item_cmp(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? -1 : 1;
    return x->run < y->run ? -1 : x->run > y->run;
}

/* The second walk: a run per record, an item per tracepoint. Damage is
 * kept in r->damage for after the tracepoints before it. @return 0 or -1
 * (out of memory). */
static int plan(struct ctrbt_reader *r)
{
    r->nruns = r->nitems = r->next_item = 0;
    struct planner pl = {r, 0, 0};
    struct ctr_lttng_emitter e = {&pl, plan_event, plan_record};
    const uint8_t *p = r->frame, *end = r->frame + r->frame_len;
    unsigned begins = 0, ends = 0;
    while (p < end && !pl.oom) {
        struct ctr_record rec;
        struct ctr_record_fields f;
        size_t n = ctr_decode_record(p, end, &rec);
        if (n == 0)
            break;
        begins += rec.kind == CTR_REC_GEN_BEGIN;
        ends += rec.kind == CTR_REC_GEN_END;
        int known = rec.kind < CTR_REC_LIMIT && ctr_record_specs[rec.kind].name;
        if (known) {
            if (ctr_grow(&r->runs, &r->runs_cap, r->nruns + 1, sizeof(*r->runs)) != 0)
                return -1;
            struct run *run = &r->runs[r->nruns++];
            run->off = (uint32_t)(p - r->frame);
            pl.last = 0;
            if (ctr_record_specs[rec.kind].tail != CTR_ARG_EVENTS) {
                if (ctr_lttng_transcribe(p, p + n, 0, &e) != 0)
                    break;
            } else {
                if (ctr_decode_record_fields(&rec, &f) != 0)
                    break;
                run->q = (uint32_t)(f.tail - r->frame);
                run->time = f.v[1];
                uint64_t time = f.v[1];
                int sched = rec.kind == CTR_REC_SWITCHES;
                const uint8_t *q = f.tail;
                size_t m = 1;
                while (q < f.tail_end && !pl.oom &&
                       (m = ctr_lttng_transcribe_event(q, f.tail_end, f.v[0], &time, sched, &e)))
                    q += m;
                if (m == 0)
                    break;
            }
        }
        p += n; /* a kind of a later version: skipped (FORMAT.md §3) */
    }
    if (pl.oom)
        return -1;
    if (r->frame_cut && !(r->cut_at_flush && p == end && begins > 0 && begins == ends))
        snprintf(r->damage, sizeof(r->damage),
                 "%s: the file ends inside the frame at byte %llu (cut short at %llu bytes)",
                 r->path, (unsigned long long)r->frame_off, (unsigned long long)r->cut_at);
    else if (p < end)
        snprintf(r->damage, sizeof(r->damage),
                 "%s: the frame at byte %llu is damaged at byte %zu of its %zu decompressed: "
                 "a record that does not decode",
                 r->path, (unsigned long long)r->frame_off, (size_t)(p - r->frame), r->frame_len);
    if (r->nitems > 1)
        qsort(r->items, r->nitems, sizeof(*r->items), item_cmp);
    return 0;
}

int ctrbt_next_frame(struct ctrbt_reader *r, char *err, size_t errlen)
{
    r->nitems = r->next_item = 0;
    if (r->failed || r->damage[0]) {
        snprintf(err, errlen, "%s", r->damage[0] ? r->damage : "reading stopped at damage");
        r->failed = 1;
        return -1;
    }
    int rc = read_frame(r, err, errlen);
    if (rc == 1 && (find_clocks(r) != 0 || plan(r) != 0)) {
        say(err, errlen, "%s: out of memory planning the frame at byte %llu (%zu bytes)", r->path,
            (unsigned long long)r->frame_off, r->frame_len);
        rc = -1;
    }
    if (rc < 0) {
        r->nitems = 0;
        r->failed = 1;
        snprintf(r->damage, sizeof(r->damage), "%s", err);
    }
    return rc;
}

int ctrbt_next(struct ctrbt_reader *r, const struct ctr_lttng_emitter *e)
{
    if (r->next_item == r->nitems)
        return 0;
    const struct item *it = &r->items[r->next_item++];
    struct run *run = &r->runs[it->run];
    uint64_t ns = it->ns < r->floor ? r->floor : it->ns;
    r->now = r->floor = ns < r->ceiling ? ns : r->ceiling;
    /* The plan decoded this record and these events already: they decode
     * again (the checks only keep the compiler from doubting it). */
    const uint8_t *end = r->frame + r->frame_len;
    struct ctr_record rec;
    struct ctr_record_fields f;
    size_t n = ctr_decode_record(r->frame + run->off, end, &rec);
    if (n == 0 || ctr_decode_record_fields(&rec, &f) != 0)
        return 1;
    if (ctr_record_specs[rec.kind].tail != CTR_ARG_EVENTS) {
        ctr_lttng_transcribe(r->frame + run->off, r->frame + run->off + n, 0, e);
    } else {
        run->q += (uint32_t)ctr_lttng_transcribe_event(r->frame + run->q, f.tail_end, f.v[0],
                                                       &run->time, rec.kind == CTR_REC_SWITCHES, e);
    }
    return 1;
}

uint64_t ctrbt_time(const struct ctrbt_reader *r)
{
    return r->now;
}

int64_t ctrbt_clock_offset(const struct ctrbt_reader *r)
{
    return r->offset;
}

uint64_t ctrbt_pid(const struct ctrbt_reader *r)
{
    return r->pid;
}
