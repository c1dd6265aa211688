/* SPDX-License-Identifier: MIT */
/* conn.c - a connection of examples/service's server (conn.h), from the
 * bytes read to the answers sent, on the worker that owns it.
 *
 * A connection's bytes. in[] holds what was read and not yet answered,
 * in_off..in_len. Every whole request there is answered in order
 * (pipelining), its response appended to out[] and sent at once. When the
 * socket does not take it all, the connection waits for EPOLLOUT and reads
 * nothing more until out[] has drained: a client that does not read its
 * answers is not read either. in[] holds the largest request allowed
 * (SVC_MAX_HEAD + SVC_MAX_BODY), so a full in[] always holds a whole
 * request or a head that is refused.
 *
 * Closing. A request whose head is bad, or whose body cannot be framed,
 * gets its 4xx with "Connection: close", and nothing after it is read as a
 * request. Once its last response is sent, the server shuts its side down
 * and reads and drops what the client still sends, until the client closes
 * or for LINGER_MS at most (a lingering close, as nginx's): closing with
 * unread bytes would send an RST, on which the client's kernel may discard
 * the 4xx before the client reads it. A client that closes mid-request is
 * dropped: a partial request is not answered.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime (example.h) under -std=c11 */
#endif

#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"

#define IN_CAP (SVC_MAX_HEAD + SVC_MAX_BODY)
#define OUT_CAP (8 * SVC_MAX_RESPONSE)
#define LINGER_MS 1000
#define LINGER_BYTES (64 * 1024) /* a lingering client sending more is cut off */

struct srv_conn {
    int fd;
    uint32_t interest;     /* the epoll events asked for now */
    int closing;           /* close once out[] is sent */
    int eof;               /* the client shut its side: no more requests */
    int failed;            /* a socket error: drop it */
    uint64_t linger_until; /* lingering until this time (ns); 0: not lingering */
    size_t lingered;       /* bytes dropped while lingering */
    size_t in_off, in_len;
    size_t out_off, out_len;
    struct worker *w;
    struct srv_conn *prev, *next; /* the worker's connections */
    char in[IN_CAP];
    char out[OUT_CAP];
};

void conn_open(struct worker *w, int fd)
{
    struct srv_conn *c = calloc(1, sizeof *c);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (!c || epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        fprintf(stderr, "service: cannot take a connection: %s\n", strerror(c ? errno : ENOMEM));
        free(c);
        close(fd);
        return;
    }
    c->fd = fd;
    c->interest = EPOLLIN;
    c->w = w;
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
}

void conn_close(struct srv_conn *c)
{
    struct worker *w = c->w;
    close(c->fd); /* also takes it out of the epoll set: nothing else holds it */
    if (c->linger_until)
        w->lingering--;
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c);
}

/* Sends what out[] holds, as much as the socket takes now. */
static void conn_flush(struct srv_conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        } else if (n < 0 && errno != EINTR) {
            c->failed = 1; /* the client is gone (EPIPE, ECONNRESET) */
            return;
        }
    }
    c->out_off = c->out_len = 0;
}

/* Reads once into in[], after moving what is unanswered to its start. */
static void conn_read(struct srv_conn *c)
{
    if (c->in_off > 0) {
        memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
        c->in_len -= c->in_off;
        c->in_off = 0;
    }
    if (c->in_len == IN_CAP) {
        c->failed = 1; /* cannot happen (see the top); never spin on it */
        return;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, 0);
    if (n > 0)
        c->in_len += (size_t)n;
    else if (n == 0)
        c->eof = 1;
    else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        c->failed = 1;
}

/* Answers the whole requests in in[], in order, while out[] has room for
 * one more response. */
static void conn_process(struct worker *w, struct srv_conn *c)
{
    while (!c->closing && !c->failed && c->in_off < c->in_len &&
           OUT_CAP - c->out_len >= SVC_MAX_RESPONSE) {
        const char *p = c->in + c->in_off;
        size_t avail = c->in_len - c->in_off, body = 0;
        struct http_head h;
        int r = http_parse_request(p, avail, SVC_MAX_HEAD, &h);
        if (r == 0)
            return; /* the head is not all here */
        int status = r < 0 ? -r : 0;
        if (status == 0) {
            if (h.chunked)
                status = 411; /* a body framed otherwise than by Content-Length */
            else if (h.content_length > SVC_MAX_BODY)
                status = 413;
            else if (h.content_length < 0 && http_is(h.method, h.method_len, "POST"))
                status = 411;
            else if (h.content_length > 0)
                body = (size_t)h.content_length;
        }
        if (status == 0 && avail - (size_t)r < body)
            return; /* nor its body */

        trace_task_t task = trace_task_begin("request", 0);
        struct srv_req req = {.task = task,
                              .head = status ? NULL : &h,
                              .body = p + (status ? 0 : r),
                              .body_len = body,
                              .conn = c};
        if (status) {
            c->closing = 1; /* where the next request would begin is unknown */
            trace_region_begin(task, "respond");
            srv_error(&req, status, NULL);
            trace_region_end(task, "respond");
        } else {
            c->in_off += (size_t)r + body;
            c->closing = h.close;
            w->handle(&req);
        }
        trace_task_end(task);
    }
}

/* After an event: drops a failed connection, closes a finished one, or
 * asks epoll for what it waits for now. */
static void conn_settle(struct worker *w, struct srv_conn *c)
{
    uint32_t want = EPOLLIN;
    int sending = c->out_off < c->out_len;
    if (c->failed || (!sending && c->eof)) {
        conn_close(c); /* gone, or done: every whole request it sent is answered */
        return;
    }
    if (sending) {
        want = EPOLLOUT;
    } else if (c->closing) {
        shutdown(c->fd, SHUT_WR); /* the client reads our FIN after the response */
        c->linger_until = ex_now_ns() + LINGER_MS * UINT64_C(1000000);
        w->lingering++;
    }
    if (want != c->interest) {
        struct epoll_event ev = {.events = want, .data.ptr = c};
        if (epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
            conn_close(c);
            return;
        }
        c->interest = want;
    }
}

/* Drops what a lingering client sends; closes on its EOF, an error, or
 * too much. */
static void conn_linger(struct srv_conn *c)
{
    ssize_t n = recv(c->fd, c->in, IN_CAP, 0);
    if (n > 0 && (c->lingered += (size_t)n) <= LINGER_BYTES)
        return;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    conn_close(c);
}

void conn_event(struct worker *w, struct srv_conn *c, uint32_t events)
{
    if (c->linger_until) {
        conn_linger(c);
        return;
    }
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->eof && !c->closing)
        conn_read(c);
    if (events & EPOLLOUT)
        conn_flush(c);
    conn_process(w, c);
    conn_settle(w, c);
}

void conn_sweep(struct worker *w)
{
    uint64_t now = ex_now_ns();
    for (struct srv_conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->linger_until && now >= c->linger_until)
            conn_close(c);
    }
}

void srv_reply(struct srv_req *req, int status, const char *extra, const char *body, size_t len)
{
    struct srv_conn *c = req->conn;
    char *dst = c->out + c->out_len;
    size_t room = OUT_CAP - c->out_len;
    /* HTTP/1.1 keeps the connection unless it says not to; HTTP/1.0 the
     * other way round (RFC 9112, 9.3). */
    const char *keep = c->closing                           ? "Connection: close\r\n"
                       : req->head && req->head->minor == 0 ? "Connection: keep-alive\r\n"
                                                            : "";
    int n = snprintf(dst, room,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n%s%s\r\n",
                     status, http_reason(status), len, extra ? extra : "", keep);
    if (n < 0 || (size_t)n + len > SVC_MAX_RESPONSE) {
        /* conn_process keeps SVC_MAX_RESPONSE free for every response. */
        fprintf(stderr, "service: a response of more than %d bytes\n", SVC_MAX_RESPONSE);
        abort(); /* the service's own bug, whatever the client sent */
    }
    memcpy(dst + n, body, len);
    c->out_len += (size_t)n + len;
    if (status == 200)
        c->w->served++;
    else
        c->w->bad++;
    conn_flush(c);
}

void srv_error(struct srv_req *req, int status, const char *extra)
{
    char body[80];
    int n = snprintf(body, sizeof body, "{\"error\":\"%s\"}", http_reason(status));
    srv_reply(req, status, extra, body, (size_t)n);
}
