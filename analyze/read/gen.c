/* SPDX-License-Identifier: MIT */
/* gen.c - decodes one frame of a trace (see gen.h).
 *
 * Three steps over bytes that are all treated as hostile:
 *   1. decompress the frame (FORMAT.md §2), at most CTR_GEN_MAX_STREAM bytes;
 *   2. split it into records (§3) and load the table records, keeping each
 *      BATCH and SWITCHES as a reference;
 *   3. decode the batches' events (§4), per thread, once the frame's own
 *      STACK records are known (to count references to stacks it lacks).
 * The bytes of records and events are decoded by ctrace_format.h, whose
 * decoders every reader of the format shares; this file builds the frame's
 * part of the model.
 */
#include "read/gen.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_estimateDStreamSize_fromFrame */
#include <zstd.h>

#include "read/bufpool.h"
#include "ctrace_grow.h"

/* Room for one more element of arr (n used, cap allocated): its address, or NULL. */
#define PUSH(arr, n, cap) \
    (ctr_grow(&(arr), &(cap), (n) + 1, sizeof(*(arr))) == 0 ? &(arr)[(n)++] : NULL)

/* What an event takes in a batch, at least for most: the guess of how many
 * events a batch holds (a wrong guess costs a copy, or a shrink). */
#define RESERVE_BYTES_PER_EVENT 5

struct batch_ref {
    uint64_t thread_id, base;
    size_t off, len;
    int switches;
};

struct dec {
    struct ctr_gen *g;
    struct batch_ref *batches;
    size_t nbatches, batches_cap;
    struct ctr_idmap own_stacks; /* the frame's STACK ids */
    uint64_t last_own_stack;     /* the last id found there (0: none) */
    struct ctr_idmap stream_of;  /* thread id * 2 + switches -> index in g->streams */
};

__attribute__((format(printf, 3, 4))) static void damage(struct ctr_gen *g, size_t stream_off,
                                                         const char *fmt, ...)
{
    if (g->damage[0])
        return; /* the first damage is the one that matters */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->damage, sizeof(g->damage), fmt, ap);
    va_end(ap);
    g->damage_off = stream_off;
}

/* ---------------------------------------------------------------------------
 * 1. Decompression
 * ------------------------------------------------------------------------- */

/* Asks the budget for bytes (> 0) or gives them back (< 0): 0 or -EAGAIN. */
static int account(const struct ctr_gen_budget *b, ptrdiff_t bytes)
{
    return b && b->account ? b->account(b->arg, bytes) : 0;
}

static int decompress(struct ctr_gen *g, const uint8_t *data, size_t len, int cut, ZSTD_DCtx *reuse,
                      struct ctr_bufpool *pool, const struct ctr_gen_budget *budget)
{
    size_t max =
        budget && budget->frame_max < CTR_GEN_MAX_STREAM ? budget->frame_max : CTR_GEN_MAX_STREAM;
    /* What zstd holds while it decodes, its window mostly, as the frame
     * header says (a header too damaged to say is zstd's to report). A
     * frame of zeros may say it needs 256 MiB: checked before any of it
     * is taken. */
    size_t ctx_bytes = ZSTD_estimateDStreamSize_fromFrame(data, len);
    if (ZSTD_isError(ctx_bytes))
        ctx_bytes = 0;
    if (ctx_bytes >= max) {
        damage(g, 0, "needs %zu MiB to decompress, more than the %zu MiB a frame may take (-mem)",
               ctx_bytes >> 20, max >> 20);
        return 0;
    }
    if (account(budget, (ptrdiff_t)ctx_bytes) != 0)
        return -EAGAIN;
    /* The stream's bytes, and the window while it decodes. */
    max -= ctx_bytes;
    int own = !reuse || ctx_bytes > CTR_GEN_SHARED_WINDOW;
    ZSTD_DCtx *d = own ? ZSTD_createDCtx() : reuse;
    int rc = d ? 0 : -ENOMEM;
    if (d)
        ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
    /* The frame header may say how big the content is; trust it only as a
     * first guess within the bound. */
    unsigned long long said = ZSTD_getFrameContentSize(data, len);
    size_t cap = said < max && said > 0 ? (size_t)said + 1 : len * 4 + 4096;
    if (cap > max)
        cap = max;
    if (rc == 0) {
        g->stream = ctr_bufpool_take(pool, cap, &cap);
        g->stream_cap = cap;
        rc = !g->stream ? -ENOMEM : account(budget, (ptrdiff_t)cap);
    }
    ZSTD_inBuffer in = {data, len, 0};
    while (rc == 0) {
        if (g->stream_len == cap) {
            if (cap >= max) {
                damage(g, g->stream_len,
                       "decompresses to more than %zu MiB, the most a frame may take (-mem)",
                       (max + ctx_bytes) >> 20);
                break;
            }
            size_t ncap = cap * 2 > max ? max : cap * 2;
            if ((rc = account(budget, (ptrdiff_t)(ncap - cap))) != 0)
                break;
            uint8_t *p = realloc(g->stream, ncap);
            if (!p) {
                rc = -ENOMEM;
                break;
            }
            g->stream = p;
            cap = ncap;
            g->stream_cap = cap;
        }
        ZSTD_outBuffer out = {g->stream, cap, g->stream_len};
        size_t ret = ZSTD_decompressStream(d, &out, &in);
        g->stream_len = out.pos;
        if (ZSTD_isError(ret)) {
            damage(g, g->stream_len, "corrupt compressed data: %s", ZSTD_getErrorName(ret));
            break;
        }
        if (ret == 0)
            break; /* the frame ended */
        if (in.pos == in.size && out.pos < cap) {
            if (cut)
                g->unfinished = 1; /* judged once its records are read */
            else
                damage(g, g->stream_len, "the frame is cut short");
            break;
        }
    }
    if (own)
        ZSTD_freeDCtx(d);
    if (rc == 0)
        account(budget, -(ptrdiff_t)ctx_bytes); /* the window is gone or small */
    g->mem += g->stream_cap;
    return rc;
}

/* ---------------------------------------------------------------------------
 * 2. Records (FORMAT.md §3)
 * ------------------------------------------------------------------------- */

static struct ctr_gen_wait *push_wait(struct ctr_gen_wait **arr, size_t *n, size_t *cap,
                                      const struct ctr_gen *g, const uint64_t *v)
{
    struct ctr_gen_wait *w = PUSH(*arr, *n, *cap);
    if (w)
        *w = (struct ctr_gen_wait){v[0], v[1], v[2], v[3], v[4], g->begins, g->ends};
    return w;
}

/* Loads one record whose fields decoded into the frame's lists; -1 on
 * damage (reported), -ENOMEM. */
static int load_record(struct dec *r, uint8_t kind, const struct ctr_record_fields *f, size_t off)
{
    struct ctr_gen *g = r->g;
    const uint64_t *v = f->v;
    switch (kind) {
    case CTR_REC_TRACE_INFO:
        if (v[1] > CTR_TICKS_TSC) {
            damage(g, off, "unknown tick source %llu", (unsigned long long)v[1]);
            return -1;
        }
        g->has_info = 1;
        g->pid = v[0];
        g->tick_source = v[1];
        g->flags = v[2];
        g->exe_id = v[3];
        g->io_min_ns = v[4];
        return 0;
    case CTR_REC_GEN_BEGIN:
        if (!g->begins)
            g->first_gen = v[0];
        g->begins++;
        return 0;
    case CTR_REC_GEN_END:
        g->ends++;
        return 0;
    case CTR_REC_PENDING:
        return push_wait(&g->pending, &g->npending, &g->pending_cap, g, v) ? 0 : -ENOMEM;
    case CTR_REC_WAITING:
        return push_wait(&g->waiting, &g->nwaiting, &g->waiting_cap, g, v) ? 0 : -ENOMEM;
    case CTR_REC_CLOCK: {
        struct ctr_clock_point *p = PUSH(g->clocks, g->nclocks, g->clocks_cap);
        if (!p)
            return -ENOMEM;
        *p = (struct ctr_clock_point){v[0], v[1], v[2]};
        return 0;
    }
    case CTR_REC_STRING: {
        struct ctr_gen_string *s = PUSH(g->strings, g->nstrings, g->strings_cap);
        if (!s)
            return -ENOMEM;
        *s = (struct ctr_gen_string){v[0], (size_t)(f->tail - g->stream),
                                     (size_t)(f->tail_end - f->tail)};
        return 0;
    }
    case CTR_REC_STACK: {
        /* The decoder bounded the count by the body's bytes, so the
         * allocation is justified by the file. */
        if (v[1] > 1024) {
            damage(g, off, "stack %llu claims %llu frames", (unsigned long long)v[0],
                   (unsigned long long)v[1]);
            return -1;
        }
        if (ctr_grow(&g->pcs, &g->pcs_cap, g->npcs + v[1], sizeof(*g->pcs)) != 0)
            return -ENOMEM;
        const uint8_t *p = f->tail;
        for (uint64_t i = 0; i < v[1]; i++) {
            size_t used = ctr_get_uvarint(p, f->tail_end, &g->pcs[g->npcs + i]);
            if (used == 0) {
                damage(g, off, "stack %llu is cut", (unsigned long long)v[0]);
                return -1;
            }
            p += used;
        }
        struct ctr_gen_stack *s = PUSH(g->stacks, g->nstacks, g->stacks_cap);
        if (!s || ctr_idmap_put(&r->own_stacks, v[0], 1) != 0)
            return -ENOMEM;
        *s = (struct ctr_gen_stack){v[0], (uint32_t)v[1], g->npcs};
        g->npcs += v[1];
        return 0;
    }
    case CTR_REC_THREAD: {
        struct ctr_gen_thread *th = PUSH(g->threads, g->nthreads, g->threads_cap);
        if (!th)
            return -ENOMEM;
        *th = (struct ctr_gen_thread){v[0], v[1], v[2], v[3], v[4]};
        return 0;
    }
    case CTR_REC_MAPPING: {
        if (v[6] > sizeof(((struct ctr_mapping_info *)0)->build_id) || v[2] < v[1]) {
            damage(g, off, "mapping %llu is malformed", (unsigned long long)v[0]);
            return -1;
        }
        struct ctr_mapping_info *m = PUSH(g->mappings, g->nmappings, g->mappings_cap);
        if (!m)
            return -ENOMEM;
        *m = (struct ctr_mapping_info){v[0], v[1], v[2], v[3], v[4], (const char *)(uintptr_t)v[5],
                                       {0},  v[6]};
        memcpy(m->build_id, f->tail, v[6]);
        return 0;
    }
    case CTR_REC_BATCH:
    case CTR_REC_SWITCHES: {
        struct batch_ref *b = PUSH(r->batches, r->nbatches, r->batches_cap);
        if (!b)
            return -ENOMEM;
        *b = (struct batch_ref){v[0], v[1], (size_t)(f->tail - g->stream),
                                (size_t)(f->tail_end - f->tail), kind == CTR_REC_SWITCHES};
        g->batch_bytes += b->len;
        return 0;
    }
    case CTR_REC_DROPS: {
        struct ctr_gen_count *c = PUSH(g->drops, g->ndrops, g->drops_cap);
        if (!c)
            return -ENOMEM;
        *c = (struct ctr_gen_count){v[0], v[1]};
        return 0;
    }
    case CTR_REC_CPU_TIME: {
        struct ctr_gen_cputime *c = PUSH(g->cputimes, g->ncputimes, g->cputimes_cap);
        if (!c)
            return -ENOMEM;
        *c = (struct ctr_gen_cputime){v[0], v[1], v[2], v[3], (uint32_t)v[4]};
        return 0;
    }
    case CTR_REC_SAMPLING:
        /* An unknown source is not damage: the samples decode all the
         * same, and stats names the number. The lost count only grows. */
        g->has_sampling = 1;
        g->cpu_source = v[0];
        g->cpu_period_ns = v[1];
        if (v[2] > g->cpu_lost)
            g->cpu_lost = v[2];
        return 0;
    case CTR_REC_END:
        g->has_end = 1;
        g->end_dropped = v[0];
        g->end_stack_overflows = v[1];
        g->end_untraced = v[2];
        g->end_sched_failed = v[3];
        return 0;
    default:
        return 0; /* a kind with a spec but nothing to load */
    }
}

static int read_records(struct dec *r)
{
    struct ctr_gen *g = r->g;
    const uint8_t *p = g->stream, *end = g->stream + g->stream_len;
    while (p < end) {
        size_t off = (size_t)(p - g->stream);
        struct ctr_record rec;
        size_t len = ctr_decode_record(p, end, &rec);
        if (len == 0) {
            damage(g, off, "record of kind %u is cut short", p[0]);
            return 0;
        }
        p += len;
        if (rec.kind >= CTR_REC_LIMIT || !ctr_record_specs[rec.kind].name)
            continue; /* unknown kinds are skipped (§3: length-delimited) */
        struct ctr_record_fields f;
        int rc = ctr_decode_record_fields(&rec, &f);
        if (rc < 0) {
            damage(g, off, "record %s: field %d is cut or claims more than the body holds",
                   ctr_record_specs[rec.kind].name, -1 - rc);
            return 0;
        }
        rc = load_record(r, rec.kind, &f, off);
        if (rc == -ENOMEM)
            return rc;
        if (rc < 0)
            return 0;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * 3. Events (FORMAT.md §4)
 * ------------------------------------------------------------------------- */

static struct ctr_gen_stream *stream_for(struct dec *r, uint64_t thread_id, int switches)
{
    struct ctr_gen *g = r->g;
    /* A key per (thread, kind); thread ids are far below 2^63. */
    uint64_t key = thread_id * 2 + (switches != 0);
    uint64_t *at = ctr_idmap_get(&r->stream_of, key);
    if (at)
        return &g->streams[*at];
    if (ctr_idmap_put(&r->stream_of, key, g->nstreams) != 0)
        return NULL;
    struct ctr_gen_stream *s = PUSH(g->streams, g->nstreams, g->streams_cap);
    if (s)
        *s = (struct ctr_gen_stream){.thread_id = thread_id, .switches = (uint8_t)(switches != 0)};
    return s;
}

static int note_foreign_stack(struct dec *r, uint64_t id)
{
    /* Events of a run mostly name a stack the one before named. */
    if (!id || id == r->last_own_stack)
        return 0;
    if (ctr_idmap_get(&r->own_stacks, id)) {
        r->last_own_stack = id;
        return 0;
    }
    uint64_t *n = ctr_idmap_get(&r->g->foreign_stacks, id);
    if (n) {
        ++*n;
        return 0;
    }
    return ctr_idmap_put(&r->g->foreign_stacks, id, 1);
}

/* Per event type, the index of its STACK argument (0: none), filled once
 * from the specs, so that the decode loop need not walk every argument's
 * kind. An event has one stack at most (test-format.c holds the table to
 * it). */
static uint8_t stack_arg[CTR_EV_LIMIT];
static pthread_once_t stack_arg_once = PTHREAD_ONCE_INIT;

static void find_stack_args(void)
{
    for (int t = 0; t < CTR_EV_LIMIT; t++)
        for (int i = 1; ctr_event_specs[t].name && i < ctr_event_specs[t].nargs; i++)
            if (ctr_event_specs[t].args[i] == CTR_ARG_STACK)
                stack_arg[t] = (uint8_t)i;
}

static int decode_batch(struct dec *r, const struct batch_ref *b)
{
    pthread_once(&stack_arg_once, find_stack_args);
    struct ctr_gen *g = r->g;
    struct ctr_gen_stream *s = stream_for(r, b->thread_id, b->switches);
    if (!s)
        return -ENOMEM;
    const uint8_t *p = g->stream + b->off, *end = p + b->len;
    uint64_t at = b->base; /* ticks, or ns in a SWITCHES record */
    while (p < end) {
        size_t off = (size_t)(p - g->stream);
        struct ctr_event ev;
        size_t used = ctr_decode_event(p, end, &ev);
        if (used == 0) {
            if (p[0] >= CTR_EV_LIMIT || !ctr_event_specs[p[0]].name)
                damage(g, off, "unknown event type %u in a batch of thread %llu", p[0],
                       (unsigned long long)b->thread_id);
            else
                damage(g, off, "event %s of thread %llu is cut or has an argument out of range",
                       ctr_event_specs[p[0]].name, (unsigned long long)b->thread_id);
            return -1;
        }
        p += used;
        if (stack_arg[ev.type] && note_foreign_stack(r, ev.args[stack_arg[ev.type]]) != 0)
            return -ENOMEM;
        struct ctr_trace_event *e = PUSH(s->ev, s->n, s->cap);
        if (!e)
            return -ENOMEM;
        at += ev.args[0];
        e->ns = at;
        e->type = ev.type;
        memcpy(e->args, ev.args + 1, sizeof(e->args));
        /* The stream stays where it is from here on. */
        e->payload = (uint64_t)(uintptr_t)ev.payload;
        g->nevents++;
        g->events_by_type[ev.type]++;
        if (ev.type == CTR_EV_LOST)
            s->lost += e->args[0];
        if (ev.type == CTR_EV_THREAD_START && !b->switches)
            s->start_pc = e->args[1];
        if (ev.type == CTR_EV_THREAD_NAME && !b->switches) {
            struct ctr_gen_name *nm = PUSH(g->names, g->nnames, g->names_cap);
            if (!nm)
                return -ENOMEM;
            *nm = (struct ctr_gen_name){e->args[0], e->args[1]};
        }
    }
    return 0;
}

/* A thread's switches come sorted from the kernel in each record; two
 * records of one thread in a frame may overlap: sort them then (stable, by
 * an insertion sort, since they are nearly in order). */
static void order_switches(struct ctr_gen_stream *s)
{
    for (size_t i = 1; i < s->n; i++) {
        if (s->ev[i].ns >= s->ev[i - 1].ns)
            continue;
        struct ctr_trace_event e = s->ev[i];
        size_t k = i;
        while (k > 0 && s->ev[k - 1].ns > e.ns) {
            s->ev[k] = s->ev[k - 1];
            k--;
        }
        s->ev[k] = e;
    }
}

/* Turns a batch stream's ticks into nanoseconds where the frame's own clock
 * points give the same answer as the whole trace's would (ticks between its
 * first and last point: the points between are the trace's, and a segment
 * between two of them is one of the trace's segments), and makes them
 * monotonic among themselves. Events before the first point (buffered
 * across the generation's start) can only be a leading run: they are left
 * in ticks for the main thread (s->in_ticks); a stream with anything else
 * out of range is left whole (s->in_ticks = s->n). */
static void convert_stream(const struct ctr_gen *g, struct ctr_gen_stream *s,
                           const struct ctr_trace *own)
{
    const struct ctr_clock_point *pts = own->clocks;
    size_t npts = own->nclocks;
    s->in_ticks = s->n;
    if (!g->has_info || s->n == 0)
        return;
    if (g->tick_source == CTR_TICKS_MONOTONIC_NS) {
        s->in_ticks = 0; /* ticks are nanoseconds already */
    } else {
        if (npts < 2)
            return;
        size_t lead = 0;
        while (lead < s->n && s->ev[lead].ns <= pts[0].ticks)
            lead++;
        for (size_t k = lead; k < s->n; k++)
            if (s->ev[k].ns > pts[npts - 1].ticks)
                return;
        struct ctr_clock_cursor cur = {0};
        for (size_t k = lead; k < s->n; k++)
            s->ev[k].ns = ctr_clock_convert(own, &cur, s->ev[k].ns);
        s->in_ticks = lead;
    }
    for (size_t k = s->in_ticks + 1; k < s->n; k++)
        if (s->ev[k].ns < s->ev[k - 1].ns)
            s->ev[k].ns = s->ev[k - 1].ns;
}

int ctr_gen_decode(struct ctr_gen *g, const uint8_t *data, size_t len, uint64_t file_off, int cut,
                   ZSTD_DCtx *dctx, struct ctr_bufpool *pool, const struct ctr_gen_budget *budget)
{
    memset(g, 0, sizeof(*g));
    g->file_off = file_off;
    g->file_len = len;
    struct dec r = {.g = g};
    int rc = decompress(g, data, len, cut, dctx, pool, budget);
    if (rc == -EAGAIN)
        return rc;
    if (rc == 0)
        rc = read_records(&r);
    /* A frame the file ends in is no damage if the file stops where the
     * writer flushed it, after whole generations: the writer was stopped
     * (killed) between two of them. Its checksum, at the frame's end, was
     * never written: the records' own checks are all there is. */
    if (rc == 0 && g->unfinished && !g->damage[0] &&
        !(ctr_frame_cut_at_flush(data, len) && g->begins > 0 && g->begins == g->ends))
        damage(g, g->stream_len,
               g->begins > g->ends
                   ? "file ends inside a compressed frame, in the middle of a generation "
                     "(truncated at %llu bytes)"
                   : "file ends inside a compressed frame (truncated at %llu bytes)",
               (unsigned long long)(g->file_off + len));
    /* Room for each stream's events up front, from its batches' bytes (a
     * few bytes an event): growing by doubling would copy them all again. */
    for (size_t i = 0; rc == 0 && i < r.nbatches; i++) {
        struct ctr_gen_stream *st = stream_for(&r, r.batches[i].thread_id, r.batches[i].switches);
        if (!st)
            rc = -ENOMEM;
        else
            st->cap += r.batches[i].len / RESERVE_BYTES_PER_EVENT + 1;
    }
    for (size_t i = 0; rc == 0 && i < g->nstreams; i++) {
        struct ctr_gen_stream *st = &g->streams[i];
        size_t bytes;
        st->ev = ctr_bufpool_take(pool, st->cap * sizeof(*st->ev), &bytes);
        st->cap = bytes / sizeof(*st->ev);
        if (!st->ev)
            rc = -ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < r.nbatches; i++) {
        rc = decode_batch(&r, &r.batches[i]);
        if (rc == -1)
            rc = 0; /* damage inside a batch stops that batch only */
    }
    if (rc == -ENOMEM)
        damage(g, g->stream_len, "out of memory");
    /* The frame's clock points, kept by the rule the whole trace's are
     * (ctr_trace_add_clock); none if memory runs out: the main thread then
     * converts every tick. */
    struct ctr_trace own = {.tick_source = g->tick_source};
    for (size_t i = 0; i < g->nclocks; i++)
        if (ctr_trace_add_clock(&own, &g->clocks[i]) != 0) {
            own.nclocks = 0;
            break;
        }
    for (size_t i = 0; i < g->nstreams; i++) {
        struct ctr_gen_stream *st = &g->streams[i];
        if (st->switches)
            order_switches(st);
        else
            convert_stream(g, st, &own);
        g->mem += st->cap * sizeof(struct ctr_trace_event);
    }
    free(own.clocks);
    g->mem += g->pcs_cap * sizeof(*g->pcs) + sizeof(*g);
    free(r.batches);
    ctr_idmap_free(&r.own_stacks);
    ctr_idmap_free(&r.stream_of);
    return rc;
}

void ctr_gen_free(struct ctr_gen *g, struct ctr_bufpool *pool)
{
    for (size_t i = 0; i < g->nstreams; i++)
        ctr_bufpool_give(pool, g->streams[i].ev, g->streams[i].cap * sizeof(*g->streams[i].ev));
    free(g->streams);
    ctr_bufpool_give(pool, g->stream, g->stream_cap);
    free(g->strings);
    free(g->stacks);
    free(g->pcs);
    free(g->mappings);
    free(g->threads);
    free(g->drops);
    free(g->cputimes);
    free(g->clocks);
    free(g->pending);
    free(g->waiting);
    free(g->names);
    ctr_idmap_free(&g->foreign_stacks);
    memset(g, 0, sizeof(*g));
}
