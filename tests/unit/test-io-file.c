/* SPDX-License-Identifier: MIT */
/* test-io-file.c - ground truth for the rarer blocking calls
 * (tracer/wrap/interpose_file.c): a thread blocks in each of flock,
 * fcntl(F_SETLKW), preadv2 on a pipe, recvmmsg, sendfile into a full pipe,
 * fgets and getline on a pipe, and pclose of a command that runs a while;
 * each wait is recorded once, under the call's own name and class, at the
 * calling line, lasting what the test measured around it (testwait.h). A
 * name lookup is a net wait of its own. A test that would pass without the
 * wrappers cannot: without them, nothing is recorded at all.
 *
 * Expects -g (line numbers are checked against __LINE__ markers written on
 * the same line as the calls they describe).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "testtime.h"
#include "testwait.h"

#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "read/trace.h"

#define NOINLINE __attribute__((noinline))

static char path[64];  /* the trace */
static char fpath[64]; /* a scratch regular file */

static int setup(void **state)
{
    (void)state;
    ctr_test_temp(path, sizeof(path), "io-file");
    ctr_test_temp(fpath, sizeof(fpath), "io-file-scratch");
    struct trace_options o = {.path = path};
    return trace_start_opts(&o);
}

static int teardown(void **state)
{
    (void)state;
    unlink(fpath);
    return ctr_test_trace_end(path);
}

/* ---------------------------------------------------------------------------
 * A waiter thread and the side that lets it go
 * ------------------------------------------------------------------------- */

/* The call under test, made on the waiter thread by `wait` (which returns
 * its own measurement of the call, and notes the call's line), and what
 * lets it go, made on the test's thread once the waiter slept 50 ms in it. */
struct pair {
    uint64_t (*wait)(struct pair *p);
    void (*release)(struct pair *p);
    int fd[2];
    int line;
    _Atomic pid_t tid;
    uint64_t took_ns, slept_ns;
};

static void *waiter_main(void *arg)
{
    struct pair *p = arg;
    atomic_store(&p->tid, ctr_test_tid());
    p->took_ns = p->wait(p);
    return NULL;
}

/* Runs the pair, stops the trace, and checks its one wait of `reason`. */
static void check_pair(struct pair *p, uint8_t reason, const char *fn)
{
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waiter_main, p), 0);
    while (!atomic_load(&p->tid))
        sched_yield();
    p->slept_ns = ctr_test_asleep_for(getpid(), atomic_load(&p->tid), 50);
    p->release(p);
    pthread_join(th, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    size_t n = 0;
    uint64_t wait_ns = 0, stack = 0;
    for (size_t i = 0; i < tr.nthreads; i++)
        for (size_t k = 0; k + 1 < tr.threads[i].nevents; k++) {
            const struct ctr_trace_event *e = &tr.threads[i].events[k];
            if (e->type != CTR_EV_BLOCK || e->args[0] != reason ||
                tr.threads[i].os_tid != atomic_load(&p->tid))
                continue; /* the test's own calls set the pair up */
            n++;
            wait_ns = tr.threads[i].events[k + 1].ns - e->ns;
            stack = e->args[2];
        }
    if (n != 1)
        fail_msg("%zu waits of %s, expected 1", n, ctr_reason_specs[reason].call);
    assert_wait(wait_ns, p->took_ns, p->slept_ns);
    assert_stack_at(&tr, stack, fn, p->line);
    ctr_test_assert_running_is_cpu(&tr);
    ctr_trace_free(&tr);
}

/* ---------------------------------------------------------------------------
 * File locks
 * ------------------------------------------------------------------------- */

static NOINLINE uint64_t wait_flock(struct pair *p)
{
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(flock(p->fd[1], LOCK_EX), 0); p->line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

static void unlock_flock(struct pair *p)
{
    assert_int_equal(flock(p->fd[0], LOCK_UN), 0);
}

/* Two opens of one file: two lock owners in one process. */
static void open_twice(struct pair *p)
{
    p->fd[0] = open(fpath, O_RDWR);
    p->fd[1] = open(fpath, O_RDWR);
    assert_true(p->fd[0] >= 0 && p->fd[1] >= 0);
}

static void test_flock(void **state)
{
    (void)state;
    struct pair p = {.wait = wait_flock, .release = unlock_flock};
    open_twice(&p);
    assert_int_equal(flock(p.fd[0], LOCK_EX), 0);
    check_pair(&p, CTR_REASON_FLOCK, "wait_flock");
    close(p.fd[0]);
    close(p.fd[1]);
}

static NOINLINE uint64_t wait_setlkw(struct pair *p)
{
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(fcntl(p->fd[1], F_SETLKW, &l), 0); p->line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

static void unlock_ofd(struct pair *p)
{
    struct flock l = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
    assert_int_equal(fcntl(p->fd[0], F_OFD_SETLK, &l), 0);
}

/* The holder's lock is an open-file-description lock, which a process's
 * own record lock (F_SETLKW) conflicts with. */
static void test_fcntl_setlkw(void **state)
{
    (void)state;
    struct pair p = {.wait = wait_setlkw, .release = unlock_ofd};
    open_twice(&p);
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    assert_int_equal(fcntl(p.fd[0], F_OFD_SETLK, &l), 0);
    check_pair(&p, CTR_REASON_FCNTL, "wait_setlkw");
    close(p.fd[0]);
    close(p.fd[1]);
}

/* ---------------------------------------------------------------------------
 * Vectored, batched and spliced I/O
 * ------------------------------------------------------------------------- */

static void write_byte(struct pair *p)
{
    assert_int_equal(write(p->fd[1], "x", 1), 1);
}

static NOINLINE uint64_t wait_preadv2(struct pair *p)
{
    char c;
    struct iovec v = {&c, 1};
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(preadv2(p->fd[0], &v, 1, -1, 0), 1); p->line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

static void test_preadv2_on_a_pipe(void **state)
{
    (void)state;
    struct pair p = {.wait = wait_preadv2, .release = write_byte};
    assert_int_equal(pipe(p.fd), 0);
    check_pair(&p, CTR_REASON_PREADV2, "wait_preadv2");
    close(p.fd[0]);
    close(p.fd[1]);
}

static NOINLINE uint64_t wait_recvmmsg(struct pair *p)
{
    char c;
    struct iovec v = {&c, 1};
    struct mmsghdr m = {.msg_hdr = {.msg_iov = &v, .msg_iovlen = 1}};
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(recvmmsg(p->fd[0], &m, 1, 0, NULL), 1); p->line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

static void test_recvmmsg_is_net(void **state)
{
    (void)state;
    struct pair p = {.wait = wait_recvmmsg, .release = write_byte};
    assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM, 0, p.fd), 0);
    check_pair(&p, CTR_REASON_RECVMMSG, "wait_recvmmsg");
    assert_int_equal(ctr_reason_specs[CTR_REASON_RECVMMSG].wait_class, CTR_CLASS_NET);
    close(p.fd[0]);
    close(p.fd[1]);
}

static int file_fd;

static NOINLINE uint64_t wait_sendfile(struct pair *p)
{
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(sendfile(p->fd[1], file_fd, NULL, 4096), 4096); p->line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

static void drain_pipe(struct pair *p)
{
    char buf[4096];
    int fl = fcntl(p->fd[0], F_GETFL);
    fcntl(p->fd[0], F_SETFL, fl | O_NONBLOCK);
    while (read(p->fd[0], buf, sizeof(buf)) > 0)
        ;
    fcntl(p->fd[0], F_SETFL, fl);
}

/* A pipe filled to the brim: the sendfile into it waits for the reader. */
static void test_sendfile_into_a_full_pipe(void **state)
{
    (void)state;
    struct pair p = {.wait = wait_sendfile, .release = drain_pipe};
    assert_int_equal(pipe(p.fd), 0);
    char buf[4096];
    memset(buf, 'y', sizeof(buf));
    file_fd = open(fpath, O_RDWR);
    assert_int_equal(write(file_fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    assert_int_equal(lseek(file_fd, 0, SEEK_SET), 0);
    int fl = fcntl(p.fd[1], F_GETFL);
    fcntl(p.fd[1], F_SETFL, fl | O_NONBLOCK);
    while (write(p.fd[1], buf, sizeof(buf)) > 0)
        ;
    while (write(p.fd[1], buf, 1) > 0) /* the last page's room */
        ;
    fcntl(p.fd[1], F_SETFL, fl);
    check_pair(&p, CTR_REASON_SENDFILE, "wait_sendfile");
    close(file_fd);
    close(p.fd[0]);
    close(p.fd[1]);
}

/* ---------------------------------------------------------------------------
 * stdio on a pipe, and a command's end
 * ------------------------------------------------------------------------- */

static FILE *in;

static NOINLINE uint64_t wait_fgets(struct pair *p)
{
    char line[16];
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_non_null(fgets(line, sizeof(line), in)); p->line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

static NOINLINE uint64_t wait_getline(struct pair *p)
{
    char *line = NULL;
    size_t n = 0;
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(getline(&line, &n, in), 3); p->line = __LINE__;
    /* clang-format on */
    free(line);
    return ctr_test_now_ns() - t0;
}

static void write_line(struct pair *p)
{
    assert_int_equal(write(p->fd[1], "hi\n", 3), 3);
}

static void stdio_on_a_pipe(uint64_t (*wait)(struct pair *), uint8_t reason, const char *fn)
{
    struct pair p = {.wait = wait, .release = write_line};
    assert_int_equal(pipe(p.fd), 0);
    in = fdopen(p.fd[0], "r");
    assert_non_null(in);
    check_pair(&p, reason, fn);
    fclose(in);
    close(p.fd[1]);
}

static void test_fgets_on_a_pipe(void **state)
{
    (void)state;
    stdio_on_a_pipe(wait_fgets, CTR_REASON_FGETS, "wait_fgets");
}

static void test_getline_on_a_pipe(void **state)
{
    (void)state;
    stdio_on_a_pipe(wait_getline, CTR_REASON_GETLINE, "wait_getline");
}

/* pclose waits for the command, which ends when its input does: the test
 * closes the command's stdin 50 ms after the waiter slept in pclose. */
static FILE *cmd;

static NOINLINE uint64_t wait_pclose(struct pair *p)
{
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(pclose(cmd), 0); p->line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

static void close_input(struct pair *p)
{
    close(p->fd[1]);
}

static void test_popen_pclose(void **state)
{
    (void)state;
    struct pair p = {.wait = wait_pclose, .release = close_input};
    assert_int_equal(pipe2(p.fd, O_CLOEXEC), 0);
    char command[64];
    int keep = dup2(p.fd[0], 9); /* without O_CLOEXEC: the command's (sh: one digit) */
    assert_int_equal(keep, 9);
    snprintf(command, sizeof(command), "cat <&%d >/dev/null", keep);
    cmd = popen(command, "r");
    assert_non_null(cmd);
    close(keep);
    close(p.fd[0]);
    check_pair(&p, CTR_REASON_PCLOSE, "wait_pclose");
}

/* A name lookup is a net wait of its own, at its caller, as long as the
 * call (here every call is recorded: io_min_ns 1). */
static int lookup_line;

static NOINLINE uint64_t lookup(void)
{
    struct addrinfo *res = NULL;
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    int rc = getaddrinfo("localhost", NULL, NULL, &res); lookup_line = __LINE__;
    /* clang-format on */
    uint64_t took = ctr_test_now_ns() - t0;
    if (rc == 0)
        freeaddrinfo(res);
    return took;
}

static void test_getaddrinfo_is_net(void **state)
{
    (void)state;
    trace_stop();
    struct trace_options o = {.path = path, .io_min_ns = 1};
    assert_int_equal(trace_start_opts(&o), 0);
    uint64_t took = lookup();
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    int n = 0;
    for (size_t i = 0; i < tr.nthreads; i++)
        for (size_t k = 0; k + 1 < tr.threads[i].nevents; k++) {
            const struct ctr_trace_event *e = &tr.threads[i].events[k];
            if (e->type != CTR_EV_BLOCK || e->args[0] != CTR_REASON_GETADDRINFO)
                continue;
            n++;
            assert_true(tr.threads[i].events[k + 1].ns - e->ns <= took + 100 * 1000);
            assert_stack_at(&tr, e->args[2], "lookup", lookup_line);
        }
    assert_int_equal(n, 1);
    assert_int_equal(ctr_reason_specs[CTR_REASON_GETADDRINFO].wait_class, CTR_CLASS_NET);
    ctr_trace_free(&tr);
}

int main(void)
{
    setenv("DEBUGINFOD_URLS", "", 1); /* the symbolizer must not go online */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_flock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fcntl_setlkw, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preadv2_on_a_pipe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recvmmsg_is_net, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sendfile_into_a_full_pipe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fgets_on_a_pipe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_getline_on_a_pipe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_popen_pclose, setup, teardown),
        cmocka_unit_test_setup_teardown(test_getaddrinfo_is_net, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
