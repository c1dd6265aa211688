/* SPDX-License-Identifier: MIT */
/* prog-dns.c - ground truth for a name lookup that waits on the network
 * (dns.sh): a DNS server that answers late, and a program that looks a name
 * up through it and measures the call itself.
 *
 * `prog-dns stub PORT DELAY_MS`: brings the loopback interface up if it is
 * down (a new network namespace's is), binds 127.0.0.1:PORT (UDP) and
 * answers every query DELAY_MS after it came: A (class IN) for any name with
 * 127.0.0.2, any other type with an empty NOERROR answer; a query that
 * cannot be parsed gets FORMERR (or nothing, when even its header is
 * short, or it is a response). Its input is hostile: every length is
 * checked against what remains before it is read. Prints "ready" when
 * bound; exits 0 on SIGTERM or SIGINT. UDP alone: its answers (at most 512
 * bytes: a question and one record) never need TCP.
 *
 * `prog-dns lookup NAME`: getaddrinfo(NAME, NULL, AF_INET) from lookup(),
 * whose call line dns.sh reads from this file, timed by CLOCK_MONOTONIC
 * around that call alone; prints "lookup NS RC ADDRESS" (ADDRESS: the first
 * one found, or "-"); exits 0 when the lookup succeeded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ================================================================ DNS */

#define DNS_HDR 12       /* RFC 1035 §4.1.1 */
#define DNS_MAX 512      /* a UDP message, RFC 1035 §2.3.4 */
#define DNS_NAME_MAX 255 /* a name on the wire, its final zero included */
#define DNS_A 1
#define DNS_IN 1
#define DNS_FORMERR 1
#define DNS_NOTIMP 4
#define DNS_ANSWER_LEN 16 /* pointer to the question's name, type, class, TTL, length, address */

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* A header-only reply to query q (DNS_HDR bytes at least): its id and
 * opcode, QR set, no records, rcode. */
static size_t dns_error(const uint8_t *q, uint8_t *out, unsigned rcode)
{
    memset(out, 0, DNS_HDR);
    memcpy(out, q, 2);
    out[2] = (uint8_t)(0x80 | (q[2] & 0x79)); /* QR, the opcode, RD */
    out[3] = (uint8_t)(0x80 | rcode);         /* RA */
    return DNS_HDR;
}

/* dns_reply() : the answer to query q of n bytes, into out (DNS_MAX
 * bytes). @return its length; 0 when nothing is to be sent (a short header,
 * a response). */
static size_t dns_reply(const uint8_t *q, size_t n, uint8_t *out)
{
    if (n < DNS_HDR || n > DNS_MAX || (q[2] & 0x80) != 0)
        return 0;
    if (((q[2] >> 3) & 0xf) != 0) /* not a standard query */
        return dns_error(q, out, DNS_NOTIMP);
    /* One question, no answers or authorities; additional records (an EDNS
     * OPT) are allowed and ignored. */
    if (get16(q + 4) != 1 || get16(q + 6) != 0 || get16(q + 8) != 0)
        return dns_error(q, out, DNS_FORMERR);
    const uint8_t *p = q + DNS_HDR;
    size_t left = n - DNS_HDR, name = 1;
    for (;;) {
        if (left < 1)
            return dns_error(q, out, DNS_FORMERR);
        size_t len = *p;
        p++, left--;
        if (len == 0)
            break;
        /* Labels of 64 and more: compression or extended labels, which
         * have no place in a question. */
        if (len > 63 || len > left || (name += len + 1) > DNS_NAME_MAX)
            return dns_error(q, out, DNS_FORMERR);
        p += len, left -= len;
    }
    if (left < 4)
        return dns_error(q, out, DNS_FORMERR);
    int a = get16(p) == DNS_A && get16(p + 2) == DNS_IN;
    p += 4;
    size_t qlen = (size_t)(p - q); /* at most DNS_HDR + 255 + 4 */
    memcpy(out, q, qlen);
    out[2] = (uint8_t)(0x84 | (q[2] & 0x01)); /* QR, AA, RD as asked */
    out[3] = 0x80;                            /* RA, NOERROR */
    put16(out + 6, a ? 1 : 0);                /* answers */
    put16(out + 8, 0);
    put16(out + 10, 0); /* the query's additional records are not echoed */
    if (!a)
        return qlen;
    uint8_t *r = out + qlen;
    put16(r, 0xc000 | DNS_HDR); /* the name: the question's */
    put16(r + 2, DNS_A);
    put16(r + 4, DNS_IN);
    put16(r + 6, 0), put16(r + 8, 60); /* TTL */
    put16(r + 10, 4);
    r[12] = 127, r[13] = 0, r[14] = 0, r[15] = 2;
    return qlen + DNS_ANSWER_LEN;
}

/* ================================================================ stub */

#define PENDING 32

struct pending {
    int used;
    uint64_t due_ns;
    struct sockaddr_in to;
    size_t len;
    uint8_t msg[DNS_MAX];
};

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
    (void)sig;
    stopping = 1;
}

/* The loopback interface up (a new network namespace's is down). */
static int loopback_up(void)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    strcpy(ifr.ifr_name, "lo");
    int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
    if (rc == 0 && !(ifr.ifr_flags & IFF_UP)) {
        ifr.ifr_flags |= IFF_UP;
        rc = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    close(s);
    return rc;
}

static int stub(int port, int delay_ms)
{
    /* SIGTERM and SIGINT are taken only inside ppoll: no stop is missed
     * between the check of `stopping` and the wait. */
    sigset_t stops, during;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigprocmask(SIG_BLOCK, &stops, &during);
    sigdelset(&during, SIGTERM);
    sigdelset(&during, SIGINT);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    if (loopback_up() != 0) {
        perror("prog-dns: bringing lo up");
        return 1;
    }
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&at, sizeof(at)) != 0) {
        perror("prog-dns: binding 127.0.0.1 (UDP)");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);

    static struct pending pend[PENDING];
    uint64_t delay_ns = (uint64_t)delay_ms * 1000000u;
    unsigned long answered = 0, dropped = 0;
    while (!stopping) {
        uint64_t now = now_ns(), due = UINT64_MAX;
        for (int i = 0; i < PENDING; i++)
            if (pend[i].used && pend[i].due_ns < due)
                due = pend[i].due_ns;
        struct timespec ts = {0, 0};
        if (due != UINT64_MAX && due > now)
            ts.tv_sec = (time_t)((due - now) / 1000000000u),
            ts.tv_nsec = (long)((due - now) % 1000000000u);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = ppoll(&pfd, 1, due == UINT64_MAX ? NULL : &ts, &during);
        if (r < 0 && errno != EINTR) {
            perror("prog-dns: ppoll");
            return 1;
        }
        if (r > 0 && (pfd.revents & POLLIN)) {
            uint8_t q[DNS_MAX]; /* MSG_TRUNC: n is the whole length, refused if more */
            struct sockaddr_in from;
            socklen_t flen = sizeof(from);
            ssize_t n = recvfrom(fd, q, sizeof(q), MSG_TRUNC, (struct sockaddr *)&from, &flen);
            int slot = -1;
            for (int i = 0; i < PENDING && slot < 0; i++)
                if (!pend[i].used)
                    slot = i;
            uint8_t a[DNS_MAX];
            size_t len = 0;
            if (n > 0 && (size_t)n <= DNS_MAX && flen == sizeof(from))
                len = dns_reply(q, (size_t)n, a);
            if (len > 0 && slot >= 0) {
                pend[slot].used = 1;
                pend[slot].due_ns = now_ns() + delay_ns;
                pend[slot].to = from;
                pend[slot].len = len;
                memcpy(pend[slot].msg, a, len);
            } else if (n >= 0) {
                dropped++; /* short, a response, too long, or too many waiting */
            }
        }
        now = now_ns();
        for (int i = 0; i < PENDING; i++)
            if (pend[i].used && pend[i].due_ns <= now) {
                sendto(fd, pend[i].msg, pend[i].len, 0, (struct sockaddr *)&pend[i].to,
                       sizeof(pend[i].to));
                pend[i].used = 0;
                answered++;
            }
    }
    fprintf(stderr, "prog-dns: stub: %lu answered, %lu dropped\n", answered, dropped);
    close(fd);
    return 0;
}

/* ================================================================ lookup */

static char found[INET_ADDRSTRLEN] = "-";

/* The traced call: dns.sh reads the line of `getaddrinfo(` below. */
static __attribute__((noinline)) uint64_t lookup(const char *name, int *rc)
{
    struct addrinfo hints = {.ai_family = AF_INET};
    struct addrinfo *res = NULL;
    uint64_t t0 = now_ns();
    *rc = getaddrinfo(name, NULL, &hints, &res);
    uint64_t took = now_ns() - t0;
    if (*rc == 0) {
        if (res && res->ai_family == AF_INET && res->ai_addrlen >= sizeof(struct sockaddr_in)) {
            struct sockaddr_in in; /* a copy: ai_addr's alignment is a sockaddr's */
            memcpy(&in, res->ai_addr, sizeof(in));
            inet_ntop(AF_INET, &in.sin_addr, found, sizeof(found));
        }
        freeaddrinfo(res);
    }
    return took;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "stub") == 0) {
        int port = atoi(argv[2]), delay_ms = atoi(argv[3]);
        if (port < 1 || port > 65535 || delay_ms < 0 || delay_ms > 60000) {
            fprintf(stderr, "prog-dns: bad port or delay\n");
            return 2;
        }
        return stub(port, delay_ms);
    }
    if (argc == 3 && strcmp(argv[1], "lookup") == 0) {
        int rc = 0;
        uint64_t took = lookup(argv[2], &rc);
        printf("lookup %llu %d %s\n", (unsigned long long)took, rc, found);
        return rc == 0 ? 0 : 1;
    }
    fprintf(stderr, "usage: prog-dns stub PORT DELAY_MS | prog-dns lookup NAME\n");
    return 2;
}
