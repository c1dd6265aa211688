/* SPDX-License-Identifier: MIT */
/* server.c - the server of server.h: one acceptor, N workers, and each
 * connection owned by one worker from its accept to its close.
 *
 * Threads. The acceptor (the thread in server_run) waits in epoll on the
 * listening socket and a signalfd, accepts, and deals each connection to
 * the next worker in turn, writing its descriptor into that worker's pipe.
 * Round-robin rather than every worker accepting from the shared socket
 * with EPOLLEXCLUSIVE: the kernel then wakes the first idle worker that
 * registered, so a burst of connects (a load generator's, all at once) can
 * land on one worker, which serves them all while the others idle; dealing
 * them out keeps the load even and the same from run to run. Only the
 * descriptor crosses threads (the pipe orders it); the worker makes the
 * connection's state and is the only thread that touches it, so the
 * service's one lock is its table's.
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
#define _GNU_SOURCE /* accept4, pipe2, pthread_setname_np under -std=c11 */
#endif

#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"

#define IN_CAP (SVC_MAX_HEAD + SVC_MAX_BODY)
#define OUT_CAP (8 * SVC_MAX_RESPONSE)
#define LINGER_MS 1000
#define LINGER_BYTES (64 * 1024) /* a lingering client sending more is cut off */
#define MAX_EVENTS 64

struct worker;

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

struct worker {
    pthread_t tid;
    int started; /* tid is a thread to join */
    unsigned index;
    int ep;
    int pipe_rd, pipe_wr; /* descriptors from the acceptor; its close: stop */
    srv_handler *handle;
    struct srv_conn *conns;
    unsigned lingering;
    uint64_t served, bad;
};

struct server {
    int lfd;
    unsigned nworkers, next;
    struct worker *workers;
};

/* ================================================================ connections */

static void conn_open(struct worker *w, int fd)
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

static void conn_close(struct srv_conn *c)
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

static void conn_event(struct worker *w, struct srv_conn *c, uint32_t events)
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

/* ================================================================ workers */

/* Takes the descriptors the acceptor sent. @return 1 when it closed the
 * pipe (stop), else 0. */
static int take_conns(struct worker *w)
{
    int fds[64];
    for (;;) {
        ssize_t n = read(w->pipe_rd, fds, sizeof fds);
        if (n == 0)
            return 1;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return 0; /* EAGAIN: all taken */
        /* Each write was one int, whole (under PIPE_BUF): reads take whole ones. */
        for (size_t i = 0; i < (size_t)n / sizeof fds[0]; i++)
            conn_open(w, fds[i]);
    }
}

/* Closes the lingering connections whose time is up. */
static void linger_sweep(struct worker *w)
{
    uint64_t now = ex_now_ns();
    for (struct srv_conn *c = w->conns, *next; c; c = next) {
        next = c->next;
        if (c->linger_until && now >= c->linger_until)
            conn_close(c);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    char name[16];
    snprintf(name, sizeof name, "worker-%u", w->index);
    pthread_setname_np(pthread_self(), name); /* best effort: only labels the trace */

    struct epoll_event ev[MAX_EVENTS];
    int stop = 0;
    while (!stop) {
        int n = epoll_wait(w->ep, ev, MAX_EVENTS, w->lingering ? 100 : -1);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "service: epoll_wait: %s\n", strerror(errno));
            break;
        }
        /* A connection is in ev[] once, and only its own event closes it. */
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr)
                conn_event(w, ev[i].data.ptr, ev[i].events);
            else
                stop |= take_conns(w);
        }
        if (w->lingering)
            linger_sweep(w);
    }
    while (w->conns)
        conn_close(w->conns);
    return NULL;
}

/* ================================================================ the server */

/* The signals that stop the server. */
static void stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
}

void server_block_signals(void)
{
    sigset_t set;
    stop_signals(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Starts worker i, whose fields are set. @return 0, or an errno. */
static int worker_start(struct server *s, unsigned i)
{
    struct worker *w = &s->workers[i];
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return errno;
    w->pipe_rd = fds[0];
    w->pipe_wr = fds[1]; /* blocking: the acceptor waits rather than lose one */
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (fcntl(w->pipe_rd, F_SETFL, O_NONBLOCK) != 0 || (w->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        epoll_ctl(w->ep, EPOLL_CTL_ADD, w->pipe_rd, &ev) != 0)
        return errno;
    int rc = pthread_create(&w->tid, NULL, worker_main, w);
    w->started = rc == 0;
    return rc;
}

struct server *server_start(int port, unsigned threads, srv_handler *handle, int *port_out)
{
    struct server *s = calloc(1, sizeof *s);
    struct worker *ws = calloc(threads, sizeof *ws);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    socklen_t alen = sizeof a;
    int one = 1;
    if (!s || !ws) {
        fprintf(stderr, "service: out of memory\n");
        free(s);
        free(ws);
        return NULL;
    }
    s->workers = ws;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->lfd < 0 || setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(s->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->lfd, SOMAXCONN) != 0 ||
        getsockname(s->lfd, (struct sockaddr *)&a, &alen) != 0) {
        fprintf(stderr, "service: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
        server_stop(s, NULL, NULL);
        return NULL;
    }
    *port_out = ntohs(a.sin_port);
    for (unsigned i = 0; i < threads; i++) {
        /* What server_stop undoes: the workers up to this one, as far as each got. */
        s->workers[i] =
            (struct worker){.index = i, .handle = handle, .ep = -1, .pipe_rd = -1, .pipe_wr = -1};
        s->nworkers = i + 1;
        int rc = worker_start(s, i);
        if (rc != 0) {
            fprintf(stderr, "service: cannot start worker %u: %s\n", i, strerror(rc));
            server_stop(s, NULL, NULL);
            return NULL;
        }
    }
    return s;
}

/* Accepts what is waiting (a bounded batch: signals are seen between
 * batches) and deals it to the workers. */
static void accept_some(struct server *s)
{
    static int said;
    for (int k = 0; k < 64; k++) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
            continue;
        if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (fd < 0) {
            if (!said++)
                fprintf(stderr, "service: accept: %s (said once)\n", strerror(errno));
            ex_sleep_ns(10000000); /* EMFILE and the like: let connections end */
            return;
        }
        int one = 1; /* a response is one write: send it now, not after a delayed ACK */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct worker *w = &s->workers[s->next++ % s->nworkers];
        if (write(w->pipe_wr, &fd, sizeof fd) != (ssize_t)sizeof fd)
            close(fd);
    }
}

int server_run(struct server *s, double seconds)
{
    sigset_t set;
    stop_signals(&set);
    int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = s->lfd};
    if (sfd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s->lfd, &ev) != 0 ||
        epoll_ctl(ep, EPOLL_CTL_ADD, sfd,
                  &(struct epoll_event){.events = EPOLLIN, .data.fd = sfd}) != 0) {
        fprintf(stderr, "service: cannot wait for connections: %s\n", strerror(errno));
        if (sfd >= 0)
            close(sfd);
        if (ep >= 0)
            close(ep);
        return -1;
    }
    uint64_t deadline = seconds > 0 ? ex_now_ns() + (uint64_t)(seconds * 1e9) : 0;
    int rc = 0, stop = 0;
    while (!stop) {
        int timeout = -1;
        if (deadline) {
            uint64_t now = ex_now_ns();
            if (now >= deadline)
                break;
            timeout = (int)((deadline - now + 999999) / 1000000);
        }
        struct epoll_event got[2];
        int n = epoll_wait(ep, got, 2, timeout);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "service: epoll_wait: %s\n", strerror(errno));
            rc = -1;
            break;
        }
        for (int i = 0; i < n; i++) {
            if (got[i].data.fd == sfd) {
                struct signalfd_siginfo si; /* SIGINT or SIGTERM: either stops */
                stop = read(sfd, &si, sizeof si) == (ssize_t)sizeof si;
            } else {
                accept_some(s);
            }
        }
    }
    close(ep);
    close(sfd);
    return rc;
}

void server_stop(struct server *s, uint64_t *served, uint64_t *bad)
{
    uint64_t ok = 0, refused = 0;
    for (unsigned i = 0; i < s->nworkers; i++) {
        if (s->workers[i].pipe_wr >= 0)
            close(s->workers[i].pipe_wr); /* the worker reads EOF and ends */
    }
    for (unsigned i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        if (w->started)
            pthread_join(w->tid, NULL);
        if (w->ep >= 0)
            close(w->ep);
        if (w->pipe_rd >= 0)
            close(w->pipe_rd);
        ok += w->served;
        refused += w->bad;
    }
    if (s->lfd >= 0)
        close(s->lfd);
    free(s->workers);
    free(s);
    if (served)
        *served = ok;
    if (bad)
        *bad = refused;
}
