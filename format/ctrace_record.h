/* SPDX-License-Identifier: MIT */
/* record.h - building the records of the trace stream (FORMAT.md §3) in a
 * growable buffer: shared by the collector's generations and the flight
 * recorder's dumps. A buffer belongs to one thread (not thread-safe).
 *
 * A record's length is written as a 3-byte (possibly non-minimal) varint,
 * so its body can be written in place before the length is known. Bodies
 * are < 2 MiB: the largest is a batch of one chunk (< 1 MiB). Running out of
 * memory sets `oom` and drops what follows; the caller checks it.
 *
 * Records are written by the table-driven writers at the end (CTR_REC_PUT
 * and its kin), whose field counts the compiler checks against the record
 * table, CTR_RECORDS in ctrace_format.h.
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

/* ---------------------------------------------------------------------------
 * Table-driven record writers
 *
 * A record is written by its name in CTR_RECORDS (THREAD, not CTR_REC_THREAD)
 * with its fields in the table's order. The number of fields, and that the
 * writer fits the record's tail, are checked at compile time against the
 * table, so a field added there fails to compile at every writer that does
 * not write it:
 *   CTR_REC_PUT(o, NAME, f...)                  a record without a tail
 *   CTR_REC_PUT_BYTES(o, NAME, b, n, f...)      tail LENGTH (writes n, then
 *                                               the n bytes at b), BYTES or
 *                                               EVENTS (the n bytes alone)
 *   CTR_REC_PUT_UVARINTS(o, NAME, v, n, f...)   tail UVARINTS: n, then v[0..n-1]
 *   CTR_REC_OPEN(o, NAME, f...)                 tail BYTES or EVENTS, which the
 *                                               caller appends; evaluates to
 *                                               the body for ctr_rec_end()
 * Fields are converted to uint64_t. tests/unit/record_count.sh proves that a
 * wrong count does not compile.
 * ------------------------------------------------------------------------- */

/* ctr_rec_open() : starts a record of `kind` with its n fields v[]; returns
 * where its body starts, for ctr_rec_end(). */
static inline size_t ctr_rec_open(struct ctr_outbuf *o, uint8_t kind, int n, const uint64_t *v)
{
    size_t b = ctr_rec_begin(o, kind);
    for (int i = 0; i < n; i++)
        ctr_out_uv(o, v[i]);
    return b;
}

/* A record whose body is n uvarints. Unchecked: prefer CTR_REC_PUT. */
static inline void ctr_rec_uvs(struct ctr_outbuf *o, uint8_t kind, int n, const uint64_t *v)
{
    ctr_rec_end(o, ctr_rec_open(o, kind, n, v));
}

/* A record of n fields and `len` bytes at b, preceded by len when `counted`
 * (a LENGTH tail). */
static inline void ctr_rec_put_bytes(struct ctr_outbuf *o, uint8_t kind, int n, const uint64_t *v,
                                     int counted, const void *b, size_t len)
{
    size_t body = ctr_rec_open(o, kind, n, v);
    if (counted)
        ctr_out_uv(o, len);
    ctr_out_bytes(o, b, len);
    ctr_rec_end(o, body);
}

/* A record of n fields, then count and the list's count uvarints. The
 * tracer's lists are addresses (a stack's return addresses). */
static inline void ctr_rec_put_uvarints(struct ctr_outbuf *o, uint8_t kind, int n,
                                        const uint64_t *v, const uintptr_t *list, size_t count)
{
    size_t body = ctr_rec_open(o, kind, n, v);
    ctr_out_uv(o, count);
    for (size_t i = 0; i < count; i++)
        ctr_out_uv(o, list[i]);
    ctr_rec_end(o, body);
}

/* The number of a macro's arguments (1 to 16), as an integer constant: a
 * compound literal's size would do in a function, but not inside the struct
 * that CTR_REC_CHECK_ puts its assertions in (clang wants its elements
 * constant there). */
#define CTR_NARGS(...) \
    CTR_NARGS_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define CTR_NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, n, ...) n
_Static_assert(CTR_MAX_FIELDS < 16, "CTR_NARGS counts the fields");

/* Whether record `kind` (CTR_REC_...) has tail t; the casts say that the
 * table's constants and enum ctr_arg_kind are compared on purpose. */
#define CTR_REC_TAIL_IS_(kind, t) ((int)kind##_TAIL == (int)(t))

/* Fails to compile unless record `kind` has as many fields as the arguments
 * after it, and a tail that `tail_ok` accepts. An expression (the assertions
 * sit in a struct), so that CTR_REC_OPEN has a value. */
#define CTR_REC_CHECK_(kind, tail_ok, ...)                                       \
    ((void)sizeof(struct {                                                       \
        _Static_assert(CTR_NARGS(__VA_ARGS__) == kind##_NFIELDS,                 \
                       #kind ": the number of fields differs from CTR_RECORDS"); \
        _Static_assert(tail_ok, #kind ": this writer does not write its tail");  \
        char c_;                                                                 \
    }))

/* The fields as the functions above take them: a count and an array. */
/* clang-format off */
#define CTR_REC_FIELDS_(...) CTR_NARGS(__VA_ARGS__), (const uint64_t[]){__VA_ARGS__}
/* clang-format on */

/* CTR_REC(o, CTR_REC_NAME, f...) is CTR_REC_PUT(o, NAME, f...), for the
 * callers that name the kind's enum constant. */
#define CTR_REC(o, kind, ...)                                                 \
    (CTR_REC_CHECK_(kind, CTR_REC_TAIL_IS_(kind, CTR_ARG_NONE), __VA_ARGS__), \
     ctr_rec_uvs(o, kind, CTR_REC_FIELDS_(__VA_ARGS__)))
#define CTR_REC_PUT(o, name, ...) CTR_REC(o, CTR_REC_##name, __VA_ARGS__)

#define CTR_REC_PUT_BYTES(o, name, b, n, ...) \
    CTR_REC_PUT_BYTES_(o, CTR_REC_##name, b, n, __VA_ARGS__)
#define CTR_REC_PUT_BYTES_(o, kind, b, n, ...)                   \
    (CTR_REC_CHECK_(kind,                                        \
                    CTR_REC_TAIL_IS_(kind, CTR_ARG_LENGTH) ||    \
                        CTR_REC_TAIL_IS_(kind, CTR_ARG_BYTES) || \
                        CTR_REC_TAIL_IS_(kind, CTR_ARG_EVENTS),  \
                    __VA_ARGS__),                                \
     ctr_rec_put_bytes(o, kind, CTR_REC_FIELDS_(__VA_ARGS__),    \
                       CTR_REC_TAIL_IS_(kind, CTR_ARG_LENGTH), b, n))

#define CTR_REC_PUT_UVARINTS(o, name, v, n, ...) \
    CTR_REC_PUT_UVARINTS_(o, CTR_REC_##name, v, n, __VA_ARGS__)
#define CTR_REC_PUT_UVARINTS_(o, kind, v, n, ...)                                 \
    (CTR_REC_CHECK_(kind, CTR_REC_TAIL_IS_(kind, CTR_ARG_UVARINTS), __VA_ARGS__), \
     ctr_rec_put_uvarints(o, kind, CTR_REC_FIELDS_(__VA_ARGS__), v, n))

#define CTR_REC_OPEN(o, name, ...) CTR_REC_OPEN_(o, CTR_REC_##name, __VA_ARGS__)
#define CTR_REC_OPEN_(o, kind, ...)                                                             \
    (CTR_REC_CHECK_(                                                                            \
         kind, CTR_REC_TAIL_IS_(kind, CTR_ARG_BYTES) || CTR_REC_TAIL_IS_(kind, CTR_ARG_EVENTS), \
         __VA_ARGS__),                                                                          \
     ctr_rec_open(o, kind, CTR_REC_FIELDS_(__VA_ARGS__)))

#endif
