/* SPDX-License-Identifier: MIT */
/* client.c - the client's side of examples/service (client.h). Blocking
 * sockets with timeouts: a load generator thread waits for its one request
 * in flight, and a server that stops answering is an error, not a hang. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime (example.h) under -std=c11 */
#endif

#include "client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int peer_connect(struct peer *p, int port, const char **why)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct timeval tv = {.tv_sec = CLIENT_TIMEOUT_S};
    int one = 1;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    p->len = p->used = 0;
    p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p->fd < 0 || setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
        setsockopt(p->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(p->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
        connect(p->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        *why = strerror(errno);
        peer_close(p);
        return -1;
    }
    return 0;
}

int peer_send(struct peer *p, const char *buf, size_t len, const char **why)
{
    while (len > 0) {
        ssize_t n = send(p->fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *why = errno == EAGAIN ? "the server took no bytes in time" : strerror(errno);
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads more bytes. @return 0, or -1 with *why. */
static int peer_fill(struct peer *p, const char **why)
{
    if (p->len == sizeof p->buf) {
        *why = "a response longer than the buffer";
        return -1;
    }
    for (;;) {
        ssize_t n = recv(p->fd, p->buf + p->len, sizeof p->buf - p->len, 0);
        if (n > 0) {
            p->len += (size_t)n;
            return 0;
        }
        if (n < 0 && errno == EINTR)
            continue;
        *why = n == 0                                    ? "the server closed the connection"
               : errno == EAGAIN || errno == EWOULDBLOCK ? "no answer in time"
                                                         : strerror(errno);
        return -1;
    }
}

int peer_read(struct peer *p, struct http_head *h, const char **why)
{
    memmove(p->buf, p->buf + p->used, p->len - p->used);
    p->len -= p->used;
    p->used = 0;
    for (;;) {
        int r = p->len ? http_parse_response(p->buf, p->len, sizeof p->buf, h) : 0;
        if (r < 0) {
            *why = "a response that is not HTTP/1.x";
            return -1;
        }
        if (r > 0 && (h->chunked || h->content_length < 0 ||
                      h->content_length > (int64_t)(sizeof p->buf - (size_t)r))) {
            *why = "a response without a Content-Length that fits";
            return -1;
        }
        if (r > 0 && p->len - (size_t)r >= (size_t)h->content_length) {
            p->used = (size_t)r + (size_t)h->content_length;
            return 0;
        }
        if (peer_fill(p, why) != 0)
            return -1;
    }
}

int peer_eof(struct peer *p)
{
    char c;
    if (p->len > p->used)
        return 0;
    for (;;) {
        ssize_t n = recv(p->fd, &c, 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        return n == 0;
    }
}

void peer_close(struct peer *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

int request_write(const struct request *r, char *buf, size_t cap)
{
    char body[SVC_MAX_BODY];
    int len = r->n ? svc_write_lookup(body, sizeof body, r->keys, r->n)
                   : svc_write_update(body, sizeof body, r->keys[0], svc_value(r->keys[0]));
    if (len < 0)
        return -1;
    int n = snprintf(buf, cap,
                     "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     r->n ? "/lookup" : "/update", len, body);
    return n >= 0 && (size_t)n < cap ? n : -1;
}

const char *request_check(const struct request *r, const struct http_head *h, const char *body)
{
    uint64_t keys[SVC_ITEMS], values[SVC_ITEMS];
    size_t len = (size_t)h->content_length;
    if (h->status != 200)
        return "a status other than 200";
    if (r->n == 0) {
        if (svc_read_update(body, len, &keys[0], &values[0]) != 0)
            return "an update's answer that is not {\"key\":K,\"value\":V}";
        if (keys[0] != r->keys[0] || values[0] != svc_value(keys[0]))
            return "an update's answer for another key or value";
        return NULL;
    }
    if (svc_read_items(body, len, keys, values) != 0)
        return "a lookup's answer that is not 20 items";
    for (unsigned i = 0; i < SVC_ITEMS; i++) {
        if (keys[i] != r->keys[svc_item(i, r->n)])
            return "an item of another key than asked";
        if (values[i] != svc_value(keys[i]))
            return "an item with a wrong value";
    }
    return NULL;
}
