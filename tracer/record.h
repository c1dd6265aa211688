/* record.h - building the records of the trace stream (FORMAT.md §3) in a
 * growable buffer: shared by the collector's generations and the flight
 * recorder's dumps. A buffer belongs to one thread (not thread-safe).
 *
 * A record's length is written as a 3-byte (possibly non-minimal) varint,
 * so its body can be written in place before the length is known. Bodies
 * are < 2 MiB: the largest is a batch of one chunk (< 1 MiB). Running out of
 * memory sets `oom` and drops what follows; the caller checks it.
 */
#ifndef CTR_RECORD_H
#define CTR_RECORD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_format.h"

struct ctr_outbuf {
    uint8_t *p;
    size_t len, cap;
    int oom;
};

#define CTR_REC_LEN_BYTES 3

static inline int ctr_out_reserve(struct ctr_outbuf *o, size_t n)
{
    if (o->len + n <= o->cap)
        return 0;
    size_t cap = o->cap ? o->cap : (1u << 16);
    while (cap < o->len + n)
        cap *= 2;
    uint8_t *p = realloc(o->p, cap);
    if (!p) {
        o->oom = 1;
        return -1;
    }
    o->p = p;
    o->cap = cap;
    return 0;
}

static inline void ctr_out_uv(struct ctr_outbuf *o, uint64_t v)
{
    if (ctr_out_reserve(o, CTR_VARINT_MAX) == 0)
        o->len = (size_t)(ctr_put_uvarint(o->p + o->len, v) - o->p);
}

static inline void ctr_out_bytes(struct ctr_outbuf *o, const void *b, size_t n)
{
    if (n && ctr_out_reserve(o, n) == 0) {
        memcpy(o->p + o->len, b, n);
        o->len += n;
    }
}

/* Starts a record of `kind`; returns where its body starts. */
static inline size_t ctr_rec_begin(struct ctr_outbuf *o, uint8_t kind)
{
    uint8_t hdr[1 + CTR_REC_LEN_BYTES] = {kind};
    ctr_out_bytes(o, hdr, sizeof(hdr));
    return o->len;
}

/* Ends the record whose body starts at `body`: fills in its length. */
static inline void ctr_rec_end(struct ctr_outbuf *o, size_t body)
{
    if (body > o->len || body < CTR_REC_LEN_BYTES)
        return; /* out of memory while writing it */
    size_t n = o->len - body;
    uint8_t *l = o->p + body - CTR_REC_LEN_BYTES;
    l[0] = (uint8_t)(0x80 | (n & 0x7f));
    l[1] = (uint8_t)(0x80 | ((n >> 7) & 0x7f));
    l[2] = (uint8_t)((n >> 14) & 0x7f);
}

/* A record whose body is n uvarints. */
static inline void ctr_rec_uvs(struct ctr_outbuf *o, uint8_t kind, int n, const uint64_t *v)
{
    size_t b = ctr_rec_begin(o, kind);
    for (int i = 0; i < n; i++)
        ctr_out_uv(o, v[i]);
    ctr_rec_end(o, b);
}

/* A record of events (BATCH, SWITCHES): a thread id, the base time, then
 * n bytes of complete events. */
static inline void ctr_rec_events(struct ctr_outbuf *o, uint8_t kind, uint64_t thread_id,
                                  uint64_t base, const uint8_t *events, size_t n)
{
    size_t b = ctr_rec_begin(o, kind);
    ctr_out_uv(o, thread_id);
    ctr_out_uv(o, base);
    ctr_out_bytes(o, events, n);
    ctr_rec_end(o, b);
}

#define CTR_REC(o, kind, ...)                                                \
    ctr_rec_uvs(o, kind, sizeof((uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t), \
                (uint64_t[]){__VA_ARGS__})

#endif
