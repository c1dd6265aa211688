/* SPDX-License-Identifier: MIT */
/* serve.c - ctr_serve_file() (see serve.h): a minimal HTTP/1.1 server of
 * one file, for the Perfetto UI to fetch.
 *
 * Each connection on a thread of its own, up to MAX_CONNS at once (more
 * are answered 503 at once): a client that holds a connection idle, sends
 * a byte a second or reads slowly delays only itself, never the UI's
 * fetch. Per connection: read the request head (at most HEAD_MAX bytes, the
 * request line checked as it arrives, whole within HEAD_TIMEOUT_MS), answer,
 * close. Every wait is a poll() on the connection and on the self-pipe that
 * the SIGINT/SIGTERM handler writes to: a signal ends every wait at once
 * (the pipe, never drained, stays readable, so every later wait sees it
 * too), and a client that stalls mid-answer costs its thread at most
 * CTR_SERVE_TIMEOUT_MS. The socket is written with send(MSG_NOSIGNAL): a
 * client gone mid-file is EPIPE for its connection, never SIGPIPE.
 *
 * The file is for this machine's browser alone: the URL holds a random
 * token (a page cannot guess it), and a request whose Host is not the
 * loopback's name and port is refused (a page that rebinds its own name to
 * 127.0.0.1 sends its own name: DNS rebinding).
 */
#include "perfetto/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long a client may keep the server waiting for its next bytes or for
 * room to send it more; its request head must come whole within it. */
#ifndef CTR_SERVE_TIMEOUT_MS
#define CTR_SERVE_TIMEOUT_MS 10000
#endif
#define HEAD_MAX (16 * 1024) /* request line and headers (cookies of 127.0.0.1 included) */
#define HEAD_TIMEOUT_MS 5000 /* a request head comes whole within it */
#define MAX_CONNS 64         /* connections served at once */
#define TOKEN_BYTES 16       /* the URL's random part: 128 bits, in hex */
#define BUF_SIZE (64 * 1024) /* > HEAD_MAX: holds the head, then the file's chunks */
#define LINGER_MS 1000       /* reading what a client still sends after its answer */
#define STOPPED 2            /* wait_fd(): a stop signal came */

struct srv {
    int file;                         /* the file served */
    char name[256];                   /* its name in the URL */
    char path[2 * TOKEN_BYTES + 258]; /* its URL path: /TOKEN/NAME */
    int port;                         /* the port served, for the Host check */
    int wake;                         /* the self-pipe's read end */
    atomic_int conns;                 /* connections being served */
};

/* The self-pipe's write end, for the handler (one call at a time: serve.h). */
static volatile sig_atomic_t wake_fd = -1;

static void on_stop_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t r = write(wake_fd, &b, 1); /* full pipe: a wake-up is pending anyway */
    (void)r;
    errno = saved;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Waits for `events` on fd until `deadline` (now_ms() time; -1: none).
 * @return 1 when fd is ready (or in error: the call that follows says),
 *         0 at the deadline, STOPPED if a stop signal came, or a negative
 *         errno of poll(). */
static int wait_fd(const struct srv *s, int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd p[2] = {{.fd = s->wake, .events = POLLIN}, {.fd = fd, .events = events}};
        int64_t left = deadline < 0 ? -1 : deadline - now_ms();
        if (deadline >= 0 && left <= 0)
            return 0;
        int n = poll(p, 2, left > INT32_MAX ? INT32_MAX : (int)left);
        if (n < 0 && errno != EINTR)
            return -errno;
        if (p[0].revents)
            return STOPPED;
        if (n > 0)
            return 1;
    }
}

/* @return 0 once all of data is sent, -1 if the client went away, stalled
 *         or a stop signal came. */
static int send_all(const struct srv *s, int c, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(c, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) {
            if (wait_fd(s, c, POLLOUT, now_ms() + CTR_SERVE_TIMEOUT_MS) != 1)
                return -1;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1; /* EPIPE, ECONNRESET: gone */
        data += n, len -= (size_t)n;
    }
    return 0;
}

/* RFC 9110's Date (IMF-fixdate), without strftime's locale. */
static void http_date(char *out, size_t cap)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, cap, "%s, %02d %s %d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Sends the status line and headers: `extra` (CRLF-ended lines) between
 * the ones every response has. @return send_all's. */
static int send_head(const struct srv *s, int c, const char *status, const char *extra)
{
    char date[64], head[1024];
    http_date(date, sizeof date);
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %s\r\nDate: %s\r\n%sAccess-Control-Allow-Origin: " CTR_SERVE_ORIGIN
                     "\r\nConnection: close\r\n\r\n",
                     status, date, extra);
    return send_all(s, c, head, (size_t)n);
}

/* An error response with a short text body naming the status. */
static int send_error(const struct srv *s, int c, const char *status, const char *extra)
{
    char hdrs[256];
    snprintf(hdrs, sizeof hdrs, "%sContent-Type: text/plain\r\nContent-Length: %zu\r\n", extra,
             strlen(status) + 1);
    if (send_head(s, c, status, hdrs) != 0)
        return -1;
    char body[64];
    int n = snprintf(body, sizeof body, "%s\n", status);
    return send_all(s, c, body, (size_t)n);
}

/* Sends the file's first size bytes through buf (BUF_SIZE bytes).
 * @return 0 or -1 (client gone, file shrunk). */
static int send_file(const struct srv *s, int c, char *buf, off_t size)
{
    for (off_t off = 0; off < size;) {
        size_t want = size - off < BUF_SIZE ? (size_t)(size - off) : BUF_SIZE;
        ssize_t n = pread(s->file, buf, want, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || send_all(s, c, buf, (size_t)n) != 0)
            return -1; /* the client sees a body shorter than Content-Length */
        off += n;
    }
    return 0;
}

static int is_tchar(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* Whether the request line so far (len bytes, up to its LF) can still be
 * one: visible ASCII, spaces and its final CR only, so that binary garbage
 * is answered at once instead of at the timeout. */
static int line_plausible(const char *p, size_t len)
{
    for (size_t i = 0; i < len && p[i] != '\n'; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (!(ch >= 0x20 && ch < 0x7f) && !(ch == '\r' && (i + 1 == len || p[i + 1] == '\n')))
            return 0;
    }
    return 1;
}

/* Parses the head (NUL-terminated, ending in an empty line): sets *method,
 * *target and *host (NULL: no Host field), NUL-terminated in place.
 * @return 0, or -1 if malformed (RFC 9112: request line, header field
 * syntax, Host once in HTTP/1.1). */
static int parse_head(char *p, char **method, char **target, char **host)
{
    *host = NULL;
    while (*p == '\r' || *p == '\n') /* empty lines before the request line */
        p++;
    int nhost = 0, line = 0, http11 = 0;
    for (char *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1, line++) {
        char *end = nl > p && nl[-1] == '\r' ? nl - 1 : nl;
        *end = '\0';
        if (end == p)
            return line > 0 && nhost <= 1 && (nhost == 1 || !http11) ? 0 : -1;
        if (line == 0) { /* METHOD SP TARGET SP HTTP/1.x */
            char *sp1 = strchr(p, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
            if (!sp1 || !sp2 || sp1 == p || sp2 == sp1 + 1 || strchr(sp2 + 1, ' '))
                return -1;
            for (char *q = p; q < sp1; q++)
                if (!is_tchar((unsigned char)*q))
                    return -1;
            if (strncmp(sp2 + 1, "HTTP/1.", 7) != 0 || !(sp2[8] >= '0' && sp2[8] <= '9') || sp2[9])
                return -1;
            http11 = sp2[8] != '0';
            *sp1 = *sp2 = '\0';
            *method = p, *target = sp1 + 1;
            continue;
        }
        char *colon = p; /* a field: NAME ":" value, no space before the colon */
        while (is_tchar((unsigned char)*colon))
            colon++;
        if (colon == p || *colon != ':')
            return -1;
        for (char *q = colon + 1; *q; q++)
            if (((unsigned char)*q < 0x20 && *q != '\t') || *q == 0x7f)
                return -1;
        if (colon - p == 4 && strncasecmp(p, "host", 4) == 0) {
            nhost++;
            char *v = colon + 1, *e = v + strlen(v);
            while (*v == ' ' || *v == '\t')
                v++;
            while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                *--e = '\0';
            *host = v;
        }
    }
    return -1; /* no empty line: cannot happen, the caller found it */
}

/* Whether a request's Host names the loopback as served: 127.0.0.1,
 * localhost or [::1], with the port served or none. */
static int host_ok(const struct srv *s, const char *host)
{
    static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
    for (size_t i = 0; host && i < sizeof(names) / sizeof(names[0]); i++) {
        size_t n = strlen(names[i]);
        if (strncasecmp(host, names[i], n) != 0)
            continue;
        if (host[n] == '\0')
            return 1;
        char *end;
        errno = 0;
        long port = host[n] == ':' && host[n + 1] >= '0' && host[n + 1] <= '9'
                        ? strtol(host + n + 1, &end, 10)
                        : -1;
        return port == s->port && *end == '\0' && errno == 0;
    }
    return 0;
}

/* Answers one parsed request; buf (BUF_SIZE bytes) carries the file. */
static void answer(const struct srv *s, int c, char *buf, const char *method, char *target,
                   const char *host)
{
    int get = strcmp(method, "GET") == 0, head = strcmp(method, "HEAD") == 0;
    int options = strcmp(method, "OPTIONS") == 0;
    if (!host) {
        send_error(s, c, "400 Bad Request", "");
        return;
    }
    if (!host_ok(s, host)) {
        send_error(s, c, "403 Forbidden", "");
        return;
    }
    if (!get && !head && !options) {
        send_error(s, c, "405 Method Not Allowed", "Allow: GET, HEAD, OPTIONS\r\n");
        return;
    }
    target[strcspn(target, "?#")] = '\0'; /* a query does not name another file */
    const char *path = target;
    if (strncasecmp(path, "http://", 7) == 0) /* absolute-form: its path */
        path = strchr(path + 7, '/') ? strchr(path + 7, '/') : "/";
    int ours = strcmp(path, s->path) == 0;
    if (options && (ours || strcmp(path, "*") == 0)) {
        /* The CORS preflight; Private-Network for Chrome's checks of a
         * public page (the UI) reaching the loopback. */
        send_head(
            s, c, "204 No Content",
            "Allow: GET, HEAD, OPTIONS\r\nAccess-Control-Allow-Methods: GET, HEAD, OPTIONS\r\n"
            "Access-Control-Allow-Headers: *\r\nAccess-Control-Allow-Private-Network: true\r\n"
            "Access-Control-Max-Age: 86400\r\n");
        return;
    }
    struct stat st;
    if (!ours || options) {
        send_error(s, c, "404 Not Found", "");
    } else if (fstat(s->file, &st) != 0) {
        send_error(s, c, "500 Internal Server Error", "");
    } else {
        char hdrs[256];
        snprintf(hdrs, sizeof hdrs,
                 "Content-Type: application/octet-stream\r\n"
                 "Content-Length: %" PRIdMAX "\r\nCache-Control: no-cache\r\n",
                 (intmax_t)st.st_size);
        if (send_head(s, c, "200 OK", hdrs) == 0 && get)
            send_file(s, c, buf, st.st_size);
    }
}

/* The length of the request head in p[0..len): through its empty line
 * (lines end in LF or CRLF; empty lines before the request line are not
 * it). @return 0 if it has not all come yet. */
static size_t head_len(const char *p, size_t len)
{
    size_t start = 0;
    int request_line = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != '\n')
            continue;
        size_t n = i - start - (i > start && p[i - 1] == '\r');
        if (n == 0 && request_line)
            return i + 1;
        request_line |= n > 0;
        start = i + 1;
    }
    return 0;
}

/* Serves connection c with buf (BUF_SIZE bytes) and closes it. */
static void serve_conn(const struct srv *s, int c, char *buf)
{
    int64_t deadline = now_ms() + HEAD_TIMEOUT_MS;
    size_t len = 0, head;
    char *method = NULL, *target = NULL, *host = NULL;
    for (;;) {
        if (memchr(buf, '\0', len) || !line_plausible(buf, len)) {
            send_error(s, c, "400 Bad Request", "");
            break;
        }
        if ((head = head_len(buf, len)) > 0) {
            buf[head] = '\0'; /* what follows (a body) is left unread */
            if (parse_head(buf, &method, &target, &host) == 0)
                answer(s, c, buf, method, target, host);
            else
                send_error(s, c, "400 Bad Request", "");
            break;
        }
        if (len == HEAD_MAX) {
            send_error(s, c, "400 Bad Request", "");
            break;
        }
        if (wait_fd(s, c, POLLIN, deadline) != 1) {
            close(c); /* silent too long, or stopping */
            return;
        }
        ssize_t n = recv(c, buf + len, HEAD_MAX - len, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            close(c); /* gone before a whole request: nobody to answer */
            return;
        }
        len += (size_t)n;
    }
    /* Closing with unread bytes would reset the connection, and the client
     * could lose its answer: read what it still sends, for a while. */
    shutdown(c, SHUT_WR);
    int64_t linger = now_ms() + LINGER_MS;
    while (wait_fd(s, c, POLLIN, linger) == 1) {
        ssize_t n = recv(c, buf, BUF_SIZE, 0);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            break;
    }
    close(c);
}

/* A connection's thread. */
struct conn {
    struct srv *s;
    int c;
};

static void *conn_thread(void *arg)
{
    struct conn *k = arg;
    char *buf = malloc(BUF_SIZE);
    if (buf)
        serve_conn(k->s, k->c, buf);
    else
        close(k->c);
    free(buf);
    /* release: this thread's last use of s before the server, which
     * waits for the count to drop (acquire), frees it. */
    atomic_fetch_sub_explicit(&k->s->conns, 1, memory_order_release);
    free(k);
    return NULL;
}

/* Serves c on a thread of its own, or answers 503 when MAX_CONNS are
 * served already (or no thread can be had), and closes it. */
static void serve_conn_async(struct srv *s, int c)
{
    /* relaxed: a count; the thread's end is ordered by its release. */
    struct conn *k = atomic_load_explicit(&s->conns, memory_order_relaxed) < MAX_CONNS
                         ? malloc(sizeof(*k))
                         : NULL;
    pthread_attr_t attr;
    pthread_t t;
    int started = 0;
    if (k && pthread_attr_init(&attr) == 0) {
        *k = (struct conn){s, c};
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        atomic_fetch_add_explicit(&s->conns, 1, memory_order_relaxed);
        /* The stop signals go to the caller's threads, as before: the
         * connections' threads block them. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        started = pthread_create(&t, &attr, conn_thread, k) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
        if (!started)
            atomic_fetch_sub_explicit(&s->conns, 1, memory_order_relaxed);
    }
    if (!started) {
        free(k);
        send_error(s, c, "503 Service Unavailable", "Retry-After: 1\r\n");
        close(c);
    }
}

/* Waits for the connections' threads to end: each sees the stop at its
 * next wait (the self-pipe is readable for good). */
static void wait_conns(struct srv *s)
{
    /* acquire: pairs with conn_thread's release, before s goes. */
    while (atomic_load_explicit(&s->conns, memory_order_acquire) > 0) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* Sets s->path to /TOKEN/NAME, TOKEN random. @return 0 or a negative errno. */
static int set_path(struct srv *s, char *err, size_t errlen)
{
    unsigned char r[TOKEN_BYTES];
    size_t got = 0;
    while (got < sizeof(r)) {
        ssize_t n = getrandom(r + got, sizeof(r) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            snprintf(err, errlen, "serving: getrandom: %s", strerror(e));
            return -e;
        }
        got += (size_t)n;
    }
    char *p = s->path;
    *p++ = '/';
    for (size_t i = 0; i < sizeof(r); i++, p += 2)
        snprintf(p, 3, "%02x", r[i]);
    snprintf(p, sizeof(s->path) - (size_t)(p - s->path), "/%s", s->name);
    return 0;
}

/* Sets s->name from name, or from path's base name. @return 0 or -EINVAL. */
static int set_name(struct srv *s, const char *path, const char *name, char *err, size_t errlen)
{
    const char *from = name;
    if (!from)
        from = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t n = strlen(from);
    if (n == 0 || n >= sizeof s->name) {
        snprintf(err, errlen, "the URL name of %s must have 1 to %zu characters", path,
                 sizeof s->name - 1);
        return -EINVAL;
    }
    for (size_t i = 0; i <= n; i++) {
        char ch = from[i];
        int safe = ch && ((ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') ||
                          strchr(".-_~", ch));
        if (ch && !safe && name) {
            snprintf(err, errlen, "URL name \"%s\": only letters, digits and . - _ ~ can be used",
                     name);
            return -EINVAL;
        }
        s->name[i] = ch && !safe ? '_' : ch;
    }
    if (strcmp(s->name, ".") == 0 || strcmp(s->name, "..") == 0) { /* URLs normalize them away */
        snprintf(err, errlen, "URL name \"%s\" cannot be used", s->name);
        return -EINVAL;
    }
    return 0;
}

/* Opens path, names it and listens on 127.0.0.1:*port (set to the port
 * bound). @return the listening socket, or a negative errno with err set. */
static int open_and_listen(struct srv *s, const char *path, const char *name, int *port, char *err,
                           size_t errlen)
{
    struct stat st;
    if (*port < 0 || *port > 65535) {
        snprintf(err, errlen, "port %d is not in 0..65535", *port);
        return -EINVAL;
    }
    s->file = open(path, O_RDONLY | O_CLOEXEC);
    if (s->file < 0 || fstat(s->file, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        return -EINVAL;
    }
    int rc = set_name(s, path, name, err, errlen);
    if (rc == 0)
        rc = set_path(s, err, errlen);
    if (rc != 0)
        return rc;
    /* 127.0.0.1 only: the file is for this machine's browser, not the network. */
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)*port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int one = 1, l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const char *failed = l < 0 ? "socket"
                         : setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0
                             ? "SO_REUSEADDR"
                         : bind(l, (struct sockaddr *)&a, sizeof a) != 0     ? "bind"
                         : listen(l, 16) != 0                                ? "listen"
                         : getsockname(l, (struct sockaddr *)&a, &alen) != 0 ? "getsockname"
                                                                             : NULL;
    if (!failed) {
        *port = s->port = ntohs(a.sin_port);
        return l;
    }
    rc = -errno;
    if (rc == -EADDRINUSE)
        snprintf(err, errlen,
                 "port %d of 127.0.0.1 is already in use (trace_processor --httpd "
                 "uses 9001); stop what listens there, or choose another port with -port",
                 *port);
    else
        snprintf(err, errlen, "serving on 127.0.0.1:%d: %s: %s", *port, failed, strerror(-rc));
    if (l >= 0)
        close(l);
    return rc;
}

/* Whether accept() failing with e is about one connection, not the server:
 * gone before it was taken, or (Linux) a network error passed on. */
static int accept_again(int e)
{
    switch (e) {
    case EAGAIN:
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case EPERM:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
        return 1;
    }
    return 0;
}

int ctr_serve_file(const char *path, const char *name, int port, FILE *out, char *err,
                   size_t errlen)
{
    struct srv s = {.file = -1, .wake = -1};
    struct sigaction stop = {.sa_handler = on_stop_signal, .sa_flags = SA_RESTART}, old_int,
                     old_term;
    int pipefd[2] = {-1, -1}, rc = -ENOMEM;
    int l = open_and_listen(&s, path, name, &port, err, errlen);
    if (l < 0) {
        rc = l;
        goto done;
    }
    if (pipe2(pipefd, O_NONBLOCK | O_CLOEXEC) != 0) {
        rc = -errno;
        snprintf(err, errlen, "serving: pipe: %s", strerror(errno));
        goto done;
    }
    s.wake = pipefd[0], wake_fd = pipefd[1];
    /* SA_RESTART: the handler may run on another of the caller's threads,
     * whose calls should not fail with EINTR for it. */
    sigemptyset(&stop.sa_mask);
    sigaction(SIGINT, &stop, &old_int);
    sigaction(SIGTERM, &stop, &old_term);
    fprintf(out, "Serving %s on http://127.0.0.1:%d%s; Ctrl-C to stop\n", path, port, s.path);
    fprintf(out, "Open in the Perfetto UI: " CTR_SERVE_ORIGIN "/#!/?url=http://127.0.0.1:%d%s\n",
            port, s.path);
    fflush(out);
    for (;;) {
        rc = wait_fd(&s, l, POLLIN, -1);
        if (rc == STOPPED) {
            rc = 0;
            break;
        }
        if (rc < 0) {
            snprintf(err, errlen, "serving: poll: %s", strerror(-rc));
            break;
        }
        int c = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c >= 0)
            serve_conn_async(&s, c);
        else if (!accept_again(errno)) {
            rc = -errno;
            snprintf(err, errlen, "serving: accept: %s", strerror(-rc));
            break;
        }
    }
    /* Every connection's next wait ends (after an error the signal did
     * not write the pipe). */
    ssize_t woke = write(pipefd[1], "", 1);
    (void)woke;
    wait_conns(&s);
    if (rc == 0) {
        fprintf(out, "ctrace: stopped serving\n");
        fflush(out);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    wake_fd = -1;
done:
    if (pipefd[0] >= 0)
        close(pipefd[0]), close(pipefd[1]);
    if (l >= 0)
        close(l);
    if (s.file >= 0)
        close(s.file);
    return rc;
}
