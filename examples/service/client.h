/* SPDX-License-Identifier: MIT */
/* client.h - the client's side of examples/service, for service-load: a
 * connection, requests written as the service reads them, responses read
 * whole, and the exact check of each answer against the table's contents
 * (proto.h).
 */
#ifndef CTRACE_SERVICE_CLIENT_H
#define CTRACE_SERVICE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "proto.h"

/* Seconds a client waits for a response before it calls the server hung. */
#define CLIENT_TIMEOUT_S 10

/* A connection to the service, and the bytes read from it: the last
 * response is buf[0..used), what came after it buf[used..len). */
struct peer {
    int fd;
    size_t len, used;
    char buf[SVC_MAX_HEAD + SVC_MAX_BODY];
};

/* peer_connect() : connects p to 127.0.0.1:port (blocking, TCP_NODELAY,
 * CLIENT_TIMEOUT_S on reads and writes). @return 0, or -1 with *why. */
int peer_connect(struct peer *p, int port, const char **why);

/* peer_send() : sends buf[len] whole. @return 0, or -1 with *why. */
int peer_send(struct peer *p, const char *buf, size_t len, const char **why);

/* peer_read() : reads the next response whole: its head into *h, its body
 * at p->buf + h->len (h->content_length bytes). @return 0, or -1 with
 * *why (the connection closed or failed, no answer in time, a response
 * that is not HTTP or has no Content-Length). */
int peer_read(struct peer *p, struct http_head *h, const char **why);

/* peer_eof() : @return 1 when the server closes the connection next (no
 * byte more, within CLIENT_TIMEOUT_S), else 0. */
int peer_eof(struct peer *p);

/* peer_close() : closes it (fd -1 after). */
void peer_close(struct peer *p);

/* A request the service answers with 200: a lookup of n keys, or an update
 * of key (n 0) writing svc_value(key) back. */
struct request {
    uint64_t keys[SVC_MAX_KEYS];
    unsigned n;
};

/* request_write() : the request as HTTP/1.1 bytes. @return their length,
 * or -1 if they do not fit in cap. */
int request_write(const struct request *r, char *buf, size_t cap);

/* request_check() : checks the answer to r exactly: status 200, and each
 * item (or the update's echo) holds the key asked and its svc_value.
 * @return NULL when it is right, else what is wrong. */
const char *request_check(const struct request *r, const struct http_head *h, const char *body);

#endif
