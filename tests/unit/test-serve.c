/* SPDX-License-Identifier: MIT */
/* test-serve.c - tests for analyze/perfetto/serve.c: a forked child serves a file of
 * random bytes on a port the system picks (port 0) and prints its link on a
 * pipe; the test talks HTTP to it over plain sockets and checks the answers
 * (GET, HEAD, the CORS preflight, 404, 405, 400 for garbage), that clients
 * that vanish, stall or read half the file do not stop it, and that SIGINT
 * and SIGTERM stop it promptly with status 0 (a SIGPIPE would have killed
 * it: its status says so). In the test's own process: a busy port, bad
 * arguments, and the signal handlers restored after a stop.
 *
 * serve.c is built into this test with a 5 s client timeout instead of 10 s
 * (CMakeLists.txt). No sleep decides anything: every wait is a poll with a
 * deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "perfetto/serve.h"

#define SMALL_SIZE (512 * 1024 + 123)
#define WAIT_MS 20000 /* any answer; more than the server's timeout */
#define STOP_MS 2500  /* a stop; less than the server's 5 s timeout */

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Waits for fd to be readable until deadline. @return 1, or 0 at the deadline. */
static int readable(int fd, int64_t deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return 1;
        assert_true(n == 0 || errno == EINTR);
    }
}

/* Reads fd into buf (NUL-terminated) until EOF, or until `until` appears in
 * it when non-NULL. @return 1 on that, 0 at the deadline. */
static int read_until(int fd, char *buf, size_t cap, size_t *len, const char *until,
                      int64_t deadline)
{
    for (;;) {
        buf[*len] = '\0';
        if (until && memmem(buf, *len, until, strlen(until)))
            return 1;
        if (!readable(fd, deadline))
            return 0;
        assert_true(*len + 1 < cap);
        ssize_t n = read(fd, buf + *len, cap - 1 - *len);
        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n >= 0);
        if (n == 0)
            return until == NULL;
        *len += (size_t)n;
    }
}

/* A size the server cannot hand to the kernel at once: more than a TCP
 * send buffer grows to (loopback buffers absorb a few MB), so that a client
 * that stops reading stalls the server mid-file. */
static size_t stall_size(void)
{
    long lo, def, max = 4 << 20;
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
    if (f && fscanf(f, "%ld %ld %ld", &lo, &def, &max) != 3)
        max = 4 << 20;
    if (f)
        fclose(f);
    return (size_t)max + (1 << 20);
}

/* ------------------------------------------------------------------------
 * The server: a child process, its output read from a pipe
 * ---------------------------------------------------------------------- */

struct server {
    pid_t pid;
    int out;         /* the child's `out`, read end */
    char text[1024]; /* what it printed */
    size_t len;
    int port;
    char path[64];
    char name[64];       /* its name in the URL */
    char upath[128];     /* its URL path: /TOKEN/NAME */
    char url[192];       /* http://127.0.0.1:PORT/TOKEN/NAME */
    unsigned char *data; /* the file's bytes */
    size_t size;
};

static void make_file(struct server *sv, const char *stem, size_t size)
{
    snprintf(sv->path, sizeof sv->path, "/tmp/ctrace-%s-XXXXXX", stem);
    int fd = mkstemp(sv->path);
    assert_true(fd >= 0);
    sv->size = size;
    sv->data = malloc(size);
    assert_non_null(sv->data);
    uint64_t x = 0x9e3779b97f4a7c15u; /* xorshift64 */
    for (size_t i = 0; i < size; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        sv->data[i] = (unsigned char)(x >> 24);
    }
    assert_int_equal(write(fd, sv->data, size), size);
    close(fd);
}

/* Reads the server's output until `n` lines have come. @return 1, or 0 at
 * the deadline or EOF. */
static int read_lines(struct server *sv, int n, int64_t deadline)
{
    for (;;) {
        int lines = 0;
        for (size_t i = 0; i < sv->len; i++)
            lines += sv->text[i] == '\n';
        if (lines >= n)
            return 1;
        if (!readable(sv->out, deadline))
            return 0;
        assert_true(sv->len + 1 < sizeof sv->text);
        ssize_t k = read(sv->out, sv->text + sv->len, sizeof sv->text - 1 - sv->len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return 0;
        sv->len += (size_t)k;
        sv->text[sv->len] = '\0';
    }
}

/* Serves a new file of `size` bytes (its URL name `name`, or NULL: its base
 * name) in a child; returns once the child printed its two lines. */
static void start_server(struct server *sv, const char *stem, const char *name, size_t size)
{
    memset(sv, 0, sizeof *sv);
    make_file(sv, stem, size);
    if (name) {
        snprintf(sv->name, sizeof sv->name, "%s", name);
    } else { /* the base name, spaces and '+' made '_' (the stems' only others) */
        snprintf(sv->name, sizeof sv->name, "%s", strrchr(sv->path, '/') + 1);
        for (char *p = sv->name; *p; p++)
            *p = *p == ' ' || *p == '+' ? '_' : *p;
    }
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t parent = getpid();
    sv->pid = fork();
    assert_true(sv->pid >= 0);
    if (sv->pid == 0) {
        close(p[0]);
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* a failed test leaves no server behind */
        if (getppid() != parent)
            _exit(3);
        FILE *out = fdopen(p[1], "w");
        char err[256] = "";
        int rc = ctr_serve_file(sv->path, name, 0, out, err, sizeof err);
        if (rc != 0)
            fprintf(out, "error %d: %s\n", rc, err);
        fclose(out);
        exit(rc == 0 ? 0 : 1);
    }
    close(p[1]);
    sv->out = p[0];
    const char *link = CTR_SERVE_ORIGIN "/#!/?url=http://127.0.0.1:";
    if (!read_lines(sv, 2, now_ms() + WAIT_MS))
        fail_msg("no link from the server; it printed: %s", sv->text);
    char *at = strstr(sv->text, link);
    assert_non_null(at);
    sv->port = atoi(at + strlen(link));
    assert_true(sv->port > 0 && sv->port < 65536);
    /* /TOKEN/NAME: 32 hex digits of its own, then the name */
    const char *up = strchr(at + strlen(link), '/');
    assert_non_null(up);
    size_t ulen = strcspn(up, "\n");
    assert_true(ulen == 1 + 32 + 1 + strlen(sv->name) && ulen < sizeof sv->upath);
    memcpy(sv->upath, up, ulen);
    assert_true(strspn(sv->upath + 1, "0123456789abcdef") == 32 && sv->upath[33] == '/');
    assert_string_equal(sv->upath + 34, sv->name);
    snprintf(sv->url, sizeof sv->url, "http://127.0.0.1:%d%s", sv->port, sv->upath);
    char want[512];
    snprintf(want, sizeof want, "Serving %s on %s; Ctrl-C to stop\nOpen in the Perfetto UI: %s%s\n",
             sv->path, sv->url, link, sv->url + strlen("http://127.0.0.1:"));
    assert_string_equal(sv->text, want);
    unlink(sv->path); /* the server has it open: it serves on, and a failed test leaves no file */
}

/* Stops the server with sig: it must say so and exit 0 within STOP_MS. */
static void stop_server(struct server *sv, int sig)
{
    assert_int_equal(kill(sv->pid, sig), 0);
    int64_t deadline = now_ms() + STOP_MS;
    if (!read_until(sv->out, sv->text, sizeof sv->text, &sv->len, NULL, deadline))
        fail_msg("the server did not stop within %d ms of signal %d", STOP_MS, sig);
    int status;
    pid_t r;
    while ((r = waitpid(sv->pid, &status, WNOHANG)) == 0 && now_ms() < deadline)
        sched_yield(); /* its output closed: it is exiting */
    assert_int_equal(r, sv->pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("server status %#x; it printed: %s", status, sv->text);
    assert_non_null(strstr(sv->text, "\nctrace: stopped serving\n"));
    close(sv->out);
    free(sv->data);
}

/* ------------------------------------------------------------------------
 * The client
 * ---------------------------------------------------------------------- */

struct resp {
    char *buf; /* the whole response */
    size_t cap;
    int status;
    const char *head; /* status line and headers */
    size_t head_len;
    const char *body;
    size_t body_len;
};

/* A connected socket; rcvbuf > 0 shrinks its receive buffer (before
 * connecting, so that the window is small from the start). */
static int dial(int port, int rcvbuf)
{
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c >= 0);
    if (rcvbuf > 0)
        assert_int_equal(setsockopt(c, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(c, (struct sockaddr *)&a, sizeof a) != 0)
        fail_msg("connecting to port %d: %s (the server died?)", port, strerror(errno));
    return c;
}

static void send_all(int c, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(c, p, n, MSG_NOSIGNAL);
        assert_true(k > 0);
        p += k, n -= (size_t)k;
    }
}

/* Sends req (len bytes) on a new connection and reads the response to EOF. */
static void exchange(int port, const char *req, size_t len, struct resp *r)
{
    int c = dial(port, 0);
    send_all(c, req, len);
    size_t got = 0;
    if (!read_until(c, r->buf, r->cap, &got, NULL, now_ms() + WAIT_MS))
        fail_msg("no complete response to %.40s", req);
    close(c);
    const char *end = memmem(r->buf, got, "\r\n\r\n", 4);
    if (strncmp(r->buf, "HTTP/1.1 ", 9) != 0 || !end)
        fail_msg("not an HTTP response: %.80s", r->buf);
    r->status = atoi(r->buf + 9);
    r->head = r->buf, r->head_len = (size_t)(end + 2 - r->buf);
    r->body = end + 4, r->body_len = got - (size_t)(r->body - r->buf);
}

static void request(int port, const char *req, struct resp *r)
{
    exchange(port, req, strlen(req), r);
}

/* The value of header `name` (NULL if absent). */
static const char *header(const struct resp *r, const char *name)
{
    static char value[256];
    size_t n = strlen(name);
    for (const char *p = strstr(r->head, "\r\n") + 2; p < r->head + r->head_len;
         p = strstr(p, "\r\n") + 2) {
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1 + strspn(p + n + 1, " \t");
            snprintf(value, sizeof value, "%.*s", (int)strcspn(v, "\r"), v);
            return value;
        }
    }
    return NULL;
}

static void assert_header(const struct resp *r, const char *name, const char *want)
{
    const char *v = header(r, name);
    if (!v || strcmp(v, want) != 0)
        fail_msg("%s: %s, expected %s", name, v ? v : "(none)", want);
}

/* A response buffer for sv's file. */
static struct resp resp_for(const struct server *sv)
{
    struct resp r = {.cap = sv->size + 4096};
    r.buf = malloc(r.cap);
    assert_non_null(r.buf);
    return r;
}

/* GET of the file: 200, every byte, the headers the UI needs. */
static void assert_get(const struct server *sv, struct resp *r, const char *req)
{
    request(sv->port, req, r);
    assert_int_equal(r->status, 200);
    char size[32];
    snprintf(size, sizeof size, "%zu", sv->size);
    assert_header(r, "Content-Length", size);
    assert_header(r, "Content-Type", "application/octet-stream");
    assert_header(r, "Cache-Control", "no-cache");
    assert_header(r, "Access-Control-Allow-Origin", "https://ui.perfetto.dev");
    assert_int_equal(r->body_len, sv->size);
    assert_memory_equal(r->body, sv->data, sv->size);
}

#define GET(path) \
    "GET " path " HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://ui.perfetto.dev\r\n\r\n"

/* A request from its template: {P} is the server's URL path (/TOKEN/NAME),
 * {H} its Host (127.0.0.1:PORT). In one of 4 static buffers, for the calls
 * that take two at once. */
static const char *X(const struct server *sv, const char *tmpl)
{
    static char bufs[4][512];
    static int next;
    char *out = bufs[next++ % 4], host[32];
    snprintf(host, sizeof host, "127.0.0.1:%d", sv->port);
    size_t n = 0;
    for (const char *t = tmpl; *t && n + 200 < sizeof bufs[0];) {
        const char *with = strncmp(t, "{P}", 3) == 0   ? sv->upath
                           : strncmp(t, "{H}", 3) == 0 ? host
                                                       : NULL;
        if (with) {
            n += (size_t)snprintf(out + n, sizeof bufs[0] - n, "%s", with);
            t += 3;
        } else {
            out[n++] = *t++;
        }
    }
    out[n] = '\0';
    return out;
}

/* ------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------- */

static void test_get_head_options(void **state)
{
    (void)state;
    struct server sv;
    start_server(&sv, "serve", "trace.pftrace", SMALL_SIZE);
    struct resp r = resp_for(&sv);

    assert_get(&sv, &r, X(&sv, GET("{P}")));
    assert_get(&sv, &r, X(&sv, GET("{P}"))); /* the UI may fetch twice */
    assert_get(&sv, &r, X(&sv, GET("{P}?referrer=x")));
    assert_get(&sv, &r, X(&sv, "GET {P} HTTP/1.0\nHost: localhost\n\n")); /* bare LFs */
    assert_get(&sv, &r, X(&sv, "GET {P} HTTP/1.1\r\nHost: {H}\r\n\r\n"));
    assert_get(&sv, &r, X(&sv, "GET {P} HTTP/1.1\r\nHost: [::1]\r\n\r\n"));
    char absolute[256];
    snprintf(absolute, sizeof absolute, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", sv.url);
    assert_get(&sv, &r, absolute);

    request(sv.port, X(&sv, "HEAD {P} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"), &r);
    assert_int_equal(r.status, 200);
    assert_header(&r, "Content-Length", "524411"); /* SMALL_SIZE */
    assert_header(&r, "Access-Control-Allow-Origin", "https://ui.perfetto.dev");
    assert_int_equal(r.body_len, 0);

    request(sv.port,
            X(&sv, "OPTIONS {P} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Origin: https://ui.perfetto.dev\r\nAccess-Control-Request-Method: GET\r\n"
                   "Access-Control-Request-Private-Network: true\r\n\r\n"),
            &r);
    assert_int_equal(r.status, 204);
    assert_header(&r, "Access-Control-Allow-Origin", "https://ui.perfetto.dev");
    assert_header(&r, "Access-Control-Allow-Methods", "GET, HEAD, OPTIONS");
    assert_header(&r, "Access-Control-Allow-Headers", "*");
    assert_header(&r, "Access-Control-Allow-Private-Network", "true");
    assert_null(header(&r, "Content-Length"));
    assert_int_equal(r.body_len, 0);

    stop_server(&sv, SIGINT);
    free(r.buf);
}

static void test_errors(void **state)
{
    (void)state;
    struct server sv;
    start_server(&sv, "serve", "t.bin", SMALL_SIZE);
    struct resp r = resp_for(&sv);
    static const struct {
        const char *req;
        int status;
    } cases[] = {
        {GET("/other"), 404},
        {GET("/"), 404},
        {GET("{P}/x"), 404},
        {GET("/t.bin"), 404}, /* the name without the link's token */
        {"OPTIONS /other HTTP/1.1\r\nHost: {H}\r\n\r\n", 404},
        {"POST {P} HTTP/1.1\r\nHost: {H}\r\nContent-Length: 5\r\n\r\nhello", 405},
        {"DELETE {P} HTTP/1.1\r\nHost: {H}\r\n\r\n", 405},
        /* Hosts that are not the loopback's name and port: a page that
         * rebinds its own name to 127.0.0.1 sends its own (DNS rebinding). */
        {"GET {P} HTTP/1.1\r\nHost: evil.example\r\n\r\n", 403},
        {"GET {P} HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n", 403},
        {"GET {P} HTTP/1.1\r\nHost: 127.0.0.1.evil.example\r\n\r\n", 403},
        {"GET {P} HTTP/1.1\r\nHost: localhost:x\r\n\r\n", 403},
        {"OPTIONS {P} HTTP/1.1\r\nHost: evil.example\r\n\r\n", 403},
        {"GET {P} HTTP/1.0\r\n\r\n", 400}, /* no Host, even in 1.0 */
        {"hello there\r\n\r\n", 400},
        {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400}, /* TLS, no newline */
        {"GET {P} HTTP/1.1\r\n\r\n", 400},                     /* no Host */
        {"GET {P} HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
        {"GET {P} HTTP/2.0\r\nHost: x\r\n\r\n", 400},
        {"GET  {P} HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        {"GET {P} HTTP/1.1\r\nHost : x\r\n\r\n", 400},
        {"GET {P} HTTP/1.1\r\nHost: x\r\nBad\r\n\r\n", 400},
        {"GET {P} HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", 400},
        {"G(T {P} HTTP/1.1\r\nHost: x\r\n\r\n", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *req = X(&sv, cases[i].req);
        request(sv.port, req, &r);
        if (r.status != cases[i].status)
            fail_msg("%d for %s, expected %d", r.status, req, cases[i].status);
        assert_header(&r, "Connection", "close");
        if (r.status == 405)
            assert_header(&r, "Allow", "GET, HEAD, OPTIONS");
    }
    /* A head larger than the server takes, still being sent: 400, and the
     * answer arrives whole (the server reads on before it closes). */
    size_t big = 40 * 1024;
    char *huge = malloc(big);
    assert_non_null(huge);
    memset(huge, 'a', big);
    memcpy(huge, "GET /t.bin HTTP/1.1\r\nHost: x\r\nX-Big: ", 37);
    exchange(sv.port, huge, big, &r);
    assert_int_equal(r.status, 400);
    free(huge);

    assert_get(&sv, &r, X(&sv, GET("{P}")));
    stop_server(&sv, SIGTERM);
    free(r.buf);
}

/* Clients that go away or stall only lose their own connection. */
static void test_bad_clients(void **state)
{
    (void)state;
    struct server sv;
    start_server(&sv, "serve", "t.bin", stall_size());
    struct resp r = resp_for(&sv);

    int c = dial(sv.port, 0); /* half a request, then gone */
    send_all(c, "GET /t.bin HTTP/1.1\r\nHo", 23);
    close(c);
    assert_get(&sv, &r, X(&sv, GET("{P}")));

    /* Part of the file read, then closed with the rest unread (a reset):
     * the server's next send fails, ECONNRESET; or, when the client had
     * half-closed after its request (the server's socket in CLOSE_WAIT),
     * EPIPE, which is SIGPIPE without MSG_NOSIGNAL. */
    for (int i = 0; i < 4; i++) {
        c = dial(sv.port, 4096);
        const char *get = X(&sv, GET("{P}"));
        send_all(c, get, strlen(get));
        if (i % 2)
            assert_int_equal(shutdown(c, SHUT_WR), 0);
        size_t got = 0;
        while (got < 64 * 1024) {
            assert_true(readable(c, now_ms() + WAIT_MS));
            ssize_t n = read(c, r.buf, 8192);
            assert_true(n > 0);
            got += (size_t)n;
        }
        close(c);
    }
    assert_get(&sv, &r, X(&sv, GET("{P}")));

    /* A silent client: the next one is served meanwhile (a connection
     * waits on its own thread), and it is dropped at the head deadline. */
    int silent = dial(sv.port, 0);
    assert_get(&sv, &r, X(&sv, GET("{P}")));
    size_t got = 0;
    char buf[64];
    assert_true(read_until(silent, buf, sizeof buf, &got, NULL, now_ms() + WAIT_MS));
    assert_int_equal(got, 0); /* closed without an answer */
    close(silent);

    stop_server(&sv, SIGINT);
    free(r.buf);
}

/* A stop signal ends the call while it waits on a stalled client, not at
 * that client's timeout; the name comes from the path, made URL-safe. */
static void test_stop_while_stalled(void **state)
{
    (void)state;
    struct server sv;
    start_server(&sv, "serve a+b", NULL, stall_size());
    assert_memory_equal(sv.name, "ctrace-serve_a_b-", 17);
    int c = dial(sv.port, 4096);
    char req[256], buf[8192];
    snprintf(req, sizeof req, "%s", X(&sv, "GET {P} HTTP/1.1\r\nHost: {H}\r\n\r\n"));
    send_all(c, req, strlen(req));
    assert_true(readable(c, now_ms() + WAIT_MS));
    assert_true(read(c, buf, sizeof buf) > 17);
    assert_memory_equal(buf, "HTTP/1.1 200 OK\r\n", 17);
    stop_server(&sv, SIGINT); /* the file's rest unread, the window full */
    close(c);
}

static int prev_calls;
static void prev_handler(int sig)
{
    (void)sig;
    prev_calls++;
}

/* In this process: a busy port, bad arguments, and after a stop, the
 * handlers that were there before. */
static void test_in_process(void **state)
{
    (void)state;
    struct server sv = {0};
    make_file(&sv, "serve", 1000);
    char err[256];
    FILE *out = tmpfile();
    assert_non_null(out);

    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(l, 1), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &alen), 0);
    int busy = ntohs(a.sin_port);
    assert_int_equal(ctr_serve_file(sv.path, "t", busy, out, err, sizeof err), -EADDRINUSE);
    assert_non_null(strstr(err, "in use"));
    assert_non_null(strstr(err, "-port"));
    close(l);

    assert_int_equal(ctr_serve_file(sv.path, "a b", 0, out, err, sizeof err), -EINVAL);
    assert_int_equal(ctr_serve_file(sv.path, "", 0, out, err, sizeof err), -EINVAL);
    assert_int_equal(ctr_serve_file(sv.path, "..", 0, out, err, sizeof err), -EINVAL);
    assert_int_equal(ctr_serve_file(sv.path, "t", 65536, out, err, sizeof err), -EINVAL);
    assert_int_equal(ctr_serve_file(sv.path, "t", -1, out, err, sizeof err), -EINVAL);
    assert_int_equal(ctr_serve_file("/tmp", "t", 0, out, err, sizeof err), -EINVAL);
    assert_int_equal(ctr_serve_file("/nonexistent/t", "t", 0, out, err, sizeof err), -ENOENT);
    assert_int_equal(ftell(out), 0); /* nothing printed on errors */
    fclose(out);

    /* Served here, stopped by SIGINT from a child once the link is out. */
    struct sigaction mine = {.sa_handler = prev_handler}, was, now;
    sigemptyset(&mine.sa_mask);
    assert_int_equal(sigaction(SIGINT, &mine, &was), 0);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t parent = getpid(), child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(p[1]);
        char text[1024];
        size_t len = 0;
        int ok = read_until(p[0], text, sizeof text, &len, "url=", now_ms() + WAIT_MS);
        kill(parent, SIGINT); /* even without the link: the call must end */
        ok = ok && read_until(p[0], text, sizeof text, &len, NULL, now_ms() + WAIT_MS) &&
             strstr(text, "\nctrace: stopped serving\n"); /* read to EOF: no SIGPIPE */
        _exit(ok ? 0 : 1);
    }
    close(p[0]);
    out = fdopen(p[1], "w");
    assert_int_equal(ctr_serve_file(sv.path, "t", 0, out, err, sizeof err), 0);
    fclose(out);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(sigaction(SIGINT, &was, &now), 0);
    assert_ptr_equal(now.sa_handler, prev_handler);
    assert_int_equal(prev_calls, 0); /* the stop signal was the server's */
    assert_int_equal(sigaction(SIGTERM, NULL, &now), 0);
    assert_ptr_equal(now.sa_handler, SIG_DFL);

    unlink(sv.path);
    free(sv.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_head_options), cmocka_unit_test(test_errors),
        cmocka_unit_test(test_bad_clients),      cmocka_unit_test(test_stop_while_stalled),
        cmocka_unit_test(test_in_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
