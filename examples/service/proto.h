/* SPDX-License-Identifier: MIT */
/* proto.h - what examples/service and its load generator (service-load)
 * agree on: the table's contents, the limits, and the JSON bodies they
 * exchange, each with its writer and its strict reader side by side in
 * proto.c, so that the two programs cannot drift apart.
 *
 * The table holds keys 0..SVC_KEYS-1; key K starts with svc_value(K), and
 * service-load's updates write that same value back, so that every answer
 * can be checked exactly whatever the interleaving of reads and writes
 * (a client writing other values makes later answers differ from it).
 *
 * The bodies (whitespace allowed between tokens; numbers are non-negative
 * integers without sign, fraction, exponent or leading zero; member names
 * without escapes; members of an object in any order, each exactly once,
 * and no other; nothing after the value; anything else is refused):
 *
 *   POST /lookup   {"keys":[K,...]}        1..SVC_MAX_KEYS keys < SVC_KEYS
 *     200          {"items":[{"key":K,"value":V},...]}
 *                  exactly SVC_ITEMS items: item i answers the request's
 *                  key svc_item(i, n) of its n keys, that is the first
 *                  SVC_ITEMS keys asked, cycled from the first again when
 *                  fewer were asked
 *   POST /update   {"key":K,"value":V}     K < SVC_KEYS, V < 2^64
 *     200          the same object, as stored
 */
#ifndef CTRACE_SERVICE_PROTO_H
#define CTRACE_SERVICE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "../common/example.h"

#define SVC_KEYS 65536u   /* keys 0..SVC_KEYS-1 */
#define SVC_MAX_KEYS 64   /* keys per lookup, at most */
#define SVC_ITEMS 20      /* items in every lookup answer */
#define SVC_MAX_HEAD 8192 /* bytes of a request's head, blank line included */
#define SVC_MAX_BODY 4096 /* bytes of a request's body */
/* Bytes of any whole response, head included: SVC_ITEMS items of at most
 * 5 + 20 digits take under 900 bytes, the head under 150. */
#define SVC_MAX_RESPONSE 2048

/* The value key K holds unless a client wrote another. */
static inline uint64_t svc_value(uint64_t key)
{
    return ex_mix64(key ^ UINT64_C(0x5eed));
}

/* Which of a lookup's n keys item i answers. */
static inline unsigned svc_item(unsigned i, unsigned n)
{
    return i % n;
}

/* The writers: @return the body's length, or -1 if it does not fit in cap
 * bytes (NUL-terminated when it fits). */
int svc_write_lookup(char *buf, size_t cap, const uint64_t *keys, unsigned n);
int svc_write_items(char *buf, size_t cap, const uint64_t keys[SVC_ITEMS],
                    const uint64_t values[SVC_ITEMS]);
int svc_write_update(char *buf, size_t cap, uint64_t key, uint64_t value);

/* The readers, of len bytes at body (no NUL needed): @return as said, or -1
 * when the body is not exactly such a message. */
/* The number of keys (1..SVC_MAX_KEYS), stored in keys[]. */
int svc_read_lookup(const char *body, size_t len, uint64_t keys[SVC_MAX_KEYS]);
/* 0, with the SVC_ITEMS items in keys[] and values[]. */
int svc_read_items(const char *body, size_t len, uint64_t keys[SVC_ITEMS],
                   uint64_t values[SVC_ITEMS]);
/* 0, with *key and *value. */
int svc_read_update(const char *body, size_t len, uint64_t *key, uint64_t *value);

#endif
