/* SPDX-License-Identifier: MIT */
/* loadgen.c - service-load: a closed-loop load generator for
 * examples/service, which checks every answer exactly.
 *
 * C connections, a thread each, connect first; then, together, each sends
 * one request at a time on its keep-alive connection, waits for the whole
 * response, checks it (client.h: status 200, every item's key and value as
 * the table holds them) and sends the next, for the duration. A request is
 * an update (of a random key, writing its own value back) with the
 * probability -write-percent, else a lookup of -keys random keys. Each
 * connection draws from its own xorshift stream, seeded by its index, so
 * that runs ask the same things.
 *
 * Latency is from the request's first byte sent to its response's last
 * byte read (CLOCK_MONOTONIC). At the end it prints one line:
 *
 *   requests=N errors=E rps=R p50_us=X p90_us=X p99_us=X p999_us=X
 *
 * requests: the responses read whole; errors: those that were wrong, plus
 * the connections that failed (could not connect, closed or timed out
 * before the end); rps: requests per second of the load's wall time;
 * percentiles nearest-rank over all requests. The first few errors are
 * described on stderr. Exit status: 0 when errors is 0 and some request was
 * made, 1 otherwise, 2 for a usage error.
 *
 * With -bad it sends the malformed requests of badcases.c instead
 * (badcases.h says what it prints).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* clock_nanosleep (example.h) under -std=c11 */
#endif

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/example.h"
#include "badcases.h"
#include "client.h"

#define MAX_CONNS 1024
#define REPORT_ERRORS 5 /* errors described on stderr; the rest only counted */

struct options {
    uint64_t port, conns, keys;
    double seconds, write_percent;
    int bad;
};

struct conn {
    pthread_t tid; /* first: ex_run_workers writes it */
    unsigned index;
    const struct options *o;
    pthread_barrier_t *start;
    uint64_t *lat; /* the latencies of its requests, ns */
    size_t nlat, cap;
    uint64_t requests, errors;
    struct peer peer;
};

static atomic_uint reported;

static void conn_error(struct conn *c, const char *what)
{
    c->errors++;
    if (atomic_fetch_add(&reported, 1) < REPORT_ERRORS)
        fprintf(stderr, "service-load: connection %u: %s\n", c->index, what);
}

static void record(struct conn *c, uint64_t ns)
{
    if (c->nlat == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4096;
        uint64_t *lat = realloc(c->lat, cap * sizeof *lat);
        if (!lat) {
            fprintf(stderr, "service-load: out of memory\n");
            exit(1);
        }
        c->lat = lat;
        c->cap = cap;
    }
    c->lat[c->nlat++] = ns;
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    const struct options *o = c->o;
    const char *why = NULL;
    uint64_t rng = ex_mix64(c->index + 1); /* never 0, as xorshift needs */
    int connected = peer_connect(&c->peer, (int)o->port, &why) == 0;

    pthread_barrier_wait(c->start); /* every connection loads from the same moment */
    if (!connected) {
        conn_error(c, why);
        return NULL;
    }
    uint64_t end = ex_now_ns() + (uint64_t)(o->seconds * 1e9);
    while (ex_now_ns() < end) {
        struct request r = {.n = 0};
        if ((double)(ex_xorshift64(&rng) % 10000) < o->write_percent * 100) {
            r.keys[0] = ex_xorshift64(&rng) % SVC_KEYS;
        } else {
            r.n = (unsigned)o->keys;
            for (unsigned i = 0; i < r.n; i++)
                r.keys[i] = ex_xorshift64(&rng) % SVC_KEYS;
        }
        char buf[2048];
        struct http_head h;
        int len = request_write(&r, buf, sizeof buf);
        uint64_t t0 = ex_now_ns();
        if (len < 0 || peer_send(&c->peer, buf, (size_t)len, &why) != 0 ||
            peer_read(&c->peer, &h, &why) != 0) {
            conn_error(c, len < 0 ? "a request too long to write" : why);
            break;
        }
        record(c, ex_now_ns() - t0);
        c->requests++;
        if ((why = request_check(&r, &h, c->peer.buf + h.len)) != NULL)
            conn_error(c, why);
        if (h.close) {
            conn_error(c, "the server closed a keep-alive connection");
            break;
        }
    }
    peer_close(&c->peer);
    return NULL;
}

/* Runs the load and prints its line. @return the exit status. */
static int load(const struct options *o)
{
    struct conn *conns = calloc(o->conns, sizeof *conns);
    pthread_barrier_t start;
    if (!conns) {
        fprintf(stderr, "service-load: out of memory\n");
        return 1;
    }
    for (unsigned i = 0; i < o->conns; i++)
        conns[i] = (struct conn){.index = i, .o = o, .start = &start};
    uint64_t wall = ex_run_workers("service-load", (unsigned)o->conns, conn_main, conns,
                                   sizeof conns[0], &start);

    uint64_t requests = 0, errors = 0;
    size_t n = 0;
    for (unsigned i = 0; i < o->conns; i++) {
        requests += conns[i].requests;
        errors += conns[i].errors;
        n += conns[i].nlat;
    }
    uint64_t *lat = malloc((n ? n : 1) * sizeof *lat);
    if (!lat) {
        fprintf(stderr, "service-load: out of memory\n");
        return 1;
    }
    n = 0;
    for (unsigned i = 0; i < o->conns; i++) {
        n = ex_append_u64(lat, n, conns[i].lat, conns[i].nlat);
        free(conns[i].lat);
    }
    free(conns);
    ex_sort_u64(lat, n);
    double us[4] = {0};
    static const unsigned pm[4] = {500, 900, 990, 999};
    for (int i = 0; i < 4 && n > 0; i++)
        us[i] = (double)ex_permille(lat, n, pm[i]) / 1e3;
    free(lat);
    printf("requests=%" PRIu64 " errors=%" PRIu64
           " rps=%.0f p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f\n",
           requests, errors, wall ? (double)requests * 1e9 / (double)wall : 0.0, us[0], us[1],
           us[2], us[3]);
    fflush(stdout);
    return errors == 0 && requests > 0 ? 0 : 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: service-load -port N [-conns C] [-duration SEC] [-write-percent P] [-keys K]\n"
            "       service-load -port N -bad\n"
            "  -port N           the service's port on 127.0.0.1\n"
            "  -conns C          connections, a thread each, 1..%d (default 32)\n"
            "  -duration SEC     seconds of load (default 5; 0.5 is fine)\n"
            "  -write-percent P  share of the requests that are updates, 0..100 (default 1)\n"
            "  -keys K           keys per lookup, 1..%d (default 20)\n"
            "  -bad              send malformed requests and check each one's 4xx\n"
            "Each connection sends a request, waits for the answer and checks it exactly.\n"
            "Prints 'requests=N errors=E rps=R p50_us=.. p90_us=.. p99_us=.. p999_us=..'.\n",
            MAX_CONNS, SVC_MAX_KEYS);
}

int main(int argc, char **argv)
{
    struct options o = {.conns = 32, .keys = 20, .seconds = 5, .write_percent = 1};
    for (int i = 1; i < argc; i++) {
        const char *v = NULL, *err = NULL;
        int m;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") || !strcmp(argv[i], "-help")) {
            usage(stdout);
            return 0;
        } else if ((m = ex_flag(argc, argv, &i, "port", &v)) != 0) {
            if (m < 0 || ex_parse_u64(v, 1, 65535, &o.port) != 0)
                err = "-port wants a number in 1..65535";
        } else if ((m = ex_flag(argc, argv, &i, "conns", &v)) != 0) {
            if (m < 0 || ex_parse_u64(v, 1, MAX_CONNS, &o.conns) != 0)
                err = "-conns wants a number in 1..1024";
        } else if ((m = ex_flag(argc, argv, &i, "duration", &v)) != 0) {
            if (m < 0 || ex_parse_double(v, 0.001, 1e6, &o.seconds) != 0)
                err = "-duration wants seconds, more than 0";
        } else if ((m = ex_flag(argc, argv, &i, "write-percent", &v)) != 0) {
            if (m < 0 || ex_parse_double(v, 0, 100, &o.write_percent) != 0)
                err = "-write-percent wants a number in 0..100";
        } else if ((m = ex_flag(argc, argv, &i, "keys", &v)) != 0) {
            if (m < 0 || ex_parse_u64(v, 1, SVC_MAX_KEYS, &o.keys) != 0)
                err = "-keys wants a number in 1..64";
        } else if (ex_flag(argc, argv, &i, "bad", NULL) == 1) {
            o.bad = 1;
        } else {
            fprintf(stderr, "service-load: unknown argument '%s' (try service-load -h)\n", argv[i]);
            return 2;
        }
        if (err) {
            fprintf(stderr, "service-load: %s\n", err);
            return 2;
        }
    }
    if (!o.port) {
        fprintf(stderr, "service-load: -port is required (try service-load -h)\n");
        return 2;
    }
    return o.bad ? badcases_run((int)o.port) : load(&o);
}
