/* SPDX-License-Identifier: MIT */
/* pbwrite.h - a protocol-buffer encoder into a growing byte buffer: what the
 * pprof writer (pprof.c) and the Perfetto writer (perfetto_out.c) encode
 * their messages with. Field numbers are the callers' business (each names
 * the .proto it follows); this only knows the wire format: varints,
 * fixed64, and length-delimited fields whose length is filled in when
 * they close.
 *
 * Errors are sticky: once out of memory, every call is a no-op and
 * w->err says -ENOMEM, so an encoder checks once at the end.
 * Not thread-safe: one owner per buffer.
 */
#ifndef CTR_PBWRITE_H
#define CTR_PBWRITE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ctrace_format.h" /* ctr_put_uvarint: protobuf's varints are LEB128, as ours */

struct ctr_pb {
    uint8_t *b;
    size_t len, cap;
    int err; /* 0, or -ENOMEM */
};

enum { CTR_PB_VARINT = 0, CTR_PB_FIXED64 = 1, CTR_PB_LEN = 2 };

/* ---------------------------------------------------------------------------
 * Writing in place, through a cursor: the one encoding of each wire element.
 * An encoder that knows how much room a message needs takes it with
 * ctr_pb_reserve(), writes through the cursor and sets w->len to its end.
 * ------------------------------------------------------------------------- */

/* The bytes varint v takes. */
static inline size_t ctr_pb_varint_len(uint64_t v)
{
    /* 7 bits a byte: (significant bits + 6) / 7, at least 1. */
    return ((size_t)(64 - __builtin_clzll(v | 1)) * 9 + 64) / 64;
}

static inline uint8_t *ctr_pb_put_tag(uint8_t *q, int field, int wire_type)
{
    return ctr_put_uvarint(q, (uint64_t)field << 3 | (unsigned)wire_type);
}

/* A varint field, written even when v is 0 (proto2's optional fields, where
 * absent and 0 differ). int64 values go as their two's complement. */
static inline uint8_t *ctr_pb_put_field(uint8_t *q, int field, uint64_t v)
{
    return ctr_put_uvarint(ctr_pb_put_tag(q, field, CTR_PB_VARINT), v);
}

static inline uint8_t *ctr_pb_put_fixed64(uint8_t *q, int field, uint64_t v)
{
    q = ctr_pb_put_tag(q, field, CTR_PB_FIXED64);
    for (int i = 0; i < 8; i++)
        *q++ = (uint8_t)(v >> (8 * i));
    return q;
}

/* A length-delimited field of n bytes (a string, bytes, a message). */
static inline uint8_t *ctr_pb_put_bytes(uint8_t *q, int field, const void *s, size_t n)
{
    q = ctr_put_uvarint(ctr_pb_put_tag(q, field, CTR_PB_LEN), n);
    if (n)
        memcpy(q, s, n);
    return q + n;
}

/* Grows the buffer for n more bytes (the slow path). */
void ctr_pb_reserve_slow(struct ctr_pb *w, size_t n);

/* ctr_pb_reserve() : room for n more bytes. @return where they start, or
 * NULL when out of memory. */
static inline uint8_t *ctr_pb_reserve(struct ctr_pb *w, size_t n)
{
    if (w->len + n > w->cap || w->err)
        ctr_pb_reserve_slow(w, n);
    return w->err ? NULL : w->b + w->len;
}

/* ---------------------------------------------------------------------------
 * Appending: each element written in place after the buffer's end.
 * ------------------------------------------------------------------------- */

static inline void ctr_pb_append(struct ctr_pb *w, const void *s, size_t n)
{
    uint8_t *q = ctr_pb_reserve(w, n);
    if (q && n) {
        memcpy(q, s, n);
        w->len += n;
    }
}

static inline void ctr_pb_varint(struct ctr_pb *w, uint64_t v)
{
    uint8_t *q = ctr_pb_reserve(w, CTR_VARINT_MAX);
    if (q)
        w->len = (size_t)(ctr_put_uvarint(q, v) - w->b);
}

static inline void ctr_pb_field(struct ctr_pb *w, int field, uint64_t v)
{
    uint8_t *q = ctr_pb_reserve(w, 2 * CTR_VARINT_MAX);
    if (q)
        w->len = (size_t)(ctr_pb_put_field(q, field, v) - w->b);
}

/* A varint field left out when v is 0 (proto3's default, and a proto2
 * field whose absence means the same as 0). */
static inline void ctr_pb_uint(struct ctr_pb *w, int field, uint64_t v)
{
    if (v)
        ctr_pb_field(w, field, v);
}

static inline void ctr_pb_fixed64(struct ctr_pb *w, int field, uint64_t v)
{
    uint8_t *q = ctr_pb_reserve(w, CTR_VARINT_MAX + 8);
    if (q)
        w->len = (size_t)(ctr_pb_put_fixed64(q, field, v) - w->b);
}

static inline void ctr_pb_bytes(struct ctr_pb *w, int field, const void *s, size_t n)
{
    uint8_t *q = ctr_pb_reserve(w, 2 * CTR_VARINT_MAX + n);
    if (q)
        w->len = (size_t)(ctr_pb_put_bytes(q, field, s, n) - w->b);
}

static inline void ctr_pb_string(struct ctr_pb *w, int field, const char *s)
{
    ctr_pb_bytes(w, field, s, strlen(s));
}

/* ctr_pb_open() : opens a length-delimited field (a nested message) whose
 * length is not known yet. @return where its body starts, for
 * ctr_pb_close(). */
size_t ctr_pb_open(struct ctr_pb *w, int field);

/* ctr_pb_close() : writes the length of the field opened at `body`. */
void ctr_pb_close(struct ctr_pb *w, size_t body);

/* A packed repeated varint field (left out when n is 0). */
void ctr_pb_packed(struct ctr_pb *w, int field, const uint64_t *v, size_t n);

void ctr_pb_free(struct ctr_pb *w);

#endif
