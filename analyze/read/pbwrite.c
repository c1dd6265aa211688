/* SPDX-License-Identifier: MIT */
/* pbwrite.c - the protocol-buffer encoder's slow paths (see pbwrite.h). */
#include "read/pbwrite.h"

#include <errno.h>
#include <stdlib.h>

void ctr_pb_reserve_slow(struct ctr_pb *w, size_t n)
{
    if (w->err)
        return;
    if (w->len + n <= w->cap)
        return;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n) {
        if (cap > SIZE_MAX / 2) {
            w->err = -ENOMEM;
            return;
        }
        cap *= 2;
    }
    uint8_t *b = realloc(w->b, cap);
    if (!b) {
        w->err = -ENOMEM;
        return;
    }
    w->b = b;
    w->cap = cap;
}

/* One length byte is reserved: most nested messages are under 128 bytes. */
size_t ctr_pb_open(struct ctr_pb *w, int field)
{
    ctr_pb_varint(w, (uint64_t)field << 3 | CTR_PB_LEN);
    ctr_pb_append(w, "", 1);
    return w->len;
}

/* Slides the body when its length takes more than the one byte reserved. */
void ctr_pb_close(struct ctr_pb *w, size_t body)
{
    if (w->err)
        return;
    size_t n = w->len - body, k = ctr_pb_varint_len(n);
    if (k > 1) {
        if (!ctr_pb_reserve(w, k - 1))
            return;
        memmove(w->b + body + k - 1, w->b + body, n);
        w->len += k - 1;
    }
    ctr_put_uvarint(w->b + body - 1, n);
}

void ctr_pb_packed(struct ctr_pb *w, int field, const uint64_t *v, size_t n)
{
    if (n == 0)
        return;
    size_t m = ctr_pb_open(w, field);
    for (size_t i = 0; i < n; i++)
        ctr_pb_varint(w, v[i]);
    ctr_pb_close(w, m);
}

void ctr_pb_free(struct ctr_pb *w)
{
    free(w->b);
    *w = (struct ctr_pb){0};
}
