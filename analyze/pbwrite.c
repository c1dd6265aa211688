/* pbwrite.c - the protocol-buffer encoder's slow paths (see pbwrite.h). */
#include "pbwrite.h"

#include <errno.h>
#include <stdlib.h>

void ctr_pb_append_slow(struct ctr_pb *w, const void *s, size_t n)
{
    if (w->err)
        return;
    if (w->len + n > w->cap) {
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
    if (n && s)
        memcpy(w->b + w->len, s, n);
    w->len += n;
}

void ctr_pb_reserve_slow(struct ctr_pb *w, size_t n)
{
    size_t len = w->len;
    ctr_pb_append_slow(w, NULL, n); /* grows, and moves len past the room */
    w->len = len;
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
    uint8_t t[10];
    if (w->err)
        return;
    size_t n = w->len - body, k = 0;
    for (size_t v = n; v >= 0x80; v >>= 7)
        t[k++] = (uint8_t)(v | 0x80);
    t[k] = (uint8_t)(n >> (7 * k));
    k++;
    if (k > 1) {
        ctr_pb_append(w, t, k - 1); /* only to make room; overwritten below */
        if (w->err)
            return;
        memmove(w->b + body + k - 1, w->b + body, n);
    }
    memcpy(w->b + body - 1, t, k);
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
