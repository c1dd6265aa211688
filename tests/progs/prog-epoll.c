/* SPDX-License-Identifier: MIT */
/* prog-epoll.c - an event-loop echo server, the way real ones are written:
 * non-blocking sockets, one epoll loop per worker thread, replies sent with
 * sendmsg, reads until EAGAIN; and a closed-loop load for it over loopback.
 *
 *   prog-epoll serve WORKERS          serves on 127.0.0.1, an ephemeral port
 *                                     printed on stdout; exits when stdin
 *                                     reaches its end, printing on stdout
 *                                     the CPU time it used (microseconds)
 *   prog-epoll load PORT CONNS MS     CONNS connections, each sending a 64-byte
 *                                     request and reading its echo, over and
 *                                     over for MS milliseconds (blocking
 *                                     sockets, a thread each); prints the
 *                                     requests per second
 *   prog-epoll both WORKERS CONNS N   server and load in one process, N
 *                                     requests per connection; prints "ok"
 *
 * tests/e2e/epoll.sh traces it (no net wait for the server's non-blocking calls)
 * and tests/bench/bench_epoll.sh measures tracing's cost on its throughput.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define REQ 64

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* ------------------------------------------------------------------ server */

struct worker {
    int listener, ep;
    pthread_t th;
};

/* Echoes what fd has until it would block; @return 0, or -1 when the peer is gone. */
__attribute__((noinline)) static int echo(int fd)
{
    char buf[4096];
    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n == 0)
            return -1;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        struct iovec iov = {buf, (size_t)n};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        /* Loopback with small replies: the send buffer has room. */
        if (sendmsg(fd, &mh, MSG_NOSIGNAL) != n)
            return -1;
    }
}

static void *serve_loop(void *arg)
{
    struct worker *w = arg;
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(w->ep, evs, 64, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == w->listener) {
                int c = accept4(w->listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (c < 0)
                    continue; /* another worker took it: EAGAIN */
                int one = 1;
                setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                struct epoll_event ev = {.events = EPOLLIN, .data.fd = c};
                if (epoll_ctl(w->ep, EPOLL_CTL_ADD, c, &ev) != 0)
                    die("epoll_ctl");
            } else if (echo(fd) != 0) {
                epoll_ctl(w->ep, EPOLL_CTL_DEL, fd, NULL);
                close(fd);
            }
        }
    }
    return NULL;
}

/* Starts the workers on a new non-blocking listener; @return its port. */
static int serve(int workers)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 128) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0)
        die("listen");
    for (int i = 0; i < workers; i++) {
        struct worker *w = calloc(1, sizeof(*w));
        w->listener = l;
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.fd = l};
        if (!w || w->ep < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, l, &ev) != 0)
            die("epoll");
        if (pthread_create(&w->th, NULL, serve_loop, w) != 0)
            die("pthread_create");
    }
    return ntohs(a.sin_port);
}

/* -------------------------------------------------------------------- load */

struct client {
    int port;
    long requests; /* to make, or 0: until `until_ns` */
    unsigned long long until_ns;
    long done;
    pthread_t th;
};

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void *client_loop(void *arg)
{
    struct client *c = arg;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)c->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        die("connect");
    char req[REQ], rep[REQ];
    memset(req, 'r', sizeof(req));
    while (c->requests ? c->done < c->requests : now_ns() < c->until_ns) {
        if (send(fd, req, REQ, 0) != REQ)
            die("send");
        for (size_t got = 0; got < REQ;) {
            ssize_t n = recv(fd, rep + got, REQ - got, 0);
            if (n <= 0)
                die("recv");
            got += (size_t)n;
        }
        c->done++;
    }
    close(fd);
    return NULL;
}

/* Runs conns clients to completion; @return the requests they made. */
static long load(int port, int conns, long requests, unsigned long long until_ns)
{
    struct client *cs = calloc((size_t)conns, sizeof(*cs));
    long total = 0;
    for (int i = 0; i < conns; i++) {
        cs[i] = (struct client){.port = port, .requests = requests, .until_ns = until_ns};
        if (pthread_create(&cs[i].th, NULL, client_loop, &cs[i]) != 0)
            die("pthread_create");
    }
    for (int i = 0; i < conns; i++) {
        pthread_join(cs[i].th, NULL);
        total += cs[i].done;
    }
    free(cs);
    return total;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "serve") == 0) {
        printf("%d\n", serve(atoi(argv[2])));
        fflush(stdout);
        char c;
        while (read(0, &c, 1) > 0) {
        }
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("%ld\n", (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L +
                            (long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec));
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "load") == 0) {
        int ms = atoi(argv[4]);
        unsigned long long t0 = now_ns();
        long n = load(atoi(argv[2]), atoi(argv[3]), 0, t0 + (unsigned long long)ms * 1000000ull);
        printf("%.0f\n", (double)n * 1e9 / (double)(now_ns() - t0));
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "both") == 0) {
        int port = serve(atoi(argv[2]));
        long per = atol(argv[4]), conns = atol(argv[3]);
        long n = load(port, (int)conns, per, 0);
        if (n != per * conns)
            return 1;
        printf("ok\n");
        return 0;
    }
    fprintf(stderr,
            "usage: prog-epoll serve WORKERS | load PORT CONNS MS | both WORKERS CONNS N\n");
    return 2;
}
