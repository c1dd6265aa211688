/* SPDX-License-Identifier: MIT */
/* server.c - the server of server.h: one acceptor, N workers, and each
 * connection owned by one worker from its accept to its close (conn.c
 * reads, answers and closes it).
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

#include "conn.h"
#include "proto.h"

#define MAX_EVENTS 64

struct server {
    int lfd;
    unsigned nworkers, next;
    struct worker *workers;
};

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
            conn_sweep(w);
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
