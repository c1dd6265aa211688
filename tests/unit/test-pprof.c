/* SPDX-License-Identifier: MIT */
/* test-pprof.c - tests for analyze/profile/pprof.c: builds profiles over a fake
 * symbolizer, reads the gzip'd protobuf back with a small decoder written
 * here (independent of the encoder), and checks the rules pprof readers rely
 * on: string_table[0] == "", strings stored once, every sample with one value
 * per sample type, every id resolvable, inline chains innermost first.
 *
 * The fake symbolizer below replaces symbolize.c: this test links pprof.c
 * only. Set CTR_PPROF_OUT=path to keep the delay profile, e.g. for
 * tests/e2e/pprof_go.sh.
 */
#define _POSIX_C_SOURCE 200809L /* strndup, mkstemp */
#define ZLIB_CONST
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "profile/pprof.h"

/* ---------------------------------------------------------------------------
 * Fake symbolizer: canned inline chains for a few addresses
 * ------------------------------------------------------------------------- */

struct ctr_symbolizer {
    int calls[8];
}; /* ctr_symbolize calls per fake_pcs[] */

enum {
    PC_MAIN = 0x401000,
    PC_WORK = 0x402000,
    PC_WORK2 = 0x402010,
    PC_NONAME = 0x403000,
    PC_STRIPPED = 0x7f0000000500,
    PC_NOWHERE = 0x10
};

static const uint8_t app_build_id[] = {0xde, 0xad, 0xbe, 0xef, 0x01};
static const struct ctr_sym_mapping fake_maps[] = {
    {.start = 0x400000,
     .limit = 0x500000,
     .file_offset = 0,
     .bias = 0x400000,
     .path = "/usr/bin/app",
     .build_id = app_build_id,
     .build_id_len = sizeof app_build_id},
    {.start = 0x7f0000000000,
     .limit = 0x7f0000100000,
     .file_offset = 0x1000,
     .path = "/usr/lib/libstripped.so"},
};

static const struct {
    uint64_t pc;
    int n;
    struct ctr_sym_frame f[2];
} fake_pcs[] = {
    {PC_MAIN, 1, {{"main", "/src/app.c", 10, 5}}},
    /* lock_it inlined into worker */
    {PC_WORK, 2, {{"lock_it", "/src/app.c", 30, 28}, {"worker", "/src/app.c", 42, 40}}},
    {PC_WORK2, 1, {{"worker", "/src/app.c", 44, 40}}},
    {PC_NONAME, 1, {{NULL, NULL, 0, 0}}}, /* found, but no name */
};

int ctr_symbolizer_mapping(const struct ctr_symbolizer *s, uint64_t pc)
{
    (void)s;
    for (size_t i = 0; i < sizeof fake_maps / sizeof *fake_maps; i++)
        if (pc >= fake_maps[i].start && pc < fake_maps[i].limit)
            return (int)i;
    return -1;
}

int ctr_symbolize(struct ctr_symbolizer *s, uint64_t pc, struct ctr_sym_frame *out, int max)
{
    for (size_t i = 0; i < sizeof fake_pcs / sizeof *fake_pcs; i++) {
        if (fake_pcs[i].pc != pc)
            continue;
        s->calls[i]++;
        int n = fake_pcs[i].n < max ? fake_pcs[i].n : max;
        memcpy(out, fake_pcs[i].f, (size_t)n * sizeof *out);
        return n;
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * Decoder: gunzip, then just enough protobuf to read what pprof.c writes
 * ------------------------------------------------------------------------- */

#define MAX_ITEMS 2048
#define MAX_DEPTH 256

struct vt {
    int64_t type, unit;
};
struct dsample {
    uint64_t locs[MAX_DEPTH];
    size_t nlocs;
    int64_t vals[4];
    size_t nvals;
};
struct dline {
    uint64_t function_id;
    int64_t line;
};
struct dloc {
    uint64_t id, mapping_id, address;
    struct dline lines[4];
    size_t nlines;
};
struct dfunc {
    uint64_t id;
    int64_t name, system_name, filename, start_line;
};
struct dmap {
    uint64_t id, start, limit, offset;
    int64_t filename, build_id;
    bool has_functions, has_filenames, has_lines, has_inline;
};

struct dprof {
    struct vt types[4];
    size_t ntypes, nsamples, nmaps, nlocs, nfuncs, nstrings;
    struct dsample samples[MAX_ITEMS];
    struct dmap maps[8];
    struct dloc locs[MAX_ITEMS];
    struct dfunc funcs[MAX_ITEMS];
    char *strings[MAX_ITEMS];
    int64_t time_nanos, duration_nanos, period;
    struct vt period_type;
};

struct rd {
    const uint8_t *p, *end;
};

static uint64_t get_varint(struct rd *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        assert_true(r->p < r->end);
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    fail_msg("varint longer than 10 bytes");
    return 0;
}

/* Reads one field and returns its number, with a varint's value in *v or a
 * length-delimited field's body in *body and *wt set to the wire type. Other
 * wire types fail the test: pprof.c never writes them. */
static int get_field(struct rd *r, int *wt, uint64_t *v, struct rd *body)
{
    uint64_t tag = get_varint(r);
    *wt = (int)(tag & 7);
    if (*wt == 0) {
        *v = get_varint(r);
    } else if (*wt == 2) {
        uint64_t n = get_varint(r);
        assert_true(n <= (uint64_t)(r->end - r->p));
        *body = (struct rd){r->p, r->p + n};
        r->p += n;
    } else {
        fail_msg("unexpected wire type %d", *wt);
    }
    return (int)(tag >> 3);
}

#define FIELDS(r, f, wt, v, body) \
    for (int wt, f; (r)->p < (r)->end && ((f = get_field((r), &wt, &(v), &(body))), 1);)

static void get_vt(struct rd r, struct vt *t)
{
    uint64_t v = 0;
    struct rd b;
    FIELDS (&r, f, wt, v, b) {
        assert_int_equal(wt, 0);
        if (f == 1)
            t->type = (int64_t)v;
        else if (f == 2)
            t->unit = (int64_t)v;
        else
            fail_msg("ValueType field %d", f);
    }
}

static void get_sample(struct rd r, struct dsample *s)
{
    uint64_t v = 0;
    struct rd b;
    FIELDS (&r, f, wt, v, b) {
        assert_int_equal(wt, 2); /* packed, as proto3 writes repeated scalars */
        while (b.p < b.end) {
            uint64_t x = get_varint(&b);
            if (f == 1) {
                assert_true(s->nlocs < MAX_DEPTH);
                s->locs[s->nlocs++] = x;
            } else if (f == 2) {
                assert_true(s->nvals < 4);
                s->vals[s->nvals++] = (int64_t)x;
            } else {
                fail_msg("Sample field %d", f);
            }
        }
    }
}

static void get_loc(struct rd r, struct dloc *l)
{
    uint64_t v = 0;
    struct rd b, none;
    FIELDS (&r, f, wt, v, b) {
        if (f == 4) {
            assert_int_equal(wt, 2);
            assert_true(l->nlines < 4);
            struct dline *ln = &l->lines[l->nlines++];
            FIELDS (&b, lf, lwt, v, none) {
                assert_int_equal(lwt, 0);
                if (lf == 1)
                    ln->function_id = v;
                else if (lf == 2)
                    ln->line = (int64_t)v;
                else
                    fail_msg("Line field %d", lf);
            }
            continue;
        }
        assert_int_equal(wt, 0);
        if (f == 1)
            l->id = v;
        else if (f == 2)
            l->mapping_id = v;
        else if (f == 3)
            l->address = v;
        else
            fail_msg("Location field %d", f);
    }
}

static void get_func(struct rd r, struct dfunc *fn)
{
    uint64_t v = 0;
    struct rd b;
    FIELDS (&r, f, wt, v, b) {
        assert_int_equal(wt, 0);
        switch (f) {
        case 1:
            fn->id = v;
            break;
        case 2:
            fn->name = (int64_t)v;
            break;
        case 3:
            fn->system_name = (int64_t)v;
            break;
        case 4:
            fn->filename = (int64_t)v;
            break;
        case 5:
            fn->start_line = (int64_t)v;
            break;
        default:
            fail_msg("Function field %d", f);
        }
    }
}

static void get_map(struct rd r, struct dmap *m)
{
    uint64_t v = 0;
    struct rd b;
    FIELDS (&r, f, wt, v, b) {
        assert_int_equal(wt, 0);
        switch (f) {
        case 1:
            m->id = v;
            break;
        case 2:
            m->start = v;
            break;
        case 3:
            m->limit = v;
            break;
        case 4:
            m->offset = v;
            break;
        case 5:
            m->filename = (int64_t)v;
            break;
        case 6:
            m->build_id = (int64_t)v;
            break;
        case 7:
            m->has_functions = v;
            break;
        case 8:
            m->has_filenames = v;
            break;
        case 9:
            m->has_lines = v;
            break;
        case 10:
            m->has_inline = v;
            break;
        default:
            fail_msg("Mapping field %d", f);
        }
    }
}

static void get_profile(struct rd r, struct dprof *d)
{
    uint64_t v = 0;
    struct rd b;
    FIELDS (&r, f, wt, v, b) {
        assert_int_equal(wt, f >= 1 && f <= 6 ? 2 : f == 11 ? 2 : 0);
        switch (f) {
        case 1:
            assert_true(d->ntypes < 4);
            get_vt(b, &d->types[d->ntypes++]);
            break;
        case 2:
            assert_true(d->nsamples < MAX_ITEMS);
            get_sample(b, &d->samples[d->nsamples++]);
            break;
        case 3:
            assert_true(d->nmaps < 8);
            get_map(b, &d->maps[d->nmaps++]);
            break;
        case 4:
            assert_true(d->nlocs < MAX_ITEMS);
            get_loc(b, &d->locs[d->nlocs++]);
            break;
        case 5:
            assert_true(d->nfuncs < MAX_ITEMS);
            get_func(b, &d->funcs[d->nfuncs++]);
            break;
        case 6:
            assert_true(d->nstrings < MAX_ITEMS);
            d->strings[d->nstrings] = strndup((const char *)b.p, (size_t)(b.end - b.p));
            assert_non_null(d->strings[d->nstrings++]);
            break;
        case 9:
            d->time_nanos = (int64_t)v;
            break;
        case 10:
            d->duration_nanos = (int64_t)v;
            break;
        case 11:
            get_vt(b, &d->period_type);
            break;
        case 12:
            d->period = (int64_t)v;
            break;
        default:
            fail_msg("Profile field %d", f);
        }
    }
}

/* Reads f from its start and gunzips it; fails unless it is one gzip member. */
static uint8_t *gunzip_file(FILE *f, size_t *len)
{
    static uint8_t in[1 << 16];
    size_t cap = 1 << 16, n = 0;
    uint8_t *out = malloc(cap);
    z_stream z;
    int zr = Z_OK;
    memset(&z, 0, sizeof z);
    assert_non_null(out);
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK); /* gzip wrapper only */
    rewind(f);
    while (zr != Z_STREAM_END) {
        if (z.avail_in == 0) {
            z.avail_in = (uInt)fread(in, 1, sizeof in, f);
            z.next_in = in;
            assert_true(z.avail_in > 0);
        }
        if (n == cap) {
            out = realloc(out, cap *= 2);
            assert_non_null(out);
        }
        z.next_out = out + n;
        z.avail_out = (uInt)(cap - n);
        zr = inflate(&z, Z_NO_FLUSH);
        assert_true(zr == Z_OK || zr == Z_STREAM_END);
        n = cap - z.avail_out;
    }
    assert_int_equal(z.avail_in, 0);
    assert_int_equal(fread(in, 1, 1, f), 0); /* nothing after the gzip member */
    inflateEnd(&z);
    *len = n;
    return out;
}

static struct dprof *decode(FILE *f)
{
    size_t len;
    uint8_t *buf = gunzip_file(f, &len);
    struct dprof *d = calloc(1, sizeof *d);
    assert_non_null(d);
    get_profile((struct rd){buf, buf + len}, d);
    free(buf);
    return d;
}

static void free_dprof(struct dprof *d)
{
    for (size_t i = 0; i < d->nstrings; i++)
        free(d->strings[i]);
    free(d);
}

/* ---------------------------------------------------------------------------
 * Checks on a decoded profile
 * ------------------------------------------------------------------------- */

static const char *str(const struct dprof *d, int64_t i)
{
    assert_true(i >= 0 && (size_t)i < d->nstrings);
    return d->strings[i];
}

static const struct dloc *loc_by_id(const struct dprof *d, uint64_t id)
{
    for (size_t i = 0; i < d->nlocs; i++)
        if (d->locs[i].id == id)
            return &d->locs[i];
    fail_msg("no location %llu", (unsigned long long)id);
    return NULL;
}

static const struct dfunc *func_by_id(const struct dprof *d, uint64_t id)
{
    for (size_t i = 0; i < d->nfuncs; i++)
        if (d->funcs[i].id == id)
            return &d->funcs[i];
    fail_msg("no function %llu", (unsigned long long)id);
    return NULL;
}

static const struct dfunc *func_by_name(const struct dprof *d, const char *name)
{
    const struct dfunc *found = NULL;
    for (size_t i = 0; i < d->nfuncs; i++) {
        if (strcmp(str(d, d->funcs[i].name), name) == 0) {
            assert_null(found); /* functions are deduplicated */
            found = &d->funcs[i];
        }
    }
    return found;
}

/* The rules every profile must keep, whatever it holds. */
static void check_invariants(const struct dprof *d)
{
    assert_true(d->nstrings >= 1);
    assert_string_equal(d->strings[0], "");
    if (d->nstrings < 200) /* quadratic; the big profiles have few strings anyway */
        for (size_t i = 0; i < d->nstrings; i++)
            for (size_t j = i + 1; j < d->nstrings; j++)
                assert_string_not_equal(d->strings[i], d->strings[j]);
    for (size_t i = 0; i < d->nsamples; i++) {
        assert_int_equal(d->samples[i].nvals, d->ntypes);
        for (size_t j = 0; j < d->samples[i].nlocs; j++)
            loc_by_id(d, d->samples[i].locs[j]);
    }
    for (size_t i = 0; i < d->nlocs; i++) {
        const struct dloc *l = &d->locs[i];
        assert_true(l->id != 0);
        assert_ptr_equal(loc_by_id(d, l->id), l); /* ids unique */
        assert_true(l->mapping_id <= d->nmaps);
        if (l->mapping_id)
            assert_int_equal(d->maps[l->mapping_id - 1].id, l->mapping_id);
        for (size_t j = 0; j < l->nlines; j++)
            func_by_id(d, l->lines[j].function_id);
    }
    for (size_t i = 0; i < d->nfuncs; i++) {
        const struct dfunc *f = &d->funcs[i];
        assert_ptr_equal(func_by_id(d, f->id), f);
        assert_true(strlen(str(d, f->name)) > 0);
        assert_int_equal(f->system_name, f->name);
        str(d, f->filename);
    }
    for (size_t i = 0; i < d->nmaps; i++) {
        str(d, d->maps[i].filename);
        str(d, d->maps[i].build_id);
    }
}

/* Names a sample's stack "leaf;...;root": every line of every location,
 * innermost first, or 0x<address> for a location without lines. */
static void stack_text(const struct dprof *d, const struct dsample *s, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->nlocs; i++) {
        const struct dloc *l = loc_by_id(d, s->locs[i]);
        if (l->nlines == 0)
            n += (size_t)snprintf(buf + n, cap - n, "%s0x%llx", n ? ";" : "",
                                  (unsigned long long)l->address);
        for (size_t j = 0; j < l->nlines; j++)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ";" : "",
                                  str(d, func_by_id(d, l->lines[j].function_id)->name));
        assert_true(n < cap);
    }
}

static const struct dsample *sample_by_stack(const struct dprof *d, const char *stack)
{
    char buf[512];
    for (size_t i = 0; i < d->nsamples; i++) {
        stack_text(d, &d->samples[i], buf, sizeof buf);
        if (strcmp(buf, stack) == 0)
            return &d->samples[i];
    }
    fail_msg("no sample with stack %s", stack);
    return NULL;
}

static const struct dloc *loc_by_address(const struct dprof *d, uint64_t address)
{
    for (size_t i = 0; i < d->nlocs; i++)
        if (d->locs[i].address == address)
            return &d->locs[i];
    fail_msg("no location at 0x%llx", (unsigned long long)address);
    return NULL;
}

/* ---------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------- */

static const struct ctr_pprof_value_type delay_types[] = {
    {"contentions", "count"},
    {"delay", "nanoseconds"},
};

static void add(struct ctr_pprof *p, const char *leaf, const uint64_t *pcs, size_t npcs,
                int64_t count, int64_t delay)
{
    struct ctr_pprof_frame fr[8] = {{0, leaf}};
    size_t n = leaf != NULL;
    for (size_t i = 0; i < npcs; i++)
        fr[n++] = (struct ctr_pprof_frame){pcs[i], NULL};
    assert_int_equal(ctr_pprof_add(p, fr, n, (const int64_t[]){count, delay}), 0);
}

static void write_out(struct ctr_pprof *p, const char *path)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(ctr_pprof_write(p, f), 0);
    assert_int_equal(fclose(f), 0);
}

static void test_delay_profile(void **state)
{
    (void)state;
    struct ctr_symbolizer sym = {{0}};
    struct ctr_pprof *p =
        ctr_pprof_new(delay_types, 2, (struct ctr_pprof_value_type){"delay", "nanoseconds"}, 1,
                      &sym, fake_maps, 2);
    assert_non_null(p);
    ctr_pprof_set_time(p, 1700000000000000000, 2500000000);

    char *lock_copy = strdup("pthread_mutex_lock"); /* merging compares names, not pointers */
    assert_non_null(lock_copy);
    const uint64_t work[] = {PC_WORK, PC_MAIN}, work2[] = {PC_WORK2, PC_MAIN},
                   odd[] = {PC_STRIPPED, PC_NOWHERE}, noname[] = {PC_NONAME, PC_MAIN},
                   mainonly[] = {PC_MAIN};
    add(p, "pthread_mutex_lock", work, 2, 1, 100);
    add(p, "pthread_mutex_lock", work2, 2, 1, 50);
    add(p, lock_copy, work, 2, 1, 200);
    add(p, "pthread_cond_wait", odd, 2, 2, 7);
    add(p, "pthread_mutex_lock", noname, 2, 1, 1);
    add(p, NULL, mainonly, 1, 0, -5); /* negative values survive (as in diff profiles) */
    add(p, "pthread_mutex_lock", work, 2, 1, 300);
    free(lock_copy);

    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(ctr_pprof_write(p, f), 0);
    if (getenv("CTR_PPROF_OUT"))
        write_out(p, getenv("CTR_PPROF_OUT"));
    struct dprof *d = decode(f);
    fclose(f);
    ctr_pprof_free(p);
    check_invariants(d);

    /* header */
    assert_int_equal(d->ntypes, 2);
    assert_string_equal(str(d, d->types[0].type), "contentions");
    assert_string_equal(str(d, d->types[0].unit), "count");
    assert_string_equal(str(d, d->types[1].type), "delay");
    assert_string_equal(str(d, d->types[1].unit), "nanoseconds");
    assert_string_equal(str(d, d->period_type.type), "delay");
    assert_string_equal(str(d, d->period_type.unit), "nanoseconds");
    assert_int_equal(d->period, 1);
    assert_int_equal(d->time_nanos, 1700000000000000000);
    assert_int_equal(d->duration_nanos, 2500000000);

    /* samples: seven adds, five stacks; inline chains innermost first */
    assert_int_equal(d->nsamples, 5);
    const struct dsample *s = sample_by_stack(d, "pthread_mutex_lock;lock_it;worker;main");
    assert_int_equal(s->vals[0], 3);
    assert_int_equal(s->vals[1], 600);
    s = sample_by_stack(d, "pthread_mutex_lock;worker;main");
    assert_int_equal(s->vals[0], 1);
    assert_int_equal(s->vals[1], 50);
    s = sample_by_stack(d, "pthread_cond_wait;0x7f0000000500;0x10");
    assert_int_equal(s->vals[0], 2);
    assert_int_equal(s->vals[1], 7);
    sample_by_stack(d, "pthread_mutex_lock;0x403000;main");
    s = sample_by_stack(d, "main");
    assert_int_equal(s->vals[1], -5);

    /* one location per address and per synthetic name */
    assert_int_equal(d->nlocs, 8);
    const struct dloc *l = loc_by_address(d, PC_WORK);
    assert_int_equal(l->mapping_id, 1);
    assert_int_equal(l->nlines, 2);
    assert_int_equal(l->lines[0].line, 30);
    assert_int_equal(l->lines[1].line, 42);
    assert_ptr_equal(func_by_id(d, l->lines[1].function_id), func_by_name(d, "worker"));
    l = loc_by_address(d, PC_STRIPPED);
    assert_int_equal(l->mapping_id, 2);
    assert_int_equal(l->nlines, 0);
    assert_int_equal(loc_by_address(d, PC_NONAME)->nlines, 0);
    assert_int_equal(loc_by_address(d, PC_NONAME)->mapping_id, 1);
    assert_int_equal(loc_by_address(d, PC_NOWHERE)->mapping_id, 0);
    const struct dloc *lock =
        loc_by_id(d, sample_by_stack(d, "pthread_mutex_lock;worker;main")->locs[0]);
    assert_int_equal(lock->mapping_id, 0);
    assert_int_equal(lock->address, 0);
    assert_int_equal(lock->nlines, 1);

    /* functions: worker once although two addresses name it */
    assert_int_equal(d->nfuncs, 5);
    const struct dfunc *fn = func_by_name(d, "worker");
    assert_non_null(fn);
    assert_string_equal(str(d, fn->filename), "/src/app.c");
    assert_int_equal(fn->start_line, 40);
    fn = func_by_name(d, "pthread_mutex_lock");
    assert_non_null(fn);
    assert_int_equal(fn->filename, 0);
    assert_int_equal(fn->start_line, 0);
    assert_non_null(func_by_name(d, "lock_it"));
    assert_non_null(func_by_name(d, "main"));
    assert_non_null(func_by_name(d, "pthread_cond_wait"));

    /* mappings, flagged only where symbolization worked */
    assert_int_equal(d->nmaps, 2);
    const struct dmap *m = &d->maps[0];
    assert_int_equal(m->start, 0x400000);
    assert_int_equal(m->limit, 0x500000);
    assert_string_equal(str(d, m->filename), "/usr/bin/app");
    assert_string_equal(str(d, m->build_id), "deadbeef01");
    assert_true(m->has_functions && m->has_filenames && m->has_lines && m->has_inline);
    m = &d->maps[1];
    assert_int_equal(m->offset, 0x1000);
    assert_string_equal(str(d, m->filename), "/usr/lib/libstripped.so");
    assert_int_equal(m->build_id, 0);
    assert_false(m->has_functions || m->has_filenames || m->has_lines || m->has_inline);

    /* each address symbolized once */
    for (size_t i = 0; i < sizeof fake_pcs / sizeof *fake_pcs; i++)
        assert_int_equal(sym.calls[i], 1);
    free_dprof(d);
}

/* Without a symbolizer: no mappings, bare addresses. Many deep stacks make the
 * hash indexes grow and the length prefixes take several bytes. */
static void test_unsymbolized_many(void **state)
{
    (void)state;
    enum { NSTACKS = 1500, DEPTH = 200 };
    struct ctr_pprof_frame fr[DEPTH];
    size_t naddrs = 0; /* distinct addresses: 0 .. the deepest frame's */
    struct ctr_pprof *p = ctr_pprof_new(delay_types, 2, delay_types[1], 1, NULL, fake_maps, 2);
    assert_non_null(p);
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < NSTACKS; i++) {
            size_t n = 1 + i % DEPTH;
            for (size_t j = 0; j < n; j++)
                fr[j] = (struct ctr_pprof_frame){0x1000 + 16 * (i + j), NULL};
            naddrs = i + n > naddrs ? i + n : naddrs;
            int64_t v[2] = {1, (int64_t)i};
            assert_int_equal(ctr_pprof_add(p, fr, n, v), 0);
        }
    }
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(ctr_pprof_write(p, f), 0);
    struct dprof *d = decode(f);
    fclose(f);
    ctr_pprof_free(p);
    check_invariants(d);
    assert_int_equal(d->nmaps, 0);
    assert_int_equal(d->nfuncs, 0);
    assert_int_equal(d->nsamples, NSTACKS);
    assert_int_equal(d->nlocs, naddrs);
    for (size_t i = 0; i < d->nsamples; i++) {
        const struct dsample *s = &d->samples[i];
        const struct dloc *leaf = loc_by_id(d, s->locs[0]);
        size_t k = (leaf->address - 0x1000) / 16; /* which stack this is */
        assert_int_equal(s->nlocs, 1 + k % DEPTH);
        assert_int_equal(s->vals[0], 2);
        assert_int_equal(s->vals[1], 2 * (int64_t)k);
        for (size_t j = 0; j < s->nlocs; j++) {
            const struct dloc *l = loc_by_id(d, s->locs[j]);
            assert_int_equal(l->address, 0x1000 + 16 * (k + j));
            assert_int_equal(l->nlines, 0);
            assert_int_equal(l->mapping_id, 0);
        }
    }
    free_dprof(d);
}

/* No types, no samples: still a valid profile. */
static void test_empty(void **state)
{
    (void)state;
    struct ctr_pprof *p =
        ctr_pprof_new(NULL, 0, (struct ctr_pprof_value_type){"", ""}, 0, NULL, NULL, 0);
    assert_non_null(p);
    assert_int_equal(ctr_pprof_add(p, NULL, 0, NULL), 0); /* an empty stack is a sample too */
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(ctr_pprof_write(p, f), 0);
    struct dprof *d = decode(f);
    fclose(f);
    ctr_pprof_free(p);
    check_invariants(d);
    assert_int_equal(d->nstrings, 1);
    assert_int_equal(d->nsamples, 1);
    assert_int_equal(d->samples[0].nlocs, 0);
    free_dprof(d);
}

/* A stream that cannot be written gives its errno (-EBADF for a read-only one). */
static void test_write_error(void **state)
{
    (void)state;
    char path[] = "/tmp/test-pprof-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *ro = fopen(path, "r");
    assert_non_null(ro);
    unlink(path);
    close(fd);
    struct ctr_pprof *p = ctr_pprof_new(delay_types, 2, delay_types[1], 1, NULL, NULL, 0);
    assert_non_null(p);
    const uint64_t pcs[] = {0x1234};
    add(p, "pthread_mutex_lock", pcs, 1, 1, 1);
    assert_int_equal(ctr_pprof_write(p, ro), -EBADF);
    ctr_pprof_free(p);
    fclose(ro);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delay_profile),
        cmocka_unit_test(test_unsymbolized_many),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_write_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
