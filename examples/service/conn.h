/* SPDX-License-Identifier: MIT */
/* conn.h - inside examples/service's server, not for its handler: a
 * worker thread's state, which server.c runs, and the connections the
 * worker owns, which conn.c reads, answers and closes. Every function here
 * runs on the worker that owns the connection. */
#ifndef CTRACE_SERVICE_CONN_H
#define CTRACE_SERVICE_CONN_H

#include <pthread.h>
#include <stdint.h>

#include "server.h"

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

/* conn_open() : makes the accepted fd a connection of w, in its epoll set
 * (on failure, closes fd after saying why). */
void conn_open(struct worker *w, int fd);

/* conn_close() : closes c and frees it. */
void conn_close(struct srv_conn *c);

/* conn_event() : what epoll's events on c allow: reads, answers the whole
 * requests read, sends, closes. */
void conn_event(struct worker *w, struct srv_conn *c, uint32_t events);

/* conn_sweep() : closes w's lingering connections whose time is up. */
void conn_sweep(struct worker *w);

#endif
