/* SPDX-License-Identifier: MIT */
/* badcases.c - the cases of service-load -bad (badcases.h).
 *
 * A table case sends its bytes on a new connection and wants one answer
 * with its status. Then, if the case says the server closes (its head or
 * framing was bad: nothing after it can be read as a request), the next
 * thing read must be the end of the stream; else the connection must still
 * serve: a lookup on it must be answered exactly. The cases that are not
 * one request and one answer (pipelining, a request in pieces,
 * disconnects) are functions below the table.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_gettime (example.h) under -std=c11 */
#endif

#include "badcases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client.h"

struct bad_case {
    const char *name;
    const char *raw;             /* the bytes, sent as they are; NULL: line and body */
    const char *line;            /* "METHOD /PATH" of a request sent with... */
    const char *body;            /* ...this body and its Content-Length */
    unsigned pad_head, pad_body; /* bytes of an X-Pad header; spaces before the body */
    int status;                  /* the answer wanted */
    int closes;                  /* the server must close the connection after it */
};

#define K10 "1,2,3,4,5,6,7,8,9,0,"

/* clang-format off */
static const struct bad_case cases[] = {
    /* Heads that cannot be read: 400, 431, and the connection closed. */
    {"garbage bytes", .raw = "\x16\x03\x01\x02\x01\x01\xfc\x03\x03" "garbage", .status = 400, .closes = 1},
    {"not HTTP", .raw = "hello there\r\n\r\n", .status = 400, .closes = 1},
    {"bare LF line ends", .raw = "GET /health HTTP/1.1\nHost: x\n\n", .status = 400, .closes = 1},
    {"HTTP/2.0", .raw = "GET /health HTTP/2.0\r\n\r\n", .status = 400, .closes = 1},
    {"header without a colon", .raw = "GET /health HTTP/1.1\r\nHost x\r\n\r\n", .status = 400, .closes = 1},
    {"space before a colon", .raw = "GET /health HTTP/1.1\r\nHost : x\r\n\r\n", .status = 400, .closes = 1},
    {"control byte in a header", .raw = "GET /health HTTP/1.1\r\nX: \x01\r\n\r\n", .status = 400, .closes = 1},
    {"Content-Length not a number", .raw = "POST /lookup HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", .status = 400, .closes = 1},
    {"two Content-Lengths", .raw = "POST /lookup HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", .status = 400, .closes = 1},
    {"head over 8 KiB", .line = "GET /health", .body = "", .pad_head = 9000, .status = 431, .closes = 1},
    /* Bodies that cannot be framed: 411, 413, and the connection closed. */
    {"POST without Content-Length", .raw = "POST /lookup HTTP/1.1\r\nHost: x\r\n\r\n", .status = 411, .closes = 1},
    {"chunked body", .raw = "POST /lookup HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "c\r\n{\"keys\":[1]}\r\n0\r\n\r\n", .status = 411, .closes = 1},
    {"body over 4 KiB", .line = "POST /lookup", .body = "{\"keys\":[1]}", .pad_body = 5000, .status = 413, .closes = 1},
    /* Well framed but refused: the connection serves on. */
    {"unknown path", .line = "GET /nope", .body = "", .status = 404},
    {"query string", .line = "POST /lookup?x=1", .body = "{\"keys\":[1]}", .status = 404},
    {"GET /lookup", .line = "GET /lookup", .body = "", .status = 405},
    {"DELETE /update", .line = "DELETE /update", .body = "", .status = 405},
    {"POST /health", .line = "POST /health", .body = "{}", .status = 405},
    {"empty body", .line = "POST /lookup", .body = "", .status = 400},
    {"no keys", .line = "POST /lookup", .body = "{\"keys\":[]}", .status = 400},
    {"65 keys", .line = "POST /lookup", .body = "{\"keys\":[" K10 K10 K10 K10 K10 K10 "1,2,3,4,5]}", .status = 400},
    {"trailing comma", .line = "POST /lookup", .body = "{\"keys\":[1,2,]}", .status = 400},
    {"negative key", .line = "POST /lookup", .body = "{\"keys\":[-1]}", .status = 400},
    {"fraction", .line = "POST /lookup", .body = "{\"keys\":[1.5]}", .status = 400},
    {"exponent", .line = "POST /lookup", .body = "{\"keys\":[1e3]}", .status = 400},
    {"leading zero", .line = "POST /lookup", .body = "{\"keys\":[017]}", .status = 400},
    {"key out of the table", .line = "POST /lookup", .body = "{\"keys\":[65536]}", .status = 400},
    {"key as a string", .line = "POST /lookup", .body = "{\"keys\":[\"1\"]}", .status = 400},
    {"escaped member name", .line = "POST /lookup", .body = "{\"k\\u0065ys\":[1]}", .status = 400},
    {"keys twice", .line = "POST /lookup", .body = "{\"keys\":[1],\"keys\":[2]}", .status = 400},
    {"another member", .line = "POST /lookup", .body = "{\"keys\":[1],\"x\":2}", .status = 400},
    {"an array", .line = "POST /lookup", .body = "[1,2]", .status = 400},
    {"unclosed", .line = "POST /lookup", .body = "{\"keys\":[1]", .status = 400},
    {"after the object", .line = "POST /lookup", .body = "{\"keys\":[1]} x", .status = 400},
    {"update without value", .line = "POST /update", .body = "{\"key\":1}", .status = 400},
    {"value over 2^64", .line = "POST /update", .body = "{\"key\":1,\"value\":18446744073709551616}", .status = 400},
    {"key twice", .line = "POST /update", .body = "{\"key\":1,\"key\":2}", .status = 400},
    /* Served, in forms the load does not use. */
    {"whitespace in JSON", .line = "POST /lookup", .body = " {\n\t\"keys\" : [ 1 , 2 ]\r\n} ", .status = 200},
    {"GET /health", .line = "GET /health", .body = "", .status = 200},
    {"HTTP/1.0 closes", .raw = "GET /health HTTP/1.0\r\n\r\n", .status = 200, .closes = 1},
    {"Connection: close", .raw = "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n", .status = 200, .closes = 1},
};
/* clang-format on */

struct tally {
    unsigned cases, failed, good, bad;
};

static void failed(struct tally *t, const char *name, const char *why)
{
    t->failed++;
    fprintf(stderr, "service-load: -bad: %s: %s\n", name, why);
}

/* Reads one answer and counts it. @return its status, or -1 after failing. */
static int answer(struct tally *t, const char *name, struct peer *p, struct http_head *h)
{
    const char *why;
    if (peer_read(p, h, &why) != 0) {
        failed(t, name, why);
        return -1;
    }
    if (h->status == 200)
        t->good++;
    else
        t->bad++;
    return h->status;
}

/* Sends r on p and checks its answer exactly. @return 0, or -1 after failing. */
static int exchange(struct tally *t, const char *name, struct peer *p, const struct request *r)
{
    char buf[2048];
    struct http_head h;
    const char *why = NULL;
    int len = request_write(r, buf, sizeof buf);
    if (len < 0 || peer_send(p, buf, (size_t)len, &why) != 0) {
        failed(t, name, why ? why : "a request too long to write");
        return -1;
    }
    if (answer(t, name, p, &h) < 0)
        return -1;
    if ((why = request_check(r, &h, p->buf + h.len)) != NULL) {
        failed(t, name, why);
        return -1;
    }
    return 0;
}

/* The bytes of a table case. @return them (malloc'd, *len long), or NULL. */
static char *case_bytes(const struct bad_case *k, size_t *len)
{
    size_t blen = k->pad_body + (k->body ? strlen(k->body) : 0);
    size_t cap = (k->raw ? strlen(k->raw) : 256 + strlen(k->line)) + k->pad_head + blen + 1;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    if (k->raw) {
        *len = (size_t)snprintf(b, cap, "%s", k->raw);
        return b;
    }
    size_t n = (size_t)snprintf(b, cap, "%s HTTP/1.1\r\nHost: 127.0.0.1\r\n", k->line);
    if (k->pad_head) {
        n += (size_t)snprintf(b + n, cap - n, "X-Pad: ");
        memset(b + n, 'a', k->pad_head);
        n += k->pad_head;
        n += (size_t)snprintf(b + n, cap - n, "\r\n");
    }
    n += (size_t)snprintf(b + n, cap - n, "Content-Length: %zu\r\n\r\n", blen);
    memset(b + n, ' ', k->pad_body);
    n += k->pad_body;
    n += (size_t)snprintf(b + n, cap - n, "%s", k->body);
    *len = n;
    return b;
}

static void run_case(struct tally *t, int port, const struct bad_case *k)
{
    struct peer *p = malloc(sizeof *p);
    struct http_head h;
    const char *why = NULL;
    size_t len = 0;
    char *bytes = case_bytes(k, &len);
    struct request next = {.keys = {1, 2, 3}, .n = 3};
    t->cases++;
    if (!p || !bytes) {
        failed(t, k->name, "out of memory");
    } else if (peer_connect(p, port, &why) != 0 || peer_send(p, bytes, len, &why) != 0) {
        failed(t, k->name, why);
    } else if (answer(t, k->name, p, &h) < 0) {
        /* said */
    } else if (h.status != k->status) {
        char msg[64];
        snprintf(msg, sizeof msg, "answered %d, not %d", h.status, k->status);
        failed(t, k->name, msg);
    } else if (k->closes && !(h.close && peer_eof(p))) {
        failed(t, k->name, "the server kept the connection open");
    } else if (!k->closes && h.close) {
        failed(t, k->name, "the server closed a connection that could serve on");
    } else if (!k->closes) {
        exchange(t, k->name, p, &next); /* the connection still serves */
    }
    if (p)
        peer_close(p);
    free(p);
    free(bytes);
}

/* Three requests in one send, answered in order; then, on the same
 * connection, a request sent a byte at a time, which the server reads in
 * pieces. */
static void run_pipelined(struct tally *t, int port)
{
    static const struct request reqs[3] = {
        {.keys = {5, 6, 7}, .n = 3}, /* fewer keys than items: cycled */
        {.keys = {42}, .n = 0},      /* an update */
        {.keys = {[63] = 9}, .n = 64}};
    struct peer *p = malloc(sizeof *p);
    struct http_head h;
    char buf[3 * 2048];
    size_t len = 0;
    const char *why = NULL;
    t->cases += 2;
    for (int i = 0; i < 3; i++)
        len += (size_t)request_write(&reqs[i], buf + len, sizeof buf - len);
    if (!p || peer_connect(p, port, &why) != 0 || peer_send(p, buf, len, &why) != 0) {
        failed(t, "pipelined", why ? why : "out of memory");
        failed(t, "in pieces", "not run");
        free(p);
        return;
    }
    for (int i = 0; i < 3; i++) {
        if (answer(t, "pipelined", p, &h) < 0)
            break;
        if ((why = request_check(&reqs[i], &h, p->buf + h.len)) != NULL) {
            failed(t, "pipelined", why);
            break;
        }
    }
    why = NULL;
    len = (size_t)request_write(&reqs[0], buf, sizeof buf);
    for (size_t i = 0; i < len && !why; i++)
        peer_send(p, buf + i, 1, &why);
    if (why)
        failed(t, "in pieces", why);
    else if (answer(t, "in pieces", p, &h) >= 0 &&
             (why = request_check(&reqs[0], &h, p->buf + h.len)) != NULL)
        failed(t, "in pieces", why);
    peer_close(p);
    free(p);
}

/* Clients that go away mid-request, in its head, in its body, and with
 * an RST: dropped, answered nothing. */
static void run_disconnects(struct tally *t, int port)
{
    static const char *const partial[] = {
        "POST /lookup HTTP/1.1\r\nContent-Le",
        "POST /lookup HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"keys\":[1,",
    };
    for (int i = 0; i < 3; i++) {
        struct peer p;
        const char *why = NULL, *data = partial[i % 2];
        t->cases++;
        if (peer_connect(&p, port, &why) != 0 || peer_send(&p, data, strlen(data), &why) != 0) {
            failed(t, "disconnect mid-request", why);
            peer_close(&p);
            continue;
        }
        if (i == 2) {
            struct linger l = {.l_onoff = 1, .l_linger = 0}; /* close sends an RST */
            setsockopt(p.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        }
        peer_close(&p);
    }
}

int badcases_run(int port)
{
    struct tally t = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&t, port, &cases[i]);
    run_pipelined(&t, port);
    run_disconnects(&t, port);

    /* Whatever came before, a new connection is served. */
    struct peer p;
    const char *why = NULL;
    struct request r = {.keys = {17, 42}, .n = 2};
    t.cases++;
    if (peer_connect(&p, port, &why) != 0)
        failed(&t, "served after all that", why);
    else
        exchange(&t, "served after all that", &p, &r);
    peer_close(&p);

    printf("cases=%u failed=%u good=%u bad=%u\n", t.cases, t.failed, t.good, t.bad);
    fflush(stdout);
    return t.failed == 0 ? 0 : 1;
}
