/* SPDX-License-Identifier: MIT */
/* control.c - the control channel (CONTROL.md): a Unix socket of the
 * process's own through which `ctrace ctl` asks what is being recorded, for
 * the flight recorder's window, or for a trace of the next seconds.
 *
 * It has no thread of its own: the collector's thread serves it between its
 * rounds (ctr__control_serve), and sleeps in poll() on the socket, its
 * clients and an eventfd that takes the kicks (ctr__control_wait,
 * ctr__control_kick) instead of on its futex. Opening the channel keeps
 * that thread up between sessions (ctr__collector_keep), which is all that
 * a dormant process (`ctrace run -dormant`) runs.
 *
 * The rules that keep the program unharmed:
 *   - every descriptor here is the tracer's (fdguard.c: high, close-on-exec,
 *     out of the program's way), every socket non-blocking;
 *   - the collector never waits for anything a client does, nor for the API
 *     lock (whose holder may be waiting for a round): a command that needs
 *     the lock tries again at the next wake-up;
 *   - what a client sends is hostile until parsed (ctr_ctl_parse_request);
 *     a client of another user is refused before its request is read;
 *   - a path is never taken from a client: files come as descriptors.
 * The commands' work is the sinks': a dump asks the sink that keeps a
 * window (sink.h, `dump`), a status asks each sink for its lines, and a
 * trace is a file sink of the channel's own (filesink.c).
 */
#include "collect/collector.h"
#include "collect/face.h"
#include "collect/sink.h"
#include "core/clock.h"
#include "core/fdguard.h"
#include "core/hooks.h"
#include "core/lock.h"
#include "core/real.h"
#include "core/scribe.h"
#include "core/session.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_control.h"
#include "face.h"
#include "sinks/filesink.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum client_state {
    CL_FREE,
    CL_REQUEST, /* connected; its request not read yet */
    CL_PENDING, /* its command waits for the API lock */
    CL_TRACING, /* its trace runs until `until_ns` */
    CL_ENDING,  /* its trace is over; the end waits for the API lock */
};

struct client {
    _Atomic int fd; /* the connection: a tracer descriptor (its holder) */
    enum client_state state;
    uint64_t until_ns; /* CL_REQUEST: when it is dropped; CL_TRACING: the trace's end */
    int cmd;
    uint64_t arg;
    struct ctr_owned_fd out; /* the file it sent, when has_out */
    int has_out;
    int gone; /* it hung up during its trace: no reply */
    uint64_t events0, dropped0, start_ns;
};

static struct control {
    /* The fields below: the API's open and close hold it; the collector
     * only tries it (it must never wait: see the top). */
    struct ctr_lock lock;
    _Atomic int open; /* release by open/close, acquire by the collector */
    _Atomic int listen_fd;
    /* Made once and never closed (a kick may come from any thread at any
     * time, even as the process exits), but in a forked child. */
    _Atomic int efd;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    struct trace_options opts; /* a session a trace request begins */
    struct client clients[CTR_CTL_CLIENTS_MAX];
    struct ctr_file_sink trace; /* the trace request's file, attached while one runs */
} K = {.listen_fd = -1, .efd = -1};

static uint64_t now_ns(void)
{
    return ctr__clock_ns(CLOCK_MONOTONIC);
}

/* ---------------------------------------------------------------------------
 * Opening and closing (API lock held)
 * ------------------------------------------------------------------------- */

/* Makes dir (its parent must exist) or checks the one there: a directory,
 * not a link, the effective user's, writable by no one else. */
static int private_dir(const char *dir)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (lstat(dir, &st) != 0)
        return -errno;
    return S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 077) ? 0 : -EPERM;
}

/* Binds fd to K.path, replacing a socket file that nobody listens on (one
 * left by a killed process that had this pid). */
static int bind_path(int fd)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, K.path, strlen(K.path) + 1);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
        return 0;
    if (errno != EADDRINUSE)
        return -errno;
    int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    int live =
        probe < 0 || connect(probe, (struct sockaddr *)&a, sizeof(a)) == 0 || errno != ECONNREFUSED;
    if (probe >= 0)
        close(probe);
    if (live)
        return -EADDRINUSE;
    unlink(K.path);
    return bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : -errno;
}

/* Removes from dir the sockets of processes that are gone without removing
 * theirs (killed, or ended by _exit as a shell does): no client lists them
 * (they are no socket in /proc/net/unix), but the directory would fill. A
 * pid that lives again keeps its file: its own open replaces it. */
static void sweep(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        long pid = ctr_ctl_sock_pid(e->d_name);
        char path[PATH_MAX];
        if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH &&
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
            unlink(path);
    }
    closedir(d);
}

/* Closes the listening socket, and removes its file if it was bound. */
static void close_socket(int bound)
{
    if (bound)
        unlink(K.path);
    /* relaxed: stored only under the API lock, which is held. */
    ctr__fd_close(atomic_load_explicit(&K.listen_fd, memory_order_relaxed));
    atomic_store_explicit(&K.listen_fd, -1, memory_order_relaxed);
}

static int open_socket(void)
{
    char dir[PATH_MAX];
    if (ctr_ctl_dir(secure_getenv("XDG_RUNTIME_DIR"), (unsigned)geteuid(), dir, sizeof(dir)) != 0)
        return -ENAMETOOLONG;
    int rc = private_dir(dir);
    if (rc != 0)
        return rc;
    sweep(dir);
    int n = snprintf(K.path, sizeof(K.path), "%s/" CTR_CTL_SOCK_PREFIX "%ld" CTR_CTL_SOCK_SUFFIX,
                     dir, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof(K.path))
        return -ENAMETOOLONG;
    int fd = ctr__fd_adopt(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0),
                           &K.listen_fd);
    if (fd < 0)
        return fd;
    int bound = (rc = bind_path(fd)) == 0;
    /* The directory keeps others out already; the socket says so too. */
    if (bound && (chmod(K.path, 0600) != 0 || listen(fd, CTR_CTL_CLIENTS_MAX) != 0))
        rc = -errno;
    if (rc != 0)
        close_socket(bound);
    return rc;
}

int ctr__control_open(const struct trace_options *o)
{
    /* relaxed: open is stored only under the API lock, which is held. */
    if (atomic_load_explicit(&K.open, memory_order_relaxed))
        return 0;
    int rc = ctr__init();
    if (rc != 0)
        return rc;
    struct ctr_thread *saved = ctr__internal_begin(); /* the program's calls, not these */
    /* relaxed (efd, listen_fd): published by the release store of open. */
    if (atomic_load_explicit(&K.efd, memory_order_relaxed) < 0) {
        int efd = ctr__fd_adopt(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), &K.efd);
        rc = efd < 0 ? efd : 0;
    }
    if (rc == 0)
        rc = open_socket();
    ctr__internal_end(saved);
    if (rc != 0)
        return rc;
    K.opts = *o;
    K.opts.path = NULL;
    K.opts.fd = 0;
    K.opts.control = 0;
    K.trace.sink.name = "ctl-trace";
    for (int i = 0; i < CTR_CTL_CLIENTS_MAX; i++)
        K.clients[i].state = CL_FREE;
    /* release: the fields above before the collector reads them (pairs with
     * the acquire loads in ctr__control_wait and _serve). */
    atomic_store_explicit(&K.open, 1, memory_order_release);
    if ((rc = ctr__collector_keep()) != 0) {
        atomic_store_explicit(&K.open, 0, memory_order_relaxed); /* no collector has seen it */
        close_socket(1);
        return rc;
    }
    ctr__collector_kick(); /* a collector asleep on its futex: at most a round late */
    return 0;
}

/* ---------------------------------------------------------------------------
 * Clients
 * ------------------------------------------------------------------------- */

/* Sends the reply (one message; a client that went away is not told). */
static void reply(struct client *c, const char *text, size_t n)
{
    ctr__fd_use_begin(1);
    /* relaxed: the use keeps a move off (fdguard.c). */
    int fd = atomic_load_explicit(&c->fd, memory_order_relaxed);
    send(fd, text, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    ctr__fd_use_end();
}

static void reply_error(struct client *c, int err, const char *text)
{
    char msg[256];
    int n = snprintf(msg, sizeof(msg), "error %d %s\n", err, text);
    reply(c, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

static void drop(struct client *c)
{
    if (c->has_out)
        ctr__owned_close(&c->out);
    c->has_out = 0;
    /* relaxed: the collector's own descriptor (moves update it under the
     * registry's lock). */
    ctr__fd_close(atomic_load_explicit(&c->fd, memory_order_relaxed));
    c->state = CL_FREE;
}

static void accept_clients(void)
{
    /* A few at a time: a flood of connections must not keep the collector
     * from its rounds. */
    for (int k = 0; k < 2 * CTR_CTL_CLIENTS_MAX; k++) {
        ctr__fd_use_begin(1);
        /* relaxed: as in reply. */
        int fd = accept4(atomic_load_explicit(&K.listen_fd, memory_order_relaxed), NULL, NULL,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        ctr__fd_use_end();
        if (fd < 0)
            return;
        struct client *c = NULL;
        for (int i = 0; i < CTR_CTL_CLIENTS_MAX && !c; i++)
            if (K.clients[i].state == CL_FREE)
                c = &K.clients[i];
        if (!c) {
            close(fd); /* not adopted: not the tracer's yet */
            continue;
        }
        if (ctr__fd_adopt(fd, &c->fd) < 0)
            continue;
        c->state = CL_REQUEST;
        c->has_out = 0;
        c->gone = 0;
        c->until_ns = now_ns() + CTR_CTL_REQUEST_TIMEOUT_NS;
        /* Only the process's own user, and root (CONTROL.md §3). */
        struct ucred cred;
        socklen_t len = sizeof(cred);
        ctr__fd_use_begin(1);
        int rc = getsockopt(atomic_load_explicit(&c->fd, memory_order_relaxed), SOL_SOCKET,
                            SO_PEERCRED, &cred, &len);
        ctr__fd_use_end();
        if (rc != 0 || (cred.uid != geteuid() && cred.uid != 0)) {
            reply_error(c, EACCES, "permission denied: not the process's user");
            drop(c);
        }
    }
}

/* Reads c's request: its command, and the descriptor it carries (adopted
 * into c->out). @return 1 when one was read; 0 when none is there yet; -1
 * when c was dropped (hung up, timed out, garbage: answered then). */
static int read_request(struct client *c, uint64_t now)
{
    char msg[CTR_CTL_MSG_MAX];
    union {
        struct cmsghdr h;
        char room[CMSG_SPACE(8 * sizeof(int))];
    } ctl;
    struct iovec iov = {msg, sizeof(msg)};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof(ctl)};
    ctr__fd_use_begin(1);
    ssize_t n = recvmsg(atomic_load_explicit(&c->fd, memory_order_relaxed), &mh,
                        MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    ctr__fd_use_end();
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (now < c->until_ns)
            return 0;
        reply_error(c, ETIMEDOUT, "no request came");
        drop(c);
        return -1;
    }
    /* Every descriptor that came: the first is kept if the command takes
     * one, the rest are closed unread. */
    int got = -1;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h))
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS)
            for (size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(fd));
                if (got < 0)
                    got = fd;
                else
                    close(fd);
            }
    if (n <= 0) { /* hung up, or failed */
        if (got >= 0)
            close(got);
        drop(c);
        return -1;
    }
    const char *why = NULL;
    int err = EINVAL;
    if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
        ctr_ctl_parse_request(msg, (size_t)n, &c->cmd, &c->arg) != 0)
        why = "not a request (ctrace ctl -h)";
    else if (ctr_ctl_spec(c->cmd)->takes_fd && got < 0)
        why = "the request came without its file", err = EBADF;
    else if (c->cmd == CTR_CTL_TRACE &&
             (c->arg < CTR_CTL_TRACE_MIN_NS || c->arg > CTR_CTL_TRACE_MAX_NS))
        why = "the trace's duration is out of range (1ms to 24h)";
    if (!why && got >= 0 && ctr_ctl_spec(c->cmd)->takes_fd) {
        int fd = got;
        struct stat st;
        int mode = fcntl(fd, F_GETFL);
        got = -1;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
            why = "the file is not a regular file", err = EBADF;
        else if (mode < 0 || (mode & O_ACCMODE) == O_RDONLY || (mode & O_APPEND))
            why = "the file is not open for writing", err = EBADF;
        if (why)
            close(fd);
        else if ((err = -ctr__owned_adopt(&c->out, fd)) != 0) /* which closes it */
            why = err == EAGAIN ? "files written earlier still stall (a frozen or hung "
                                  "filesystem?): no more until they return"
                                : "out of descriptors";
        else
            c->has_out = 1;
    }
    if (got >= 0)
        close(got);
    if (why) {
        reply_error(c, err, why);
        drop(c);
        return -1;
    }
    return 1;
}

/* ---------------------------------------------------------------------------
 * Commands
 * ------------------------------------------------------------------------- */

static uint64_t session_events(void)
{
    /* relaxed: counters read only for statistics. */
    return atomic_load_explicit(&ctr__session.events_recorded, memory_order_relaxed);
}

static uint64_t session_dropped(void)
{
    /* relaxed: as above. */
    return atomic_load_explicit(&ctr__session.events_dropped, memory_order_relaxed);
}

static void run_status(struct client *c)
{
    char msg[CTR_CTL_MSG_MAX], state[128] = "";
    struct ctr_sink *sinks[CTR_SINKS_MAX];
    unsigned n = ctr__sinks_wanted(sinks);
    size_t at = 0;
    for (unsigned i = 0; i < n; i++)
        if (ctr__sink_is_attached(sinks[i]) && sinks[i]->name)
            at += (size_t)snprintf(state + at, at < sizeof(state) ? sizeof(state) - at : 0, "%s%s",
                                   at ? "," : "", sinks[i]->name);
    /* relaxed: a hint; the counters it guards are statistics. */
    int on = atomic_load_explicit(&ctr__session.epoch, memory_order_relaxed) != 0;
    int len = snprintf(msg, sizeof(msg),
                       "ok\npid=%ld\nstate=%s\nevents=%llu\ndropped=%llu\nfiles_stalled=%u\n"
                       "mapped_bytes=%zu\n",
                       (long)getpid(), at && at < sizeof(state) ? state : "dormant",
                       on ? (unsigned long long)session_events() : 0ull,
                       on ? (unsigned long long)session_dropped() : 0ull, ctr__scribe_stuck(),
                       ctr__mapped_bytes());
    for (unsigned i = 0; i < n && len > 0 && (size_t)len < sizeof(msg); i++)
        if (ctr__sink_is_attached(sinks[i]) && sinks[i]->ops->status)
            len += (int)sinks[i]->ops->status(sinks[i], msg + len, sizeof(msg) - (size_t)len);
    reply(c, msg, len > 0 && (size_t)len < sizeof(msg) ? (size_t)len : 0);
    drop(c);
}

static void run_dump(struct client *c)
{
    struct ctr_sink *sinks[CTR_SINKS_MAX];
    unsigned n = ctr__sinks_wanted(sinks);
    int rc = -ENOENT;
    for (unsigned i = 0; i < n && rc == -ENOENT; i++)
        if (ctr__sink_is_attached(sinks[i]) && sinks[i]->ops->dump)
            rc = sinks[i]->ops->dump(sinks[i], &c->out);
    struct stat st;
    /* relaxed: the collector's own descriptor, as in drop. */
    if (rc == 0 && fstat(atomic_load_explicit(&c->out.fd, memory_order_relaxed), &st) != 0)
        rc = -errno;
    if (rc == 0) {
        char msg[64];
        int len = snprintf(msg, sizeof(msg), "ok\nbytes=%lld\n", (long long)st.st_size);
        reply(c, msg, (size_t)len);
    } else {
        reply_error(c, -rc,
                    rc == -ENOENT  ? "no flight recorder is running (ctrace run -flight)"
                    : rc == -EBUSY ? "another dump is being written"
                                   : ctr__scribe_strerror(-rc));
    }
    drop(c);
}

/* Starts c's trace (API lock held). */
static void trace_begin(struct client *c)
{
    if (ctr__sink_is_attached(&K.trace.sink)) {
        reply_error(c, EBUSY, "another ctl trace is running");
        drop(c);
        return;
    }
    int rc = ctr__file_sink_start(&K.trace, &K.opts, &c->out);
    if (rc != 0) {
        reply_error(c, -rc, ctr__scribe_strerror(-rc));
        drop(c);
        return;
    }
    c->state = CL_TRACING;
    c->start_ns = now_ns();
    c->until_ns = c->start_ns + c->arg;
    c->events0 = session_events();
    c->dropped0 = session_dropped();
}

/* Ends c's trace (API lock held): its file complete, the reply sent. */
static void trace_end(struct client *c)
{
    ctr__sink_detach(&K.trace.sink); /* a round on this thread: the file ends */
    uint64_t bytes;
    int rc = ctr__file_sink_result(&K.trace, &bytes);
    if (!c->gone && rc != 0) {
        reply_error(c, -rc, ctr__scribe_strerror(-rc));
    } else if (!c->gone) {
        char msg[256];
        int len =
            snprintf(msg, sizeof(msg), "ok\nbytes=%llu\nevents=%llu\ndropped=%llu\nspan_ns=%llu\n",
                     (unsigned long long)bytes, (unsigned long long)(session_events() - c->events0),
                     (unsigned long long)(session_dropped() - c->dropped0),
                     (unsigned long long)(now_ns() - c->start_ns));
        reply(c, msg, (size_t)len);
    }
    drop(c);
}

/* Whether a trace's client hung up (what it sends meanwhile is read and
 * ignored, so it never keeps poll() awake). */
static int hung_up(struct client *c)
{
    char junk[256];
    ssize_t n;
    ctr__fd_use_begin(1);
    do
        n = recv(atomic_load_explicit(&c->fd, memory_order_relaxed), junk, sizeof(junk),
                 MSG_DONTWAIT);
    while (n > 0);
    ctr__fd_use_end();
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void serve_client(struct client *c, uint64_t now)
{
    if (c->state == CL_REQUEST && read_request(c, now) <= 0)
        return;
    if (c->state == CL_REQUEST || c->state == CL_PENDING) {
        c->state = CL_PENDING;
        if (c->cmd == CTR_CTL_STATUS)
            run_status(c);
        else if (c->cmd == CTR_CTL_DUMP)
            run_dump(c);
        else if (ctr__api_trylock()) { /* else: at the next wake-up */
            trace_begin(c);
            ctr__api_unlock();
        }
        return;
    }
    if (c->state == CL_TRACING && (now >= c->until_ns || hung_up(c))) {
        c->gone = now < c->until_ns;
        c->state = CL_ENDING;
    }
    if (c->state == CL_ENDING && ctr__api_trylock()) {
        trace_end(c);
        ctr__api_unlock();
    }
}

/* ---------------------------------------------------------------------------
 * The collector's side
 * ------------------------------------------------------------------------- */

static void serve_clients(void)
{
    uint64_t now = now_ns();
    for (int i = 0; i < CTR_CTL_CLIENTS_MAX; i++)
        if (K.clients[i].state != CL_FREE)
            serve_client(&K.clients[i], now);
}

void ctr__control_serve(void)
{
    /* acquire: pairs with the release store in ctr__control_open. */
    if (!atomic_load_explicit(&K.open, memory_order_acquire) || !ctr_lock_try(&K.lock))
        return;
    if (atomic_load_explicit(&K.open, memory_order_relaxed)) { /* not closed meanwhile */
        /* Served before the new ones are accepted, so the slots of clients
         * that hung up are free for them; and again after, so a request
         * that came with its connection is answered this round. */
        serve_clients();
        accept_clients();
        serve_clients();
    }
    ctr_lock_release(&K.lock);
}

int ctr__control_wait(uint64_t timeout_ns)
{
    /* acquire: as in ctr__control_serve. */
    if (!atomic_load_explicit(&K.open, memory_order_acquire))
        return -1;
    struct pollfd p[2 + CTR_CTL_CLIENTS_MAX];
    nfds_t n = 0;
    /* relaxed (descriptors): published by open's release store; a move
     * while poll sleeps costs at most a wake-up missed until a timeout. */
    p[n++] = (struct pollfd){atomic_load_explicit(&K.efd, memory_order_relaxed), POLLIN, 0};
    uint64_t now = now_ns(), wake_at = timeout_ns == UINT64_MAX ? UINT64_MAX : now + timeout_ns;
    const uint64_t retry_ns = 1000 * 1000; /* a command waiting for the API lock */
    if (ctr_lock_try(&K.lock)) {
        p[n++] =
            (struct pollfd){atomic_load_explicit(&K.listen_fd, memory_order_relaxed), POLLIN, 0};
        for (int i = 0; i < CTR_CTL_CLIENTS_MAX; i++) {
            struct client *c = &K.clients[i];
            uint64_t at = c->state == CL_PENDING || c->state == CL_ENDING ? now + retry_ns
                          : c->state == CL_FREE                           ? UINT64_MAX
                                                                          : c->until_ns;
            if (at < wake_at)
                wake_at = at;
            if (c->state == CL_REQUEST || c->state == CL_TRACING)
                p[n++] =
                    (struct pollfd){atomic_load_explicit(&c->fd, memory_order_relaxed), POLLIN, 0};
        }
        ctr_lock_release(&K.lock);
    } else if (now + retry_ns < wake_at) {
        wake_at = now + retry_ns;
    }
    uint64_t left = wake_at > now ? wake_at - now : 0;
    struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
    ppoll(p, n, wake_at == UINT64_MAX ? NULL : &ts, NULL);
    if (p[0].revents & POLLIN) {
        uint64_t v;
        ctr__fd_use_begin(1);
        if (read(atomic_load_explicit(&K.efd, memory_order_relaxed), &v, sizeof(v)) < 0)
            v = 0; /* another reader took it: nothing to do */
        ctr__fd_use_end();
    }
    return 0;
}

void ctr__control_kick(void)
{
    /* relaxed: a number stored once its descriptor exists (ctr__fd_adopt),
     * never closed after (but in a forked child, alone); nothing else is
     * read on its strength. */
    if (atomic_load_explicit(&K.efd, memory_order_relaxed) < 0 || !ctr__fd_use_begin(0))
        return;
    uint64_t one = 1;
    int saved = errno;
    /* relaxed: the use keeps a move off (fdguard.c). */
    if (ctr__real.write(atomic_load_explicit(&K.efd, memory_order_relaxed), &one, sizeof(one)) < 0)
        one = 0; /* full (it is read at every wake-up): the collector is awake anyway */
    errno = saved;
    ctr__fd_use_end();
}

void ctr__control_close(void)
{
    /* relaxed: open is stored only under the API lock, which is held. */
    if (!atomic_load_explicit(&K.open, memory_order_relaxed))
        return;
    ctr_lock_acquire(&K.lock); /* the collector never waits for it */
    for (int i = 0; i < CTR_CTL_CLIENTS_MAX; i++) {
        struct client *c = &K.clients[i];
        if (c->state == CL_TRACING || c->state == CL_ENDING)
            trace_end(c); /* a complete, shorter trace: the process ends */
        else if (c->state != CL_FREE) {
            reply_error(c, ESHUTDOWN, "the process is exiting");
            drop(c);
        }
    }
    close_socket(1);
    /* release: pairs with the collector's acquire loads. */
    atomic_store_explicit(&K.open, 0, memory_order_release);
    ctr_lock_release(&K.lock);
    ctr__collector_release();
}

void ctr__control_forked(void)
{
    /* The child's only thread: the parent's socket is the parent's (its
     * descriptors are gone: ctr__fd_forget_all), and so is its file. */
    K.lock = (struct ctr_lock){0};
    atomic_store_explicit(&K.open, 0, memory_order_relaxed);
    atomic_store_explicit(&K.listen_fd, -1, memory_order_relaxed);
    atomic_store_explicit(&K.efd, -1, memory_order_relaxed);
    for (int i = 0; i < CTR_CTL_CLIENTS_MAX; i++)
        K.clients[i].state = CL_FREE;
}

/* At exit, after the program's trace and recorder have stopped (a smaller
 * priority runs later): the socket file goes with the process. */
__attribute__((destructor(101))) static void control_at_exit(void)
{
    ctr__api_lock();
    ctr__control_close();
    ctr__api_unlock();
}
