/* SPDX-License-Identifier: MIT */
/* perfetto_enc.c - the Perfetto export's encoder (see perfetto_enc.h).
 *
 * One packet per event: its time, the sequence id, the flag that it needs
 * the sequence's interned data, the interned entries it is the first to
 * use, and the TrackEvent. The first packet clears the incremental state;
 * every iid is defined in an earlier packet or in its own. Stacks are
 * symbolized here, once per distinct address, by the first reading's
 * mappings (the model: its table is complete).
 */
#include "perfetto/perfetto_enc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"
#include "read/idmap.h"
#include "read/pbwrite.h"
#include "perfetto/pf_proto.h"
#include "profile/profile.h"
#include "symbols/symbolize.h"

#define UUID_PROCESS 1
#define FLUSH_AT (1u << 20) /* bytes buffered before a write */
#define INLINE_MAX 8        /* inlined frames kept per address */
#define LOG_NAME_BYTES 256  /* of a log's message, shown as its name */
#define NAME_MAX_BYTES 1024 /* of a name written inline */
/* An event's fields but its flows and a log's text: type, track, name,
 * category, four arguments, a callstack, two counters; with a margin. */
#define EVENT_MAX_BYTES (512 + NAME_MAX_BYTES)

/* Strings interned into one InternedData field (EventName, EventCategory,
 * DebugAnnotationName and InternedString all are {iid = 1, name = 2}). */
struct interner {
    int field;
    struct ctr_idmap by_hash; /* content hash -> iid */
    struct ctr_idmap by_ptr;  /* a string that lives as long as the export,
                                 by its address -> iid (intern_stable) */
    struct {
        const char *s;
        uint64_t iid;
    } recent[64]; /* by_ptr's last finds, by address */
    char **s;     /* s[iid - 1], len[iid - 1]: to tell collisions */
    size_t *len;
    size_t n, cap, lcap;
};

/* A stack once interned: its callstack and the innermost frame as text. */
struct stack_entry {
    uint64_t iid;
    char *top;        /* "function file:line", or NULL */
    uint64_t top_iid; /* top as an interned argument value, 0: none */
};

struct pf_enc {
    const struct ctr_perfetto_opts *o;
    const struct ctr_trace *m; /* the model */
    FILE *out;
    int err; /* sticky: the first error */
    struct ctr_pb file, ev, intern;
    struct interner names, categories, arg_names, functions, sources, paths, build_ids,
        values;              /* argument values: frames, thread labels */
    struct ctr_idmap frames; /* pc -> first frame iid << 8 | frames */
    uint64_t nframes;
    struct ctr_idmap stacks; /* stack id -> index in st[] */
    struct stack_entry *st;
    size_t nst, stcap;
    uint8_t *mapping_done; /* per model mapping: interned */
    struct ctr_profile_sym sym;
    int32_t *rank;     /* per thread index */
    uint8_t *declared; /* per thread index: 1 its track, 2 its notes track */
    char **labels;     /* per thread index: "NAME (tid N)", once made */
    uint8_t fixed_declared[3];
    struct ctr_perfetto_stats st_out;
};

/* ---------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------- */

static int flush_file(struct pf_enc *e)
{
    if (e->err)
        return e->err;
    if (e->file.err)
        return e->err = e->file.err;
    if (e->file.len && fwrite(e->file.b, 1, e->file.len, e->out) != e->file.len)
        return e->err = errno ? -errno : -EIO;
    e->st_out.bytes += e->file.len;
    e->file.len = 0;
    return 0;
}

/* Writes a packet of sequence seq whose one message, field `field`, is in
 * e->ev, with the interned entries its message is the first to use (in
 * e->intern). Its length is known before it is written: no length to
 * patch, no move. */
static int end_packet_on(struct pf_enc *e, uint32_t seq, int field, uint64_t ts, int has_ts,
                         int flags)
{
    size_t nev = e->ev.len, nin = e->intern.len;
    if (e->ev.err || e->intern.err)
        return e->err = -ENOMEM;
    size_t body = (has_ts ? 1 + ctr_pb_varint_len(ts) : 0) + 2 + (flags ? 2 : 0) +
                  (nin ? 1 + ctr_pb_varint_len(nin) + nin : 0) +
                  ctr_pb_varint_len((uint64_t)field << 3 | CTR_PB_LEN) + ctr_pb_varint_len(nev) +
                  nev;
    uint8_t *q = ctr_pb_reserve(&e->file, 1 + 10 + body);
    if (!q)
        return e->err = -ENOMEM;
    q = ctr_pb_put_tag(q, TRACE_PACKET, CTR_PB_LEN);
    q = ctr_put_uvarint(q, body);
    if (has_ts)
        q = ctr_pb_put_field(q, PKT_TIMESTAMP, ts);
    q = ctr_pb_put_field(q, PKT_SEQ_ID, seq);
    if (flags)
        q = ctr_pb_put_field(q, PKT_SEQ_FLAGS, (uint64_t)flags);
    if (nin)
        q = ctr_pb_put_bytes(q, PKT_INTERNED, e->intern.b, nin);
    q = ctr_pb_put_bytes(q, field, e->ev.b, nev);
    e->file.len = (size_t)(q - e->file.b);
    e->intern.len = e->ev.len = 0;
    e->st_out.packets++;
    return e->file.len >= FLUSH_AT ? flush_file(e) : 0;
}

/* The same on the timeline's sequence. */
static int end_packet(struct pf_enc *e, int field, uint64_t ts, int has_ts, int flags)
{
    return end_packet_on(e, PF_SEQ_TIMELINE, field, ts, has_ts, flags);
}

struct ctr_pb *pf_enc_raw(struct pf_enc *e)
{
    e->ev.len = 0;
    return &e->ev;
}

int pf_enc_raw_end(struct pf_enc *e, uint32_t seq, int field, uint64_t ts, int has_ts)
{
    if (e->err)
        return e->err;
    e->intern.len = 0;
    return end_packet_on(e, seq, field, ts, has_ts, 0);
}

struct ctr_profile_sym *pf_enc_symbols(struct pf_enc *e)
{
    return &e->sym;
}

void pf_enc_count_slices(struct pf_enc *e, uint64_t n)
{
    e->st_out.slices += n;
}

/* ---------------------------------------------------------------------------
 * Interning
 * ------------------------------------------------------------------------- */

/* The iid of s[0..n) in `in`, defining it in this packet if new; 0 when
 * its hash collides with another string's (the caller then goes without). */
static uint64_t intern(struct pf_enc *e, struct interner *in, const char *s, size_t n)
{
    uint64_t h = ctr_hash_bytes(s, n);
    const uint64_t *v = ctr_idmap_get(&in->by_hash, h);
    if (v)
        return in->len[*v - 1] == n && memcmp(in->s[*v - 1], s, n) == 0 ? *v : 0;
    char *copy = malloc(n + 1);
    if (!copy || ctr_grow(&in->s, &in->cap, in->n + 1, sizeof(*in->s)) != 0 ||
        ctr_grow(&in->len, &in->lcap, in->n + 1, sizeof(*in->len)) != 0 ||
        ctr_idmap_put(&in->by_hash, h, in->n + 1) != 0) {
        free(copy);
        e->err = -ENOMEM;
        return 0;
    }
    memcpy(copy, s, n);
    copy[n] = 0;
    in->s[in->n] = copy;
    in->len[in->n] = n;
    uint64_t iid = ++in->n;
    size_t m = ctr_pb_open(&e->intern, in->field);
    ctr_pb_field(&e->intern, 1, iid);
    ctr_pb_bytes(&e->intern, 2, s, n);
    ctr_pb_close(&e->intern, m);
    return iid;
}

static uint64_t intern_str(struct pf_enc *e, struct interner *in, const char *s)
{
    return intern(e, in, s, strlen(s));
}

/* The same for a string that neither moves nor changes while the export
 * runs (a literal, a name in the model's tables): found by its address,
 * without hashing it. */
static uint64_t intern_stable(struct pf_enc *e, struct interner *in, const char *s)
{
    size_t slot = ((uintptr_t)s >> 3 ^ (uintptr_t)s >> 9) & 63;
    if (in->recent[slot].s == s)
        return in->recent[slot].iid; /* the few names of every event */
    const uint64_t *v = ctr_idmap_get(&in->by_ptr, (uintptr_t)s);
    uint64_t iid = v ? *v : intern_str(e, in, s);
    if (!v && iid && ctr_idmap_put(&in->by_ptr, (uintptr_t)s, iid) != 0)
        e->err = -ENOMEM;
    if (iid)
        in->recent[slot].s = s, in->recent[slot].iid = iid;
    return iid;
}

static void interner_free(struct interner *in)
{
    for (size_t i = 0; i < in->n; i++)
        free(in->s[i]);
    free(in->s);
    free(in->len);
    ctr_idmap_free(&in->by_hash);
    ctr_idmap_free(&in->by_ptr);
}

/* The iid of model mapping i, defining it if new. A mapping always names
 * a build id (the empty one when it has none): Perfetto drops one without. */
static uint64_t mapping_iid(struct pf_enc *e, size_t i)
{
    const struct ctr_mapping_info *mp = &e->m->mappings[i];
    if (e->mapping_done[i])
        return i + 1;
    uint64_t build = intern(e, &e->build_ids, (const char *)mp->build_id, mp->build_id_len);
    uint64_t parts[64];
    size_t nparts = 0;
    for (const char *c = mp->path ? mp->path : ""; *c && nparts < 64;) {
        const char *slash = strchr(c, '/');
        size_t len = slash ? (size_t)(slash - c) : strlen(c);
        if (len)
            parts[nparts++] = intern(e, &e->paths, c, len);
        c += len + (slash != NULL);
    }
    size_t m = ctr_pb_open(&e->intern, ID_MAPPINGS);
    ctr_pb_field(&e->intern, MP_IID, i + 1);
    ctr_pb_field(&e->intern, MP_BUILD_ID, build);
    ctr_pb_field(&e->intern, MP_START_OFFSET, mp->file_offset);
    ctr_pb_field(&e->intern, MP_START, mp->start);
    ctr_pb_field(&e->intern, MP_END, mp->limit);
    for (size_t k = 0; k < nparts; k++)
        ctr_pb_field(&e->intern, MP_PATHS, parts[k]);
    ctr_pb_close(&e->intern, m);
    e->mapping_done[i] = 1;
    return i + 1;
}

/* Frames for return address pc (its inline chain, innermost first): the
 * first frame's iid and how many; *top (may be NULL) gets the innermost
 * as "function file:line" (malloc'd) when known. */
static uint64_t frames_of(struct pf_enc *e, uint64_t pc, unsigned *count, char **top)
{
    const uint64_t *v = ctr_idmap_get(&e->frames, pc);
    if (v && !top) {
        *count = (unsigned)(*v & 0xff);
        return *v >> 8;
    }
    uint64_t at = pc ? pc - 1 : 0; /* the call, not the return address */
    struct ctr_sym_frame f[INLINE_MAX];
    int k = e->sym.sym ? ctr_symbolize(e->sym.sym, at, f, INLINE_MAX) : 0;
    if (top) {
        char buf[1024];
        if (k > 0 && f[0].function) {
            const char *file = f[0].file ? strrchr(f[0].file, '/') : NULL;
            file = file ? file + 1 : f[0].file;
            if (file)
                snprintf(buf, sizeof(buf), "%s %s:%d", f[0].function, file, f[0].line);
            else
                snprintf(buf, sizeof(buf), "%s", f[0].function);
        } else {
            ctr_symbolizer_module_offset(e->sym.sym, at, buf, sizeof(buf));
        }
        *top = strdup(buf);
    }
    if (v) {
        *count = (unsigned)(*v & 0xff);
        return *v >> 8;
    }
    int mi = e->sym.sym ? ctr_symbolizer_mapping(e->sym.sym, at) : -1;
    uint64_t mapping = mi >= 0 ? mapping_iid(e, (size_t)mi) : 0;
    uint64_t rel = mi >= 0 ? at - e->m->mappings[mi].start : 0;
    char name[64];
    if (k == 0) { /* unknown: the address stands for the function */
        f[0] = (struct ctr_sym_frame){.function = NULL};
        k = 1;
    }
    uint64_t first = e->nframes + 1;
    for (int j = 0; j < k; j++) {
        const char *fn = f[j].function;
        if (!fn) {
            snprintf(name, sizeof(name), "0x%llx", (unsigned long long)at);
            fn = name;
        }
        /* The strings first: each is an entry of its own, not inside the frame. */
        uint64_t function = intern_str(e, &e->functions, fn);
        uint64_t source = f[j].file ? intern_str(e, &e->sources, f[j].file) : 0;
        size_t m = ctr_pb_open(&e->intern, ID_FRAMES);
        ctr_pb_field(&e->intern, FR_IID, ++e->nframes);
        ctr_pb_uint(&e->intern, FR_FUNCTION, function);
        if (mapping) {
            ctr_pb_field(&e->intern, FR_MAPPING, mapping);
            ctr_pb_field(&e->intern, FR_REL_PC, rel);
        }
        if (source) {
            ctr_pb_field(&e->intern, FR_SOURCE, source);
            if (f[j].line > 0)
                ctr_pb_field(&e->intern, FR_LINE, (uint64_t)f[j].line);
        }
        ctr_pb_close(&e->intern, m);
    }
    if (ctr_idmap_put(&e->frames, pc, first << 8 | (unsigned)k) != 0)
        e->err = -ENOMEM;
    *count = (unsigned)k;
    return first;
}

/* The interned stack of trace stack `id` (NULL when the trace lacks it). */
static const struct stack_entry *stack_of(struct pf_enc *e, uint64_t id)
{
    const uint64_t *v = ctr_idmap_get(&e->stacks, id);
    if (v)
        return &e->st[*v];
    const struct ctr_stack_info *s = ctr_trace_stack(e->m, id);
    if (!s || !s->n || ctr_grow(&e->st, &e->stcap, e->nst + 1, sizeof(*e->st)) != 0)
        return NULL;
    struct stack_entry *se = &e->st[e->nst];
    *se = (struct stack_entry){0};
    /* Perfetto lists frames outermost first; the trace, innermost first. */
    uint64_t *ids = malloc((size_t)s->n * INLINE_MAX * sizeof(*ids));
    size_t nids = 0;
    if (!ids)
        return NULL;
    for (uint32_t i = s->n; i-- > 0;) {
        unsigned count;
        uint64_t first = frames_of(e, s->pcs[i], &count, i == 0 ? &se->top : NULL);
        for (unsigned j = count; j-- > 0;)
            ids[nids++] = first + j;
    }
    se->iid = e->nst + 1;
    se->top_iid = se->top ? intern_str(e, &e->values, se->top) : 0;
    size_t m = ctr_pb_open(&e->intern, ID_CALLSTACKS);
    ctr_pb_field(&e->intern, CS_IID, se->iid);
    for (size_t j = 0; j < nids; j++)
        ctr_pb_field(&e->intern, CS_FRAMES, ids[j]);
    ctr_pb_close(&e->intern, m);
    free(ids);
    if (ctr_idmap_put(&e->stacks, id, e->nst) != 0) {
        free(se->top);
        return NULL;
    }
    return &e->st[e->nst++];
}

/* ---------------------------------------------------------------------------
 * Tracks
 * ------------------------------------------------------------------------- */

/* Small uuids make small events: 1 the process, 2-4 the fixed tracks, then
 * threads' and tasks' tracks interleaved. */
static uint64_t track_uuid(uint64_t track)
{
    uint64_t kind = PF_TRACK_KIND(track), index = PF_TRACK_INDEX(track);
    switch (kind) {
    case PF_TR_THREAD:
        return 8 + 3 * index;
    case PF_TR_NOTES:
        return 9 + 3 * index;
    case PF_TR_TASK:
        return 10 + 3 * index;
    default:
        return kind; /* 2, 3, 4 */
    }
}

static const char *thread_name(const struct ctr_thread_info *th)
{
    return th->name && th->name[0] ? th->name : "thread";
}

/* A tid for Perfetto, which wants one: the trace's, else one that no
 * kernel hands out, from the thread's id. */
static int64_t tid_of(const struct ctr_thread_info *th)
{
    return th->os_tid ? th->os_tid : (int64_t)0x40000000 + (int64_t)th->id;
}

static int declare_new(struct pf_enc *e, uint64_t track, const struct pf_item *it);

/* Declares the track unless it is already (a task's: when the caller says
 * it is new): the check inline, the descriptor apart. */
static inline int declare(struct pf_enc *e, uint64_t track, const struct pf_item *it, int new_task)
{
    uint64_t kind = PF_TRACK_KIND(track), index = PF_TRACK_INDEX(track);
    if (kind == PF_TR_THREAD || kind == PF_TR_NOTES) {
        if (index < e->m->nthreads && (e->declared[index] & (kind == PF_TR_THREAD ? 1 : 2)))
            return 0;
    } else if (kind == PF_TR_TASK ? !new_task : e->fixed_declared[kind - PF_TR_CTRACE]) {
        return 0;
    }
    return declare_new(e, track, it);
}

static int declare_new(struct pf_enc *e, uint64_t track, const struct pf_item *it)
{
    uint64_t kind = PF_TRACK_KIND(track), index = PF_TRACK_INDEX(track);
    uint8_t *flag = NULL, bit = 1;
    if (kind == PF_TR_THREAD || kind == PF_TR_NOTES) {
        if (index >= e->m->nthreads)
            return 0;
        flag = &e->declared[index];
        bit = kind == PF_TR_THREAD ? 1 : 2;
        if (kind == PF_TR_NOTES && !(*flag & 1)) {
            int rc = declare(e, PF_TRACK(PF_TR_THREAD, index), it, 0);
            if (rc)
                return rc;
        }
    } else if (kind != PF_TR_TASK) {
        flag = &e->fixed_declared[kind - PF_TR_CTRACE];
    }
    if (flag && (*flag & bit))
        return 0;
    if (flag)
        *flag |= bit;
    struct ctr_pb *w = &e->ev;
    ctr_pb_field(w, TD_UUID, track_uuid(track));
    if (kind == PF_TR_THREAD) {
        const struct ctr_thread_info *th = &e->m->threads[index];
        size_t t = ctr_pb_open(w, TD_THREAD);
        ctr_pb_field(w, THD_PID, (uint64_t)(int64_t)(int32_t)e->m->pid);
        ctr_pb_field(w, THD_TID, (uint64_t)tid_of(th));
        ctr_pb_string(w, THD_NAME, thread_name(th));
        ctr_pb_close(w, t);
        ctr_pb_field(w, TD_RANK, (uint64_t)(int64_t)e->rank[index]);
    } else {
        ctr_pb_field(w, TD_PARENT,
                     kind == PF_TR_NOTES ? track_uuid(PF_TRACK(PF_TR_THREAD, index))
                                         : UUID_PROCESS);
        if (kind == PF_TR_NOTES) {
            ctr_pb_string(w, TD_NAME, "regions & logs");
        } else if (kind == PF_TR_TASK) {
            const char *type = ctr_trace_name(e->m, it->a);
            ctr_pb_string(w, TD_NAME, type[0] ? type : "task");
        } else if (kind == PF_TR_CTRACE) {
            ctr_pb_string(w, TD_NAME, "ctrace");
        } else {
            ctr_pb_string(w, TD_NAME,
                          kind == PF_TR_BLOCKED ? "threads blocked" : "threads runnable");
            size_t c = ctr_pb_open(w, TD_COUNTER);
            ctr_pb_field(w, CD_UNIT, UNIT_COUNT);
            ctr_pb_close(w, c);
        }
    }
    return end_packet(e, PKT_TRACK_DESCRIPTOR, 0, 0, 0);
}

/* ---------------------------------------------------------------------------
 * Events
 * ------------------------------------------------------------------------- */

static const char *class_name(uint8_t reason)
{
    static const char *const names[] = {[CTR_CLASS_SYNC] = "sync",
                                        [CTR_CLASS_SCHED] = "sched",
                                        [CTR_CLASS_NET] = "net",
                                        [CTR_CLASS_SYSCALL] = "syscall",
                                        [CTR_CLASS_SLEEP] = "sleep"};
    uint8_t c = reason < CTR_REASON_LIMIT ? ctr_reason_specs[reason].wait_class : 0;
    return c && c <= CTR_CLASS_SLEEP ? names[c] : "wait";
}

/* The event being made is written in place: q is the cursor into e->ev,
 * which pf_enc_item() gave room enough for any event. */

/* An argument whose value is a varint (name: a literal). A debug
 * annotation this small has a one-byte length. */
static uint8_t *arg_uint(struct pf_enc *e, uint8_t *q, const char *name, uint64_t v, int field)
{
    uint64_t iid = intern_stable(e, &e->arg_names, name);
    q = ctr_pb_put_tag(q, TE_ARGS, CTR_PB_LEN);
    uint8_t *len = q++;
    q = ctr_pb_put_field(q, DA_NAME_IID, iid);
    q = ctr_pb_put_field(q, field, v);
    *len = (uint8_t)(q - len - 1);
    return q;
}

/* A string argument by its iid among the interned values (0: left out). */
static uint8_t *arg_value(struct pf_enc *e, uint8_t *q, const char *name, uint64_t value_iid)
{
    return value_iid ? arg_uint(e, q, name, value_iid, DA_STRING_IID) : q;
}

static uint8_t *arg_string(struct pf_enc *e, uint8_t *q, const char *name, const char *s, size_t n)
{
    uint64_t iid = intern_stable(e, &e->arg_names, name);
    size_t body = 1 + ctr_pb_varint_len(iid) + 1 + ctr_pb_varint_len(n) + n;
    q = ctr_pb_put_tag(q, TE_ARGS, CTR_PB_LEN);
    q = ctr_put_uvarint(q, body);
    q = ctr_pb_put_field(q, DA_NAME_IID, iid);
    return ctr_pb_put_bytes(q, DA_STRING, s, n);
}

/* A name for the event (a literal or the model's): interned, or inline
 * when it cannot be. */
static uint8_t *event_name(struct pf_enc *e, uint8_t *q, const char *s)
{
    uint64_t iid = intern_stable(e, &e->names, s);
    if (iid)
        return ctr_pb_put_field(q, TE_NAME_IID, iid);
    return ctr_pb_put_bytes(q, TE_NAME, s, strnlen(s, NAME_MAX_BYTES));
}

static uint8_t *event_category(struct pf_enc *e, uint8_t *q, const char *s)
{
    uint64_t iid = intern_stable(e, &e->categories, s[0] ? s : "log");
    return iid ? ctr_pb_put_field(q, TE_CATEGORY_IIDS, iid) : q;
}

/* A log's message as a name: valid UTF-8 (what Perfetto shows), invalid
 * bytes as '?', cut to a length a timeline shows. */
static uint8_t *log_name(uint8_t *q, const uint8_t *s, size_t n)
{
    char buf[LOG_NAME_BYTES];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < sizeof(buf);) {
        uint8_t c = s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = len && i + len <= n;
        for (size_t j = 1; ok && j < len; j++)
            ok = (s[i + j] & 0xc0) == 0x80;
        if (!ok || (len == 1 && c < 0x20)) {
            buf[k++] = '?';
            i++;
        } else {
            memcpy(buf + k, s + i, len);
            k += len;
            i += len;
        }
    }
    return ctr_pb_put_bytes(q, TE_NAME, buf, k);
}

/* What names the items that say the same every time. */
static const struct {
    const char *name, *category;
    const char *count; /* the argument that gives item.a, or NULL */
} fixed[] = {
    [PF_WAIT_RUNNABLE] = {"runnable", "sched", NULL},
    [PF_PREEMPTED] = {"preempted", "sched", NULL},
    [PF_RUNNING] = {"running", "sched", NULL},
    [PF_LOST] = {"events lost", "ctrace", "count"},
    [PF_GAP] = {"missing (damaged trace)", "ctrace", NULL},
    [PF_WINDOW] = {"flight recorder window", "ctrace", "earlier_generations"},
};

/* The name, category and arguments of a BEGIN or INSTANT. */
static uint8_t *describe(struct pf_enc *e, uint8_t *q, const struct pf_item *it)
{
    const struct ctr_trace *m = e->m;
    const struct stack_entry *se = NULL;
    const char *s;
    switch (it->what) {
    case PF_WAIT:
        s = it->reason < CTR_REASON_LIMIT ? ctr_reason_specs[it->reason].call : NULL;
        q = event_name(e, q, s ? s : "wait");
        q = event_category(e, q, class_name(it->reason));
        q = arg_uint(e, q, "object", it->a, DA_POINTER);
        if ((se = stack_of(e, it->b)) != NULL)
            q = arg_value(e, q, "frame", se->top_iid);
        break;
    case PF_RELEASE:
        s = it->nflows && it->reason < CTR_REASON_LIMIT ? ctr_reason_specs[it->reason].release
                                                        : NULL;
        q = event_name(e, q, s ? s : "release");
        q = event_category(e, q, "release");
        q = arg_uint(e, q, "object", it->a, DA_POINTER);
        q = arg_uint(e, q, "waiters", it->nflows, DA_UINT);
        se = stack_of(e, it->b);
        break;
    case PF_SAMPLE:
        /* The sample's stack is the running code's; its first PC is the
         * interrupted instruction + 1, so it interns as any stack does. */
        q = event_name(e, q, "cpu sample");
        q = event_category(e, q, "cpu");
        q = arg_uint(e, q, "cpu_ns", it->a, DA_UINT);
        if ((se = stack_of(e, it->b)) != NULL)
            q = arg_value(e, q, "frame", se->top_iid);
        break;
    case PF_REGION:
        q = event_name(e, q, ctr_trace_name(m, it->a));
        q = event_category(e, q, "region");
        if (it->b)
            q = arg_uint(e, q, "task", it->b, DA_UINT);
        break;
    case PF_LOG:
        q = log_name(q, it->ext, (size_t)it->c);
        q = event_category(e, q, ctr_trace_name(m, it->a));
        q = arg_string(e, q, "message", it->ext, (size_t)it->c);
        if (it->b)
            q = arg_uint(e, q, "task", it->b, DA_UINT);
        break;
    case PF_TASK:
        s = ctr_trace_name(m, it->a);
        q = event_name(e, q, s[0] ? s : "task");
        q = event_category(e, q, "task");
        q = arg_uint(e, q, "task", it->b, DA_UINT);
        if (it->c)
            q = arg_uint(e, q, "parent", it->c, DA_UINT);
        break;
    default: /* a name, a category and at most one count, all fixed */
        if (it->what < sizeof(fixed) / sizeof(*fixed) && fixed[it->what].name) {
            q = event_name(e, q, fixed[it->what].name);
            q = event_category(e, q, fixed[it->what].category);
            if (fixed[it->what].count)
                q = arg_uint(e, q, fixed[it->what].count, it->a, DA_UINT);
        }
        break;
    }
    return se ? ctr_pb_put_field(q, TE_CALLSTACK, se->iid) : q;
}

/* "NAME (tid N)" of thread index i, made once. */
static const char *thread_label(struct pf_enc *e, uint32_t i)
{
    if (!e->labels[i]) {
        const struct ctr_thread_info *th = &e->m->threads[i];
        char buf[300];
        snprintf(buf, sizeof(buf), "%s (tid %lld)", thread_name(th), (long long)tid_of(th));
        if (!(e->labels[i] = strdup(buf)))
            e->err = -ENOMEM;
    }
    return e->labels[i] ? e->labels[i] : "";
}

int pf_enc_item(struct pf_enc *e, const struct pf_item *it, int new_task,
                const struct pf_counters *c)
{
    if (e->err)
        return e->err;
    int rc = declare(e, it->track, it, new_task);
    for (int k = 0; rc == 0 && c && k < c->n; k++)
        rc = declare(e, c->track[k], NULL, 0);
    if (rc)
        return rc;
    /* Room for the largest event: fixed fields, a log's name and message,
     * the flows. */
    size_t room = EVENT_MAX_BYTES + (size_t)it->nflows * 9 +
                  (it->what == PF_LOG ? LOG_NAME_BYTES + (size_t)it->c + 16 : 0);
    uint8_t *q = ctr_pb_reserve(&e->ev, room);
    if (!q)
        return e->err = -ENOMEM;
    int type = it->kind == PF_BEGIN ? TYPE_BEGIN : it->kind == PF_END ? TYPE_END : TYPE_INSTANT;
    q = ctr_pb_put_field(q, TE_TYPE, (uint64_t)type);
    q = ctr_pb_put_field(q, TE_TRACK, track_uuid(it->track));
    if (it->kind != PF_END) {
        q = describe(e, q, it);
        e->st_out.slices += it->kind == PF_BEGIN;
        e->st_out.instants += it->kind == PF_INSTANT;
    } else if (it->what == PF_WAIT && it->thread < e->m->nthreads) {
        q = arg_value(e, q, "released_by",
                      intern_stable(e, &e->values, thread_label(e, it->thread)));
    }
    int field = it->kind == PF_END ? TE_TERMINATING_FLOWS : TE_FLOWS;
    for (uint32_t k = 0; k < it->nflows; k++)
        q = ctr_pb_put_fixed64(q, field, it->flow + k);
    for (int k = 0; c && k < c->n; k++)
        q = ctr_pb_put_field(q, TE_EXTRA_COUNTER_TRACKS, track_uuid(c->track[k]));
    for (int k = 0; c && k < c->n; k++)
        q = ctr_pb_put_field(q, TE_EXTRA_COUNTER_VALUES, (uint64_t)c->value[k]);
    e->ev.len = (size_t)(q - e->ev.b);
    e->st_out.flows += it->kind == PF_END ? it->nflows : 0;
    e->st_out.counters += c ? (uint64_t)c->n : 0;
    return end_packet(e, PKT_TRACK_EVENT, it->ts, 1, SEQ_NEEDS_INCREMENTAL_STATE);
}

int pf_enc_counter(struct pf_enc *e, uint64_t track, uint64_t ts, int64_t v)
{
    if (e->err)
        return e->err;
    int rc = declare(e, track, NULL, 0);
    if (rc)
        return rc;
    ctr_pb_field(&e->ev, TE_TYPE, TYPE_COUNTER);
    ctr_pb_field(&e->ev, TE_TRACK, track_uuid(track));
    ctr_pb_field(&e->ev, TE_COUNTER, (uint64_t)v);
    e->st_out.counters++;
    return end_packet(e, PKT_TRACK_EVENT, ts, 1, SEQ_NEEDS_INCREMENTAL_STATE);
}

/* ---------------------------------------------------------------------------
 * Lifecycle
 * ------------------------------------------------------------------------- */

struct ranked {
    uint64_t busy;
    uint32_t index;
};

/* The busiest first; ties in trace order. */
static int by_busy(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->busy != y->busy)
        return x->busy > y->busy ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

struct pf_enc *pf_enc_new(const struct ctr_perfetto_opts *o, FILE *out)
{
    struct pf_enc *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    const struct ctr_trace *m = o->model;
    e->o = o;
    e->m = m;
    e->out = out;
    e->names.field = ID_NAMES;
    e->categories.field = ID_CATEGORIES;
    e->arg_names.field = ID_ARG_NAMES;
    e->functions.field = ID_FUNCTIONS;
    e->sources.field = ID_SOURCE_PATHS;
    e->paths.field = ID_MAPPING_PATHS;
    e->build_ids.field = ID_BUILD_IDS;
    e->values.field = ID_STRING_VALUES;
    size_t n = m->nthreads ? m->nthreads : 1;
    e->rank = calloc(n, sizeof(*e->rank));
    e->declared = calloc(n, 1);
    e->labels = calloc(n, sizeof(*e->labels));
    e->mapping_done = calloc(m->nmappings ? m->nmappings : 1, 1);
    struct ranked *order = calloc(n, sizeof(*order));
    if (!e->rank || !e->declared || !e->labels || !e->mapping_done || !order ||
        ctr_profile_sym_open(m, &e->sym) != 0) {
        free(order);
        pf_enc_free(e);
        return NULL;
    }
    for (uint32_t i = 0; i < m->nthreads; i++)
        order[i] = (struct ranked){o->busy_ns ? o->busy_ns[i] : 0, i};
    qsort(order, m->nthreads, sizeof(*order), by_busy);
    for (uint32_t r = 0; r < m->nthreads; r++)
        e->rank[order[r].index] = (int32_t)r;
    free(order);
    /* The sequence starts clean; the root descriptor orders threads by the
     * rank each one's descriptor carries; then the process. */
    struct ctr_pb *w = &e->ev;
    ctr_pb_field(w, TD_UUID, 0);
    ctr_pb_field(w, TD_THREAD_ORDERING, 1); /* THREAD_ORDERING_EXPLICIT */
    end_packet(e, PKT_TRACK_DESCRIPTOR, 0, 0, SEQ_INCREMENTAL_STATE_CLEARED);
    ctr_pb_field(w, TD_UUID, UUID_PROCESS);
    size_t p = ctr_pb_open(w, TD_PROCESS);
    ctr_pb_field(w, PD_PID, (uint64_t)(int64_t)(int32_t)m->pid);
    const char *exe = m->exe && m->exe[0] ? m->exe : "program";
    const char *base = strrchr(exe, '/');
    ctr_pb_string(w, PD_NAME, base && base[1] ? base + 1 : exe);
    ctr_pb_close(w, p);
    end_packet(e, PKT_TRACK_DESCRIPTOR, 0, 0, 0);
    if (e->err) {
        pf_enc_free(e);
        return NULL;
    }
    return e;
}

int pf_enc_finish(struct pf_enc *e, struct ctr_perfetto_stats *st)
{
    int rc = flush_file(e);
    if (rc == 0 && fflush(e->out) != 0)
        rc = e->err = errno ? -errno : -EIO;
    st->packets = e->st_out.packets;
    st->bytes = e->st_out.bytes;
    st->slices = e->st_out.slices;
    st->instants = e->st_out.instants;
    st->counters = e->st_out.counters;
    st->flows = e->st_out.flows;
    return rc;
}

void pf_enc_free(struct pf_enc *e)
{
    if (!e)
        return;
    ctr_pb_free(&e->file);
    ctr_pb_free(&e->ev);
    ctr_pb_free(&e->intern);
    struct interner *all[] = {&e->names,   &e->categories, &e->arg_names, &e->functions,
                              &e->sources, &e->paths,      &e->build_ids, &e->values};
    for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++)
        interner_free(all[i]);
    ctr_idmap_free(&e->frames);
    ctr_idmap_free(&e->stacks);
    for (size_t i = 0; i < e->nst; i++)
        free(e->st[i].top);
    free(e->st);
    free(e->mapping_done);
    ctr_profile_sym_close(&e->sym, stderr);
    free(e->rank);
    free(e->declared);
    for (size_t i = 0; e->labels && i < e->m->nthreads; i++)
        free(e->labels[i]);
    free(e->labels);
    free(e);
}
