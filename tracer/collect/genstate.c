/* SPDX-License-Identifier: MIT */
/* genstate.c - what makes each generation stand alone (FORMAT.md §3.1).
 *
 * A reader, or a sink, may start at any generation: so each one repeats what
 * its events need from before it. The collector shows this file every batch
 * it takes (ctr__gen_observe); from the events it learns
 *   - the stacks and strings the generation refers to, whose STACK and
 *     STRING records it then writes, looked up by id in the intern tables
 *     (ctr__intern_entry), each once per generation;
 *   - what each thread is doing: blocked (on what, since when, from where)
 *     and its latest name, so that the next generation can say which threads
 *     are inside a wait as it begins (WAITING records) and name them (THREAD
 *     records).
 * It also keeps the list of executable mappings, with ids stable for the
 * whole process, and writes those that the generation's stacks and code
 * addresses are in.
 *
 * Collector thread only (and the forked child, alone): no locks.
 */
#include "collect/genstate.h"

#include "collect/records.h"
#include "core/intern.h"
#include "core/maps.h"
#include "core/session.h"
#include "ctrace_format.h"
#include "ctrace_grow.h"
#include "ctrace_record.h"

#include <stdlib.h>
#include <string.h>

/* What a thread is doing, as far as its events said. */
struct tstate {
    uint64_t id; /* 0: nothing known */
    uint8_t blocked;
    uint64_t reason, object, stack, since_ticks;
    uint32_t name;   /* latest ThreadName, 0 if none */
    uint32_t in_gen; /* G.mark when it has records in this generation */
};

/* A thread inside a wait as the generation began. */
struct waiting {
    uint64_t thread_id, since_ticks, reason, object, stack;
};

/* A mapping as first seen, with the id it keeps. */
struct map {
    uint64_t start, limit, file_offset, bias;
    uint32_t id, path;
    uint32_t in_gen; /* G.mark when a stack or code address of this generation is in it */
    uint8_t build_id_len;
    uint8_t build_id[64];
};

/* The ids one generation needs from an intern table: each once (marks). */
struct needed {
    uint32_t *ids;
    size_t n, cap;
    uint32_t *mark; /* by id: the generation's mark when in ids[] */
    size_t nmark;
};

static struct {
    struct tstate *threads; /* by slot */
    size_t nthreads;
    uint32_t mark; /* this generation's, never 0 */
    struct needed stacks, strings;
    struct waiting *waiting;
    size_t nwaiting, waiting_cap;
    uint64_t *open_waits;
    size_t nopen, open_cap;
    struct map *maps; /* ascending start */
    size_t nmaps, maps_cap;
    uint64_t maps_version;
    int maps_scanned;
    /* Code addresses in the generation's events (start routines). */
    uint64_t *pcs;
    size_t npcs, pcs_cap;
    /* Per event type, a bit for each argument that is a stack or a string
     * id or a code address (from the format's table, once): what a
     * generation needs. */
    uint8_t ref_args[CTR_EV_LIMIT];
    int ref_args_known;
} G;

/* Room for n + 1 elements of *arr (cap of them now): 0, or -1 when out of
 * memory. */
static int grow(void *arr, size_t *cap, size_t n, size_t size)
{
    return ctr_grow(arr, cap, n + 1, size) ? -1 : 0;
}

/* The same for index n, the new elements zeroed. */
static int grow_zeroed(void *arr, size_t *cap, size_t n, size_t size)
{
    size_t old = *cap;
    if (grow(arr, cap, n, size))
        return -1;
    memset((char *)*(void **)arr + old * size, 0, (*cap - old) * size);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Ids a generation needs
 * ------------------------------------------------------------------------- */

static void need(struct needed *nd, uint64_t id)
{
    if (id == 0 || id > UINT32_MAX || grow_zeroed(&nd->mark, &nd->nmark, id, sizeof(*nd->mark)))
        return; /* out of memory: the record is missing; the reader says so */
    if (nd->mark[id] == G.mark || grow(&nd->ids, &nd->cap, nd->n, sizeof(*nd->ids)))
        return;
    nd->mark[id] = G.mark;
    nd->ids[nd->n++] = (uint32_t)id;
}

void ctr__gen_need_stack(uint64_t id)
{
    need(&G.stacks, id);
}

void ctr__gen_need_string(uint64_t id)
{
    need(&G.strings, id);
}

/* ---------------------------------------------------------------------------
 * Threads' states, from their events
 * ------------------------------------------------------------------------- */

/* The state of the thread in slot, which has records in this generation:
 * started afresh if the slot's thread changed. NULL when out of memory. */
static struct tstate *seen(uint32_t slot, uint64_t thread_id)
{
    if (grow_zeroed(&G.threads, &G.nthreads, slot, sizeof(*G.threads)))
        return NULL;
    struct tstate *ts = &G.threads[slot];
    if (ts->id != thread_id)
        *ts = (struct tstate){.id = thread_id};
    ts->in_gen = G.mark;
    return ts;
}

static void learn_ref_args(void)
{
    for (unsigned t = 0; t < CTR_EV_LIMIT; t++)
        for (unsigned i = 1; ctr_event_specs[t].name && i < ctr_event_specs[t].nargs; i++)
            if (ctr_event_specs[t].args[i] == CTR_ARG_STACK ||
                ctr_event_specs[t].args[i] == CTR_ARG_STRING ||
                ctr_event_specs[t].args[i] == CTR_ARG_PC)
                G.ref_args[t] |= (uint8_t)(1u << i);
    G.ref_args_known = 1;
}

void ctr__gen_observe(uint32_t slot, uint64_t thread_id, uint64_t base_ticks, const uint8_t *p,
                      size_t n)
{
    if (!G.ref_args_known)
        learn_ref_args();
    struct tstate *ts = seen(slot, thread_id);
    const uint8_t *end = p + n;
    uint64_t ticks = base_ticks;
    struct ctr_event ev;
    uint64_t events = 0;
    /* Our own writer's complete events; still, stop at anything unexpected
     * rather than read past the batch. */
    for (size_t used; p < end && (used = ctr_decode_event(p, end, &ev)) != 0; p += used) {
        events++;
        for (unsigned m = G.ref_args[ev.type]; m; m &= m - 1) {
            unsigned i = (unsigned)__builtin_ctz(m);
            switch (ctr_event_specs[ev.type].args[i]) {
            case CTR_ARG_STACK:
                need(&G.stacks, ev.args[i]);
                break;
            case CTR_ARG_STRING:
                need(&G.strings, ev.args[i]);
                break;
            default: /* CTR_ARG_PC: a code address, whose mapping names it */
                if (grow(&G.pcs, &G.pcs_cap, G.npcs, sizeof(*G.pcs)) == 0)
                    G.pcs[G.npcs++] = ev.args[i];
            }
        }
        ticks += ev.args[0];
        if (!ts)
            continue;
        switch (ev.type) {
        case CTR_EV_BLOCK:
            ts->blocked = 1;
            ts->reason = ev.args[1];
            ts->object = ev.args[2];
            ts->stack = ev.args[3];
            ts->since_ticks = ticks;
            break;
        case CTR_EV_UNBLOCK:
        case CTR_EV_THREAD_END:
            ts->blocked = 0;
            break;
        case CTR_EV_THREAD_NAME:
            /* Any thread may name any other: find it by id. */
            for (size_t i = 0; i < G.nthreads; i++)
                if (G.threads[i].id == ev.args[1])
                    G.threads[i].name = (uint32_t)ev.args[2];
            break;
        default:
            break;
        }
    }
    /* relaxed: a counter read only for statistics (`ctrace ctl` status). */
    atomic_fetch_add_explicit(&ctr__session.events_recorded, events, memory_order_relaxed);
}

void ctr__gen_forget(uint32_t slot)
{
    if (slot < G.nthreads)
        G.threads[slot] = (struct tstate){0};
}

void ctr__gen_thread_seen(uint32_t slot, uint64_t thread_id)
{
    seen(slot, thread_id);
}

void ctr__gen_pending_noted(uint32_t slot, uint64_t thread_id, uint64_t stack)
{
    ctr__gen_thread_seen(slot, thread_id);
    need(&G.stacks, stack);
}

int ctr__gen_thread_in(uint32_t slot, uint64_t thread_id)
{
    return slot >= G.nthreads || G.threads[slot].id != thread_id ||
           G.threads[slot].in_gen == G.mark;
}

int ctr__gen_thread_blocked(uint32_t slot, uint64_t thread_id)
{
    return slot < G.nthreads && G.threads[slot].id == thread_id && G.threads[slot].blocked;
}

uint32_t ctr__gen_thread_name(uint32_t slot, uint64_t thread_id, uint32_t registered)
{
    if (slot < G.nthreads && G.threads[slot].id == thread_id && G.threads[slot].name)
        return G.threads[slot].name;
    return registered;
}

/* ---------------------------------------------------------------------------
 * Generations
 * ------------------------------------------------------------------------- */

/* No id is marked as in this generation any more. */
static void clear_marks(void)
{
    if (G.stacks.mark)
        memset(G.stacks.mark, 0, G.stacks.nmark * sizeof(*G.stacks.mark));
    if (G.strings.mark)
        memset(G.strings.mark, 0, G.strings.nmark * sizeof(*G.strings.mark));
}

void ctr__gen_begin(void)
{
    if (++G.mark == 0) {
        clear_marks(); /* wrapped (after 2^32 generations): no stale mark may match */
        G.mark = 1;
    }
    G.stacks.n = G.strings.n = G.nwaiting = G.npcs = 0;
    for (size_t i = 0; i < G.nthreads; i++) {
        struct tstate *t = &G.threads[i];
        if (!t->id || !t->blocked ||
            grow(&G.waiting, &G.waiting_cap, G.nwaiting, sizeof(*G.waiting)))
            continue;
        t->in_gen = G.mark;
        G.waiting[G.nwaiting++] =
            (struct waiting){t->id, t->since_ticks, t->reason, t->object, t->stack};
        need(&G.stacks, t->stack);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t ctr__gen_open_waits(const uint64_t **since)
{
    G.nopen = 0;
    for (size_t i = 0; i < G.nthreads; i++) {
        const struct tstate *t = &G.threads[i];
        if (t->id && t->blocked && t->reason < CTR_REASON_LIMIT &&
            ctr_reason_specs[t->reason].wait_class != CTR_CLASS_SLEEP &&
            grow(&G.open_waits, &G.open_cap, G.nopen, sizeof(*G.open_waits)) == 0)
            G.open_waits[G.nopen++] = t->since_ticks;
    }
    if (G.nopen > 1)
        qsort(G.open_waits, G.nopen, sizeof(*G.open_waits), cmp_u64);
    *since = G.open_waits;
    return G.nopen;
}

static void add_map(void *ctx, const struct ctr_map_info *m)
{
    (void)ctx;
    size_t at = 0;
    while (at < G.nmaps && G.maps[at].start < m->start)
        at++;
    if (at < G.nmaps && G.maps[at].start == m->start && G.maps[at].limit == m->limit)
        return;
    if (grow(&G.maps, &G.maps_cap, G.nmaps, sizeof(*G.maps)))
        return;
    memmove(&G.maps[at + 1], &G.maps[at], (G.nmaps - at) * sizeof(*G.maps));
    G.nmaps++;
    struct map *d = &G.maps[at];
    *d = (struct map){m->start,
                      m->limit,
                      m->file_offset,
                      m->bias,
                      (uint32_t)G.nmaps,
                      ctr__intern(&ctr__strings, m->path, (uint32_t)strlen(m->path)),
                      0,
                      (uint8_t)m->build_id_len,
                      {0}};
    memcpy(d->build_id, m->build_id, m->build_id_len);
}

/* Marks the mapping that holds the call site before return address pc. */
static void mark_map_of(uint64_t pc)
{
    size_t lo = 0, hi = G.nmaps;
    while (lo < hi) { /* the first mapping starting after pc - 1 */
        size_t mid = (lo + hi) / 2;
        if (G.maps[mid].start <= pc - 1)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && pc - 1 < G.maps[lo - 1].limit)
        G.maps[lo - 1].in_gen = G.mark;
}

/* The process's mappings as they are now (scanned again when code was
 * loaded or unloaded). */
static void maps_refresh(void)
{
    uint64_t v = ctr__maps_version();
    if (!G.maps_scanned || v != G.maps_version) {
        G.maps_version = v;
        G.maps_scanned = 1;
        ctr__maps_scan(add_map, NULL);
    }
}

void ctr__gen_write_all_mappings(struct ctr_outbuf *o)
{
    maps_refresh();
    for (size_t i = 0; i < G.nmaps; i++) {
        const struct map *m = &G.maps[i];
        const struct ctr_intern_entry *path = ctr__intern_entry(&ctr__strings, m->path);
        if (path)
            ctr__rec_string(o, path);
        ctr__rec_mapping(o, m->id, m->start, m->limit, m->file_offset, m->bias, m->path,
                         m->build_id, m->build_id_len);
    }
}

void ctr__gen_write_mappings(struct ctr_outbuf *o)
{
    maps_refresh();
    /* The mappings the generation's stacks and code addresses are in: what
     * a symbolizer of them needs. A stack holds return addresses, looked up
     * at pc - 1; a code address is itself. */
    for (size_t i = 0; i < G.npcs; i++)
        mark_map_of(G.pcs[i] + 1);
    for (size_t i = 0; i < G.stacks.n; i++) {
        const struct ctr_intern_entry *e = ctr__intern_entry(&ctr__stacks, G.stacks.ids[i]);
        /* Entries start 8-aligned in the arena, and so do their bytes. */
        const uintptr_t *pcs = e ? (const uintptr_t *)(const void *)e->bytes : NULL;
        for (size_t k = 0; e && k < e->len / sizeof(uintptr_t); k++)
            mark_map_of(pcs[k]);
    }
    for (size_t i = 0; i < G.nmaps; i++) {
        const struct map *m = &G.maps[i];
        if (m->in_gen != G.mark)
            continue;
        need(&G.strings, m->path);
        ctr__rec_mapping(o, m->id, m->start, m->limit, m->file_offset, m->bias, m->path,
                         m->build_id, m->build_id_len);
    }
}

void ctr__gen_write_tables(struct ctr_outbuf *o)
{
    for (size_t i = 0; i < G.nwaiting; i++) {
        const struct waiting *w = &G.waiting[i];
        ctr__rec_waiting(o, w->thread_id, w->since_ticks, w->reason, w->object, w->stack);
    }
    for (size_t i = 0; i < G.stacks.n; i++) {
        const struct ctr_intern_entry *e = ctr__intern_entry(&ctr__stacks, G.stacks.ids[i]);
        if (e)
            ctr__rec_stack(o, e);
    }
    for (size_t i = 0; i < G.strings.n; i++) {
        const struct ctr_intern_entry *e = ctr__intern_entry(&ctr__strings, G.strings.ids[i]);
        if (e)
            ctr__rec_string(o, e);
    }
}

void ctr__gen_session(void)
{
    /* A new session: what threads did before it is not in its trace. */
    if (G.threads)
        memset(G.threads, 0, G.nthreads * sizeof(*G.threads));
}

void ctr__gen_forked(void)
{
    /* The intern tables start again from empty: no id or mapping of the
     * parent's means anything now. */
    ctr__gen_session();
    G.nmaps = 0;
    G.maps_scanned = 0;
    clear_marks(); /* the lists are emptied as the next generation begins */
}
