/* SPDX-License-Identifier: MIT */
/* server.h - the HTTP/1.1 server under examples/service: a listening
 * socket on 127.0.0.1, worker threads that each run an epoll loop over
 * their own connections, keep-alive and pipelining, and a handler that
 * the service gives, called once for each whole request.
 *
 * Each request is a ctrace task "request", begun when the whole request
 * (head and body) is in the connection's buffer and ended when its
 * response has been handed to the socket. The handler marks its phases
 * with regions. Requests the server refuses itself, because their head or
 * framing is bad, are tasks too, with one region, "respond".
 */
#ifndef CTRACE_SERVICE_SERVER_H
#define CTRACE_SERVICE_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <ctrace/trace.h>

#include "http.h"

struct srv_conn;

/* One whole request, for the handler. */
struct srv_req {
    trace_task_t task;
    const struct http_head *head;
    const char *body; /* head->content_length bytes (0 without the header) */
    size_t body_len;
    struct srv_conn *conn; /* where srv_reply writes */
};

/* Called on a worker thread for each request; it must answer with
 * srv_reply() or srv_error(), once. */
typedef void srv_handler(struct srv_req *req);

/* srv_reply() : answers req: status, JSON body[len] (at most
 * SVC_MAX_RESPONSE bytes in all, with the head), and extra header lines
 * (each ended by CRLF; NULL: none); then sends what the socket takes. */
void srv_reply(struct srv_req *req, int status, const char *extra, const char *body, size_t len);

/* srv_error() : answers req with status and {"error":"REASON"}. */
void srv_error(struct srv_req *req, int status, const char *extra);

/* server_block_signals() : blocks SIGINT and SIGTERM, which server_run()
 * takes from a signalfd. Call it first, before any thread starts (the
 * trace's collector included), so that every thread inherits the mask. */
void server_block_signals(void);

struct server;

/* server_start() : listens on 127.0.0.1:port (0: a port the kernel picks)
 * and starts the worker threads. @return the server, with its port in
 * *port_out; NULL after saying why on stderr. */
struct server *server_start(int port, unsigned threads, srv_handler *handle, int *port_out);

/* server_run() : accepts connections on the calling thread until SIGINT or
 * SIGTERM, or for `seconds` when that is > 0. @return 0, or -1 after saying
 * why on stderr. */
int server_run(struct server *s, double seconds);

/* server_stop() : closes every connection, joins the workers, frees s.
 * *served: responses with status 200; *bad: the others (4xx). */
void server_stop(struct server *s, uint64_t *served, uint64_t *bad);

#endif
