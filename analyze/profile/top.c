/* SPDX-License-Identifier: MIT */
/* top.c - the text "top" of a delay or CPU profile (see top.h).
 *
 * Samples are merged by their exact frames (the same PCs, the same synthetic
 * leaf) in a hash set over a frame arena, ranked, and only the stacks that
 * are printed are symbolized. Code frames are compared by PC, synthetic ones
 * by name (profile.h: static strings, so the pointers are kept).
 *
 * In a CPU profile the innermost run of frames inside the system's
 * libraries (objects under /lib and /usr/lib: glibc, libstdc++, a
 * sanitizer's runtime...), called from the program's own code, is shown as
 * its outermost frame: the library call the program made (regcomp, not the
 * malloc under glibc's regex compiler), so that one call's cost is one
 * entry rather than dozens of internal stacks. The pprof file keeps every
 * frame.
 */
#include "profile/top.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/symbolize.h"
#include "ctrace_grow.h"
#include "profile/text.h"
#include "model/windows.h"

#define COL_FRAMES "                              " /* frames start in column 31 */

struct stack {
    size_t off, n; /* frames[off .. off+n-1] of the arena */
    int64_t count, delay_ns;
    size_t seq; /* first-seen order: the last tie-break */
    uint64_t hash;
};

struct merge {
    struct ctr_pprof_frame *frames; /* arena of every distinct stack's frames */
    size_t nframes, frames_cap;
    struct stack *stacks;
    size_t nstacks, stacks_cap;
    size_t *slots; /* open addressing: stack index + 1, 0 = empty */
    size_t nslots; /* power of two; load kept <= 1/2 */
    int64_t total_count, total_delay_ns;
    const struct ctr_trace *fold; /* fold library frames by its mappings (CPU) */
};

/* Whether pc lies in a system library (see the top). */
static int in_system_library(const struct ctr_trace *t, uint64_t pc)
{
    static const char *const dirs[] = {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"};
    for (size_t i = 0; i < t->nmappings; i++) {
        if (pc < t->mappings[i].start || pc >= t->mappings[i].limit)
            continue;
        const char *path = t->mappings[i].path;
        for (size_t k = 0; path && k < sizeof(dirs) / sizeof(dirs[0]); k++)
            if (strncmp(path, dirs[k], strlen(dirs[k])) == 0)
                return 1;
        return 0;
    }
    return 0;
}

/* How many innermost frames to leave out: the run inside system libraries
 * but its outermost, when code of another object calls it. */
static size_t library_run(const struct ctr_trace *t, const struct ctr_pprof_frame *f, size_t n)
{
    size_t k = 0;
    while (k < n && !f[k].function && in_system_library(t, f[k].pc - 1))
        k++;
    return k > 0 && k < n ? k - 1 : 0;
}

/* ================================================================ merging */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
    return h;
}

static uint64_t hash_frames(const struct ctr_pprof_frame *f, size_t n)
{
    uint64_t h = n;
    for (size_t i = 0; i < n; i++) {
        if (f[i].function) {
            h = mix(h, 1);
            for (const char *c = f[i].function; *c; c++)
                h = mix(h, (unsigned char)*c);
        } else {
            h = mix(h, f[i].pc);
        }
    }
    return h;
}

static int same_frames(const struct ctr_pprof_frame *a, const struct ctr_pprof_frame *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!a[i].function != !b[i].function)
            return 0;
        if (a[i].function ? strcmp(a[i].function, b[i].function) != 0 : a[i].pc != b[i].pc)
            return 0;
    }
    return 1;
}

/* Doubles the slot table and puts every stack back in. */
static int rehash(struct merge *m)
{
    size_t nslots = m->nslots ? m->nslots * 2 : 256;
    size_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < m->nstacks; i++) {
        size_t j = (size_t)m->stacks[i].hash & (nslots - 1);
        while (slots[j])
            j = (j + 1) & (nslots - 1);
        slots[j] = i + 1;
    }
    free(m->slots);
    m->slots = slots;
    m->nslots = nslots;
    return 0;
}

static int on_sample(void *ctx, const struct ctr_pprof_frame *frames, size_t n, int64_t count,
                     int64_t delay_ns)
{
    struct merge *m = ctx;
    m->total_count += count;
    m->total_delay_ns += delay_ns;
    if (m->fold) {
        size_t skip = library_run(m->fold, frames, n);
        frames += skip;
        n -= skip;
    }
    if ((m->nstacks + 1) * 2 > m->nslots && rehash(m) != 0)
        return -ENOMEM;
    uint64_t h = hash_frames(frames, n);
    size_t j = (size_t)h & (m->nslots - 1);
    for (; m->slots[j]; j = (j + 1) & (m->nslots - 1)) {
        struct stack *s = &m->stacks[m->slots[j] - 1];
        if (s->hash == h && s->n == n && same_frames(&m->frames[s->off], frames, n)) {
            s->count += count;
            s->delay_ns += delay_ns;
            return 0;
        }
    }
    if (ctr_grow(&m->frames, &m->frames_cap, m->nframes + n, sizeof(*m->frames)) != 0 ||
        ctr_grow(&m->stacks, &m->stacks_cap, m->nstacks + 1, sizeof(*m->stacks)) != 0)
        return -ENOMEM;
    memcpy(&m->frames[m->nframes], frames, n * sizeof(*frames));
    m->stacks[m->nstacks] = (struct stack){m->nframes, n, count, delay_ns, m->nstacks, h};
    m->nframes += n;
    m->slots[j] = ++m->nstacks;
    return 0;
}

/* Heaviest first: by delay, then count, then first seen. */
static int by_weight(const void *pa, const void *pb)
{
    const struct stack *a = pa, *b = pb;
    if (a->delay_ns != b->delay_ns)
        return a->delay_ns > b->delay_ns ? -1 : 1;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* ================================================================ printing */

static void print_stack(FILE *out, struct ctr_profile_sym *ps, const struct merge *m,
                        const struct stack *s)
{
    char d[32];
    double share =
        m->total_delay_ns > 0 ? 100.0 * (double)s->delay_ns / (double)m->total_delay_ns : 0.0;
    fprintf(out, "%10s %9" PRId64 " %6.1f%%  ", ctr_text_ns(s->delay_ns, d, sizeof(d)), s->count,
            share);
    if (s->n == 0)
        fputs("(no stack)\n", out);
    for (size_t i = 0; i < s->n; i++) {
        const struct ctr_pprof_frame *f = &m->frames[s->off + i];
        if (i > 0)
            fputs(COL_FRAMES, out);
        if (f->function)
            fprintf(out, "%s\n", f->function);
        else
            ctr_text_pc(out, ps, f->pc, COL_FRAMES);
    }
}

/* "sync profile", and what the filter keeps: "(tasks of type T, regions
 * named R, tasks at least D long)". */
static void put_name(FILE *out, enum ctr_profile_type type, const struct ctr_profile_filter *f)
{
    fprintf(out, "%s profile", ctr_profile_name(type));
    if (!f || !(f->task || f->region || f->latmin_ns))
        return;
    const char *sep = " (";
    if (f->task) {
        fprintf(out, "%stasks of type %s", sep, f->task);
        sep = ", ";
    }
    if (f->latmin_ns) {
        char d[32];
        fprintf(out, "%stasks at least %s long", sep,
                ctr_text_ns((int64_t)f->latmin_ns, d, sizeof(d)));
        sep = ", ";
    }
    if (f->region)
        fprintf(out, "%sregions named %s", sep, f->region);
    fputc(')', out);
}

int ctr_top_write_collected(const struct ctr_trace *t, struct ctr_profile_collect *c,
                            enum ctr_profile_type type, const struct ctr_profile_filter *filter,
                            size_t n, FILE *out, FILE *warn, char *err, size_t errlen)
{
    struct merge m = {0};
    if (type == CTR_PROFILE_CPU)
        m.fold = t;
    int rc = ctr_profile_collect_end(c, on_sample, &m);
    if (rc != 0)
        goto done;
    if (m.nstacks > 0) /* stacks is NULL when there are none: qsort wants non-NULL */
        qsort(m.stacks, m.nstacks, sizeof(*m.stacks), by_weight);

    char d[32];
    size_t shown = n < m.nstacks ? n : m.nstacks;
    if (shown == 0) {
        put_name(out, type, filter);
        fputs(": no samples\n", out);
        goto done;
    }
    /* A CPU profile weighs CPU time, a delay profile the time waited. */
    const char *weight = type == CTR_PROFILE_CPU ? "cpu" : "delay";
    put_name(out, type, filter);
    fprintf(out,
            ": %s of %s in %" PRId64 " samples, %zu distinct stacks; "
            "the heaviest %zu%s:\n",
            ctr_text_ns(m.total_delay_ns, d, sizeof(d)), type == CTR_PROFILE_CPU ? "CPU" : weight,
            m.total_count, m.nstacks, shown,
            m.fold ? " (the system libraries' frames under a call into them folded into that call)"
                   : "");
    struct ctr_profile_sym ps;
    if ((rc = ctr_profile_sym_open(t, &ps)) != 0)
        goto done;
    fprintf(out, "\n%10s %9s %7s  %s\n", weight, "count", "share", "stack, innermost first");
    for (size_t i = 0; i < shown; i++) {
        if (i > 0)
            fputc('\n', out);
        print_stack(out, &ps, &m, &m.stacks[i]);
    }
    ctr_profile_sym_close(&ps, warn);
done:
    free(m.frames);
    free(m.stacks);
    free(m.slots);
    if (rc != 0)
        snprintf(err, errlen, "building the profile: %s", strerror(-rc));
    return rc;
}

int ctr_top_write(const struct ctr_trace *t, enum ctr_profile_type type,
                  const struct ctr_profile_filter *filter, size_t n, FILE *out, FILE *warn,
                  char *err, size_t errlen)
{
    struct ctr_windows keep = {0};
    struct ctr_profile_collect *c = NULL;
    int rc = ctr_profile_collect_checked(t, type, filter, &keep, &c, warn, "building the profile",
                                         err, errlen);
    if (rc == 0)
        rc = ctr_top_write_collected(t, c, type, filter, n, out, warn, err, errlen);
    ctr_profile_collect_free(c);
    ctr_windows_free(&keep);
    return rc;
}
