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

struct ctr_pb {
    uint8_t *b;
    size_t len, cap;
    int err;                     /* 0, or -ENOMEM */
};

enum { CTR_PB_VARINT = 0, CTR_PB_FIXED64 = 1, CTR_PB_LEN = 2 };

/* Appends n bytes, growing the buffer (the slow path). */
void ctr_pb_append_slow(struct ctr_pb *w, const void *s, size_t n);

static inline void ctr_pb_append(struct ctr_pb *w, const void *s, size_t n)
{
    if (w->len + n <= w->cap && !w->err) {
        memcpy(w->b + w->len, s, n);
        w->len += n;
    } else {
        ctr_pb_append_slow(w, s, n);
    }
}

static inline void ctr_pb_varint(struct ctr_pb *w, uint64_t v)
{
    uint8_t t[10];
    size_t n = 0;
    for (; v >= 0x80; v >>= 7)
        t[n++] = (uint8_t)(v | 0x80);
    t[n++] = (uint8_t)v;
    ctr_pb_append(w, t, n);
}

/* A varint field, written even when v is 0 (proto2's optional fields, where
 * absent and 0 differ). int64 values go as their two's complement. */
static inline void ctr_pb_field(struct ctr_pb *w, int field, uint64_t v)
{
    ctr_pb_varint(w, (uint64_t)field << 3 | CTR_PB_VARINT);
    ctr_pb_varint(w, v);
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
    uint8_t t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    ctr_pb_varint(w, (uint64_t)field << 3 | CTR_PB_FIXED64);
    ctr_pb_append(w, t, 8);
}

/* A length-delimited field of n bytes (a string or bytes). */
static inline void ctr_pb_bytes(struct ctr_pb *w, int field, const void *s, size_t n)
{
    ctr_pb_varint(w, (uint64_t)field << 3 | CTR_PB_LEN);
    ctr_pb_varint(w, n);
    ctr_pb_append(w, s, n);
}

static inline void ctr_pb_string(struct ctr_pb *w, int field, const char *s)
{
    ctr_pb_bytes(w, field, s, strlen(s));
}

/* Writing in place, for encoders that know how much room a message needs:
 * ctr_pb_reserve() makes room for n more bytes and returns where they
 * start (NULL when out of memory), the encoder writes through a cursor
 * with the ctr_pb_put_* functions, and sets w->len to the cursor's end. */
void ctr_pb_reserve_slow(struct ctr_pb *w, size_t n);

static inline uint8_t *ctr_pb_reserve(struct ctr_pb *w, size_t n)
{
    if (w->len + n > w->cap)
        ctr_pb_reserve_slow(w, n);
    return w->err ? NULL : w->b + w->len;
}

static inline uint8_t *ctr_pb_put_varint(uint8_t *q, uint64_t v)
{
    while (v >= 0x80) {
        *q++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *q++ = (uint8_t)v;
    return q;
}

/* The bytes varint v takes. */
static inline size_t ctr_pb_varint_len(uint64_t v)
{
    /* 7 bits a byte: (significant bits + 6) / 7, at least 1. */
    return ((size_t)(64 - __builtin_clzll(v | 1)) * 9 + 64) / 64;
}

static inline uint8_t *ctr_pb_put_field(uint8_t *q, int field, uint64_t v)
{
    q = ctr_pb_put_varint(q, (uint64_t)field << 3 | CTR_PB_VARINT);
    return ctr_pb_put_varint(q, v);
}

static inline uint8_t *ctr_pb_put_fixed64(uint8_t *q, int field, uint64_t v)
{
    q = ctr_pb_put_varint(q, (uint64_t)field << 3 | CTR_PB_FIXED64);
    for (int i = 0; i < 8; i++)
        *q++ = (uint8_t)(v >> (8 * i));
    return q;
}

static inline uint8_t *ctr_pb_put_bytes(uint8_t *q, int field, const void *s, size_t n)
{
    q = ctr_pb_put_varint(q, (uint64_t)field << 3 | CTR_PB_LEN);
    q = ctr_pb_put_varint(q, n);
    memcpy(q, s, n);
    return q + n;
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
