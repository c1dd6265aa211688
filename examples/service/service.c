/* SPDX-License-Identifier: MIT */
/* service.c - example: a small, real HTTP/1.1 service, to measure what
 * tracing costs a program that serves requests (issue 16: the flight
 * recorder is meant to stay on in production).
 *
 * It listens on 127.0.0.1 (server.c: worker threads, each with its own
 * epoll loop and connections; keep-alive, pipelining, size limits) and
 * answers, with the JSON bodies of proto.h:
 *
 *   POST /lookup   {"keys":[K,...]}  the values of 1..64 keys, 20 items
 *   POST /update   {"key":K,"value":V}  stores V, the rarer write path
 *   GET  /health   {"status":"ok"}
 *
 * and 400 (a bad head or body), 404, 405, 411 (a POST without
 * Content-Length), 413 (a body over 4 KiB), 431 (a head over 8 KiB).
 *
 * The table of SVC_KEYS values is guarded by ONE mutex. A lookup holds it
 * to read its keys; an update holds it across a 300 us remote call (a real
 * blocking clock_nanosleep, as examples/cache's fetch), so every lookup
 * that comes meanwhile waits. In a trace, the sync profile's top is those
 * waits, at the lock line of table_lookup(); the blame profile (the
 * releases that ended them) names table_update()'s unlock. Both are
 * noinline so that stacks name them.
 *
 * Each request is a task "request" (server.h) with the regions "parse"
 * (routing and the JSON body), "lookup" or "update" (the table), and
 * "respond" (the JSON answer, written to the socket); when no trace runs
 * those calls are a load and a branch.
 *
 * Flags: see usage(). It prints "listening 127.0.0.1:PORT" once listening,
 * and on a clean stop (SIGINT, SIGTERM or -duration) "served=N bad=M":
 * responses with status 200 and with a 4xx. Exit status: 0 after a clean
 * stop, 1 when it cannot start or trace, 2 for a usage error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_nanosleep (example.h) under -std=c11 */
#endif

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ctrace/flightrec.h>
#include <ctrace/trace.h>

#include "../common/example.h"
#include "proto.h"
#include "server.h"

#define UPDATE_NS 300000L /* the write path's remote call, made holding the lock */

/* ================================================================ the table */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t table[SVC_KEYS]; /* guarded by table_lock */

static void table_init(void)
{
    for (uint64_t k = 0; k < SVC_KEYS; k++)
        table[k] = svc_value(k);
}

/* The read path: the n keys' values, under the lock. */
__attribute__((noinline)) static void table_lookup(const uint64_t *keys, unsigned n,
                                                   uint64_t *values)
{
    pthread_mutex_lock(&table_lock);
    for (unsigned i = 0; i < n; i++)
        values[i] = table[keys[i]];
    pthread_mutex_unlock(&table_lock);
}

/* The write path: stores value for key after a remote call made while
 * holding the lock (the bug a trace should point at). @return the value. */
__attribute__((noinline)) static uint64_t table_update(uint64_t key, uint64_t value)
{
    pthread_mutex_lock(&table_lock);
    ex_sleep_ns(UPDATE_NS);
    table[key] = value;
    pthread_mutex_unlock(&table_lock);
    return value;
}

/* ================================================================ requests */

enum path { PATH_NONE, PATH_LOOKUP, PATH_UPDATE, PATH_HEALTH };

static enum path route(const struct http_head *h, const char **method)
{
    *method = "POST";
    if (http_is(h->target, h->target_len, "/lookup"))
        return PATH_LOOKUP;
    if (http_is(h->target, h->target_len, "/update"))
        return PATH_UPDATE;
    *method = "GET";
    return http_is(h->target, h->target_len, "/health") ? PATH_HEALTH : PATH_NONE;
}

/* Answers 200 with the body a proto.c writer made (len < 0: it did not fit,
 * which SVC_MAX_RESPONSE rules out). */
static void reply_json(struct srv_req *req, const char *body, int len)
{
    if (len < 0) {
        fprintf(stderr, "service: an answer too long for its buffer\n");
        abort();
    }
    srv_reply(req, 200, NULL, body, (size_t)len);
}

/* The handler (server.h): one whole request, on a worker thread. */
static void handle(struct srv_req *req)
{
    const struct http_head *h = req->head;
    uint64_t keys[SVC_MAX_KEYS], key = 0, value = 0;
    int n = 0, status = 200;
    const char *method, *allow = NULL;

    trace_region_begin(req->task, "parse");
    enum path path = route(h, &method);
    if (path == PATH_NONE) {
        status = 404;
    } else if (!http_is(h->method, h->method_len, method)) {
        status = 405;
        allow = path == PATH_HEALTH ? "Allow: GET\r\n" : "Allow: POST\r\n";
    } else if (path == PATH_LOOKUP) {
        n = svc_read_lookup(req->body, req->body_len, keys);
        status = n > 0 ? 200 : 400;
    } else if (path == PATH_UPDATE) {
        status = svc_read_update(req->body, req->body_len, &key, &value) == 0 ? 200 : 400;
    }
    trace_region_end(req->task, "parse");

    char body[SVC_MAX_RESPONSE];
    if (status != 200) {
        trace_region_begin(req->task, "respond");
        srv_error(req, status, allow);
        trace_region_end(req->task, "respond");
    } else if (path == PATH_LOOKUP) {
        uint64_t values[SVC_MAX_KEYS], ik[SVC_ITEMS], iv[SVC_ITEMS];
        trace_region_begin(req->task, "lookup");
        table_lookup(keys, (unsigned)n, values);
        trace_region_end(req->task, "lookup");
        trace_region_begin(req->task, "respond");
        for (unsigned i = 0; i < SVC_ITEMS; i++) {
            ik[i] = keys[svc_item(i, (unsigned)n)];
            iv[i] = values[svc_item(i, (unsigned)n)];
        }
        reply_json(req, body, svc_write_items(body, sizeof body, ik, iv));
        trace_region_end(req->task, "respond");
    } else if (path == PATH_UPDATE) {
        trace_region_begin(req->task, "update");
        value = table_update(key, value);
        trace_region_end(req->task, "update");
        trace_region_begin(req->task, "respond");
        reply_json(req, body, svc_write_update(body, sizeof body, key, value));
        trace_region_end(req->task, "respond");
    } else {
        trace_region_begin(req->task, "respond");
        reply_json(req, body, snprintf(body, sizeof body, "{\"status\":\"ok\"}"));
        trace_region_end(req->task, "respond");
    }
}

/* ================================================================ main */

struct options {
    uint64_t port, threads;
    double seconds;
    const char *trace_path, *dump_path;
    int flight;
    uint64_t flight_age_ms, flight_bytes, cpu_hz;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: service [-port N] [-threads N] [-duration SEC] [-trace FILE]\n"
            "               [-flight [-flight-age MS] [-flight-bytes N] [-flight-dump FILE]]\n"
            "               [-cpu HZ]\n"
            "  -port N           listen on 127.0.0.1:N (default 0: a free port)\n"
            "  -threads N        worker threads, 1..64 (default 4)\n"
            "  -duration SEC     stop after SEC seconds (default 0: at SIGINT or SIGTERM)\n"
            "  -trace FILE       trace the whole run into FILE\n"
            "  -flight           run the flight recorder (default window: 10 s, 16 MiB)\n"
            "  -flight-age MS    its window's minimum age\n"
            "  -flight-bytes N   its window's most bytes (at least 65536)\n"
            "  -flight-dump FILE at the stop, dump the window into FILE\n"
            "  -cpu HZ           CPU samples per second with -trace or -flight, 1..10000\n"
            "POST /lookup {\"keys\":[K,...]}, POST /update {\"key\":K,\"value\":V}, GET /health.\n"
            "Prints 'listening 127.0.0.1:PORT', and at the stop 'served=N bad=M'.\n");
}

/* Reads argv into *o. @return -1 to go on, else the exit status. */
static int parse_flags(int argc, char **argv, struct options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *v = NULL, *err = NULL;
        int m;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") || !strcmp(argv[i], "-help")) {
            usage(stdout);
            return 0;
        } else if ((m = ex_flag(argc, argv, &i, "port", &v)) != 0) {
            if (m < 0 || ex_parse_u64(v, 0, 65535, &o->port) != 0)
                err = "-port wants a number in 0..65535";
        } else if ((m = ex_flag(argc, argv, &i, "threads", &v)) != 0) {
            if (m < 0 || ex_parse_u64(v, 1, 64, &o->threads) != 0)
                err = "-threads wants a number in 1..64";
        } else if ((m = ex_flag(argc, argv, &i, "duration", &v)) != 0) {
            if (m < 0 || ex_parse_double(v, 0, 1e6, &o->seconds) != 0)
                err = "-duration wants seconds, 0 or more (0: until a signal)";
        } else if ((m = ex_flag(argc, argv, &i, "trace", &v)) != 0) {
            if (m < 0 || !*(o->trace_path = v))
                err = "-trace wants a file";
        } else if (ex_flag(argc, argv, &i, "flight", NULL) == 1) {
            o->flight = 1;
        } else if ((m = ex_flag(argc, argv, &i, "flight-age", &v)) != 0) {
            if (m < 0 || ex_parse_u64(v, 1, UINT64_MAX / 1000000, &o->flight_age_ms) != 0)
                err = "-flight-age wants milliseconds, 1 or more";
        } else if ((m = ex_flag(argc, argv, &i, "flight-bytes", &v)) != 0) {
            if (m < 0 || ex_parse_u64(v, 65536, UINT64_MAX, &o->flight_bytes) != 0)
                err = "-flight-bytes wants a number, 65536 or more";
        } else if ((m = ex_flag(argc, argv, &i, "flight-dump", &v)) != 0) {
            if (m < 0 || !*(o->dump_path = v))
                err = "-flight-dump wants a file";
        } else if ((m = ex_flag(argc, argv, &i, "cpu", &v)) != 0) {
            if (m < 0 || ex_parse_u64(v, 1, 10000, &o->cpu_hz) != 0)
                err = "-cpu wants samples per second, 1..10000";
        } else {
            fprintf(stderr, "service: unknown argument '%s' (try service -h)\n", argv[i]);
            return 2;
        }
        if (err) {
            fprintf(stderr, "service: %s\n", err);
            return 2;
        }
    }
    if (!o->flight && (o->flight_age_ms || o->flight_bytes || o->dump_path)) {
        fprintf(stderr, "service: -flight-age, -flight-bytes and -flight-dump need -flight\n");
        return 2;
    }
    if (o->cpu_hz && !o->trace_path && !o->flight) {
        fprintf(stderr, "service: -cpu needs -trace or -flight\n");
        return 2;
    }
    return -1;
}

/* Starts what the flags ask for. @return 0, or -1 after saying why. */
static int tracing_start(const struct options *o, struct trace_options *topt)
{
    int rc;
    *topt = (struct trace_options){.path = o->trace_path, .cpu_hz = (unsigned)o->cpu_hz};
    if (o->trace_path && (rc = trace_start_opts(topt)) < 0) {
        fprintf(stderr, "service: trace_start(%s): %s\n", o->trace_path, strerror(-rc));
        return -1;
    }
    struct flightrec_config fc = {.min_age_ns = o->flight_age_ms * 1000000,
                                  .max_bytes = o->flight_bytes,
                                  .trace = o->cpu_hz ? topt : NULL};
    if (o->flight && (rc = flightrec_start(&fc)) < 0) {
        fprintf(stderr, "service: flightrec_start: %s\n", strerror(-rc));
        if (o->trace_path)
            trace_stop();
        return -1;
    }
    return 0;
}

/* Dumps the window if asked, stops the recorder and the trace. @return 0,
 * or -1 after saying why. */
static int tracing_stop(const struct options *o)
{
    int rc, ok = 0;
    if (o->dump_path && (rc = flightrec_dump(o->dump_path)) < 0) {
        fprintf(stderr, "service: flightrec_dump(%s): %s\n", o->dump_path, strerror(-rc));
        ok = -1;
    }
    if (o->flight)
        flightrec_stop();
    if (o->trace_path && (rc = trace_stop()) < 0) {
        fprintf(stderr, "service: trace_stop: %s\n", strerror(-rc));
        ok = -1;
    }
    return ok;
}

int main(int argc, char **argv)
{
    struct options o = {.threads = 4};
    int rc = parse_flags(argc, argv, &o);
    if (rc >= 0)
        return rc;

    /* First, so that every thread (the trace's collector too) inherits it. */
    server_block_signals();
    signal(SIGPIPE, SIG_IGN); /* sends say MSG_NOSIGNAL; this covers the rest */
    table_init();

    struct trace_options topt;
    if (tracing_start(&o, &topt) != 0)
        return 1;
    int port;
    struct server *s = server_start((int)o.port, (unsigned)o.threads, handle, &port);
    if (!s) {
        tracing_stop(&o);
        return 1;
    }
    printf("listening 127.0.0.1:%d\n", port);
    fflush(stdout);

    rc = server_run(s, o.seconds);
    uint64_t served, bad;
    server_stop(s, &served, &bad); /* every task has ended: then the trace stops */
    if (tracing_stop(&o) != 0)
        rc = -1;
    printf("served=%" PRIu64 " bad=%" PRIu64 "\n", served, bad);
    return rc == 0 ? 0 : 1;
}
