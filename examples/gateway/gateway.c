/* SPDX-License-Identifier: MIT */
/* gateway.c - example workload: a request gateway with three bugs that each
 * pass review.
 *
 * This is one of the ctrace example scenarios. 256 client threads send
 * requests for a fixed time (2 s by default), each pausing 100-300 ms between
 * requests (so about 1250 requests a second are offered, whatever the build).
 * Each request is a ctrace task "request" with one region per phase:
 *
 *   "redact"    redact_pii(): masks SSNs, phone numbers and e-mail addresses
 *               in the prompt with three POSIX regular expressions.
 *               Bug (a): it compiles the three patterns (regcomp) on every
 *               request, and each fresh pattern builds its matcher again on
 *               its first regexec: ~0.3 ms of CPU for ~10 us of matching.
 *               Fix: compile them once, before the load, and share them
 *               (regexec on a compiled regex_t is thread-safe).
 *   "quota"     quota_charge(): charges the client's quota and appends an
 *               audit record holding a keyed digest of the prompt (~0.5 ms).
 *               Bug (b): ONE global mutex is held while hashing the prompt,
 *               formatting the record and appending it, so all requests go
 *               through the digest one at a time. Fix: hash and format
 *               outside the lock; hold it only to update the counter and
 *               copy the finished record in.
 *   "upstream"  upstream_call(): asks the model. The call runs in a helper
 *               thread, upstream_helper(), which answers after a latency
 *               drawn from the request's own PRNG (30% of calls take 8-12 ms,
 *               the rest 1-3 ms) by writing a 64 KiB answer into a pipe whose
 *               buffer is 4 KiB; the request polls the pipe for 5 ms.
 *               Bug (c): on a timeout the request just returns, leaving the
 *               pipe's read end open and unread, so the helper fills the
 *               4 KiB and blocks in write() forever: every timed-out request
 *               leaks a thread (and two descriptors). Fix: read under the
 *               same 5 ms deadline and, whatever happens, close the read end:
 *               the helper's write() then fails with EPIPE (SIGPIPE is
 *               ignored) and the helper exits.
 *
 * The three functions are noinline so that recorded stacks name them, in
 * both builds. Measured on 2 CPUs: slow, p50 33 ms, p99 270 ms and ~650
 * threads leaked; fixed, p50 3.5 ms, p99 6.7 ms (the timeouts), none leaked.
 *
 * After the load the example waits until every helper that can finish has
 * finished (the leaked ones never do), counts the threads still alive in
 * /proc/self/task, and prints one machine-readable line:
 *
 *   gateway: requests=N errors=N throughput=X/s p50_us=X p99_us=X timeouts=N
 *            threads_alive_before=N threads_alive_after=N
 *
 * (on one line). Latencies are measured by the example itself, per request,
 * with CLOCK_MONOTONIC around the task; percentiles are nearest-rank.
 * threads_alive_before is counted before the clients start (after
 * trace_start, so the collector is in both counts); in the slow build
 * threads_alive_after - threads_alive_before is the number of leaked helpers,
 * which is the number of timeouts.
 *
 * usage: gateway [-fixed | -fix=redact,quota,upstream] [-seconds N] [-trace FILE]
 * With -trace the load is traced into FILE, and trace_stop() comes after the
 * threads are counted, while the leaked helpers are still blocked in write(),
 * so that the trace ends with them there. Runs are reproducible in what they
 * ask (every request draws its prompt and latency from a PRNG seeded by its
 * client and number), not in how the scheduler serves them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, F_SETPIPE_SZ, pthread_setname_np under -std=c11 */
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <ctrace/trace.h>

#include "../common/example.h"

#define NCLIENTS 256
#define DEFAULT_SECONDS 2.0
#define PROMPT_MAX 1024
#define THINK_MS 200             /* a client's mean pause between requests */
#define SLOW_PERCENT 30          /* upstream calls that take 8-12 ms */
#define TIMEOUT_MS 5             /* the request's upstream deadline */
#define ANSWER_BYTES (64u << 10) /* the helper's answer ... */
#define PIPE_BYTES 4096          /* ... through a pipe this small */
#define DIGEST_ROUNDS 1536       /* passes of the audit digest (~0.5 ms) */
#define AUDIT_BYTES (4u << 20)   /* the in-memory audit log (a ring) */
#define AUDIT_REC_MAX 160
#ifdef __SANITIZE_ADDRESS__
#define HELPER_STACK (256u << 10) /* ASan's redzones need more */
#else
#define HELPER_STACK (64u << 10) /* hundreds of helpers leak */
#endif

/* Which bugs are fixed. */
struct fixes {
    int redact, quota, upstream;
};

static struct fixes fix;

/* ================================================================ helpers */

/* Sleeps us microseconds (example.h). */
static void sleep_us(unsigned us)
{
    ex_sleep_ns((long)us * 1000);
}

/* The number of threads of this process: entries of /proc/self/task, or -1. */
static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* ================================================================ prompts */

static const char *const first_names[] = {"ann",    "bob", "chen", "dana", "emil",
                                          "fatima", "gus", "hiro", "ines", "jon"};
static const char *const domains[] = {"example.com", "mail.example.org", "corp.example.net"};
static const char *const asks[] = {
    "Summarise the open tickets about the refund for order",
    "Draft a polite reply about the delayed shipment of parcel",
    "Explain why the invoice differs from the quote for contract",
    "Translate the attached complaint about account",
};
static const char *const filler[] = {
    " Keep it under one hundred words and do not promise dates.",
    " The customer has written twice already this week.",
    " Use the formal tone of our support guidelines.",
    " Mention the warranty only if the item is less than two years old.",
};

#define PICK(rng, a) (a[ex_xorshift64(rng) % (sizeof(a) / sizeof((a)[0]))])

/* A prompt of 200-400 bytes into buf, from the request's PRNG: most carry an
 * e-mail address, about half a phone number, a third an SSN. */
static size_t make_prompt(uint64_t *rng, char *buf, size_t len)
{
    size_t n = 0;
#define ADD(...) (n += (size_t)snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__))
    ADD("%s %06u.", PICK(rng, asks), (unsigned)(ex_xorshift64(rng) % 1000000));
    if (ex_xorshift64(rng) % 100 < 80)
        ADD(" Reply to %s.%u@%s.", PICK(rng, first_names), (unsigned)(ex_xorshift64(rng) % 100),
            PICK(rng, domains));
    if (ex_xorshift64(rng) % 100 < 50)
        ADD(" Or call (%03u) %03u-%04u.", 200 + (unsigned)(ex_xorshift64(rng) % 800),
            (unsigned)(ex_xorshift64(rng) % 1000), (unsigned)(ex_xorshift64(rng) % 10000));
    if (ex_xorshift64(rng) % 100 < 33)
        ADD(" Their SSN is %03u-%02u-%04u.", 100 + (unsigned)(ex_xorshift64(rng) % 900),
            (unsigned)(ex_xorshift64(rng) % 100), (unsigned)(ex_xorshift64(rng) % 10000));
    for (unsigned k = 1 + (unsigned)(ex_xorshift64(rng) % 4); k > 0; k--)
        ADD("%s", PICK(rng, filler));
#undef ADD
    return n < len ? n : len - 1;
}

/* ================================================================ (a) redact */

/* The three patterns, in the order they are applied (an SSN would otherwise
 * be half-eaten by the phone pattern). */
static const struct {
    const char *regex, *mask;
} pii[] = {
    {"[0-9]{3}-[0-9]{2}-[0-9]{4}", "[SSN]"},
    {"(\\+?1[ .-]?)?\\(?[0-9]{3}\\)?[ .-]?[0-9]{3}[ .-]?[0-9]{4}", "[PHONE]"},
    {"[[:alnum:]._%+-]{1,64}@([[:alnum:]-]{1,63}\\.){1,4}[[:alpha:]]{2,24}", "[EMAIL]"},
};
#define NPII (sizeof(pii) / sizeof(pii[0]))

struct pii_set {
    regex_t re[NPII];
};

/* @return 0, or regcomp's error code (the set is then empty). */
static int pii_compile(struct pii_set *s)
{
    for (size_t i = 0; i < NPII; i++) {
        int rc = regcomp(&s->re[i], pii[i].regex, REG_EXTENDED);
        if (rc != 0) {
            while (i-- > 0)
                regfree(&s->re[i]);
            return rc;
        }
    }
    return 0;
}

/* The fix's set: compiled once, before the load, and shared by all clients. */
static struct pii_set pii_shared;

static void pii_free(struct pii_set *s)
{
    for (size_t i = 0; i < NPII; i++)
        regfree(&s->re[i]);
}

/* Copies `in` to `out` with every match of `re` replaced by `mask`. */
static void mask_all(const regex_t *re, const char *mask, const char *in, char *out, size_t cap)
{
    size_t n = 0, mlen = strlen(mask);
    int eflags = 0;
    regmatch_t m;
    while (*in && regexec(re, in, 1, &m, eflags) == 0 && m.rm_eo > m.rm_so) {
        size_t pre = (size_t)m.rm_so;
        if (n + pre + mlen >= cap)
            break;
        memcpy(out + n, in, pre);
        memcpy(out + n + pre, mask, mlen);
        n += pre + mlen;
        in += m.rm_eo;
        eflags = REG_NOTBOL;
    }
    size_t rest = strlen(in);
    if (n + rest >= cap)
        rest = cap - 1 - n;
    memcpy(out + n, in, rest);
    out[n + rest] = 0;
}

/* Masks the PII of prompt into out (cap bytes). `cached` is the caller's
 * compiled set (the fix), or NULL.
 * The bug: with no set, the three patterns are compiled on every call (and
 * freed after), which costs far more than matching them.
 * @return 0, or -1 if a pattern did not compile. */
__attribute__((noinline)) static int redact_pii(const char *prompt, char *out, size_t cap,
                                                const struct pii_set *cached)
{
    struct pii_set local;
    const struct pii_set *set = cached;
    if (!set) {
        if (pii_compile(&local) != 0)
            return -1;
        set = &local;
    }
    char tmp[PROMPT_MAX];
    const char *src = prompt;
    for (size_t i = 0; i < NPII; i++) { /* ping-pong between out and tmp */
        char *dst = i % 2 == NPII % 2 ? tmp : out;
        mask_all(&set->re[i], pii[i].mask, src, dst, i % 2 == NPII % 2 ? sizeof tmp : cap);
        src = dst;
    }
    if (!cached)
        pii_free(&local);
    return 0;
}

/* ================================================================ (b) quota */

/* Guards quota_used, audit_log and audit_off. */
static pthread_mutex_t quota_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t quota_used[NCLIENTS];
static char *audit_log; /* AUDIT_BYTES, a ring of records */
static size_t audit_off;
static uint64_t audit_records;

/* A digest of the prompt for the audit record, so that the log can prove
 * what was sent without holding it: DIGEST_ROUNDS chained passes of FNV-1a,
 * deliberately slow like a real key derivation (~0.5 ms here). */
static uint64_t audit_digest(const char *s, size_t len)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (unsigned r = 0; r < DIGEST_ROUNDS; r++) {
        h ^= r;
        for (size_t i = 0; i < len; i++) {
            h ^= (unsigned char)s[i];
            h *= UINT64_C(0x100000001b3);
        }
    }
    return h;
}

/* One audit line: time, client, bytes, cost, digest. @return its length. */
static size_t format_audit(char *rec, unsigned client, size_t len, unsigned cost, uint64_t digest)
{
    int n = snprintf(rec, AUDIT_REC_MAX,
                     "ts=%" PRIu64 " client=%03u bytes=%zu cost=%u digest=%016" PRIx64 "\n",
                     ex_now_ns(), client, len, cost, digest);
    return n < AUDIT_REC_MAX ? (size_t)n : AUDIT_REC_MAX - 1;
}

/* Appends a record to the ring; the caller holds quota_lock. */
static void audit_append(const char *rec, size_t n)
{
    if (audit_off + n > AUDIT_BYTES)
        audit_off = 0;
    memcpy(audit_log + audit_off, rec, n);
    audit_off += n;
    audit_records++;
}

/* Charges client for a prompt of len bytes and logs it.
 * The bug: quota_lock is held across the digest and the formatting, which
 * need nothing it guards, so every request does them one at a time.
 * The fix (fix.quota): both outside; the lock covers the counter and a copy. */
__attribute__((noinline)) static void quota_charge(unsigned client, const char *redacted,
                                                   size_t len)
{
    unsigned cost = 1 + (unsigned)len / 4; /* "tokens" */
    char rec[AUDIT_REC_MAX];
    if (!fix.quota) {
        pthread_mutex_lock(&quota_lock);
        uint64_t digest = audit_digest(redacted, len);
        size_t n = format_audit(rec, client, len, cost, digest);
        quota_used[client] += cost;
        audit_append(rec, n);
        pthread_mutex_unlock(&quota_lock);
        return;
    }
    uint64_t digest = audit_digest(redacted, len);
    size_t n = format_audit(rec, client, len, cost, digest);
    pthread_mutex_lock(&quota_lock);
    quota_used[client] += cost;
    audit_append(rec, n);
    pthread_mutex_unlock(&quota_lock);
}

/* ================================================================ (c) upstream */

static pthread_attr_t helper_attr; /* detached, HELPER_STACK */
static char answer[ANSWER_BYTES];  /* what every helper "answers" */

/* Helpers created and not yet returned; helpers not yet at their write().
 * Only main reads them, after the load, to wait for the helpers that can
 * still finish (relaxed would do: the waits poll; seq_cst keeps it simple). */
static atomic_long helpers_live, helpers_before_write;

struct upstream_job {
    int wfd;
    unsigned latency_us;
};

/* The upstream model: answers after the job's latency by writing ANSWER_BYTES
 * into the pipe, then exits. When nobody reads the pipe (the bug) the write
 * blocks forever once the 4 KiB buffer is full; when the reader closed its
 * end (the fix) it fails with EPIPE and the helper exits. */
__attribute__((noinline)) static void *upstream_helper(void *arg)
{
    struct upstream_job job = *(struct upstream_job *)arg;
    free(arg);
    sleep_us(job.latency_us);
    atomic_fetch_sub(&helpers_before_write, 1);
    size_t off = 0;
    while (off < ANSWER_BYTES) {
        ssize_t n = write(job.wfd, answer + off, ANSWER_BYTES - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EPIPE: the request gave up and closed its end */
        off += (size_t)n;
    }
    close(job.wfd);
    atomic_fetch_sub(&helpers_live, 1);
    return NULL;
}

enum { UPSTREAM_OK, UPSTREAM_TIMEOUT, UPSTREAM_ERROR };

/* Waits for fd to be readable until deadline (ns). @return 1 readable (or
 * hung up), 0 timed out, -1 error. */
static int wait_readable(int fd, uint64_t deadline)
{
    for (;;) {
        uint64_t now = ex_now_ns();
        int ms = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = poll(&p, 1, ms);
        if (rc > 0)
            return 1;
        if (rc == 0 && ex_now_ns() >= deadline)
            return 0;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

/* Asks the upstream for an answer, under a TIMEOUT_MS deadline, with the
 * latency the request's PRNG drew.
 * The bug: once the first byte is late the request returns and forgets the
 * pipe; its read end stays open and unread, so the helper blocks in write()
 * forever. (The rest of the answer is read without any deadline, too.)
 * The fix (fix.upstream): every read is under the deadline, and the read end
 * is closed whatever happens, which ends the helper's write with EPIPE.
 * @return UPSTREAM_OK, UPSTREAM_TIMEOUT or UPSTREAM_ERROR. */
__attribute__((noinline)) static int upstream_call(unsigned latency_us)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return UPSTREAM_ERROR;
    /* A small buffer, so that the answer never fits in it. */
    if (fcntl(fds[1], F_SETPIPE_SZ, PIPE_BYTES) < 0) {
        close(fds[0]);
        close(fds[1]);
        return UPSTREAM_ERROR;
    }
    struct upstream_job *job = malloc(sizeof *job);
    if (!job) {
        close(fds[0]);
        close(fds[1]);
        return UPSTREAM_ERROR;
    }
    *job = (struct upstream_job){.wfd = fds[1], .latency_us = latency_us};
    atomic_fetch_add(&helpers_live, 1);
    atomic_fetch_add(&helpers_before_write, 1);
    pthread_t tid;
    if (pthread_create(&tid, &helper_attr, upstream_helper, job) != 0) {
        atomic_fetch_sub(&helpers_live, 1);
        atomic_fetch_sub(&helpers_before_write, 1);
        free(job);
        close(fds[0]);
        close(fds[1]);
        return UPSTREAM_ERROR;
    }

    uint64_t deadline = ex_now_ns() + (uint64_t)TIMEOUT_MS * 1000000;
    int ready = wait_readable(fds[0], deadline);
    if (ready == 0 && !fix.upstream)
        return UPSTREAM_TIMEOUT; /* the leak: fds[0] stays open, unread */

    static _Thread_local char buf[PIPE_BYTES];
    size_t got = 0;
    int rc = ready < 0 ? UPSTREAM_ERROR : ready == 0 ? UPSTREAM_TIMEOUT : UPSTREAM_OK;
    while (rc == UPSTREAM_OK && got < ANSWER_BYTES) {
        if (fix.upstream && (ready = wait_readable(fds[0], deadline)) != 1) {
            rc = ready == 0 ? UPSTREAM_TIMEOUT : UPSTREAM_ERROR;
            break;
        }
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = UPSTREAM_ERROR; /* the helper never ends early */
            break;
        }
        got += (size_t)n;
    }
    close(fds[0]);
    return rc;
}

/* ================================================================ the load */

struct client {
    pthread_t tid;
    unsigned index;
    uint64_t deadline_ns;
    pthread_barrier_t *start;
    uint64_t *lat_ns; /* one per request, grown as needed */
    size_t n, cap;
    uint64_t timeouts, errors;
};

/* One request: redact, charge, ask upstream. @return its UPSTREAM_* result. */
static int request(struct client *c, uint64_t seq)
{
    uint64_t rng = ex_mix64(((uint64_t)c->index << 32 | seq) ^ UINT64_C(0x6a7e3a1)) | 1;
    char prompt[PROMPT_MAX], redacted[PROMPT_MAX];
    make_prompt(&rng, prompt, sizeof prompt);
    unsigned latency_us = ex_xorshift64(&rng) % 100 < SLOW_PERCENT
                              ? 8000 + (unsigned)(ex_xorshift64(&rng) % 4001)
                              : 1000 + (unsigned)(ex_xorshift64(&rng) % 2001);

    trace_task_t task = trace_task_begin("request", 0);
    trace_region_begin(task, "redact");
    int rc = redact_pii(prompt, redacted, sizeof redacted, fix.redact ? &pii_shared : NULL);
    trace_region_end(task, "redact");
    if (rc != 0) {
        trace_task_end(task);
        return UPSTREAM_ERROR;
    }

    trace_region_begin(task, "quota");
    quota_charge(c->index, redacted, strlen(redacted));
    trace_region_end(task, "quota");

    trace_region_begin(task, "upstream");
    rc = upstream_call(latency_us);
    trace_region_end(task, "upstream");
    if (rc == UPSTREAM_TIMEOUT)
        trace_logf(task, "upstream", "timed out after %d ms (latency %u us)", TIMEOUT_MS,
                   latency_us);
    trace_task_end(task);
    return rc;
}

/* A client's pause after its request number seq: 0.5-1.5 x THINK_MS, from a
 * PRNG of its own, so that the clients' requests interleave rather than come
 * in waves (the first, seq -1, is 0-1 x THINK_MS); never past the load's end. */
static void think(const struct client *c, uint64_t seq)
{
    uint64_t r = ex_mix64((uint64_t)c->index << 32 ^ seq ^ UINT64_C(0x7415));
    uint64_t us = (seq == UINT64_MAX ? 0 : THINK_MS * 500u) + r % (THINK_MS * 1000u);
    uint64_t now = ex_now_ns();
    if (now >= c->deadline_ns)
        return;
    if (now + us * 1000 > c->deadline_ns)
        us = (c->deadline_ns - now + 999) / 1000;
    sleep_us((unsigned)us);
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    char name[16];
    snprintf(name, sizeof name, "client-%03u", c->index);
    pthread_setname_np(pthread_self(), name); /* best effort: labels the trace */

    pthread_barrier_wait(c->start);
    think(c, UINT64_MAX); /* clients arrive at random moments too */
    for (uint64_t seq = 0; ex_now_ns() < c->deadline_ns; seq++) {
        if (c->n == c->cap) {
            size_t cap = c->cap ? 2 * c->cap : 256;
            uint64_t *p = realloc(c->lat_ns, cap * sizeof *p);
            if (!p) {
                c->errors++;
                break;
            }
            c->lat_ns = p;
            c->cap = cap;
        }
        uint64_t t0 = ex_now_ns();
        int rc = request(c, seq);
        c->lat_ns[c->n++] = ex_now_ns() - t0;
        c->timeouts += rc == UPSTREAM_TIMEOUT;
        c->errors += rc == UPSTREAM_ERROR;
        think(c, seq);
    }
    return NULL;
}

/* Waits (at most 2 s) until every helper has reached its write() and every
 * helper that returned is gone from /proc/self/task, so the count that
 * follows holds exactly the threads that will never end. @return the count. */
static int settle_threads(int before)
{
    int n = count_threads();
    for (int ms = 0; ms < 2000; ms++) {
        if (atomic_load(&helpers_before_write) == 0 &&
            n == before + (int)atomic_load(&helpers_live))
            break;
        sleep_us(1000);
        n = count_threads();
    }
    sleep_us(10000); /* the last helpers to pass their count get into write() */
    return count_threads();
}

/* Runs the load and prints its line. @return 0, or 1 if it could not run. */
static int run(double seconds, const char *trace_path)
{
    static struct client clients[NCLIENTS];
    pthread_barrier_t start;

    if (trace_path) {
        /* Every live thread holds one buffer chunk, and the leaked helpers
         * hold theirs for good: with the default 64 KiB chunks, a 64 MiB
         * pool runs dry at about a thousand threads. 16 KiB chunks make
         * room for four thousand. */
        struct trace_options o = {.path = trace_path, .chunk_bytes = 16u << 10};
        int rc = trace_start_opts(&o);
        if (rc < 0) {
            fprintf(stderr, "gateway: trace_start(%s): %s\n", trace_path, strerror(-rc));
            return 1;
        }
    }
    int before = count_threads();
    pthread_barrier_init(&start, NULL, NCLIENTS + 1);
    for (unsigned i = 0; i < NCLIENTS; i++) {
        clients[i] = (struct client){.index = i, .start = &start};
        int rc = pthread_create(&clients[i].tid, NULL, client_main, &clients[i]);
        if (rc != 0) {
            fprintf(stderr, "gateway: pthread_create: %s\n", strerror(rc));
            exit(1); /* the created clients wait at the barrier forever */
        }
    }
    uint64_t deadline = ex_now_ns() + (uint64_t)(seconds * 1e9);
    for (unsigned i = 0; i < NCLIENTS; i++)
        clients[i].deadline_ns = deadline; /* before the barrier: it orders this */
    uint64_t t0 = ex_now_ns();
    pthread_barrier_wait(&start);
    for (unsigned i = 0; i < NCLIENTS; i++)
        pthread_join(clients[i].tid, NULL);
    uint64_t wall = ex_now_ns() - t0;
    pthread_barrier_destroy(&start);

    int after = settle_threads(before);

    size_t total = 0;
    uint64_t timeouts = 0, errors = 0;
    for (unsigned i = 0; i < NCLIENTS; i++) {
        total += clients[i].n;
        timeouts += clients[i].timeouts;
        errors += clients[i].errors;
    }
    uint64_t *lat = malloc((total ? total : 1) * sizeof *lat);
    if (!lat) {
        fprintf(stderr, "gateway: out of memory\n");
        return 1;
    }
    size_t k = 0;
    for (unsigned i = 0; i < NCLIENTS; i++) {
        k = ex_append_u64(lat, k, clients[i].lat_ns, clients[i].n);
        free(clients[i].lat_ns);
    }
    ex_sort_u64(lat, total);
    /* Nearest-rank percentiles: the smallest latency >= p% of all requests. */
    uint64_t p50 = total ? ex_percentile(lat, total, 50) : 0;
    uint64_t p99 = total ? ex_percentile(lat, total, 99) : 0;
    free(lat);

    printf("gateway: requests=%zu errors=%" PRIu64 " throughput=%.0f/s p50_us=%.1f p99_us=%.1f"
           " timeouts=%" PRIu64 " threads_alive_before=%d threads_alive_after=%d\n",
           total, errors, (double)total / ((double)wall / 1e9), (double)p50 / 1e3,
           (double)p99 / 1e3, timeouts, before, after);
    fflush(stdout);

    if (trace_path) { /* now: the leaked helpers are still blocked in write() */
        int rc = trace_stop();
        if (rc < 0) {
            fprintf(stderr, "gateway: trace_stop: %s\n", strerror(-rc));
            return 1;
        }
        printf("gateway: trace written to %s\n", trace_path);
    }
    return 0;
}

/* ================================================================ main */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gateway [-fixed | -fix=LIST] [-seconds N] [-trace FILE]\n"
            "  -fixed        fix all three bugs\n"
            "  -fix=LIST     fix some: a comma-separated list of redact, quota, upstream\n"
            "  -seconds N    length of the load (default %.0f, at most 60)\n"
            "  -trace FILE   trace the load with ctrace into FILE\n"
            "%d clients send requests for N seconds, pausing %d-%d ms between them;\n"
            "a request redacts its prompt (3 regexes), charges the quota (audit digest)\n"
            "and asks upstream (%d%% take 8-12 ms, the rest 1-3 ms; timeout %d ms).\n"
            "Prints one line: requests, errors, throughput, p50/p99 latency, upstream\n"
            "timeouts, threads alive before and after the load.\n",
            DEFAULT_SECONDS, NCLIENTS, THINK_MS / 2, THINK_MS * 3 / 2, SLOW_PERCENT, TIMEOUT_MS);
}

/* Parses "redact,quota,upstream" (any subset) into fix. @return 0 or -1. */
static int parse_fixes(const char *list)
{
    char buf[64];
    if (strlen(list) >= sizeof buf)
        return -1;
    strcpy(buf, list);
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (!strcmp(w, "redact"))
            fix.redact = 1;
        else if (!strcmp(w, "quota"))
            fix.quota = 1;
        else if (!strcmp(w, "upstream"))
            fix.upstream = 1;
        else
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    double seconds = DEFAULT_SECONDS;
    const char *trace_path = NULL, *v = NULL;
    for (int i = 1; i < argc; i++) {
        int m;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help") || !strcmp(argv[i], "-help")) {
            usage(stdout);
            return 0;
        } else if (ex_flag(argc, argv, &i, "fixed", NULL) == 1) {
            fix = (struct fixes){1, 1, 1};
        } else if ((m = ex_flag(argc, argv, &i, "fix", &v)) != 0) {
            if (m < 0 || parse_fixes(v) != 0) {
                fprintf(stderr, "gateway: -fix wants a list of redact, quota, upstream\n");
                return 2;
            }
        } else if ((m = ex_flag(argc, argv, &i, "seconds", &v)) != 0) {
            char *end;
            seconds = m < 0 ? 0 : strtod(v, &end);
            if (m < 0 || *end || !(seconds > 0 && seconds <= 60)) {
                fprintf(stderr, "gateway: -seconds wants a number in (0, 60]\n");
                return 2;
            }
        } else if ((m = ex_flag(argc, argv, &i, "trace", &v)) != 0) {
            if (m < 0 || !*v) {
                fprintf(stderr, "gateway: -trace wants a file\n");
                return 2;
            }
            trace_path = v;
        } else {
            fprintf(stderr, "gateway: unknown argument '%s' (try gateway -h)\n", argv[i]);
            return 2;
        }
    }

    /* A helper whose reader closed its end gets EPIPE, not a fatal signal. */
    signal(SIGPIPE, SIG_IGN);
    /* Each leaked helper keeps two descriptors: allow as many as we may. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    audit_log = malloc(AUDIT_BYTES);
    if (!audit_log) {
        fprintf(stderr, "gateway: out of memory\n");
        return 1;
    }
    memset(answer, 'a', sizeof answer);
    if (fix.redact && pii_compile(&pii_shared) != 0) {
        fprintf(stderr, "gateway: a PII pattern does not compile\n");
        return 1;
    }
    size_t stack = HELPER_STACK;
    long min = sysconf(_SC_THREAD_STACK_MIN);
    if (min > 0 && stack < (size_t)min)
        stack = (size_t)min;
    if (pthread_attr_init(&helper_attr) != 0 ||
        pthread_attr_setdetachstate(&helper_attr, PTHREAD_CREATE_DETACHED) != 0 ||
        pthread_attr_setstacksize(&helper_attr, stack) != 0) {
        fprintf(stderr, "gateway: cannot set up the helper threads' attributes\n");
        return 1;
    }

    printf("gateway: %s build (%s%s%s%s), %d clients for %.1f s%s%s\n",
           fix.redact && fix.quota && fix.upstream   ? "fixed"
           : fix.redact || fix.quota || fix.upstream ? "partly fixed"
                                                     : "slow",
           "fixed:", fix.redact ? " redact" : "", fix.quota ? " quota" : "",
           fix.upstream                ? " upstream"
           : !fix.redact && !fix.quota ? " none"
                                       : "",
           NCLIENTS, seconds, trace_path ? ", tracing into " : "", trace_path ? trace_path : "");
    fflush(stdout);
    return run(seconds, trace_path);
}
