/* SPDX-License-Identifier: MIT */
/* ctl.c - `ctrace ctl` (see ctl.h): the client side of the control channel,
 * whose protocol is format/CONTROL.md and whose commands are the
 * table of ctrace_control.h (CTR_CTL_COMMANDS); this file adds no command
 * of its own, only the command line around the table's.
 *
 * One request per run: find PID's listening socket in /proc/net/unix,
 * connect, check that the peer is PID itself (SO_PEERCRED: a socket of that
 * name planted by another process is never talked to), send the request with
 * FILE's descriptor, wait for the one reply and say what it says.
 *
 * The file: the process never opens a path; ctl opens FILE with the
 * caller's own permissions and passes the descriptor. So that FILE is
 * written whole or not at all, the descriptor is a temporary file beside
 * FILE (same directory, so the same file system), renamed over FILE only
 * after an "ok"; on any failure or signal it is removed and FILE is left as
 * it was. "-" is standard output, passed as it is when it is a file.
 *
 * Signals: SIGINT and SIGTERM set a flag. Blocking calls (connect, sendmsg)
 * are not restarted (no SA_RESTART), so they return EINTR; the wait for the
 * reply is a ppoll() that lets the signals in only while it sleeps, so a
 * signal is seen however late it comes. Closing the connection is what
 * tells the process to end a trace early (CONTROL.md, section 3).
 */
#include "cli/ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "ctrace_control.h"
#include "ctrace_grow.h"
#include "profile/text.h"

#define VERB "ctl"
/* How long a reply may take beyond the command's own time (a trace's
 * duration); also the most a connect or a send may block. */
#define WAIT_NS (30ull * 1000 * 1000 * 1000)
#define TRACE_DEFAULT_NS (5ull * 1000 * 1000 * 1000)
/* CTR_CTL_TRACE_MIN_NS..CTR_CTL_TRACE_MAX_NS as -for is written. */
#define TRACE_RANGE "1ms to 24h"
_Static_assert(CTR_CTL_TRACE_MIN_NS == 1000000ull &&
                   CTR_CTL_TRACE_MAX_NS == 24ull * 3600 * 1000 * 1000 * 1000,
               "TRACE_RANGE names the range of ctrace_control.h");
/* A listening socket in /proc/net/unix's Flags (__SO_ACCEPTCON, linux/net.h). */
#define UNIX_ACCEPTCON 0x10000
/* -list: the most characters of a command line shown. */
#define LIST_COMMAND_MAX 80
#define EXIT_SIGNAL_BASE 128

/* ====================================================================== usage */

static const char usage_head[] =
    "usage: ctrace ctl PID COMMAND [-for DURATION] [FILE]\n"
    "       ctrace ctl -list\n"
    "Sends one command to the running process PID and says what it answers.\n"
    "PID accepts commands when its control channel is open: CTRACE_CONTROL=1 in\n"
    "its environment with libctrace loaded (ctrace run), or its own\n"
    "trace_start_opts. COMMAND, in the process's words (CONTROL.md):\n";

static const char usage_tail[] =
    "Flags:\n"
    "  -for DURATION   how long trace traces, " TRACE_RANGE " (default 5s; 500ms, 1m)\n"
    "  -list           the processes that accept commands, one a line\n"
    "Output, on standard output:\n"
    "  status  the reply's key=value lines as the process sent them (CONTROL.md\n"
    "          names the keys; later versions add more)\n"
    "  dump    wrote FILE: N bytes\n"
    "  trace   wrote FILE: N bytes, E events, D dropped, over SPAN\n"
    "  -list   PID<TAB>USER<TAB>COMMAND (its arguments, cut at 80 characters)\n"
    "FILE is written whole or not at all: into a temporary file beside it, renamed\n"
    "over it (a symbolic link there is replaced, not followed) when the process\n"
    "says ok. Only a regular file (a pipe could stall the process's collector):\n"
    "FILE - is standard output when it is redirected to a file; the \"wrote\"\n"
    "line then goes to standard error.\n"
    "Exit status: 0 ok, 1 error (the process's own included), 2 usage, 130 or 143\n"
    "interrupted by SIGINT or SIGTERM (a trace in progress then ends early).\n";

/* Prints a row's help as the command line says it: the table speaks of the
 * request, whose descriptor is ctl's FILE and whose ARG nanoseconds are
 * -for's DURATION. */
static void put_help(FILE *f, const char *help)
{
    static const struct {
        const char *request, *cli;
    } words[] = {{"the descriptor", "FILE"}, {"ARG nanoseconds", "DURATION"}};
    while (*help) {
        size_t k = 0;
        while (k < sizeof(words) / sizeof(words[0]) &&
               strncmp(help, words[k].request, strlen(words[k].request)) != 0)
            k++;
        if (k < sizeof(words) / sizeof(words[0])) {
            fputs(words[k].cli, f);
            help += strlen(words[k].request);
        } else {
            fputc(*help++, f);
        }
    }
}

/* `ctrace ctl -h`: each command's line comes from the table. */
static void ctl_usage(FILE *f)
{
    fputs(usage_head, f);
    for (int id = 0; id < CTR_CTL_COMMAND_COUNT; id++) {
        const struct ctr_ctl_spec *s = ctr_ctl_spec(id);
        fprintf(f, "  %s%s%s\n      ", s->name, s->takes_arg ? " [-for DURATION]" : "",
                s->takes_fd ? " FILE" : "");
        put_help(f, s->help);
        fputc('\n', f);
    }
    fputs(usage_tail, f);
}

/* The table's command names as "a, b or c", for a usage error. */
static const char *command_names(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int id = 0; id < CTR_CTL_COMMAND_COUNT && n < cap; id++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s",
                              id == 0                           ? ""
                              : id == CTR_CTL_COMMAND_COUNT - 1 ? " or "
                                                                : ", ",
                              ctr_ctl_spec(id)->name);
    return buf;
}

/* ==================================================================== errors */

/* Prints "ctrace: ctl: PID: MESSAGE" (without "PID: " when pid is 0) on
 * stderr. @return 1, the exit status of an error. */
static int fail(long pid, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(long pid, const char *fmt, ...)
{
    if (pid > 0)
        fprintf(stderr, "ctrace: " VERB ": %ld: ", pid);
    else
        fputs("ctrace: " VERB ": ", stderr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

/* ============================================================ finding sockets */

struct sock {
    long pid;   /* from its name (ctr_ctl_sock_pid), not yet checked */
    char *path; /* absolute */
};

struct socks {
    struct sock *v;
    size_t n, cap;
};

static void socks_free(struct socks *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].path);
    free(l->v);
    *l = (struct socks){0};
}

/* The listening SOCK_SEQPACKET sockets of /proc/net/unix named as a
 * control channel's (CONTROL.md, section 1), of process pid (0: of any),
 * into *l in the file's order. Those bound to a relative path are left out:
 * their name means nothing from here. @return 0, or 1 after saying why. */
static int find_sockets(long pid, struct socks *l)
{
    FILE *f = fopen("/proc/net/unix", "re");
    if (!f)
        return fail(0, "/proc/net/unix: %s", strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    /* Num: RefCount Protocol Flags Type St Inode Path; the first line is
     * that header. */
    for (int first = 1; getline(&line, &cap, f) > 0; first = 0) {
        unsigned long flags;
        unsigned type;
        int at = -1;
        if (first || sscanf(line, "%*[^:]: %*x %*x %lx %x %*x %*s%n", &flags, &type, &at) != 2 ||
            at < 0)
            continue;
        char *path = line + at;
        path += strspn(path, " ");
        path[strcspn(path, "\n")] = 0;
        long p = ctr_ctl_sock_pid(path);
        if (!(flags & UNIX_ACCEPTCON) || type != SOCK_SEQPACKET || path[0] != '/' || p < 0 ||
            (pid && p != pid))
            continue;
        char *copy = strdup(path);
        if (!copy || ctr_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v)) != 0) {
            free(copy);
            rc = fail(0, "out of memory");
            break;
        }
        l->v[l->n++] = (struct sock){p, copy};
    }
    if (rc == 0 && ferror(f))
        rc = fail(0, "reading /proc/net/unix: %s", strerror(errno));
    free(line);
    fclose(f);
    return rc;
}

/* ==================================================================== signals */

/* The signal that asked ctl to stop (SIGINT, SIGTERM), 0 while none did. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

struct signals {
    struct sigaction old_int, old_term;
};

/* Catches SIGINT and SIGTERM into stop_signal, but leaves one that is
 * ignored ignored (a background job's SIGINT, nohup's): who ignored it does
 * not want ctl to stop for it. No SA_RESTART: a blocked connect() or
 * sendmsg() returns EINTR. */
static void catch_signals(struct signals *s)
{
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGINT, NULL, &s->old_int);
    sigaction(SIGTERM, NULL, &s->old_term);
    if (s->old_int.sa_handler != SIG_IGN)
        sigaction(SIGINT, &sa, NULL);
    if (s->old_term.sa_handler != SIG_IGN)
        sigaction(SIGTERM, &sa, NULL);
}

static void restore_signals(const struct signals *s)
{
    sigaction(SIGINT, &s->old_int, NULL);
    sigaction(SIGTERM, &s->old_term, NULL);
}

/* ================================================================== a request */

struct ctl {
    long pid;
    int cmd;          /* enum ctr_ctl_command */
    uint64_t arg;     /* the request's argument (trace: nanoseconds) */
    const char *file; /* FILE, NULL when the command takes none */
    char *tmp;        /* the temporary beside FILE while it is not renamed */
    int fd;           /* the descriptor sent: the temporary, FILE itself, or 1 */
    int sock;
};

static int to_stdout(const struct ctl *c)
{
    return c->file && strcmp(c->file, "-") == 0;
}

/* Opens what the process will write: standard output for "-", else a new
 * temporary file FILE.XXXXXX beside FILE, mode 0600. Only a regular file:
 * the process writes on its collector thread, which a pipe nobody reads (or
 * a device) could stall, and the process refuses any other (CONTROL.md).
 * @return 0, or 1 after saying why. */
static int open_output(struct ctl *c)
{
    struct stat st;
    if (to_stdout(c)) {
        if (fstat(STDOUT_FILENO, &st) != 0 || !S_ISREG(st.st_mode))
            return fail(0, "standard output is not a regular file: the process writes only "
                           "into files (redirect it to one, or name a FILE)");
        c->fd = STDOUT_FILENO;
        return 0;
    }
    if (lstat(c->file, &st) == 0 && S_ISDIR(st.st_mode))
        return fail(0, "%s is a directory; name a file to write", c->file);
    if (lstat(c->file, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
        return fail(0, "%s is not a regular file: the process writes only into files", c->file);
    size_t n = strlen(c->file);
    if (!(c->tmp = malloc(n + sizeof(".XXXXXX"))))
        return fail(0, "out of memory");
    memcpy(c->tmp, c->file, n);
    memcpy(c->tmp + n, ".XXXXXX", sizeof(".XXXXXX"));
    c->fd = mkostemp(c->tmp, O_CLOEXEC);
    if (c->fd < 0) {
        int e = errno;
        free(c->tmp);
        c->tmp = NULL;
        return fail(0, "%s: %s", c->file, strerror(e));
    }
    return 0;
}

/* After an "ok": the temporary, flushed to the disk, becomes FILE (a
 * rename, which replaces a symbolic link at FILE rather than following
 * it). @return 0, or 1 after saying why (the caller removes the
 * temporary). */
static int commit_output(struct ctl *c)
{
    if (!c->tmp)
        return 0;
    if (fsync(c->fd) != 0 || rename(c->tmp, c->file) != 0)
        return fail(0, "%s: %s", c->file, strerror(errno));
    free(c->tmp);
    c->tmp = NULL;
    return 0;
}

/* connect()'s errno e as a failure worth saying: ENOENT and ECONNREFUSED
 * (a socket whose file or listener went away) are no socket at all: 0. */
static int connect_error(int e)
{
    return e == ENOENT || e == ECONNREFUSED ? 0 : e;
}

/* Connects to PID: each of its sockets in turn (a killed process's
 * successor may have left a second name), keeping the first whose peer is
 * PID. On no success, the most telling failure: a socket of another
 * process, then one of another user, then another error, then none at all
 * (no such process, or one that accepts no commands).
 * @return 0 with c->sock connected, or 1 after saying why (nothing said
 *         when a signal stopped it: the caller says so). */
static int ctl_connect(struct ctl *c)
{
    struct socks l = {0};
    if (find_sockets(c->pid, &l) != 0)
        return 1;
    long impostor = 0;
    const char *impostor_path = NULL, *err_path = NULL;
    int err = 0, rc = 1;
    struct timeval tv = {.tv_sec = (time_t)(WAIT_NS / 1000000000)};
    for (size_t i = 0; i < l.n && !stop_signal; i++) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(l.v[i].path) >= sizeof(a.sun_path))
            continue;
        strcpy(a.sun_path, l.v[i].path);
        int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (s < 0) {
            rc = fail(c->pid, "socket: %s", strerror(errno));
            goto done;
        }
        /* A connect to a listener whose backlog is full blocks, and so
         * does a send: both at most WAIT_NS. */
        setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
            int e = connect_error(errno);
            close(s);
            if (e == EACCES || (e && err != EACCES))
                err = e, err_path = l.v[i].path;
            continue;
        }
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
            int e = errno;
            close(s);
            rc = fail(c->pid, "%s: SO_PEERCRED: %s", l.v[i].path, strerror(e));
            goto done;
        }
        if (cred.pid != c->pid) {
            close(s);
            impostor = cred.pid, impostor_path = l.v[i].path;
            continue;
        }
        c->sock = s;
        rc = 0;
        goto done;
    }
    struct stat st;
    char proc[32];
    snprintf(proc, sizeof(proc), "/proc/%ld", c->pid);
    if (stop_signal)
        rc = 1; /* said by the caller */
    else if (impostor)
        rc = fail(c->pid, "the socket at %s belongs to process %ld, not %ld; not talking to it",
                  impostor_path, impostor, c->pid);
    else if (err == EACCES)
        rc = fail(c->pid, "permission denied (the process belongs to another user)");
    else if (err == EAGAIN)
        rc = fail(c->pid, "%s: no answer within %llu s", err_path,
                  (unsigned long long)(WAIT_NS / 1000000000));
    else if (err)
        rc = fail(c->pid, "%s: %s", err_path, strerror(err));
    else if (stat(proc, &st) != 0)
        rc = fail(c->pid, "no such process");
    else
        rc = fail(c->pid, "accepts no commands (start it under ctrace run -control, or -dormant, "
                          "or with " CTR_CONTROL_ENV "=1)");
done:
    socks_free(&l);
    return rc;
}

/* Sends the request: the command's name, its argument, and c->fd when the
 * command takes a descriptor. @return 0, or 1 after saying why. */
static int ctl_send(const struct ctl *c)
{
    const struct ctr_ctl_spec *s = ctr_ctl_spec(c->cmd);
    char req[CTR_CTL_MSG_MAX];
    int n = s->takes_arg ? snprintf(req, sizeof(req), "%s %" PRIu64, s->name, c->arg)
                         : snprintf(req, sizeof(req), "%s", s->name);
    /* What the process will parse, parsed here first: ctl says nothing the
     * table does not. */
    int cmd;
    uint64_t arg;
    if (n <= 0 || (size_t)n >= sizeof(req) ||
        ctr_ctl_parse_request(req, (size_t)n, &cmd, &arg) != 0 || cmd != c->cmd || arg != c->arg)
        return fail(c->pid, "internal error: the request '%s' is not the table's", req);
    struct iovec iov = {req, (size_t)n};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    union {
        struct cmsghdr h; /* aligns buf */
        char buf[CMSG_SPACE(sizeof(int))];
    } u;
    if (s->takes_fd) {
        memset(&u, 0, sizeof(u));
        m.msg_control = u.buf;
        m.msg_controllen = sizeof(u.buf);
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &c->fd, sizeof(int));
    }
    /* MSG_NOSIGNAL: a process gone away is EPIPE here, not SIGPIPE. */
    if (sendmsg(c->sock, &m, MSG_NOSIGNAL) == n)
        return 0;
    if (errno == EINTR && stop_signal)
        return 1; /* said by the caller */
    /* Closed: it may have answered first (a refusal, before it read the
     * request: CONTROL.md §3); the reply, or its absence, says. */
    if (errno == EPIPE || errno == ECONNRESET)
        return 0;
    if (errno == EAGAIN)
        return fail(c->pid, "no answer within %llu s", (unsigned long long)(WAIT_NS / 1000000000));
    return fail(c->pid, "sending the request: %s", strerror(errno));
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000 + (uint64_t)t.tv_nsec;
}

/* Waits at most wait_ns for the reply, one message, into buf (cap bytes,
 * the last left for a terminating NUL). SIGINT and SIGTERM are let in only
 * inside ppoll(), which they interrupt; so one that came before is seen at
 * the next look at stop_signal, never lost between the look and the sleep.
 * @return the reply's length, or -1 after saying why (nothing said when a
 *         signal stopped the wait). */
static long ctl_receive(const struct ctl *c, uint64_t wait_ns, char *buf, size_t cap)
{
    sigset_t stops, unblocked;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigprocmask(SIG_BLOCK, &stops, &unblocked);
    uint64_t deadline = now_ns() + wait_ns;
    long got = -1;
    for (;;) {
        if (stop_signal)
            break;
        uint64_t now = now_ns();
        if (now >= deadline) {
            fail(c->pid, "no answer within %llu s",
                 (unsigned long long)((wait_ns + 999999999) / 1000000000));
            break;
        }
        struct timespec left = {(time_t)((deadline - now) / 1000000000),
                                (long)((deadline - now) % 1000000000)};
        struct pollfd p = {.fd = c->sock, .events = POLLIN};
        int r = ppoll(&p, 1, &left, &unblocked);
        if (r < 0 && errno != EINTR) {
            fail(c->pid, "waiting for the reply: %s", strerror(errno));
            break;
        }
        if (r <= 0)
            continue;
        /* No room for descriptors: any the process sent are not received. */
        struct iovec iov = {buf, cap - 1};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
        ssize_t n = recvmsg(c->sock, &m, MSG_DONTWAIT);
        /* A process that closed with our request unread (it refused us
         * before reading it) leaves ECONNRESET first, then its reply: the
         * error is reported once, the queue read after. */
        if (n < 0 && errno == ECONNRESET)
            n = recvmsg(c->sock, &m, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            fail(c->pid, "the process closed the connection without answering (it exited?)");
        else if (n < 0)
            fail(c->pid, "reading the reply: %s", strerror(errno));
        else if (m.msg_flags & MSG_TRUNC)
            fail(c->pid, "garbled reply (longer than %d bytes)", CTR_CTL_MSG_MAX);
        else
            got = n;
        break;
    }
    sigprocmask(SIG_SETMASK, &unblocked, NULL);
    return got;
}

/* ==================================================================== replies */

enum { REPLY_GARBLED, REPLY_OK, REPLY_ERROR };

/* The reply in buf[0..n) (buf[n] writable), as CONTROL.md section 2
 * writes it: "ok\n" then key=value lines, or one line "error <errno>
 * <text>". Text only: a control byte but '\n', or a NUL, makes it garbled
 * (it goes to a terminal). @return REPLY_OK with *body at the key=value
 * lines; REPLY_ERROR with *text the error's text (terminated), or
 * strerror(errno) when it has none; else REPLY_GARBLED. */
static int parse_reply(char *buf, size_t n, const char **body, const char **text)
{
    buf[n] = 0;
    if (n == 0 || buf[n - 1] != '\n')
        return REPLY_GARBLED;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)buf[i] < 0x20 && buf[i] != '\n') || buf[i] == 0x7f)
            return REPLY_GARBLED;
    if (strncmp(buf, "ok\n", 3) == 0) {
        for (const char *l = buf + 3; *l; l = strchr(l, '\n') + 1) {
            const char *eq = strchr(l, '=');
            if (!eq || eq == l || eq > strchr(l, '\n'))
                return REPLY_GARBLED;
        }
        *body = buf + 3;
        return REPLY_OK;
    }
    if (strncmp(buf, "error ", 6) != 0 || buf[6] < '0' || buf[6] > '9')
        return REPLY_GARBLED;
    char *end;
    errno = 0;
    long e = strtol(buf + 6, &end, 10);
    if (errno || e > 4095 || (*end != ' ' && *end != '\n') || strchr(end, '\n') != buf + n - 1)
        return REPLY_GARBLED;
    buf[n - 1] = 0;
    *text = *end == ' ' && end[1] ? end + 1 : strerror((int)e);
    return REPLY_ERROR;
}

/* The value of key in an "ok" reply's lines, a decimal number, into *v.
 * @return 0, or -1 when the key is missing or not a number. */
static int reply_number(const char *body, const char *key, uint64_t *v)
{
    size_t k = strlen(key);
    for (const char *l = body; *l; l = strchr(l, '\n') + 1) {
        if (strncmp(l, key, k) != 0 || l[k] != '=')
            continue;
        const char *p = l + k + 1;
        return ctr_ctl_decimal(p, (size_t)(strchr(p, '\n') - p), v);
    }
    return -1;
}

/* Says what an "ok" reply to c's command says: status its lines as they
 * came; dump and trace the "wrote" line, on stdout unless FILE is stdout.
 * @return 0, or 1 after saying why (a reply without the command's keys). */
static int print_ok(const struct ctl *c, const char *body)
{
    FILE *out = to_stdout(c) ? stderr : stdout;
    const char *name = to_stdout(c) ? "standard output" : c->file;
    uint64_t bytes, events, dropped, span;
    switch (c->cmd) {
    case CTR_CTL_STATUS:
        fputs(body, out);
        return 0;
    case CTR_CTL_DUMP:
        if (reply_number(body, "bytes", &bytes) != 0)
            return fail(c->pid, "garbled reply (no bytes=)");
        fprintf(out, "wrote %s: %" PRIu64 " bytes\n", name, bytes);
        return 0;
    case CTR_CTL_TRACE:
        if (reply_number(body, "bytes", &bytes) != 0 ||
            reply_number(body, "events", &events) != 0 ||
            reply_number(body, "dropped", &dropped) != 0 ||
            reply_number(body, "span_ns", &span) != 0)
            return fail(c->pid, "garbled reply (no bytes=, events=, dropped= or span_ns=)");
        char s[32];
        fprintf(out,
                "wrote %s: %" PRIu64 " bytes, %" PRIu64 " events, %" PRIu64 " dropped, over %s\n",
                name, bytes, events, dropped,
                ctr_text_ns(span > INT64_MAX ? INT64_MAX : (int64_t)span, s, sizeof(s)));
        return 0;
    }
    return fail(c->pid, "internal error: no output for command %d", c->cmd);
}

/* One request, from the file to the reply's output. @return the exit
 * status. */
static int ctl_run(struct ctl *c)
{
    struct signals sig;
    catch_signals(&sig);
    int rc = c->file ? open_output(c) : 0;
    if (rc == 0)
        rc = ctl_connect(c);
    if (rc == 0)
        rc = ctl_send(c);
    char buf[CTR_CTL_MSG_MAX + 1];
    long n = -1;
    if (rc == 0) {
        n = ctl_receive(c, (c->cmd == CTR_CTL_TRACE ? c->arg : 0) + WAIT_NS, buf, sizeof(buf));
        rc = n < 0;
    }
    /* The reply's bytes, then what the connection was for: a process that
     * is still tracing for ctl sees it closed and ends that trace. */
    if (c->sock >= 0)
        close(c->sock);
    if (rc == 0) {
        const char *body = NULL, *text = NULL;
        switch (parse_reply(buf, (size_t)n, &body, &text)) {
        case REPLY_OK:
            rc = commit_output(c);
            if (rc == 0)
                rc = print_ok(c, body);
            break;
        case REPLY_ERROR:
            rc = fail(c->pid, "%s", text);
            break;
        default:
            rc = fail(c->pid, "garbled reply");
        }
    }
    if (c->fd > STDOUT_FILENO)
        close(c->fd);
    if (c->tmp) {
        unlink(c->tmp);
        free(c->tmp);
    }
    restore_signals(&sig);
    /* A signal after the reply was taken stops nothing: the work is done. */
    if (stop_signal && rc != 0) {
        fail(c->pid, "interrupted by %s", stop_signal == SIGINT ? "SIGINT" : "SIGTERM");
        return EXIT_SIGNAL_BASE + stop_signal;
    }
    if (rc == 0 && fflush(stdout) != 0)
        rc = fail(0, "writing the output: %s", strerror(errno));
    return rc;
}

/* ====================================================================== -list */

static int by_pid(const void *a, const void *b)
{
    long x = ((const struct sock *)a)->pid, y = ((const struct sock *)b)->pid;
    return (x > y) - (x < y);
}

/* Process pid's command line into buf (cap > LIST_COMMAND_MAX bytes): its
 * arguments joined by spaces, at most LIST_COMMAND_MAX bytes cut at a
 * character's start, a control byte shown as '?' (a tab or a newline would
 * break the line); "[comm]" for a process without one (a zombie). */
static void command_line(long pid, char *buf, size_t cap)
{
    char path[40];
    snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
    size_t n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r = read(fd, buf, LIST_COMMAND_MAX + 1);
        n = r > 0 ? (size_t)r : 0;
        close(fd);
    }
    while (n && buf[n - 1] == 0)
        n--;
    if (n > LIST_COMMAND_MAX) {
        n = LIST_COMMAND_MAX;
        while (n && ((unsigned char)buf[n] & 0xc0) == 0x80)
            n--;
    }
    buf[n] = 0;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == 0)
            buf[i] = ' ';
        else if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
            buf[i] = '?';
    if (n)
        return;
    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    FILE *f = fopen(path, "re");
    char comm[32] = "";
    if (f) {
        if (fgets(comm, sizeof(comm), f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
    }
    snprintf(buf, cap, "[%s]", comm);
}

/* `ctrace ctl -list`: "PID\tUSER\tCOMMAND" per live process with a
 * control socket, by pid; USER owns /proc/PID. Nothing is connected to: a
 * listing disturbs no process (an impostor's socket is listed under the pid
 * of its name; ctl PID refuses it). @return the exit status. */
static int ctl_list(void)
{
    struct socks l = {0};
    if (find_sockets(0, &l) != 0)
        return 1;
    if (l.n > 1) /* l.v is NULL when nothing listens: qsort may not take it */
        qsort(l.v, l.n, sizeof(*l.v), by_pid);
    for (size_t i = 0; i < l.n; i++) {
        long pid = l.v[i].pid;
        char proc[32], cmd[LIST_COMMAND_MAX + 8], user[32];
        struct stat st;
        snprintf(proc, sizeof(proc), "/proc/%ld", pid);
        if ((i && l.v[i - 1].pid == pid) || (kill((pid_t)pid, 0) != 0 && errno != EPERM) ||
            stat(proc, &st) != 0)
            continue;
        struct passwd *pw = getpwuid(st.st_uid);
        if (pw)
            snprintf(user, sizeof(user), "%s", pw->pw_name);
        else
            snprintf(user, sizeof(user), "%u", (unsigned)st.st_uid);
        command_line(pid, cmd, sizeof(cmd));
        printf("%ld\t%s\t%s\n", pid, user, cmd);
    }
    socks_free(&l);
    if (fflush(stdout) != 0)
        return fail(0, "writing the output: %s", strerror(errno));
    return 0;
}

/* ============================================================= command line */

int ctr_cmd_ctl(int argc, char **argv)
{
    char names[128];
    if (argc < 2)
        return ctr_cli_usage_error(VERB, "no process id given");
    int i = 1;
    if (ctr_cli_is_help(argv[1])) {
        ctl_usage(stdout);
        return 0;
    }
    if (ctr_cli_flag(argc, argv, &i, "list", NULL) > 0) {
        if (argc > 2)
            return ctr_cli_usage_error(VERB, "unexpected argument %s after -list", argv[2]);
        return ctl_list();
    }
    const char *p = argv[1];
    if (p[0] == '-' && (p[1] < '0' || p[1] > '9'))
        return ctr_cli_usage_error(VERB, "unknown flag %s", p);
    char *end;
    errno = 0;
    long pid = strtol(p, &end, 10);
    if (*p < '1' || *p > '9' || *end || errno || pid > 0x7fffffff)
        return ctr_cli_usage_error(VERB, "'%s' is not a process id", p);
    struct ctl c = {.pid = pid, .cmd = -1, .fd = -1, .sock = -1};
    if (argc < 3)
        return ctr_cli_usage_error(VERB, "no command given after %s: %s", p,
                                   command_names(names, sizeof(names)));
    if (ctr_cli_is_help(argv[2])) {
        ctl_usage(stdout);
        return 0;
    }
    for (int id = 0; id < CTR_CTL_COMMAND_COUNT; id++)
        if (strcmp(argv[2], ctr_ctl_spec(id)->name) == 0)
            c.cmd = id;
    if (c.cmd < 0)
        return ctr_cli_usage_error(VERB, "unknown command '%s': %s", argv[2],
                                   command_names(names, sizeof(names)));
    const struct ctr_ctl_spec *s = ctr_ctl_spec(c.cmd);
    int has_for = 0;
    /* Flags, then FILE, as Go's flag package: the first argument that is
     * not a flag ("-" is FILE) ends them. */
    for (i = 3; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *v;
        if (ctr_cli_is_help(argv[i])) {
            ctl_usage(stdout);
            return 0;
        }
        int r = ctr_cli_flag(argc, argv, &i, "for", &v);
        if (r == 0)
            return ctr_cli_usage_error(VERB, "unknown flag %s", argv[i]);
        if (r < 0)
            return ctr_cli_usage_error(VERB, "flag %s needs a value", argv[i]);
        /* The table's one argument is trace's duration. */
        if (c.cmd != CTR_CTL_TRACE)
            return ctr_cli_usage_error(VERB, "-for goes with %s, not %s",
                                       ctr_ctl_spec(CTR_CTL_TRACE)->name, s->name);
        if (!ctr_cli_duration(VERB, "for", v, &c.arg))
            return CTR_EXIT_USAGE;
        if (c.arg < CTR_CTL_TRACE_MIN_NS || c.arg > CTR_CTL_TRACE_MAX_NS)
            return ctr_cli_usage_error(VERB, "-for wants a duration from " TRACE_RANGE ", not '%s'",
                                       v);
        has_for = 1;
    }
    if (c.cmd == CTR_CTL_TRACE && !has_for)
        c.arg = TRACE_DEFAULT_NS;
    if (i < argc && s->takes_fd)
        c.file = argv[i++];
    if (i < argc)
        return ctr_cli_usage_error(VERB, "unexpected argument %s%s", argv[i],
                                   argv[i][0] == '-' ? ": flags go before FILE"
                                   : !s->takes_fd    ? ": the command takes no FILE"
                                                     : "");
    if (s->takes_fd && !c.file)
        return ctr_cli_usage_error(VERB, "%s needs a FILE to write (- for standard output)",
                                   s->name);
    if (to_stdout(&c) && isatty(STDOUT_FILENO)) {
        fputs("ctrace: " VERB ": not writing a trace to a terminal; name a FILE or redirect\n",
              stderr);
        return CTR_EXIT_USAGE;
    }
    return ctl_run(&c);
}
