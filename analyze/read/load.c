/* SPDX-License-Identifier: MIT */
/* load.c - a whole trace read into memory (see load.h): the streaming
 * pipeline with a consumer that keeps every event, and the tables sorted by
 * id afterwards, which is how tests look at what a program recorded.
 */
#include "read/load.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"
#include "read/pipeline.h"
#include "read/source.h"

struct keep_all {
    struct ctr_trace *t;
    int oom;
};

static void keep_cputime(void *ctx, const struct ctr_trace *tc, uint32_t thread,
                         const struct ctr_cpu_reading *r)
{
    struct keep_all *k = ctx;
    (void)tc;
    struct ctr_thread_info *th = &k->t->threads[thread];
    if (k->oom || ctr_grow(&th->cpu, &th->cpu_cap, th->ncpu + 1, sizeof(*th->cpu)) != 0) {
        k->oom = 1;
        return;
    }
    th->cpu[th->ncpu++] = *r;
}

static void keep_event(void *ctx, const struct ctr_trace *tc, uint32_t thread,
                       const struct ctr_trace_event *e)
{
    struct keep_all *k = ctx;
    struct ctr_trace *t = k->t;
    (void)tc;
    struct ctr_thread_info *th = &t->threads[thread];
    if (k->oom || ctr_grow(&th->events, &th->cap, th->nevents + 1, sizeof(*th->events)) != 0) {
        k->oom = 1;
        return;
    }
    struct ctr_trace_event *copy = &th->events[th->nevents++];
    *copy = *e;
    size_t len;
    const char *msg = ctr_event_payload(t, e, &len);
    if (msg) {
        struct ctr_held_bytes *h = malloc(sizeof(*h) + (len ? len : 1));
        if (!h) {
            k->oom = 1;
            return;
        }
        memcpy(h->bytes, msg, len);
        h->next = t->held;
        t->held = h;
        copy->payload = (uint64_t)(uintptr_t)h->bytes;
    }
}

/* Every table entry starts with its uint64_t id. */
static int by_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts a table by id and rebuilds its index. */
static int sort_table(void *base, size_t n, size_t size, struct ctr_idmap *ix)
{
    if (n > 1)
        qsort(base, n, size, by_id);
    ctr_idmap_free(ix);
    /* Each entry is a struct of the table, aligned, whose first field is the id. */
    for (size_t i = 0; i < n; i++)
        if (ctr_idmap_put(ix, *(const uint64_t *)(const void *)((const char *)base + i * size),
                          i) != 0)
            return -ENOMEM;
    return 0;
}

static int read_source(struct ctr_source *src, struct ctr_trace *t, char *err, size_t errlen)
{
    struct keep_all k = {t, 0};
    struct ctr_consumer c = {.ctx = &k, .event = keep_event, .cputime = keep_cputime};
    struct ctr_pipeline_opts o = {.jobs = 1};
    int rc = ctr_analyze(src, t, &c, 1, &o, err, errlen);
    if (rc == 0 && k.oom) {
        snprintf(err, errlen, "out of memory reading the trace");
        rc = -ENOMEM;
    }
    if (rc != 0) {
        ctr_trace_free(t);
        return rc;
    }
    /* Tables by id, as a reader of the whole expects them. */
    if (sort_table(t->threads, t->nthreads, sizeof(*t->threads), &t->thread_ix) != 0 ||
        sort_table(t->stacks, t->nstacks, sizeof(*t->stacks), &t->stack_ix) != 0 ||
        sort_table(t->strings, t->nstrings, sizeof(*t->strings), &t->string_ix) != 0 ||
        sort_table(t->mappings, t->nmappings, sizeof(*t->mappings), &t->mapping_ix) != 0) {
        snprintf(err, errlen, "out of memory reading the trace");
        ctr_trace_free(t);
        return -ENOMEM;
    }
    return 0;
}

int ctr_trace_read_mem(const uint8_t *data, size_t len, struct ctr_trace *t, char *err,
                       size_t errlen)
{
    memset(t, 0, sizeof(*t));
    struct ctr_source *src;
    int rc = ctr_source_open_mem(data, len, &src, err, errlen);
    if (rc != 0)
        return rc;
    rc = read_source(src, t, err, errlen);
    ctr_source_close(src);
    return rc;
}

int ctr_trace_read(const char *path, struct ctr_trace *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    struct ctr_source *src;
    int rc = ctr_source_open(path, 0, &src, err, errlen);
    if (rc != 0)
        return rc;
    rc = read_source(src, t, err, errlen);
    ctr_source_close(src);
    return rc;
}
