/* SPDX-License-Identifier: MIT */
/* pipeline.c - the streaming analyzer's driver (see pipeline.h).
 *
 * Frames come decoded, in file order, from decoders.c (jobs - 1 worker
 * threads decode ahead of this one). Taking frame k in: its tables join the
 * trace's; the ticks its own clock points could not turn into nanoseconds
 * (events buffered before its first point) are turned by the trace's, and
 * each thread's events are kept monotonic; the first generation's WAITING records open the
 * waits going on as the trace begins; its streams join the engine, tagged
 * k; then the engine drains frame k-1, whose events were waiting for frame
 * k's, since a thread's events buffered across a generation's end may sit
 * in the next one. At the end, a trace without END takes the PENDING
 * records that follow its last GEN_END as waits open at the end.
 */
#include "read/pipeline.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "read/bufpool.h"
#include "ctrace_grow.h"
#include "read/decoders.h"
#include "read/gen.h"

/* Columns the progress line may take (it is cleared with as many). */
#define PROGRESS_WIDTH 72

int ctr_cores_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ---------------------------------------------------------------------------
 * The main thread's state
 * ------------------------------------------------------------------------- */

struct injected { /* events the pipeline adds: WAITING, PENDING */
    struct ctr_trace_event ev;
    uint64_t tag;
};

struct run {
    struct ctr_trace *t;
    struct ctr_engine *eng;
    struct ctr_gen held;         /* the frame taken last, whose events the engine
                                    points at until the next one is in (zeroed:
                                    none, which frees as nothing) */
    struct ctr_bufpool *buffers; /* where freed frames' buffers go */
    uint64_t seq;                /* frames taken in */
    int started;                 /* t->start_ns is set (the first drain) */
    /* The earliest start of a call in progress as the last frame ended. */
    uint64_t pending_from;
    /* The PENDING records after the last GEN_END so far. */
    struct ctr_gen_wait *pending;
    size_t npending, pending_cap;
    /* Injected events (each a one-event segment), freed as tags drain. */
    struct injected **inj;
    size_t ninj, inj_cap;
    struct ctr_idmap foreign_stacks; /* stack id -> references, checked at the end */
    /* Damage: a gap opens after a damaged frame and closes at the next. */
    int gap_open;
    uint64_t gap_from, gap_off;
    int after_gap;   /* the frame just taken follows a gap */
    uint64_t max_ns; /* the latest time read so far */
    /* Progress */
    FILE *progress;
    struct ctr_source *src;
    struct timespec t0;
    double next_report;
    int shown;
};

static double since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void show_progress(struct run *r, int last)
{
    if (!r->progress)
        return;
    double s = since(&r->t0);
    if (!last && s < r->next_report)
        return;
    r->next_report = s + 0.5;
    if (last && !r->shown)
        return;
    if (!last && s < 2.0)
        return;
    if (last) { /* the line goes: what follows is the answer */
        fprintf(r->progress, "\r%*s\r", PROGRESS_WIDTH, "");
        fflush(r->progress);
        return;
    }
    uint64_t pos = ctr_source_pos(r->src), size = ctr_source_size(r->src);
    double ev = (double)r->t->nevents / (s > 0 ? s : 1);
    if (ctr_source_is_ctf(r->src))
        fprintf(r->progress, "\rctrace: %.1f M tracepoints read, %.1f M events/s   ",
                (double)pos / 1e6, ev / 1e6);
    else if (size)
        fprintf(r->progress, "\rctrace: %llu of %llu MB (%.0f%%), %.1f M events/s   ",
                (unsigned long long)(pos >> 20), (unsigned long long)(size >> 20),
                100.0 * (double)pos / (double)size, ev / 1e6);
    else
        fprintf(r->progress, "\rctrace: %llu MB read, %.1f M events/s   ",
                (unsigned long long)(pos >> 20), ev / 1e6);
    fflush(r->progress);
    r->shown = 1;
}

/* The first damage is the one named (the others are counted as gaps). */
static void note_damage(struct ctr_trace *t, uint64_t file_off, const char *where, const char *why)
{
    if (!t->damage[0])
        snprintf(t->damage, sizeof(t->damage),
                 "trace damaged in the frame at file offset %llu%s: %s",
                 (unsigned long long)file_off, where, why);
}

static int note_foreign(struct run *r, uint64_t id, uint64_t count)
{
    if (!id)
        return 0;
    uint64_t *n = ctr_idmap_get(&r->foreign_stacks, id);
    if (n) {
        *n += count;
        return 0;
    }
    return ctr_idmap_put(&r->foreign_stacks, id, count);
}

/* Adds a one-event segment of thread `th` (a BLOCK from a WAITING or
 * PENDING record) tagged `tag`. */
static int inject_block(struct run *r, uint32_t th, uint64_t ns, const struct ctr_gen_wait *w,
                        uint64_t tag)
{
    struct injected *in = malloc(sizeof(*in));
    if (!in || ctr_grow(&r->inj, &r->inj_cap, r->ninj + 1, sizeof(*r->inj)) != 0) {
        free(in);
        return -ENOMEM;
    }
    in->ev = (struct ctr_trace_event){
        .ns = ns, .type = CTR_EV_BLOCK, .args = {w->reason, w->object, w->stack}};
    in->tag = tag;
    r->inj[r->ninj++] = in;
    struct ctr_thread_info *ti = &r->t->threads[th];
    ti->seen++;
    ti->last_ns = ns > ti->last_ns ? ns : ti->last_ns;
    r->t->nevents++;
    r->t->events_by_type[CTR_EV_BLOCK]++;
    if (note_foreign(r, w->stack, 1) != 0)
        return -ENOMEM;
    return ctr_engine_add(r->eng, th, 0, &in->ev, 1, tag);
}

static void free_injected(struct run *r, uint64_t drained)
{
    size_t w = 0;
    for (size_t i = 0; i < r->ninj; i++)
        if (r->inj[i]->tag <= drained)
            free(r->inj[i]);
        else
            r->inj[w++] = r->inj[i];
    r->ninj = w;
}

/* ---------------------------------------------------------------------------
 * Taking a frame in
 * ------------------------------------------------------------------------- */

static int absorb_tables(struct run *r, const struct ctr_gen *g)
{
    struct ctr_trace *t = r->t;
    for (size_t i = 0; i < g->nstrings; i++)
        if (ctr_trace_add_string(t, g->strings[i].id, g->stream + g->strings[i].off,
                                 g->strings[i].len) != 0)
            return -ENOMEM;
    for (size_t i = 0; i < g->nstacks; i++) /* (no pcs at all when every stack is empty) */
        if (ctr_trace_add_stack(t, g->stacks[i].id, g->pcs ? g->pcs + g->stacks[i].pc0 : NULL,
                                g->stacks[i].n) != 0)
            return -ENOMEM;
    for (size_t i = 0; i < g->nmappings; i++)
        if (ctr_trace_add_mapping(t, &g->mappings[i], (uint64_t)(uintptr_t)g->mappings[i].path) !=
            0)
            return -ENOMEM;
    if (g->has_info) {
        t->pid = g->pid;
        t->tick_source = g->tick_source;
        t->flags = g->flags;
        t->io_min_ns = g->io_min_ns;
        t->exe = ctr_trace_name(t, g->exe_id);
    }
    for (size_t i = 0; i < g->nthreads; i++) {
        const struct ctr_gen_thread *gt = &g->threads[i];
        uint32_t ix;
        if (ctr_trace_thread_index(t, gt->id, &ix) != 0)
            return -ENOMEM;
        struct ctr_thread_info *th = &t->threads[ix];
        if (th->has_record)
            continue; /* the first THREAD record of a thread stands */
        th->has_record = 1;
        th->os_tid = (int64_t)gt->os_tid;
        th->parent_id = gt->parent;
        th->handle = gt->handle;
        th->name = ctr_trace_name(t, gt->name_id);
    }
    for (size_t i = 0; i < g->ndrops; i++) {
        uint32_t ix;
        if (ctr_trace_thread_index(t, g->drops[i].thread_id, &ix) != 0)
            return -ENOMEM;
        if (g->drops[i].count > t->threads[ix].dropped)
            t->threads[ix].dropped = g->drops[i].count;
    }
    for (size_t i = 0; i < g->nclocks; i++)
        if (ctr_trace_add_clock(t, &g->clocks[i]) != 0)
            return -ENOMEM;
    for (size_t i = 0; i < g->nnames; i++) {
        struct ctr_thread_info *named = ctr_trace_thread(t, g->names[i].thread_id);
        const char *n = ctr_trace_string(t, g->names[i].name_id);
        if (named && n)
            named->name = n;
    }
    if (g->has_sampling) {
        t->cpu_source |= g->cpu_source; /* bits (FORMAT.md §3) */
        t->cpu_period_ns = g->cpu_period_ns;
        if (g->cpu_lost > t->cpu_lost)
            t->cpu_lost = g->cpu_lost;
    }
    if (g->has_end) {
        t->complete = 1;
        t->end_dropped = g->end_dropped;
        t->end_stack_overflows = g->end_stack_overflows;
        t->end_untraced = g->end_untraced;
        t->end_sched_failed = g->end_sched_failed;
    }
    return 0;
}

/* PENDING records: those after the frame's last GEN_END replace the list
 * when the frame has one (FORMAT.md §3.1: only the last ones count). */
static int absorb_pending(struct run *r, const struct ctr_gen *g)
{
    if (g->ends > 0)
        r->npending = 0;
    for (size_t i = 0; i < g->npending; i++) {
        if (g->pending[i].ends_before != g->ends)
            continue;
        if (ctr_grow(&r->pending, &r->pending_cap, r->npending + 1, sizeof(*r->pending)) != 0)
            return -ENOMEM;
        r->pending[r->npending++] = g->pending[i];
    }
    return 0;
}

/* WAITING records of the first generation read (of the trace, or after a
 * gap): each a BLOCK of its thread at the later of its start and the
 * trace's, before the thread's events; one per thread. */
static int absorb_waiting(struct run *r, const struct ctr_gen *g, uint64_t gens_before)
{
    struct ctr_trace *t = r->t;
    uint64_t first = 0;
    if (r->after_gap && g->nclocks)
        first = g->clocks[0].ticks;
    else if (t->nclocks)
        first = t->clocks[0].ticks;
    struct ctr_idmap done = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < g->nwaiting; i++) {
        const struct ctr_gen_wait *w = &g->waiting[i];
        uint64_t nth = r->after_gap ? w->begins_before : gens_before + w->begins_before;
        uint32_t ix;
        if (nth != 1 || !ctr_arg_in_range(CTR_ARG_REASON, w->reason))
            continue;
        if (ctr_idmap_get(&done, w->thread_id))
            continue;
        if ((rc = ctr_trace_thread_index(t, w->thread_id, &ix)) != 0 ||
            (rc = ctr_idmap_put(&done, w->thread_id, 1)) != 0)
            break;
        if (t->threads[ix].seen && !r->after_gap)
            continue;
        uint64_t ns = ctr_trace_ticks_to_ns(t, w->ticks > first ? w->ticks : first);
        rc = inject_block(r, ix, ns, w, r->seq);
        t->threads[ix].last_batch_ns = ns;
    }
    ctr_idmap_free(&done);
    return rc;
}

/* CPU_TIME readings, to the consumers before the frame's events: the
 * readings were taken as the generation ended. */
static int absorb_cputimes(struct run *r, const struct ctr_gen *g)
{
    struct ctr_trace *t = r->t;
    for (size_t i = 0; i < g->ncputimes; i++) {
        const struct ctr_gen_cputime *c = &g->cputimes[i];
        uint32_t ix;
        if (ctr_trace_thread_index(t, c->thread_id, &ix) != 0)
            return -ENOMEM;
        struct ctr_cpu_reading reading = {ctr_trace_ticks_to_ns(t, c->ticks), c->cpu_ns,
                                          c->delay_ns, c->flags};
        t->has_cpu_time = 1;
        ctr_engine_cputime(r->eng, ix, &reading);
    }
    return 0;
}

static int absorb_streams(struct run *r, struct ctr_gen *g)
{
    struct ctr_trace *t = r->t;
    for (size_t i = 0; i < g->nstreams; i++) {
        struct ctr_gen_stream *s = &g->streams[i];
        uint32_t ix;
        if (ctr_trace_thread_index(t, s->thread_id, &ix) != 0)
            return -ENOMEM;
        struct ctr_thread_info *th = &t->threads[ix];
        if (s->switches) {
            th->nswitches += s->n;
            th->switches_lost += s->lost;
            /* Sorted in the frame (gen.c); keep them so across frames. */
            for (size_t k = 0; k < s->n && s->ev[k].ns < th->last_switch_ns; k++)
                s->ev[k].ns = th->last_switch_ns;
            if (s->n && s->ev[s->n - 1].ns > th->last_switch_ns)
                th->last_switch_ns = s->ev[s->n - 1].ns;
        } else {
            th->lost += s->lost;
            if (s->start_pc)
                th->start_pc = s->start_pc;
            /* Ticks to ns (the worker did those its frame's clocks could);
             * a new chunk's base can sit a hair before the last event of the
             * previous one when CPUs' TSCs disagree: keep the thread's own
             * events monotonic. The worker made the rest monotonic among
             * themselves, so only a leading run can be below the thread's
             * last time. */
            int had = th->seen > 0;
            struct ctr_clock_cursor cur = {0};
            size_t k = 0;
            for (; k < s->in_ticks; k++) {
                uint64_t ns = ctr_clock_convert(t, &cur, s->ev[k].ns);
                if ((had || k > 0) && ns < th->last_batch_ns)
                    ns = th->last_batch_ns;
                s->ev[k].ns = th->last_batch_ns = ns;
            }
            for (; k < s->n && (had || k > 0) && s->ev[k].ns < th->last_batch_ns; k++)
                s->ev[k].ns = th->last_batch_ns;
            if (s->n)
                th->last_batch_ns =
                    s->ev[s->n - 1].ns > th->last_batch_ns ? s->ev[s->n - 1].ns : th->last_batch_ns;
        }
        th->seen += s->n;
        if (s->n && s->ev[s->n - 1].ns > th->last_ns)
            th->last_ns = s->ev[s->n - 1].ns;
        if (ctr_engine_add(r->eng, ix, s->switches, s->ev, s->n, r->seq) != 0)
            return -ENOMEM;
    }
    t->nevents += g->nevents;
    for (int k = 0; k < CTR_EV_LIMIT; k++)
        t->events_by_type[k] += g->events_by_type[k];
    t->batch_bytes += g->batch_bytes;
    t->stream_bytes += g->stream_len;
    for (size_t k = 0; k < g->foreign_stacks.cap; k++)
        if (g->foreign_stacks.slots[k].used &&
            note_foreign(r, g->foreign_stacks.slots[k].key, g->foreign_stacks.slots[k].value) != 0)
            return -ENOMEM;
    return 0;
}

/* The latest time the frame shows: its clocks, its threads' last events. */
static uint64_t frame_last_ns(const struct run *r, const struct ctr_gen *g)
{
    uint64_t last = 0;
    for (size_t i = 0; i < g->nclocks; i++)
        if (g->clocks[i].mono_ns > last)
            last = g->clocks[i].mono_ns;
    for (size_t i = 0; i < g->nstreams; i++)
        if (g->streams[i].n && g->streams[i].ev[g->streams[i].n - 1].ns > last)
            last = g->streams[i].ev[g->streams[i].n - 1].ns;
    return last > r->max_ns ? last : r->max_ns;
}

static void set_start(struct run *r)
{
    struct ctr_trace *t = r->t;
    uint64_t start = ctr_engine_first_ns(r->eng);
    for (size_t i = 0; i < t->nclocks; i++)
        if (t->clocks[i].mono_ns < start)
            start = t->clocks[i].mono_ns;
    t->start_ns = start == UINT64_MAX ? 0 : start;
    r->started = 1;
}

/* Drains what the engine holds up to `tag` and frees the frames it used. */
static int drain(struct run *r, uint64_t tag)
{
    /* The start is the first moment read: not before anything is (a
     * damaged first frame has none). */
    if (!r->started && (r->t->nclocks || ctr_engine_first_ns(r->eng) != UINT64_MAX))
        set_start(r);
    if (ctr_engine_drain(r->eng, tag) != 0)
        return -ENOMEM;
    free_injected(r, tag);
    return 0;
}

static int take_frame(struct run *r, struct ctr_gen *g, uint64_t gens_before)
{
    struct ctr_trace *t = r->t;
    if (r->gap_open) {
        /* The frame after a damaged one: what came before is all in; the
         * gap runs to this frame's first moment. */
        if (drain(r, UINT64_MAX) != 0)
            return -ENOMEM;
        ctr_gen_free(&r->held, r->buffers);
        uint64_t to = g->nclocks ? g->clocks[0].mono_ns : r->gap_from;
        for (size_t i = 0; i < g->nstreams && !g->nclocks; i++)
            if (g->streams[i].switches && g->streams[i].n && g->streams[i].ev[0].ns > to)
                to = g->streams[i].ev[0].ns;
        /* Damage before anything was read: when the lost part began is
         * not known, so the gap is said, with no length, where the trace
         * now starts (never from time 0: the machine's uptime). */
        if (!r->max_ns) {
            r->gap_from = to;
            t->starts_damaged = 1;
        }
        if (to < r->gap_from)
            to = r->gap_from;
        ctr_engine_gap(r->eng, r->gap_from, to);
        if (t->gaps < CTR_GAPS_LISTED)
            t->gap_list[t->gaps] = (struct ctr_gap){r->gap_from, to, r->gap_off};
        t->gaps++;
        t->missing_ns += to - r->gap_from;
        r->gap_open = 0;
        r->after_gap = 1;
    }
    int rc = absorb_tables(r, g);
    if (rc == 0)
        rc = absorb_pending(r, g);
    if (rc == 0)
        rc = absorb_waiting(r, g, gens_before);
    if (rc == 0)
        rc = absorb_cputimes(r, g);
    if (rc == 0)
        rc = absorb_streams(r, g);
    if (!t->generations && g->begins)
        t->first_gen = g->first_gen;
    t->generations += g->begins;
    r->after_gap = 0;
    if (rc != 0)
        return rc;
    r->max_ns = frame_last_ns(r, g);
    if (g->damage[0]) {
        char where[64];
        snprintf(where, sizeof(where), " (stream offset %zu of the frame)", g->damage_off);
        note_damage(t, g->file_off, where, g->damage);
        r->gap_open = 1;
        r->gap_from = r->max_ns;
        r->gap_off = g->file_off;
    }
    /* Frame k is in: frame k-1 can be drained, and then freed. The Blocks
     * of calls in progress as frame k-1 or k ended come when the calls
     * return, dated when they began (in frame k+1 at the earliest): the
     * consumers must not take what comes before as settled. */
    uint64_t from = UINT64_MAX;
    for (size_t i = 0; i < g->npending; i++) {
        uint64_t ns = ctr_trace_ticks_to_ns(t, g->pending[i].ticks);
        from = ns < from ? ns : from;
    }
    ctr_engine_hold(r->eng, from < r->pending_from ? from : r->pending_from);
    r->pending_from = from;
    if (r->seq > 0 && drain(r, r->seq - 1) != 0)
        return -ENOMEM;
    ctr_gen_free(&r->held, r->buffers);
    r->held = *g;
    memset(g, 0, sizeof(*g));
    r->seq++;
    return 0;
}

/* Bytes from skipped_off to file_off that were not a frame: damage, and a
 * gap once a frame follows. */
static void take_skipped(struct run *r, const char *what, uint64_t skipped_off, uint64_t file_off)
{
    char why[300];
    snprintf(why, sizeof(why), "%s; skipped %llu bytes", what,
             (unsigned long long)(file_off > skipped_off ? file_off - skipped_off : 0));
    note_damage(r->t, skipped_off, "", why);
    if (!r->gap_open && r->seq > 0) {
        r->gap_open = 1;
        r->gap_from = r->max_ns;
        r->gap_off = skipped_off;
    }
}

/* ---------------------------------------------------------------------------
 * The end
 * ------------------------------------------------------------------------- */

static int finish(struct run *r)
{
    struct ctr_trace *t = r->t;
    if (!t->exe)
        t->exe = "";
    /* FORMAT.md §3.1: a trace without END ends with the waits its last
     * PENDING records name, unless the thread went on after. */
    for (size_t i = 0; !t->complete && i < r->npending; i++) {
        const struct ctr_gen_wait *p = &r->pending[i];
        struct ctr_thread_info *th = ctr_trace_thread(t, p->thread_id);
        if (!th || !ctr_arg_in_range(CTR_ARG_REASON, p->reason))
            continue;
        uint64_t ns = ctr_trace_ticks_to_ns(t, p->ticks);
        if (th->seen && th->last_ns >= ns)
            continue;
        if (inject_block(r, (uint32_t)(th - t->threads), ns, p, r->seq) != 0)
            return -ENOMEM;
    }
    if (!r->started)
        set_start(r);
    uint64_t end = 0;
    for (size_t i = 0; i < t->nclocks; i++)
        end = t->clocks[i].mono_ns > end ? t->clocks[i].mono_ns : end;
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].seen && t->threads[i].last_ns > end)
            end = t->threads[i].last_ns;
    t->end_ns = end;
    if (t->nclocks)
        t->start_real_ns = t->clocks[0].real_ns;
    uint64_t odd = ctr_engine_finish(r->eng);
    if (odd == UINT64_MAX)
        return -ENOMEM;
    t->odd = odd;
    uint64_t missing = 0;
    for (size_t k = 0; k < r->foreign_stacks.cap; k++)
        if (r->foreign_stacks.slots[k].used && !ctr_trace_stack(t, r->foreign_stacks.slots[k].key))
            missing += r->foreign_stacks.slots[k].value;
    if (missing)
        snprintf(t->warning, sizeof(t->warning),
                 "%llu events refer to stacks that are not in the trace",
                 (unsigned long long)missing);
    return 0;
}

/* ---------------------------------------------------------------------------
 * The run
 * ------------------------------------------------------------------------- */

int ctr_analyze(struct ctr_source *src, struct ctr_trace *t, const struct ctr_consumer *c, size_t n,
                const struct ctr_pipeline_opts *opts, char *err, size_t errlen)
{
    int jobs = opts && opts->jobs > 0 ? opts->jobs : ctr_cores_available();
    struct run r = {
        .t = t, .src = src, .progress = opts ? opts->progress : NULL, .pending_from = UINT64_MAX};
    clock_gettime(CLOCK_MONOTONIC, &r.t0);
    r.eng = ctr_engine_new(t, c, n);
    size_t mem = opts && opts->mem ? opts->mem : CTR_DECODERS_MEM_DEFAULT;
    struct ctr_decoders *d = ctr_decoders_new(src, jobs, mem);
    int rc = r.eng && d ? 0 : -ENOMEM, got = 0;
    r.buffers = d ? ctr_decoders_buffers(d) : NULL;
    uint64_t gens_before = 0;
    struct ctr_decoded f;
    while (rc == 0 && (got = ctr_decoders_next(d, &f)) > 0) {
        uint64_t begins = f.gen.begins;
        if (f.skipped[0]) /* bytes before the frame were not one */
            take_skipped(&r, f.skipped, f.skipped_off, f.file_off);
        rc = f.rc == -ENOMEM ? -ENOMEM : take_frame(&r, &f.gen, gens_before);
        gens_before += begins;
        ctr_gen_free(&f.gen, r.buffers);
        show_progress(&r, 0);
    }
    if (ctr_source_is_ctf(src))
        t->ctf_tracepoints = ctr_source_pos(src);
    else
        t->file_bytes = ctr_source_pos(src);
    t->lttng_discarded = ctr_source_discarded(src);
    int unreadable = rc == 0 && got == -ENOTUNIQ; /* which process, the user must say */
    if (unreadable)
        rc = got;
    else if (rc == 0 && got < 0)
        note_damage(t, f.file_off, "", f.skipped); /* reading failed */
    else if (rc == 0 && f.skipped[0])
        take_skipped(&r, f.skipped, f.skipped_off, f.file_off); /* trailing bytes */
    if (rc == 0)
        rc = finish(&r);
    show_progress(&r, 1);
    ctr_gen_free(&r.held, r.buffers);
    free_injected(&r, UINT64_MAX);
    free(r.inj);
    free(r.pending);
    ctr_idmap_free(&r.foreign_stacks);
    ctr_engine_free(r.eng);
    ctr_decoders_free(d);
    if (unreadable)
        snprintf(err, errlen, "%s", f.skipped);
    else if (rc != 0)
        snprintf(err, errlen, "out of memory analysing the trace");
    return rc;
}
