/* SPDX-License-Identifier: MIT */
/* proto.c - the JSON bodies of examples/service (proto.h says which): a
 * writer and a strict reader for each.
 *
 * The reader is a cursor over the bytes that never reads past their end:
 * each step first skips whitespace, then takes exactly the token it needs
 * or fails, so that a body is accepted only when it is one of the messages
 * of proto.h, with nothing before or after it. It knows only what these
 * messages use: objects whose members are named without escapes, arrays,
 * and non-negative integers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime (example.h) under -std=c11 */
#endif

#include "proto.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ================================================================ writing */

/* A body being written into buf[cap]; len goes past cap when it does not
 * fit, which the end of the writer reports. */
struct out {
    char *buf;
    size_t cap, len;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    o->len += n > 0 ? (size_t)n : 0;
}

static int put_end(const struct out *o)
{
    return o->len < o->cap ? (int)o->len : -1;
}

int svc_write_lookup(char *buf, size_t cap, const uint64_t *keys, unsigned n)
{
    struct out o = {buf, cap, 0};
    put(&o, "{\"keys\":[");
    for (unsigned i = 0; i < n; i++)
        put(&o, "%s%" PRIu64, i ? "," : "", keys[i]);
    put(&o, "]}");
    return put_end(&o);
}

int svc_write_items(char *buf, size_t cap, const uint64_t keys[SVC_ITEMS],
                    const uint64_t values[SVC_ITEMS])
{
    struct out o = {buf, cap, 0};
    put(&o, "{\"items\":[");
    for (unsigned i = 0; i < SVC_ITEMS; i++)
        put(&o, "%s{\"key\":%" PRIu64 ",\"value\":%" PRIu64 "}", i ? "," : "", keys[i], values[i]);
    put(&o, "]}");
    return put_end(&o);
}

int svc_write_update(char *buf, size_t cap, uint64_t key, uint64_t value)
{
    struct out o = {buf, cap, 0};
    put(&o, "{\"key\":%" PRIu64 ",\"value\":%" PRIu64 "}", key, value);
    return put_end(&o);
}

/* ================================================================ reading */

/* The bytes not yet read: p..end. */
struct cur {
    const char *p, *end;
};

static void skip_ws(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

/* Takes the character ch. @return 0, or -1 if the next token is not ch. */
static int take(struct cur *c, char ch)
{
    skip_ws(c);
    if (c->p == c->end || *c->p != ch)
        return -1;
    c->p++;
    return 0;
}

/* Takes '"name":' for one of the n names. @return its index, or -1. */
static int take_name(struct cur *c, const char *const *names, int n)
{
    if (take(c, '"') != 0)
        return -1;
    const char *q = memchr(c->p, '"', (size_t)(c->end - c->p));
    if (!q)
        return -1;
    size_t len = (size_t)(q - c->p);
    for (int i = 0; i < n; i++) {
        if (strlen(names[i]) == len && memcmp(c->p, names[i], len) == 0) {
            c->p = q + 1;
            return take(c, ':') == 0 ? i : -1;
        }
    }
    return -1; /* another name, or one written with escapes */
}

/* Takes an integer 0..max as JSON writes it: "0", or a first digit 1-9
 * and more digits. @return 0 with *v, or -1 (a sign, a leading zero, a
 * value over max; a fraction or exponent fails at the next token). */
static int take_u64(struct cur *c, uint64_t max, uint64_t *v)
{
    skip_ws(c);
    if (c->p == c->end || *c->p < '0' || *c->p > '9')
        return -1;
    if (*c->p == '0') {
        c->p++;
        *v = 0;
        return c->p < c->end && *c->p >= '0' && *c->p <= '9' ? -1 : 0;
    }
    uint64_t x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned d = (unsigned)(*c->p++ - '0');
        if (x > (max - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

/* Takes '{' the two integer members "key" (< SVC_KEYS) and "value", in
 * either order, '}'. @return 0, or -1. */
static int take_key_value(struct cur *c, uint64_t *key, uint64_t *value)
{
    static const char *const names[] = {"key", "value"};
    const uint64_t max[] = {SVC_KEYS - 1, UINT64_MAX};
    uint64_t *dst[] = {key, value};
    int seen = 0;
    if (take(c, '{') != 0)
        return -1;
    for (int m = 0; m < 2; m++) {
        if (m > 0 && take(c, ',') != 0)
            return -1;
        int i = take_name(c, names, 2);
        if (i < 0 || (seen & (1 << i)) || take_u64(c, max[i], dst[i]) != 0)
            return -1;
        seen |= 1 << i;
    }
    return take(c, '}');
}

/* Takes '{"NAME":[' for a message of one array member. @return 0, or -1. */
static int take_array_start(struct cur *c, const char *name)
{
    return take(c, '{') == 0 && take_name(c, &name, 1) == 0 && take(c, '[') == 0 ? 0 : -1;
}

/* Takes ']}' and then the end of the body. @return 0, or -1. */
static int take_array_end(struct cur *c)
{
    if (take(c, ']') != 0 || take(c, '}') != 0)
        return -1;
    skip_ws(c);
    return c->p == c->end ? 0 : -1;
}

int svc_read_lookup(const char *body, size_t len, uint64_t keys[SVC_MAX_KEYS])
{
    struct cur c = {body, body + len};
    if (take_array_start(&c, "keys") != 0)
        return -1;
    int n = 0;
    do {
        if (n == SVC_MAX_KEYS || take_u64(&c, SVC_KEYS - 1, &keys[n]) != 0)
            return -1; /* also an empty array: a key must come first */
        n++;
    } while (take(&c, ',') == 0);
    return take_array_end(&c) == 0 ? n : -1;
}

int svc_read_items(const char *body, size_t len, uint64_t keys[SVC_ITEMS],
                   uint64_t values[SVC_ITEMS])
{
    struct cur c = {body, body + len};
    if (take_array_start(&c, "items") != 0)
        return -1;
    for (unsigned i = 0; i < SVC_ITEMS; i++) {
        if ((i > 0 && take(&c, ',') != 0) || take_key_value(&c, &keys[i], &values[i]) != 0)
            return -1;
    }
    return take_array_end(&c);
}

int svc_read_update(const char *body, size_t len, uint64_t *key, uint64_t *value)
{
    struct cur c = {body, body + len};
    if (take_key_value(&c, key, value) != 0)
        return -1;
    skip_ws(&c);
    return c.p == c.end ? 0 : -1;
}
