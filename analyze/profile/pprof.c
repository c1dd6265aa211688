/* SPDX-License-Identifier: MIT */
/* pprof.c - builds a pprof profile (profile.proto) in memory and writes it
 * gzip'd.
 *
 * Invariants the builder keeps:
 *  - string_table[0] is "" and every string is stored once (interned);
 *  - the id of a mapping, location or function is its array index + 1, since
 *    profile.proto uses id 0 for "none";
 *  - there is one location per distinct code address and one per distinct
 *    synthetic function name, and one function per (name, filename,
 *    start_line); code addresses are symbolized once, when first seen;
 *  - there is one sample per distinct stack of location ids (the same thing
 *    as a distinct frame list, since frames and locations correspond one to
 *    one); its values are the sums of every value added with that stack;
 *  - an insertion reserves its memory before linking anything in, so a failed
 *    ctr_pprof_add leaves a consistent builder (at worst with unused
 *    locations or functions).
 * The encoder writes only the fields that tests/data/proto/profile.proto lists.
 */
#define ZLIB_CONST
#include "profile/pprof.h"
#include "read/idmap.h"
#include "read/pbwrite.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Deepest inline chain kept for one address. */
#define MAX_INLINE 32

/* ---------------------------------------------------------------------------
 * Data
 * ------------------------------------------------------------------------- */

/* Open-addressing hash index from a key to an item of one of the arrays
 * below; the arrays hold the keys, the index only their hashes. A slot's item
 * is the item's array index + 1, 0 in an empty slot; cap is 0 or a power of 2. */
struct slot {
    uint64_t hash;
    size_t item;
};
struct index {
    struct slot *slots;
    size_t cap, used;
};

struct vtype {
    int64_t type, unit;
}; /* string table indexes */

struct mapping {
    uint64_t start, limit, offset;
    int64_t filename, build_id;
    bool has_functions, has_filenames, has_lines;
};
struct function {
    int64_t name, filename, start_line;
};
struct line {
    uint64_t function_id;
    int64_t line;
};
struct location {
    bool synthetic;
    uint64_t key; /* the address, or the name's string index */
    uint64_t mapping_id;
    size_t first_line, nlines; /* into lines[] */
};
struct sample {
    size_t first_id, nids;     /* into stack_ids[] */
    size_t first_label, nlabs; /* into labels[]: pairs of string indexes */
};

/* clang-format off */
struct ctr_pprof {
    struct ctr_symbolizer *sym;
    size_t ntypes;
    struct vtype *types;       /* ntypes of them */
    struct vtype period_type;
    int64_t period, time_nanos, duration_nanos;

    char **strings;            size_t nstrings, strings_cap;   struct index string_idx;
    struct mapping *maps;      size_t nmaps;
    struct function *funcs;    size_t nfuncs, funcs_cap;       struct index func_idx;
    struct line *lines;        size_t nlines, lines_cap;
    struct location *locs;     size_t nlocs, locs_cap;         struct index loc_idx;
    struct sample *samples;    size_t nsamples, samples_cap;   struct index sample_idx;
    uint64_t *stack_ids;       size_t nstack_ids, stack_ids_cap;
    uint64_t *values;          size_t values_cap;   /* ntypes per sample */
    uint64_t *scratch;         size_t scratch_cap;  /* stack being added */
    int64_t *labels;           size_t nlabels, labels_cap; /* key, str pairs */
    int64_t *lscratch;         size_t lscratch_cap; /* labels being added */
};
/* clang-format on */

/* ---------------------------------------------------------------------------
 * Growable arrays and hashing
 * ------------------------------------------------------------------------- */

/* Returns arr (of elements of `size` bytes) with room for `need` elements,
 * updating *cap, or NULL (arr untouched) when out of memory. Never returns
 * NULL on success, even for need == 0, so callers may index the result. */
static void *grow(void *arr, size_t *cap, size_t need, size_t size)
{
    if (arr && need <= *cap)
        return arr;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2 / size)
            return NULL;
        n *= 2;
    }
    void *q = realloc(arr, n * size);
    if (q)
        *cap = n;
    return q;
}

/* RESERVE(arr, cap, need) : makes room for `need` elements in arr, or returns
 * -ENOMEM from the calling function. */
#define RESERVE(arr, cap, need)                                \
    do {                                                       \
        void *q_ = grow((arr), &(cap), (need), sizeof *(arr)); \
        if (!q_)                                               \
            return -ENOMEM;                                    \
        (arr) = q_;                                            \
    } while (0)

/* The murmur3 finalizer: the index masks the low bits, so every input bit
 * must reach them (addresses share their high bits, ids are small). */
static uint64_t fmix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static uint64_t hash_add(uint64_t h, uint64_t v)
{
    return fmix(h + v + 0x9e3779b97f4a7c15ULL);
}

typedef bool same_fn(const struct ctr_pprof *p, size_t item, const void *key);

/* Returns the slot of the item equal to key (same() decides), or the empty
 * slot where it belongs, for idx_insert(); NULL when out of memory. Grows the
 * index first so that an empty slot exists (load stays <= 3/4). */
static struct slot *idx_lookup(struct index *x, uint64_t h, same_fn *same,
                               const struct ctr_pprof *p, const void *key)
{
    if ((x->used + 1) * 4 > x->cap * 3) {
        size_t ncap = x->cap ? x->cap * 2 : 64;
        struct slot *s = calloc(ncap, sizeof *s);
        if (!s)
            return NULL;
        for (size_t i = 0; i < x->cap; i++) {
            if (!x->slots[i].item)
                continue;
            size_t j = x->slots[i].hash & (ncap - 1);
            while (s[j].item)
                j = (j + 1) & (ncap - 1);
            s[j] = x->slots[i];
        }
        free(x->slots);
        x->slots = s;
        x->cap = ncap;
    }
    size_t mask = x->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct slot *s = &x->slots[i];
        if (!s->item || (s->hash == h && same(p, s->item - 1, key)))
            return s;
    }
}

static void idx_insert(struct index *x, struct slot *s, uint64_t h, size_t item)
{
    s->hash = h;
    s->item = item + 1;
    x->used++;
}

/* ---------------------------------------------------------------------------
 * Strings, functions, locations
 * ------------------------------------------------------------------------- */

static bool same_string(const struct ctr_pprof *p, size_t i, const void *key)
{
    return strcmp(p->strings[i], key) == 0;
}

/* Stores in *out the string table index of s, adding a copy of s if new. */
static int intern(struct ctr_pprof *p, const char *s, int64_t *out)
{
    size_t len = strlen(s);
    uint64_t h = fmix(ctr_hash_bytes(s, len));
    struct slot *sl = idx_lookup(&p->string_idx, h, same_string, p, s);
    if (!sl)
        return -ENOMEM;
    if (!sl->item) {
        RESERVE(p->strings, p->strings_cap, p->nstrings + 1);
        char *copy = malloc(len + 1);
        if (!copy)
            return -ENOMEM;
        memcpy(copy, s, len + 1);
        p->strings[p->nstrings] = copy;
        idx_insert(&p->string_idx, sl, h, p->nstrings++);
    }
    *out = (int64_t)(sl->item - 1);
    return 0;
}

/* pprof wants build ids as text; ours are raw bytes. */
static int intern_hex(struct ctr_pprof *p, const uint8_t *b, size_t n, int64_t *out)
{
    static const char digits[] = "0123456789abcdef";
    if (n > (SIZE_MAX - 1) / 2)
        return -ENOMEM;
    char *s = malloc(2 * n + 1);
    if (!s)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = digits[b[i] >> 4];
        s[2 * i + 1] = digits[b[i] & 15];
    }
    s[2 * n] = '\0';
    int err = intern(p, s, out);
    free(s);
    return err;
}

static bool same_function(const struct ctr_pprof *p, size_t i, const void *key)
{
    const struct function *a = &p->funcs[i], *b = key;
    return a->name == b->name && a->filename == b->filename && a->start_line == b->start_line;
}

/* Appends to loc a line of function (name, file, start_line), adding the
 * function if new; file may be NULL. */
static int add_line(struct ctr_pprof *p, struct location *loc, const char *name, const char *file,
                    int line, int start_line)
{
    struct function f = {.start_line = start_line};
    int err;
    if ((err = intern(p, name, &f.name)) < 0 ||
        (err = intern(p, file ? file : "", &f.filename)) < 0)
        return err;
    uint64_t h = hash_add(hash_add(hash_add(0, (uint64_t)f.name), (uint64_t)f.filename),
                          (uint64_t)f.start_line);
    struct slot *sl = idx_lookup(&p->func_idx, h, same_function, p, &f);
    if (!sl)
        return -ENOMEM;
    RESERVE(p->lines, p->lines_cap, p->nlines + 1);
    if (!sl->item) {
        RESERVE(p->funcs, p->funcs_cap, p->nfuncs + 1);
        p->funcs[p->nfuncs] = f;
        idx_insert(&p->func_idx, sl, h, p->nfuncs++);
    }
    p->lines[p->nlines++] = (struct line){sl->item, line}; /* id = index + 1 */
    loc->nlines++;
    return 0;
}

/* Appends one line per named frame of pc's inline chain (innermost first, the
 * order pprof wants) and attaches loc to pc's mapping. Frames without a name
 * are skipped: a Line must name a function. */
static int code_lines(struct ctr_pprof *p, struct location *loc)
{
    struct ctr_sym_frame fr[MAX_INLINE];
    if (!p->sym)
        return 0;
    int m = ctr_symbolizer_mapping(p->sym, loc->key);
    struct mapping *map = m >= 0 && (size_t)m < p->nmaps ? &p->maps[m] : NULL;
    if (map)
        loc->mapping_id = (uint64_t)m + 1;
    int k = ctr_symbolize(p->sym, loc->key, fr, MAX_INLINE);
    for (int i = 0; i < k && i < MAX_INLINE; i++) {
        if (!fr[i].function)
            continue;
        int err = add_line(p, loc, fr[i].function, fr[i].file, fr[i].line, fr[i].function_line);
        if (err < 0)
            return err;
        if (map) {
            map->has_functions = true;
            map->has_filenames |= fr[i].file != NULL;
            map->has_lines |= fr[i].line > 0;
        }
    }
    return 0;
}

static bool same_location(const struct ctr_pprof *p, size_t i, const void *key)
{
    const struct location *a = &p->locs[i], *b = key;
    return a->synthetic == b->synthetic && a->key == b->key;
}

/* Stores in *id the location id of frame f, creating the location (and
 * symbolizing its address) the first time f is seen. */
static int location_id(struct ctr_pprof *p, const struct ctr_pprof_frame *f, uint64_t *id)
{
    struct location loc = {.synthetic = f->function != NULL, .key = f->pc};
    int64_t name;
    int err;
    if (loc.synthetic) {
        if ((err = intern(p, f->function, &name)) < 0)
            return err;
        loc.key = (uint64_t)name;
    }
    uint64_t h = hash_add(loc.synthetic, loc.key);
    struct slot *sl = idx_lookup(&p->loc_idx, h, same_location, p, &loc);
    if (!sl)
        return -ENOMEM;
    if (!sl->item) {
        RESERVE(p->locs, p->locs_cap, p->nlocs + 1);
        loc.first_line = p->nlines;
        err = loc.synthetic ? add_line(p, &loc, f->function, NULL, 0, 0) : code_lines(p, &loc);
        if (err < 0) {
            p->nlines = loc.first_line; /* drop this location's partial lines */
            return err;
        }
        p->locs[p->nlocs] = loc;
        idx_insert(&p->loc_idx, sl, h, p->nlocs++);
    }
    *id = sl->item; /* index + 1 */
    return 0;
}

/* ---------------------------------------------------------------------------
 * Samples
 * ------------------------------------------------------------------------- */

struct stack_key {
    const uint64_t *ids;
    size_t n;
    const int64_t *labels; /* 2 * nlabs string indexes */
    size_t nlabs;
};

static bool same_stack(const struct ctr_pprof *p, size_t i, const void *key)
{
    const struct sample *s = &p->samples[i];
    const struct stack_key *k = key;
    return s->nids == k->n && s->nlabs == k->nlabs &&
           (k->n == 0 || memcmp(p->stack_ids + s->first_id, k->ids, k->n * sizeof *k->ids) == 0) &&
           (k->nlabs == 0 ||
            memcmp(p->labels + s->first_label, k->labels, 2 * k->nlabs * sizeof *k->labels) == 0);
}

int ctr_pprof_add(struct ctr_pprof *p, const struct ctr_pprof_frame *frames, size_t n,
                  const int64_t *values)
{
    return ctr_pprof_add_labeled(p, frames, n, values, NULL, 0);
}

int ctr_pprof_add_labeled(struct ctr_pprof *p, const struct ctr_pprof_frame *frames, size_t n,
                          const int64_t *values, const struct ctr_pprof_label *labels,
                          size_t nlabels)
{
    int err;
    RESERVE(p->scratch, p->scratch_cap, n);
    RESERVE(p->lscratch, p->lscratch_cap, 2 * nlabels);
    uint64_t h = hash_add(0, n);
    for (size_t i = 0; i < n; i++) {
        if ((err = location_id(p, &frames[i], &p->scratch[i])) < 0)
            return err;
        h = hash_add(h, p->scratch[i]);
    }
    for (size_t i = 0; i < nlabels; i++) {
        if ((err = intern(p, labels[i].key, &p->lscratch[2 * i])) < 0 ||
            (err = intern(p, labels[i].str, &p->lscratch[2 * i + 1])) < 0)
            return err;
        h = hash_add(hash_add(h, (uint64_t)p->lscratch[2 * i]), (uint64_t)p->lscratch[2 * i + 1]);
    }
    struct stack_key key = {p->scratch, n, p->lscratch, nlabels};
    struct slot *sl = idx_lookup(&p->sample_idx, h, same_stack, p, &key);
    if (!sl)
        return -ENOMEM;
    if (!sl->item) {
        RESERVE(p->samples, p->samples_cap, p->nsamples + 1);
        RESERVE(p->stack_ids, p->stack_ids_cap, p->nstack_ids + n);
        RESERVE(p->labels, p->labels_cap, p->nlabels + 2 * nlabels);
        RESERVE(p->values, p->values_cap, (p->nsamples + 1) * p->ntypes);
        memcpy(p->stack_ids + p->nstack_ids, p->scratch, n * sizeof *p->scratch);
        if (nlabels)
            memcpy(p->labels + p->nlabels, p->lscratch, 2 * nlabels * sizeof *p->lscratch);
        memset(p->values + p->nsamples * p->ntypes, 0, p->ntypes * sizeof *p->values);
        p->samples[p->nsamples] = (struct sample){p->nstack_ids, n, p->nlabels, nlabels};
        p->nstack_ids += n;
        p->nlabels += 2 * nlabels;
        idx_insert(&p->sample_idx, sl, h, p->nsamples++);
    }
    uint64_t *v = p->values + (sl->item - 1) * p->ntypes;
    for (size_t i = 0; i < p->ntypes; i++) /* unsigned: wraps where int64_t overflow is UB */
        v[i] += (uint64_t)values[i];
    return 0;
}

/* ---------------------------------------------------------------------------
 * Protobuf encoder
 * ------------------------------------------------------------------------- */

static void encode_vtype(struct ctr_pb *w, int field, struct vtype t)
{
    size_t m = ctr_pb_open(w, field);
    ctr_pb_uint(w, 1, (uint64_t)t.type);
    ctr_pb_uint(w, 2, (uint64_t)t.unit);
    ctr_pb_close(w, m);
}

/* Field numbers are profile.proto's; see tests/data/proto/profile.proto. */
static void encode(const struct ctr_pprof *p, struct ctr_pb *w)
{
    for (size_t i = 0; i < p->ntypes; i++)
        encode_vtype(w, 1, p->types[i]);
    for (size_t i = 0; i < p->nsamples; i++) {
        const struct sample *s = &p->samples[i];
        size_t m = ctr_pb_open(w, 2);
        ctr_pb_packed(w, 1, p->stack_ids + s->first_id, s->nids);
        ctr_pb_packed(w, 2, p->values + i * p->ntypes, p->ntypes);
        for (size_t j = 0; j < s->nlabs; j++) { /* Label: key = 1, str = 2 */
            size_t lm = ctr_pb_open(w, 3);
            ctr_pb_uint(w, 1, (uint64_t)p->labels[s->first_label + 2 * j]);
            ctr_pb_uint(w, 2, (uint64_t)p->labels[s->first_label + 2 * j + 1]);
            ctr_pb_close(w, lm);
        }
        ctr_pb_close(w, m);
    }
    for (size_t i = 0; i < p->nmaps; i++) {
        const struct mapping *mp = &p->maps[i];
        size_t m = ctr_pb_open(w, 3);
        ctr_pb_uint(w, 1, i + 1);
        ctr_pb_uint(w, 2, mp->start);
        ctr_pb_uint(w, 3, mp->limit);
        ctr_pb_uint(w, 4, mp->offset);
        ctr_pb_uint(w, 5, (uint64_t)mp->filename);
        ctr_pb_uint(w, 6, (uint64_t)mp->build_id);
        ctr_pb_uint(w, 7, mp->has_functions);
        ctr_pb_uint(w, 8, mp->has_filenames);
        ctr_pb_uint(w, 9, mp->has_lines);
        ctr_pb_uint(w, 10, mp->has_functions); /* ctr_symbolize gives whole inline chains */
        ctr_pb_close(w, m);
    }
    for (size_t i = 0; i < p->nlocs; i++) {
        const struct location *l = &p->locs[i];
        size_t m = ctr_pb_open(w, 4);
        ctr_pb_uint(w, 1, i + 1);
        ctr_pb_uint(w, 2, l->mapping_id);
        ctr_pb_uint(w, 3, l->synthetic ? 0 : l->key);
        for (size_t j = 0; j < l->nlines; j++) {
            const struct line *ln = &p->lines[l->first_line + j];
            size_t lm = ctr_pb_open(w, 4);
            ctr_pb_uint(w, 1, ln->function_id);
            ctr_pb_uint(w, 2, (uint64_t)ln->line);
            ctr_pb_close(w, lm);
        }
        ctr_pb_close(w, m);
    }
    for (size_t i = 0; i < p->nfuncs; i++) {
        const struct function *f = &p->funcs[i];
        size_t m = ctr_pb_open(w, 5);
        ctr_pb_uint(w, 1, i + 1);
        ctr_pb_uint(w, 2, (uint64_t)f->name);
        ctr_pb_uint(w, 3, (uint64_t)f->name); /* system_name: we have no other */
        ctr_pb_uint(w, 4, (uint64_t)f->filename);
        ctr_pb_uint(w, 5, (uint64_t)f->start_line);
        ctr_pb_close(w, m);
    }
    for (size_t i = 0; i < p->nstrings; i++)
        ctr_pb_string(w, 6, p->strings[i]); /* written even when empty: [0] is "" */
    ctr_pb_uint(w, 9, (uint64_t)p->time_nanos);
    ctr_pb_uint(w, 10, (uint64_t)p->duration_nanos);
    encode_vtype(w, 11, p->period_type);
    ctr_pb_uint(w, 12, (uint64_t)p->period);
}

/* ---------------------------------------------------------------------------
 * Output
 * ------------------------------------------------------------------------- */

/* Deflates buf[0..len) into f inside a gzip wrapper (windowBits 15 + 16). */
static int write_gzip(const uint8_t *buf, size_t len, FILE *f)
{
    z_stream z;
    uint8_t out[16384];
    int err = 0, zr;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    do {
        if (z.avail_in == 0 && len > 0) { /* avail_in is only 32 bits */
            uInt chunk = len > UINT_MAX ? UINT_MAX : (uInt)len;
            z.next_in = buf;
            z.avail_in = chunk;
            buf += chunk;
            len -= chunk;
        }
        z.next_out = out;
        z.avail_out = sizeof out;
        zr = deflate(&z, len == 0 ? Z_FINISH : Z_NO_FLUSH);
        size_t have = sizeof out - z.avail_out;
        if (zr != Z_OK && zr != Z_STREAM_END)
            err = -EIO;
        else if (fwrite(out, 1, have, f) != have)
            err = errno ? -errno : -EIO; /* e.g. -ENOSPC: say why */
    } while (!err && zr != Z_STREAM_END);
    deflateEnd(&z);
    if (!err && (fflush(f) != 0 || ferror(f)))
        err = errno ? -errno : -EIO;
    return err;
}

int ctr_pprof_write(struct ctr_pprof *p, FILE *f)
{
    struct ctr_pb w = {0};
    encode(p, &w);
    errno = 0;
    int err = w.err ? w.err : write_gzip(w.b, w.len, f);
    ctr_pb_free(&w);
    return err;
}

/* ---------------------------------------------------------------------------
 * Lifecycle
 * ------------------------------------------------------------------------- */

static int intern_vtype(struct ctr_pprof *p, struct ctr_pprof_value_type t, struct vtype *out)
{
    int err = intern(p, t.type ? t.type : "", &out->type);
    return err ? err : intern(p, t.unit ? t.unit : "", &out->unit);
}

/* Appends a copy of m to the builder's mapping table (ids: its index + 1, the
 * index ctr_symbolizer_mapping() returns for addresses in it). */
static int add_mapping(struct ctr_pprof *p, const struct ctr_sym_mapping *m)
{
    struct mapping *mp = &p->maps[p->nmaps];
    *mp = (struct mapping){.start = m->start, .limit = m->limit, .offset = m->file_offset};
    int err = intern(p, m->path ? m->path : "", &mp->filename);
    if (!err && m->build_id)
        err = intern_hex(p, m->build_id, m->build_id_len, &mp->build_id);
    if (!err)
        p->nmaps++;
    return err;
}

struct ctr_pprof *ctr_pprof_new(const struct ctr_pprof_value_type *types, size_t ntypes,
                                struct ctr_pprof_value_type period_type, int64_t period,
                                struct ctr_symbolizer *sym, const struct ctr_sym_mapping *maps,
                                size_t nmaps)
{
    struct ctr_pprof *p = calloc(1, sizeof *p);
    int64_t empty;
    if (!p)
        return NULL;
    p->sym = sym;
    p->ntypes = ntypes;
    p->period = period;
    if (intern(p, "", &empty) < 0 || intern_vtype(p, period_type, &p->period_type) < 0 ||
        !(p->types = calloc(ntypes ? ntypes : 1, sizeof *p->types)))
        goto fail;
    for (size_t i = 0; i < ntypes; i++)
        if (intern_vtype(p, types[i], &p->types[i]) < 0)
            goto fail;
    if (sym && nmaps) { /* without a symbolizer no location refers to them */
        if (!(p->maps = calloc(nmaps, sizeof *p->maps)))
            goto fail;
        for (size_t i = 0; i < nmaps; i++)
            if (add_mapping(p, &maps[i]) < 0)
                goto fail;
    }
    return p;
fail:
    ctr_pprof_free(p);
    return NULL;
}

void ctr_pprof_set_time(struct ctr_pprof *p, int64_t time_nanos, int64_t duration_nanos)
{
    p->time_nanos = time_nanos;
    p->duration_nanos = duration_nanos;
}

void ctr_pprof_free(struct ctr_pprof *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nstrings; i++)
        free(p->strings[i]);
    void *arrays[] = {p->strings,
                      p->string_idx.slots,
                      p->types,
                      p->maps,
                      p->funcs,
                      p->func_idx.slots,
                      p->lines,
                      p->locs,
                      p->loc_idx.slots,
                      p->samples,
                      p->sample_idx.slots,
                      p->stack_ids,
                      p->values,
                      p->scratch,
                      p->labels,
                      p->lscratch,
                      p};
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
        free(arrays[i]);
}
