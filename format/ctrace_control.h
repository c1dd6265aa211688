/* SPDX-License-Identifier: MIT */
/* ctrace_control.h - the control channel's protocol: what `ctrace ctl`
 * (analyze/cli/ctl.c) and a traced process (tracer/control.c, served by its
 * collector thread) say to each other. CONTROL.md beside this file is the
 * prose spec; this header holds its constants and the one table of
 * commands that both sides use. Like ctrace_format.h, only macros,
 * constants and static inline functions: libctrace and the CLI link nothing
 * in common.
 *
 * In short (CONTROL.md for the rules):
 *   - A process that opened its channel listens on an AF_UNIX
 *     SOCK_SEQPACKET socket named CTR_CTL_SOCK_PREFIX<pid>CTR_CTL_SOCK_SUFFIX
 *     in its user's directory (ctr_ctl_dir): $XDG_RUNTIME_DIR/ctrace when
 *     that is set and absolute, else /tmp/ctrace-<uid>; the directory 0700,
 *     the socket 0600. A client finds a live one in /proc/net/unix.
 *   - One request per connection: one message of text, "<command>" or
 *     "<command> <argument>", at most CTR_CTL_MSG_MAX bytes, carrying one
 *     descriptor (SCM_RIGHTS) when the command's row says so.
 *   - One reply: one message, "ok\n" then "key=value\n" lines, or "error
 *     <errno, decimal> <text>\n". The connection then closes.
 *   - Each side checks the other (SO_PEERCRED): the process serves only
 *     its own user and root; the client talks only to the pid it asked for.
 */
#ifndef CTRACE_CONTROL_H
#define CTRACE_CONTROL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTR_CTL_SOCK_PREFIX "ctrace-"
#define CTR_CTL_SOCK_SUFFIX ".sock"
/* The most bytes of a request or a reply (one message each). */
#define CTR_CTL_MSG_MAX 4096
/* How long the process waits for a connected client's request before it
 * closes the connection (a client that connects and says nothing). */
#define CTR_CTL_REQUEST_TIMEOUT_NS (2ull * 1000 * 1000 * 1000)
/* The most connections the process keeps at once; more are closed at once. */
#define CTR_CTL_CLIENTS_MAX 8
/* The range of `trace -for`'s duration, in nanoseconds. */
#define CTR_CTL_TRACE_MIN_NS (1ull * 1000 * 1000)
#define CTR_CTL_TRACE_MAX_NS (24ull * 3600 * 1000 * 1000 * 1000)

/* The variable that opens the channel at load (`ctrace run -control`). */
#define CTR_CONTROL_ENV "CTRACE_CONTROL"

/* X(id, name, takes_fd, takes_arg, help)
 *   takes_fd   the request carries one descriptor open for writing
 *   takes_arg  the request has an argument (a decimal number)
 * The replies' keys are CONTROL.md's. */
/* clang-format off */
#define CTR_CTL_COMMANDS(X)                                                          \
    X(STATUS, "status", 0, 0, "what is on, the window, events and drops so far")    \
    X(DUMP, "dump", 1, 0, "the flight recorder's window, into the descriptor")      \
    X(TRACE, "trace", 1, 1, "trace the next ARG nanoseconds into the descriptor, "  \
                            "then return to what ran before")
/* clang-format on */

enum ctr_ctl_command {
#define CTR_X_CTL(id, ...) CTR_CTL_##id,
    CTR_CTL_COMMANDS(CTR_X_CTL)
#undef CTR_X_CTL
        CTR_CTL_COMMAND_COUNT
};

struct ctr_ctl_spec {
    const char *name;
    int takes_fd, takes_arg;
    const char *help;
};

/* ctr_ctl_spec() : the row of command id (enum ctr_ctl_command). */
static inline const struct ctr_ctl_spec *ctr_ctl_spec(int id)
{
#define CTR_X_CTL_ROW(id, name, fd, arg, help) {name, fd, arg, help},
    static const struct ctr_ctl_spec rows[] = {CTR_CTL_COMMANDS(CTR_X_CTL_ROW)};
#undef CTR_X_CTL_ROW
    return &rows[id];
}

/* ctr_ctl_decimal() : the decimal number that is all of p[0..n) (not
 * terminated), into *v: the requests' argument, the replies' values, the
 * pid in a socket's name. @return 0, or -1 if n is 0, a byte is not a
 * digit, or the number is beyond 64 bits. */
static inline int ctr_ctl_decimal(const char *p, size_t n, uint64_t *v)
{
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        unsigned d = (unsigned)(p[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *v = x;
    return n ? 0 : -1;
}

/* ctr_ctl_parse_request() : the request in msg[0..n) (not terminated):
 * its command into *cmd and its argument (0 if none) into *arg.
 * @return 0, or -1 if it is no request of the table: an unknown command,
 * an argument missing, unwanted, not a decimal number or out of 64 bits,
 * or any byte beyond. */
static inline int ctr_ctl_parse_request(const char *msg, size_t n, int *cmd, uint64_t *arg)
{
    size_t w = 0;
    while (w < n && msg[w] != ' ')
        w++;
    *arg = 0;
    for (int id = 0; id < CTR_CTL_COMMAND_COUNT; id++) {
        const struct ctr_ctl_spec *s = ctr_ctl_spec(id);
        if (strlen(s->name) != w || memcmp(msg, s->name, w) != 0)
            continue;
        if (!s->takes_arg) {
            if (w != n)
                return -1;
            *cmd = id;
            return 0;
        }
        uint64_t v;
        if (w == n || ctr_ctl_decimal(msg + w + 1, n - w - 1, &v) != 0)
            return -1;
        *cmd = id;
        *arg = v;
        return 0;
    }
    return -1;
}

/* ctr_ctl_sock_pid() : the pid in a socket's file name (the last part of
 * its path): CTR_CTL_SOCK_PREFIX, decimal digits, CTR_CTL_SOCK_SUFFIX.
 * @return it, or -1 if name is no such name. */
static inline long ctr_ctl_sock_pid(const char *name)
{
    const char *slash = strrchr(name, '/');
    const char *p = slash ? slash + 1 : name;
    size_t pre = sizeof(CTR_CTL_SOCK_PREFIX) - 1, suf = sizeof(CTR_CTL_SOCK_SUFFIX) - 1;
    size_t len = strlen(p);
    if (len <= pre + suf || len > pre + suf + 10 || memcmp(p, CTR_CTL_SOCK_PREFIX, pre) != 0 ||
        strcmp(p + len - suf, CTR_CTL_SOCK_SUFFIX) != 0)
        return -1;
    uint64_t pid;
    if (ctr_ctl_decimal(p + pre, len - pre - suf, &pid) != 0)
        return -1;
    return pid > 0 && pid <= 0x7fffffff ? (long)pid : -1;
}

/* ctr_ctl_dir() : the directory of uid's sockets, for a process whose
 * $XDG_RUNTIME_DIR is xdg (NULL: unset): "<xdg>/ctrace" when xdg is an
 * absolute path, else "/tmp/ctrace-<uid>". @return 0, or -1 if it does not
 * fit in cap bytes. */
static inline int ctr_ctl_dir(const char *xdg, unsigned uid, char *out, size_t cap)
{
    int n = xdg && xdg[0] == '/' ? snprintf(out, cap, "%s/ctrace", xdg)
                                 : snprintf(out, cap, "/tmp/ctrace-%u", uid);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

#endif /* CTRACE_CONTROL_H */
