/* reader.c - decodes a trace file (tracer/format/FORMAT.md) into struct ctr_trace.
 *
 * Three passes over bytes that are all treated as hostile:
 *   1. decompress the zstd frames after the file header (§2), noting where
 *      each frame starts so that errors can name a file offset;
 *   2. split the stream into records (§3) and load the tables, keeping each
 *      BATCH as a reference;
 *   3. decode the batches' events (§4) per thread, now that the clock points
 *      needed to turn ticks into nanoseconds are all known.
 * The bytes of records and events are decoded by ctrace_format.h, whose
 * decoders every reader of the format shares; this file builds the model.
 * Every length is checked against what remains before it is used, and no
 * allocation is sized by a count field alone: arrays grow as entries are
 * actually decoded. Damage in the frames or records stops that pass; damage
 * inside a batch stops that batch only (the next batch of the thread has its
 * own base time). What was read stays usable; t->damage names the first
 * damage and where it is.
 */
#include "reader.h"
#include "ctrace_grow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* A decompression-bomb guard: a stream may be at most this many times the
 * size of the file (real traces compress 2-20x) and never more than the
 * absolute bound. */
#define MAX_EXPANSION 1000
#define MAX_STREAM_BYTES ((size_t)8 << 30)

struct batch_ref {
    uint64_t thread_id, base;
    size_t off, len;   /* event bytes in t->stream */
    int ns_units;      /* SWITCHES: base and deltas are CLOCK_MONOTONIC ns */
};

struct frame_ref {
    size_t stream_off; /* where the frame's output starts in the stream */
    uint64_t file_off;
};

/* A PENDING record (FORMAT.md §3): a call in progress as generation
 * `gen_ends` (GEN_END records read before it) ended. */
struct pending_ref {
    uint64_t thread_id, ticks, reason, object, stack;
    uint64_t gen_ends;
};

struct rd {
    struct ctr_trace *t;
    struct pending_ref *pending;
    size_t npending, pending_cap;
    /* WAITING records of the first generation (FORMAT.md §3.1): the waits
     * going on as the trace begins. `gen_ends` unused. */
    struct pending_ref *waiting;
    size_t nwaiting, waiting_cap;
    uint64_t gen_ends;
    struct batch_ref *batches;
    size_t nbatches, batches_cap;
    struct frame_ref *frames;
    size_t nframes, frames_cap;
    size_t threads_cap, stacks_cap, strings_cap, maps_cap, clocks_cap;
    uint64_t missing_stacks;
};

/* ---------------------------------------------------------------------------
 * Helpers: growth, damage messages
 * ------------------------------------------------------------------------- */

/* Room for one more element of arr (n used, cap allocated): its address, or NULL. */
#define PUSH(arr, n, cap) (ctr_grow(&(arr), &(cap), (n) + 1, sizeof(*(arr))) == 0 ? &(arr)[(n)++] : NULL)

static uint64_t file_offset_of(const struct rd *r, size_t stream_off)
{
    uint64_t f = CTR_FILE_HEADER_LEN;
    for (size_t i = 0; i < r->nframes && r->frames[i].stream_off <= stream_off; i++)
        f = r->frames[i].file_off;
    return f;
}

static void damage(struct rd *r, size_t stream_off, const char *fmt, ...)
{
    if (r->t->damage[0])
        return; /* the first damage is the one that matters */
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    snprintf(r->t->damage, sizeof(r->t->damage),
             "trace damaged in the frame at file offset %llu (stream offset %zu): %s",
             (unsigned long long)file_offset_of(r, stream_off), stream_off, why);
}

/* ---------------------------------------------------------------------------
 * Pass 1: the file header and the compressed frames (FORMAT.md §2)
 * ------------------------------------------------------------------------- */

static int decompress(struct rd *r, const uint8_t *data, size_t len)
{
    struct ctr_trace *t = r->t;
    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (!d)
        return -ENOMEM;
    size_t cap = len * 4 + 4096;
    t->stream = malloc(cap);
    if (!t->stream) {
        ZSTD_freeDCtx(d);
        return -ENOMEM;
    }
    ZSTD_inBuffer in = {data, len, CTR_FILE_HEADER_LEN};
    int frame_start = 1;
    size_t ret = 0;
    for (;;) {
        if (frame_start) {
            /* All input used between frames (or right after the header): a
             * clean end (§2), however full the output buffer happens to be. */
            if (in.pos == in.size)
                break;
            struct frame_ref *f = PUSH(r->frames, r->nframes, r->frames_cap);
            if (!f) {
                damage(r, t->stream_len, "out of memory");
                break;
            }
            *f = (struct frame_ref){t->stream_len, in.pos};
            frame_start = 0;
        }
        if (t->stream_len == cap) {
            if (cap >= MAX_STREAM_BYTES || cap / MAX_EXPANSION >= len) {
                damage(r, t->stream_len, "decompresses to more than %zu bytes, %dx its size",
                       cap, MAX_EXPANSION);
                break;
            }
            uint8_t *p = realloc(t->stream, cap * 2);
            if (!p) {
                damage(r, t->stream_len, "out of memory");
                break;
            }
            t->stream = p;
            cap *= 2;
        }
        ZSTD_outBuffer out = {t->stream, cap, t->stream_len};
        ret = ZSTD_decompressStream(d, &out, &in);
        t->stream_len = out.pos;
        if (ZSTD_isError(ret)) {
            damage(r, t->stream_len, "corrupt compressed data: %s", ZSTD_getErrorName(ret));
            break;
        }
        if (ret == 0)
            frame_start = 1; /* a frame ended: the next bytes start another */
        /* All input used and room left in the output: nothing more to come. */
        if (in.pos == in.size && out.pos < cap)
            break;
    }
    if (!t->damage[0] && ret != 0)
        damage(r, t->stream_len, "file ends inside a compressed frame (truncated at %zu bytes)", len);
    ZSTD_freeDCtx(d);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Pass 2: records (FORMAT.md §3)
 * ------------------------------------------------------------------------- */

/* Loads one record whose fields decoded (ctr_decode_record_fields) into
 * the tables; -1 on damage (reported), -ENOMEM. */
static int load_record(struct rd *r, uint8_t kind, const struct ctr_record_fields *f, size_t off)
{
    struct ctr_trace *t = r->t;
    const uint64_t *v = f->v;
    switch (kind) {
    case CTR_REC_TRACE_INFO:
        t->io_min_ns = v[4];
        t->pid = v[0];
        t->tick_source = v[1];
        t->flags = v[2];
        t->exe = (const char *)(uintptr_t)v[3]; /* string id, resolved later */
        if (v[1] > CTR_TICKS_TSC) {
            damage(r, off, "unknown tick source %llu", (unsigned long long)v[1]);
            return -1;
        }
        return 0;
    case CTR_REC_GEN_BEGIN:
        t->generations++;
        return 0;
    case CTR_REC_GEN_END:
        r->gen_ends++;
        return 0;
    case CTR_REC_PENDING: {
        struct pending_ref *p = PUSH(r->pending, r->npending, r->pending_cap);
        if (!p)
            return -ENOMEM;
        *p = (struct pending_ref){v[0], v[1], v[2], v[3], v[4], r->gen_ends};
        return 0;
    }
    case CTR_REC_WAITING: {
        if (t->generations != 1)
            return 0; /* a reader that began earlier saw these waits begin */
        struct pending_ref *p = PUSH(r->waiting, r->nwaiting, r->waiting_cap);
        if (!p)
            return -ENOMEM;
        *p = (struct pending_ref){v[0], v[1], v[2], v[3], v[4], 0};
        return 0;
    }
    case CTR_REC_CLOCK: {
        struct ctr_clock_point *p = PUSH(t->clocks, t->nclocks, r->clocks_cap);
        if (!p)
            return -ENOMEM;
        *p = (struct ctr_clock_point){v[0], v[1], v[2]};
        return 0;
    }
    case CTR_REC_STRING: {
        size_t n = (size_t)(f->tail_end - f->tail);
        struct ctr_string_info *s = PUSH(t->strings, t->nstrings, r->strings_cap);
        char *str = s ? malloc(n + 1) : NULL;
        if (!str)
            return -ENOMEM;
        memcpy(str, f->tail, n);
        str[n] = 0;
        *s = (struct ctr_string_info){v[0], str};
        return 0;
    }
    case CTR_REC_STACK: {
        /* The decoder bounded the count by the body's bytes, so the
         * allocation is justified by the file. */
        if (v[1] > 1024) {
            damage(r, off, "stack %llu claims %llu frames", (unsigned long long)v[0],
                   (unsigned long long)v[1]);
            return -1;
        }
        struct ctr_stack_info *s = PUSH(t->stacks, t->nstacks, r->stacks_cap);
        uint64_t *pcs = s ? malloc((v[1] ? v[1] : 1) * sizeof(uint64_t)) : NULL;
        if (!pcs)
            return -ENOMEM;
        *s = (struct ctr_stack_info){v[0], (uint32_t)v[1], pcs};
        const uint8_t *p = f->tail;
        for (uint64_t i = 0; i < v[1]; i++) {
            size_t used = ctr_get_uvarint(p, f->tail_end, &pcs[i]);
            if (used == 0) {
                s->n = (uint32_t)i; /* keep only the frames actually read */
                damage(r, off, "stack %llu is cut", (unsigned long long)v[0]);
                return -1;
            }
            p += used;
        }
        return 0;
    }
    case CTR_REC_THREAD: {
        struct ctr_thread_info *th = PUSH(t->threads, t->nthreads, r->threads_cap);
        if (!th)
            return -ENOMEM;
        *th = (struct ctr_thread_info){.id = v[0], .os_tid = (int64_t)v[1], .parent_id = v[2],
                                       .name = (const char *)(uintptr_t)v[3], .handle = v[4]};
        return 0;
    }
    case CTR_REC_MAPPING: {
        if (v[6] > sizeof(((struct ctr_mapping_info *)0)->build_id) || v[2] < v[1]) {
            damage(r, off, "mapping %llu is malformed", (unsigned long long)v[0]);
            return -1;
        }
        struct ctr_mapping_info *m = PUSH(t->mappings, t->nmappings, r->maps_cap);
        if (!m)
            return -ENOMEM;
        *m = (struct ctr_mapping_info){v[0], v[1], v[2], v[3], v[4],
                                       (const char *)(uintptr_t)v[5], {0}, v[6]};
        memcpy(m->build_id, f->tail, v[6]);
        return 0;
    }
    case CTR_REC_BATCH:
    case CTR_REC_SWITCHES: {
        struct batch_ref *b = PUSH(r->batches, r->nbatches, r->batches_cap);
        if (!b)
            return -ENOMEM;
        *b = (struct batch_ref){v[0], v[1], (size_t)(f->tail - t->stream),
                                (size_t)(f->tail_end - f->tail), kind == CTR_REC_SWITCHES};
        t->batch_bytes += b->len;
        return 0;
    }
    case CTR_REC_DROPS: {
        /* Cumulative per thread: keep the largest; resolved to threads later
         * through an implicit thread if needed. Stored as a batch-less entry. */
        struct ctr_thread_info *th = PUSH(t->threads, t->nthreads, r->threads_cap);
        if (!th)
            return -ENOMEM;
        *th = (struct ctr_thread_info){.id = v[0], .dropped = v[1], .os_tid = -1};
        return 0;
    }
    case CTR_REC_END:
        t->complete = 1;
        t->end_dropped = v[0];
        t->end_stack_overflows = v[1];
        t->end_untraced = v[2];
        t->end_sched_failed = v[3];
        return 0;
    default:
        return 0; /* a kind with a spec but nothing to load */
    }
}

static void read_records(struct rd *r)
{
    struct ctr_trace *t = r->t;
    const uint8_t *p = t->stream, *end = t->stream + t->stream_len;
    while (p < end) {
        size_t off = (size_t)(p - t->stream);
        struct ctr_record rec;
        size_t len = ctr_decode_record(p, end, &rec);
        if (len == 0) {
            damage(r, off, "record of kind %u is cut short", p[0]);
            return;
        }
        p += len;
        if (rec.kind >= CTR_REC_LIMIT || !ctr_record_specs[rec.kind].name)
            continue; /* unknown kinds are skipped (§3: length-delimited) */
        struct ctr_record_fields f;
        int rc = ctr_decode_record_fields(&rec, &f);
        if (rc < 0) {
            damage(r, off, "record %s: field %d is cut or claims more than the body holds",
                   ctr_record_specs[rec.kind].name, -1 - rc);
            return;
        }
        rc = load_record(r, rec.kind, &f, off);
        if (rc == -ENOMEM)
            damage(r, off, "out of memory");
        if (rc < 0)
            return;
    }
}

/* ---------------------------------------------------------------------------
 * Tables: sorting, lookups, merging thread entries
 * ------------------------------------------------------------------------- */

static int cmp_u64_first(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* All table structs start with their uint64_t id, so one search serves all. */
static void *find_by_id(const void *base, size_t n, size_t size, uint64_t id)
{
    return n ? bsearch(&id, base, n, size, cmp_u64_first) : NULL;
}

/* qsort with an empty (possibly NULL) array is undefined: skip it. */
static void sort_array(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

const struct ctr_stack_info *ctr_trace_stack(const struct ctr_trace *t, uint64_t id)
{
    return find_by_id(t->stacks, t->nstacks, sizeof(*t->stacks), id);
}

const char *ctr_trace_string(const struct ctr_trace *t, uint64_t id)
{
    const struct ctr_string_info *s = find_by_id(t->strings, t->nstrings, sizeof(*t->strings), id);
    return s ? s->s : NULL;
}

struct ctr_thread_info *ctr_trace_thread(const struct ctr_trace *t, uint64_t id)
{
    return find_by_id(t->threads, t->nthreads, sizeof(*t->threads), id);
}

static const char *string_or(const struct ctr_trace *t, uint64_t id, const char *dflt)
{
    const char *s = id ? ctr_trace_string(t, id) : NULL;
    return s ? s : dflt;
}

/* Threads come from THREAD and DROPS records and from batches: merge the
 * entries of one id into one. */
static int finish_threads(struct rd *r)
{
    struct ctr_trace *t = r->t;
    for (size_t i = 0; i < r->nbatches + r->nwaiting; i++) {
        struct ctr_thread_info *th = PUSH(t->threads, t->nthreads, r->threads_cap);
        if (!th)
            return -ENOMEM;
        uint64_t id = i < r->nbatches ? r->batches[i].thread_id : r->waiting[i - r->nbatches].thread_id;
        *th = (struct ctr_thread_info){.id = id, .os_tid = -1};
    }
    sort_array(t->threads, t->nthreads, sizeof(*t->threads), cmp_u64_first);
    size_t w = 0;
    for (size_t i = 0; i < t->nthreads; i++) {
        struct ctr_thread_info *src = &t->threads[i];
        if (w > 0 && t->threads[w - 1].id == src->id) {
            struct ctr_thread_info *dst = &t->threads[w - 1];
            if (src->os_tid >= 0 && dst->os_tid < 0) {
                dst->os_tid = src->os_tid;
                dst->parent_id = src->parent_id;
                dst->name = src->name;
                dst->handle = src->handle;
            }
            if (src->dropped > dst->dropped)
                dst->dropped = src->dropped;
            continue;
        }
        t->threads[w++] = *src;
    }
    t->nthreads = w;
    for (size_t i = 0; i < t->nthreads; i++) {
        struct ctr_thread_info *th = &t->threads[i];
        if (th->os_tid < 0) {
            th->os_tid = 0;
            th->name = NULL;
        }
        th->name = string_or(t, (uint64_t)(uintptr_t)th->name, "");
    }
    return 0;
}

static int cmp_clock(const void *a, const void *b)
{
    const struct ctr_clock_point *x = a, *y = b;
    return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

/* Each generation repeats the table entries its events use (FORMAT.md
 * §3.1): one entry per id is kept (the same id always has the same
 * content), the others freed. */
static void drop_repeats(struct ctr_trace *t)
{
    size_t w = 0;
    for (size_t i = 0; i < t->nstrings; i++)
        if (w && t->strings[w - 1].id == t->strings[i].id)
            free((void *)t->strings[i].s);
        else
            t->strings[w++] = t->strings[i];
    t->nstrings = w;
    w = 0;
    for (size_t i = 0; i < t->nstacks; i++)
        if (w && t->stacks[w - 1].id == t->stacks[i].id)
            free(t->stacks[i].pcs);
        else
            t->stacks[w++] = t->stacks[i];
    t->nstacks = w;
    w = 0;
    for (size_t i = 0; i < t->nmappings; i++)
        if (!w || t->mappings[w - 1].id != t->mappings[i].id)
            t->mappings[w++] = t->mappings[i];
    t->nmappings = w;
}

static void finish_tables(struct rd *r)
{
    struct ctr_trace *t = r->t;
    sort_array(t->strings, t->nstrings, sizeof(*t->strings), cmp_u64_first);
    sort_array(t->stacks, t->nstacks, sizeof(*t->stacks), cmp_u64_first);
    sort_array(t->mappings, t->nmappings, sizeof(*t->mappings), cmp_u64_first);
    drop_repeats(t);
    t->exe = string_or(t, (uint64_t)(uintptr_t)t->exe, "");
    for (size_t i = 0; i < t->nmappings; i++)
        t->mappings[i].path = string_or(t, (uint64_t)(uintptr_t)t->mappings[i].path, "");
    /* Clock points: in tick order, each later in both clocks than the last. */
    sort_array(t->clocks, t->nclocks, sizeof(*t->clocks), cmp_clock);
    size_t w = 0;
    for (size_t i = 0; i < t->nclocks; i++)
        if (w == 0 || (t->clocks[i].ticks > t->clocks[w - 1].ticks &&
                       t->clocks[i].mono_ns > t->clocks[w - 1].mono_ns))
            t->clocks[w++] = t->clocks[i];
    t->nclocks = w;
    if (w > 0)
        t->start_real_ns = t->clocks[0].real_ns;
}

/* ---------------------------------------------------------------------------
 * Clock: ticks to nanoseconds (FORMAT.md §6)
 * ------------------------------------------------------------------------- */

static uint64_t ticks_to_ns(const struct ctr_trace *t, uint64_t ticks)
{
    if (t->tick_source == CTR_TICKS_MONOTONIC_NS || t->nclocks < 2)
        return t->nclocks == 1 && t->tick_source == CTR_TICKS_TSC
                   ? t->clocks[0].mono_ns + (ticks - t->clocks[0].ticks) : ticks;
    /* The segment [i-1, i] around ticks; the end segments extrapolate. */
    size_t lo = 1, hi = t->nclocks - 1;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->clocks[mid].ticks < ticks)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct ctr_clock_point *a = &t->clocks[lo - 1], *b = &t->clocks[lo];
    double rate = (double)(b->mono_ns - a->mono_ns) / (double)(b->ticks - a->ticks);
    double ns = (double)a->mono_ns + ((double)ticks - (double)a->ticks) * rate;
    /* Hostile clock points can put ns outside uint64_t, where the conversion
     * would be undefined (C11 6.3.1.4): clamp to the range. */
    if (!(ns > 0))
        return 0;
    return ns >= 0x1p64 ? UINT64_MAX : (uint64_t)ns;
}

/* ---------------------------------------------------------------------------
 * Pass 3: events (FORMAT.md §4)
 * ------------------------------------------------------------------------- */

/* Counts a stack id that the trace does not have (cut off by a
 * truncation): what refers to it is kept, without its stack. */
static void note_stack(struct rd *r, uint64_t id)
{
    if (id && !ctr_trace_stack(r->t, id))
        r->missing_stacks++;
}

static int decode_batch(struct rd *r, const struct batch_ref *b)
{
    struct ctr_trace *t = r->t;
    struct ctr_thread_info *th = ctr_trace_thread(t, b->thread_id);
    const uint8_t *p = t->stream + b->off, *end = p + b->len;
    uint64_t ticks = b->base; /* or ns, in a SWITCHES record */
    while (p < end) {
        size_t off = (size_t)(p - t->stream);
        struct ctr_event ev;
        size_t used = ctr_decode_event(p, end, &ev);
        if (used == 0) {
            if (p[0] >= CTR_EV_LIMIT || !ctr_event_specs[p[0]].name)
                damage(r, off, "unknown event type %u in a batch of thread %llu", p[0],
                       (unsigned long long)b->thread_id);
            else
                damage(r, off, "event %s of thread %llu is cut or has an argument out of range",
                       ctr_event_specs[p[0]].name, (unsigned long long)b->thread_id);
            return -1;
        }
        p += used;
        for (int i = 1; i < ev.nargs; i++)
            if (ctr_event_specs[ev.type].args[i] == CTR_ARG_STACK)
                note_stack(r, ev.args[i]);
        struct ctr_trace_event *e = PUSH(th->events, th->nevents, th->cap);
        if (!e)
            return -ENOMEM;
        *e = (struct ctr_trace_event){.type = ev.type};
        memcpy(e->args, ev.args + 1, sizeof(e->args));
        if (ev.payload)
            e->payload = (uint64_t)(ev.payload - t->stream);
        ticks += ev.args[0];
        t->nevents++;
        t->events_by_type[ev.type]++;
        if (b->ns_units) {
            e->ns = ticks;
            th->nswitches++;
            if (ev.type == CTR_EV_LOST) /* switches the kernel dropped */
                th->switches_lost += e->args[0];
            continue;
        }
        e->ns = ticks_to_ns(t, ticks);
        /* A new chunk's base can sit a hair before the last event of the
         * previous one when CPUs' TSCs disagree: keep thread time monotonic.
         * (Batches come before any switches: see decode_events.) */
        if (th->nevents > 1 && e->ns < th->events[th->nevents - 2].ns)
            e->ns = th->events[th->nevents - 2].ns;
        if (ev.type == CTR_EV_LOST)
            th->lost += e->args[0];
        if (ev.type == CTR_EV_THREAD_START)
            th->start_pc = e->args[1];
        if (ev.type == CTR_EV_THREAD_NAME) {
            struct ctr_thread_info *named = ctr_trace_thread(t, e->args[0]);
            const char *n = ctr_trace_string(t, e->args[1]);
            if (named && n)
                named->name = n;
        }
    }
    return 0;
}

/* A thread's events are its batches' in order, then its context switches
 * (already in time order each): sort the whole by time, keeping the order
 * of equal times (so a batch's own order wins). */
struct keyed {
    uint64_t ns;
    size_t at;
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

static int merge_switches(struct ctr_thread_info *th)
{
    struct keyed *k = malloc(th->nevents * sizeof(*k));
    struct ctr_trace_event *sorted = malloc(th->nevents * sizeof(*sorted));
    if (!k || !sorted) {
        free(k);
        free(sorted);
        return -ENOMEM;
    }
    for (size_t i = 0; i < th->nevents; i++)
        k[i] = (struct keyed){th->events[i].ns, i};
    qsort(k, th->nevents, sizeof(*k), cmp_keyed);
    for (size_t i = 0; i < th->nevents; i++)
        sorted[i] = th->events[k[i].at];
    free(k);
    free(th->events);
    th->events = sorted;
    th->cap = th->nevents;
    return 0;
}

/* FORMAT.md §3, PENDING: in a trace without END, the calls in progress as
 * its last whole generation ended are waits still open at the end, each a
 * BLOCK at the call's start, unless its thread has an event from then on
 * (the call returned, and was recorded, in a later part of the trace). */
/* A wait open in the trace without its BLOCK in it (a PENDING or WAITING
 * record): a BLOCK of th at ns. */
static int open_wait(struct rd *r, struct ctr_thread_info *th, uint64_t ns,
                     const struct pending_ref *p)
{
    note_stack(r, p->stack);
    struct ctr_trace_event *e = PUSH(th->events, th->nevents, th->cap);
    if (!e)
        return -ENOMEM;
    *e = (struct ctr_trace_event){.ns = ns, .type = CTR_EV_BLOCK,
                                  .args = {p->reason, p->object, p->stack}};
    r->t->nevents++;
    r->t->events_by_type[CTR_EV_BLOCK]++;
    return 0;
}

static int apply_pending(struct rd *r)
{
    struct ctr_trace *t = r->t;
    if (t->complete)
        return 0; /* the writer closed the file: its own BLOCKs say it all */
    for (size_t i = 0; i < r->npending; i++) {
        const struct pending_ref *p = &r->pending[i];
        struct ctr_thread_info *th = ctr_trace_thread(t, p->thread_id);
        if (p->gen_ends != r->gen_ends || !th || !ctr_arg_in_range(CTR_ARG_REASON, p->reason))
            continue;
        uint64_t ns = ticks_to_ns(t, p->ticks);
        if (th->nevents && th->events[th->nevents - 1].ns >= ns)
            continue;
        if (open_wait(r, th, ns, p) != 0)
            return -ENOMEM;
    }
    return 0;
}

/* FORMAT.md §3.1, WAITING: the waits going on as the first generation of
 * the trace began open it, each a BLOCK at the later of its start and the
 * trace's (what came before is not in the trace), before the thread's
 * events. */
static int apply_waiting(struct rd *r)
{
    struct ctr_trace *t = r->t;
    uint64_t first = t->nclocks ? t->clocks[0].ticks : 0;
    for (size_t i = 0; i < r->nwaiting; i++) {
        const struct pending_ref *p = &r->waiting[i];
        struct ctr_thread_info *th = ctr_trace_thread(t, p->thread_id);
        if (!th || th->nevents || !ctr_arg_in_range(CTR_ARG_REASON, p->reason))
            continue;
        if (open_wait(r, th, ticks_to_ns(t, p->ticks > first ? p->ticks : first), p) != 0)
            return -ENOMEM;
    }
    return 0;
}

static void decode_events(struct rd *r)
{
    struct ctr_trace *t = r->t;
    if (apply_waiting(r) != 0) {
        damage(r, 0, "out of memory");
        return;
    }
    for (int pass = 0; pass < 2; pass++) /* batches first, then switches */
        for (size_t i = 0; i < r->nbatches; i++) {
            if (r->batches[i].ns_units != pass)
                continue;
            int rc = decode_batch(r, &r->batches[i]);
            if (rc == -ENOMEM) {
                damage(r, r->batches[i].off, "out of memory");
                return;
            }
        }
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].nswitches && merge_switches(&t->threads[i]) != 0) {
            damage(r, 0, "out of memory");
            return;
        }
    if (apply_pending(r) != 0) {
        damage(r, 0, "out of memory");
        return;
    }
    t->start_ns = UINT64_MAX;
    t->end_ns = 0;
    for (size_t i = 0; i < t->nclocks; i++) {
        uint64_t ns = t->clocks[i].mono_ns;
        t->start_ns = ns < t->start_ns ? ns : t->start_ns;
        t->end_ns = ns > t->end_ns ? ns : t->end_ns;
    }
    for (size_t i = 0; i < t->nthreads; i++) {
        struct ctr_thread_info *th = &t->threads[i];
        if (th->nevents == 0)
            continue;
        if (th->events[0].ns < t->start_ns)
            t->start_ns = th->events[0].ns;
        if (th->events[th->nevents - 1].ns > t->end_ns)
            t->end_ns = th->events[th->nevents - 1].ns;
    }
    if (t->start_ns == UINT64_MAX)
        t->start_ns = 0;
    if (r->missing_stacks)
        snprintf(t->warning, sizeof(t->warning),
                 "%llu events refer to stacks that are not in the trace",
                 (unsigned long long)r->missing_stacks);
}

/* ---------------------------------------------------------------------------
 * Entry points
 * ------------------------------------------------------------------------- */

int ctr_trace_read_mem(const uint8_t *data, size_t len, struct ctr_trace *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    t->file_bytes = len;
    if (len < CTR_FILE_HEADER_LEN || memcmp(data, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN) != 0) {
        snprintf(err, errlen, "not a ctrace trace (bad magic in the first %d bytes)",
                 CTR_FILE_HEADER_LEN);
        return -EINVAL;
    }
    unsigned major = data[8] | (unsigned)data[9] << 8;
    if (major != CTR_VERSION_MAJOR) {
        snprintf(err, errlen, "trace format version %u is not supported (this reader: %u)", major,
                 (unsigned)CTR_VERSION_MAJOR);
        return -ENOTSUP;
    }
    struct rd r = {.t = t};
    int rc = decompress(&r, data, len);
    if (rc == 0) {
        read_records(&r);
        finish_tables(&r);
        rc = finish_threads(&r);
    }
    if (rc == 0)
        decode_events(&r);
    free(r.batches);
    free(r.pending);
    free(r.waiting);
    free(r.frames);
    if (rc != 0) {
        snprintf(err, errlen, "out of memory reading the trace");
        ctr_trace_free(t);
    }
    return rc;
}

int ctr_trace_read(const char *path, struct ctr_trace *t, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        if (fd >= 0)
            close(fd);
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return -EINVAL;
    }
    size_t len = (size_t)st.st_size;
    uint8_t *buf = malloc(len ? len : 1);
    size_t got = 0;
    while (buf && got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    int rc = ctr_trace_read_mem(buf, got, t, err, errlen);
    free(buf);
    if (rc != 0 && strncmp(err, path, strlen(path)) != 0) {
        char tmp[256];
        snprintf(tmp, sizeof(tmp), "%s: %s", path, err);
        snprintf(err, errlen, "%s", tmp);
    }
    return rc;
}

const char *ctr_event_payload(const struct ctr_trace *t, const struct ctr_trace_event *e,
                              size_t *len)
{
    const struct ctr_event_spec *spec = &ctr_event_specs[e->type];
    *len = 0;
    if (e->type >= CTR_EV_LIMIT || !spec->name || spec->args[spec->nargs - 1] != CTR_ARG_LENGTH)
        return NULL;
    *len = e->args[spec->nargs - 2];
    return (const char *)t->stream + e->payload;
}

void ctr_trace_free(struct ctr_trace *t)
{
    for (size_t i = 0; i < t->nthreads; i++)
        free(t->threads[i].events);
    for (size_t i = 0; i < t->nstacks; i++)
        free(t->stacks[i].pcs);
    for (size_t i = 0; i < t->nstrings; i++)
        free((void *)t->strings[i].s);
    free(t->threads);
    free(t->stacks);
    free(t->strings);
    free(t->mappings);
    free(t->clocks);
    free(t->stream);
    memset(t, 0, sizeof(*t));
}
