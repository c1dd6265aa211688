/* SPDX-License-Identifier: MIT */
/* test-control.c - the control channel (tracer/control.c, CONTROL.md) from
 * inside one process, so that ThreadSanitizer watches the collector serving
 * it while the program's threads write events and its API starts and stops
 * sessions:
 *   - trace_options.control opens it with the flight recorder: status says
 *     so, a dump request writes a whole trace into the descriptor sent;
 *   - once the recorder stops, the process is dormant and the channel still
 *     answers; a trace request begins a session, traces the time asked and
 *     ends it: the process is dormant again, the trace whole;
 *   - a trace request while the program's own trace runs traces beside it,
 *     and both files are whole;
 *   - requests the table does not have are refused, and the channel goes
 *     on serving;
 *   - the protocol's parsers take what the table says, and nothing else. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "ctrace/flightrec.h"
#include "ctrace/trace.h"
#include "ctrace_control.h"
#include "read/trace.h"

static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static _Atomic int stop_workers;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Threads that contend on a lock: events for every session to record. */
static void *worker(void *arg)
{
    (void)arg;
    while (!stop_workers) {
        pthread_mutex_lock(&lock);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

/* Sends request (with fd, unless < 0) and returns the reply in buf. */
static void ask(const char *request, int fd, char *buf, size_t cap)
{
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    assert_true(s >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, sock_path, sizeof(sock_path));
    assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
    struct iovec iov = {(void *)request, strlen(request)};
    union {
        struct cmsghdr h;
        char room[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&ctl, 0, sizeof(ctl));
        m.msg_control = &ctl;
        m.msg_controllen = sizeof(ctl);
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd, sizeof(int));
    }
    assert_int_equal(sendmsg(s, &m, MSG_NOSIGNAL), (ssize_t)strlen(request));
    ssize_t n = recv(s, buf, cap - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    close(s);
}

/* The trace in path is whole and has events. */
static void whole(const char *path)
{
    struct ctr_trace tr;
    ctr_test_read(path, &tr);
    assert_true(tr.complete);
    size_t events = 0;
    for (size_t i = 0; i < tr.nthreads; i++)
        events += tr.threads[i].nevents;
    assert_true(events > 0);
    ctr_trace_free(&tr);
}

static int new_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    return fd;
}

static void test_channel(void **state)
{
    (void)state;
    char dir[] = "/tmp/ctrace-ctl-XXXXXX", buf[CTR_CTL_MSG_MAX], dump[128], traced[128], own[128];
    assert_non_null(mkdtemp(dir));
    setenv("XDG_RUNTIME_DIR", dir, 1);
    snprintf(sock_path, sizeof(sock_path), "%s/ctrace/ctrace-%ld.sock", dir, (long)getpid());
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, NULL);

    /* The recorder, with the channel. */
    struct trace_options o = {.control = 1, .flush_ms = 20};
    struct flightrec_config cfg = {.min_age_ns = 1000000000, .trace = &o};
    assert_int_equal(flightrec_start(&cfg), 0);
    struct timespec ts = {0, 150 * 1000 * 1000};
    nanosleep(&ts, NULL);
    ask("status", -1, buf, sizeof(buf));
    assert_non_null(strstr(buf, "ok\n"));
    assert_non_null(strstr(buf, "\nstate=recorder\n"));
    snprintf(dump, sizeof(dump), "%s/dump.bin", dir);
    int fd = new_file(dump);
    ask("dump", fd, buf, sizeof(buf));
    close(fd);
    assert_true(strncmp(buf, "ok\nbytes=", 9) == 0);
    whole(dump);
    assert_int_equal(flightrec_stop(), 0);

    /* Dormant: the channel answers, and traces when asked. */
    ask("status", -1, buf, sizeof(buf));
    assert_non_null(strstr(buf, "\nstate=dormant\n"));
    ask("dump", -1, buf, sizeof(buf));
    assert_true(strncmp(buf, "error 9 ", 8) == 0); /* no file */
    fd = new_file(dump);
    ask("dump", fd, buf, sizeof(buf));
    close(fd);
    assert_true(strncmp(buf, "error 2 ", 8) == 0); /* no recorder */
    snprintf(traced, sizeof(traced), "%s/traced.bin", dir);
    fd = new_file(traced);
    ask("trace 100000000", fd, buf, sizeof(buf));
    close(fd);
    assert_true(strncmp(buf, "ok\nbytes=", 9) == 0);
    whole(traced);
    ask("status", -1, buf, sizeof(buf));
    assert_non_null(strstr(buf, "\nstate=dormant\n"));
    assert_int_equal(trace_is_running(), 0);

    /* Beside the program's own trace: two files, both whole. */
    snprintf(own, sizeof(own), "%s/own.bin", dir);
    struct trace_options mine = {.path = own, .flush_ms = 20};
    assert_int_equal(trace_start_opts(&mine), 0);
    fd = new_file(traced);
    ask("trace 100000000", fd, buf, sizeof(buf));
    close(fd);
    assert_true(strncmp(buf, "ok\nbytes=", 9) == 0);
    ask("status", -1, buf, sizeof(buf));
    assert_non_null(strstr(buf, "\nstate=trace\n"));
    assert_int_equal(trace_stop(), 0);
    whole(traced);
    whole(own);

    /* Refused requests; the channel serves on. */
    ask("dump 1", -1, buf, sizeof(buf));
    assert_true(strncmp(buf, "error 22 ", 9) == 0);
    ask("trace", -1, buf, sizeof(buf));
    assert_true(strncmp(buf, "error 22 ", 9) == 0);
    ask("status", -1, buf, sizeof(buf));
    assert_non_null(strstr(buf, "\nstate=dormant\n"));

    stop_workers = 1;
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    unlink(dump);
    unlink(traced);
    unlink(own);
}

/* The protocol's parsers (ctrace_control.h), which both sides use: every
 * byte of a request or a socket's name is checked. */
static void test_parsers(void **state)
{
    (void)state;
    int cmd;
    uint64_t arg, v;
#define REQ(s) ctr_ctl_parse_request(s, sizeof(s) - 1, &cmd, &arg)
    assert_int_equal(REQ("status"), 0);
    assert_int_equal(cmd, CTR_CTL_STATUS);
    assert_int_equal(REQ("trace 18446744073709551615"), 0);
    assert_int_equal(cmd, CTR_CTL_TRACE);
    assert_true(arg == UINT64_MAX);
    assert_int_equal(REQ("trace 18446744073709551616"), -1); /* beyond 64 bits */
    assert_int_equal(REQ("trace "), -1);
    assert_int_equal(REQ("trace"), -1);
    assert_int_equal(REQ("trace 1x"), -1);
    assert_int_equal(REQ("trace -1"), -1);
    assert_int_equal(REQ("status "), -1);
    assert_int_equal(REQ("dump 1"), -1);
    assert_int_equal(REQ("statusx"), -1);
    assert_int_equal(REQ(""), -1);
#undef REQ
    assert_int_equal(ctr_ctl_decimal("0", 1, &v), 0);
    assert_true(v == 0);
    assert_int_equal(ctr_ctl_decimal("", 0, &v), -1);
    assert_int_equal(ctr_ctl_decimal("12", 1, &v), 0); /* n bytes, not the string */
    assert_true(v == 1);
    assert_int_equal(ctr_ctl_sock_pid("/run/user/1/ctrace/ctrace-4242.sock"), 4242);
    assert_int_equal(ctr_ctl_sock_pid("ctrace-2147483647.sock"), 2147483647);
    assert_int_equal(ctr_ctl_sock_pid("ctrace-2147483648.sock"), -1);
    assert_int_equal(ctr_ctl_sock_pid("ctrace-0.sock"), -1);
    assert_int_equal(ctr_ctl_sock_pid("ctrace-.sock"), -1);
    assert_int_equal(ctr_ctl_sock_pid("ctrace-12a.sock"), -1);
    assert_int_equal(ctr_ctl_sock_pid("ctrace-12345678901.sock"), -1);
    assert_int_equal(ctr_ctl_sock_pid("ctrace-12.socket"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_parsers),
                                       cmocka_unit_test(test_channel)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
