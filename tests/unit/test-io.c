/* SPDX-License-Identifier: MIT */
/* test-io.c - the I/O wrappers (tracer/wrap/interpose_io.c): a call that waits is
 * recorded with its true duration, the reason of its class (NET_ on a socket,
 * plain otherwise) and the caller's stack and line; a call shorter than the
 * threshold records nothing; errno and the real functions' semantics are
 * kept; the net and syscall delay profiles each get their own waits; and a
 * descriptor's O_NONBLOCK is asked of the kernel once per collector period.
 *
 * Expects -g (line numbers are checked against __LINE__ markers written on
 * the same line as the calls they describe).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "testutil.h"
#include "testwait.h"

#include "core/clock.h"
#include "core/fdclass.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "sinks/filesink.h"
#include "wrap/wait.h"
#include "profile/profile.h"
#include "read/trace.h"
#include "read/state.h"
#include "symbols/symbolize.h"

#define NOINLINE __attribute__((noinline))

static char path[64];  /* the trace */
static char fpath[64]; /* a scratch regular file */

static void start(unsigned io_min_ns)
{
    struct trace_options o = {.path = path, .io_min_ns = io_min_ns};
    assert_int_equal(trace_start_opts(&o), 0);
}

static int setup(void **state)
{
    (void)state;
    ctr_test_temp(path, sizeof(path), "io");
    ctr_test_temp(fpath, sizeof(fpath), "io-file");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (trace_is_running())
        trace_stop();
    unlink(path);
    unlink(fpath);
    return 0;
}

/* The Block events on descriptor fd (any reason if reason is 0): how many,
 * and of the last one its reason, duration (to its Unblock) and stack. */
struct block {
    size_t n;
    uint8_t reason;
    uint64_t wait_ns, stack;
};

static struct block blocks_on(const struct ctr_trace *tr, int fd, int reason)
{
    struct block b = {0};
    for (size_t i = 0; i < tr->nthreads; i++) {
        const struct ctr_thread_info *th = &tr->threads[i];
        for (size_t k = 0; k < th->nevents; k++) {
            const struct ctr_trace_event *e = &th->events[k];
            if (e->type != CTR_EV_BLOCK || e->args[1] != (uint64_t)(int64_t)fd ||
                (reason && e->args[0] != (uint64_t)reason))
                continue;
            b.n++;
            b.reason = (uint8_t)e->args[0];
            b.stack = e->args[2];
            if (k + 1 < th->nevents && th->events[k + 1].type == CTR_EV_UNBLOCK)
                b.wait_ns = th->events[k + 1].ns - e->ns;
        }
    }
    return b;
}

/* A thread that writes one byte to fd ms milliseconds after the thread
 * that made it sleeps (in its read of the other end), and measures how long
 * the reader slept before the write (slept_ns, for assert_wait). */
struct late_write {
    int fd;
    unsigned ms;
    pthread_t th;
    pid_t reader;
    uint64_t slept_ns;
};

static void *late_write_main(void *arg)
{
    struct late_write *w = arg;
    w->slept_ns = ctr_test_asleep_for(getpid(), w->reader, w->ms);
    char c = 'x';
    assert_int_equal(write(w->fd, &c, 1), 1);
    return NULL;
}

static void late_write(struct late_write *w, int fd, unsigned ms)
{
    *w = (struct late_write){fd, ms, 0, ctr_test_tid(), 0};
    assert_int_equal(pthread_create(&w->th, NULL, late_write_main, w), 0);
}

/* The calls whose stacks the tests check: the line of each read. */
static int sock_read_line, pipe_read_line;

static NOINLINE uint64_t read_socket(int fd)
{
    char c;
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(read(fd, &c, 1), 1); sock_read_line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

static NOINLINE uint64_t read_pipe(int fd)
{
    char c;
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(read(fd, &c, 1), 1); pipe_read_line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

/* ---------------------------------------------------------------------------
 * Waits: duration, reason, stack
 * ------------------------------------------------------------------------- */

/* fds[1] gets a byte 50 ms late; `reader` (named fn, its read on `line`)
 * waits for it on fds[0]: one wait of `reason`, about that long, stacked at
 * that line. */
static void check_late_read(const int fds[2], uint64_t (*reader)(int), const char *fn,
                            const int *line, uint8_t reason)
{
    start(0);
    struct late_write w;
    late_write(&w, fds[1], 50);
    uint64_t took = reader(fds[0]);
    pthread_join(w.th, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct block b = blocks_on(&tr, fds[0], 0);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.reason, reason);
    assert_wait(b.wait_ns, took, w.slept_ns);
    assert_stack_at(&tr, b.stack, fn, *line);
    ctr_trace_free(&tr);
}

static void test_socket_read_is_net(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    check_late_read(sv, read_socket, "read_socket", &sock_read_line, CTR_REASON_NET_READ);
    assert_int_equal(ctr_reason_specs[CTR_REASON_NET_READ].wait_class, CTR_CLASS_NET);
    close(sv[0]);
    close(sv[1]);
}

static void test_pipe_read_is_syscall(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    check_late_read(p, read_pipe, "read_pipe", &pipe_read_line, CTR_REASON_READ);
    assert_int_equal(ctr_reason_specs[CTR_REASON_READ].wait_class, CTR_CLASS_SYSCALL);
    close(p[0]);
    close(p[1]);
}

/* A descriptor made where the wrappers cannot see it (here a raw syscall) is
 * classified by fstat: still a socket. So is a dup of it. */
static void test_socket_classified_without_seeing_it_made(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int d = dup(sv[0]);
    assert_true(d >= 0);
    start(1);
    char c = 'y';
    assert_int_equal(write(sv[1], &c, 1), 1);
    assert_int_equal(write(sv[1], &c, 1), 1);
    assert_int_equal(read(sv[0], &c, 1), 1);
    assert_int_equal(read(d, &c, 1), 1);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_int_equal(blocks_on(&tr, sv[1], CTR_REASON_NET_WRITE).n, 2);
    assert_int_equal(blocks_on(&tr, sv[0], CTR_REASON_NET_READ).n, 1);
    assert_int_equal(blocks_on(&tr, d, CTR_REASON_NET_READ).n, 1);
    ctr_trace_free(&tr);
    close(d);
    close(sv[0]);
    close(sv[1]);
}

static int fsync_line;

static NOINLINE void write_and_sync(int fd)
{
    char buf[4096];
    memset(buf, 'z', sizeof(buf));
    assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    /* clang-format off */
    assert_int_equal(fsync(fd), 0); fsync_line = __LINE__;
    /* clang-format on */
}

static void test_fsync_and_open(void **state)
{
    (void)state;
    unlink(fpath);
    start(1); /* an fsync may be quicker than the default threshold */
    mode_t old = umask(022);
    int fd = open(fpath, O_RDWR | O_CREAT | O_EXCL, 0640); /* the mode must reach the kernel */
    umask(old);
    assert_true(fd >= 0);
    write_and_sync(fd);
    assert_int_equal(fdatasync(fd), 0);
    int fd2 = openat(AT_FDCWD, fpath, O_RDONLY);
    assert_true(fd2 >= 0);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    struct block b = blocks_on(&tr, fd, CTR_REASON_FSYNC);
    assert_int_equal(b.n, 1);
    assert_stack_at(&tr, b.stack, "write_and_sync", fsync_line);
    assert_int_equal(blocks_on(&tr, fd, CTR_REASON_FDATASYNC).n, 1);
    assert_int_equal(blocks_on(&tr, fd, CTR_REASON_WRITE).n, 1);
    assert_int_equal(blocks_on(&tr, fd, CTR_REASON_OPEN).n, 1); /* object: the fd opened */
    assert_int_equal(blocks_on(&tr, fd2, CTR_REASON_OPENAT).n, 1);
    ctr_trace_free(&tr);
    close(fd);
    close(fd2);
}

/* ---------------------------------------------------------------------------
 * The threshold
 * ------------------------------------------------------------------------- */

static int open_filled_file(void)
{
    int fd = open(fpath, O_RDWR | O_TRUNC);
    assert_true(fd >= 0);
    char buf[256];
    memset(buf, 'f', sizeof(buf));
    assert_int_equal(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    return fd;
}

/* Reads the file 100 times, a pread and a read each; returns how many of
 * those 200 calls took about min_ns or more by the test's own clock (a
 * preempted call on a busy machine), which a threshold of min_ns may record. */
static int read_file_100_times(int fd, uint64_t min_ns)
{
    int slow = 0;
    for (int i = 0; i < 100; i++) {
        char buf[16];
        uint64_t t0 = ctr_test_now_ns();
        assert_int_equal(pread(fd, buf, 1, 0), 1); /* warm, and a PREAD */
        uint64_t t1 = ctr_test_now_ns();
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        uint64_t t2 = ctr_test_now_ns();
        assert_int_equal(read(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
        uint64_t t3 = ctr_test_now_ns();
        slow += (t1 - t0) >= min_ns * 9 / 10;
        slow += (t3 - t2) >= min_ns * 9 / 10;
    }
    return slow;
}

static void test_fast_read_records_nothing(void **state)
{
    (void)state;
    int fd = open_filled_file();
    /* 1 ms: a cached 16-byte read takes about a microsecond; the margin
     * keeps a preempted call on a busy machine from failing the test. */
    start(1000 * 1000);
    int slow = read_file_100_times(fd, 1000 * 1000);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_int_equal(tr.io_min_ns, 1000 * 1000);
    /* None, unless the machine made some call that slow. */
    assert_true(blocks_on(&tr, fd, 0).n <= (size_t)slow);
    ctr_trace_free(&tr);
    close(fd);
}

static void test_every_call_recorded_at_1ns(void **state)
{
    (void)state;
    int fd = open_filled_file();
    start(1);
    read_file_100_times(fd, 1);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_int_equal(tr.io_min_ns, 1);
    assert_int_equal(blocks_on(&tr, fd, CTR_REASON_READ).n, 100);
    assert_int_equal(blocks_on(&tr, fd, CTR_REASON_PREAD).n, 100);
    assert_int_equal(blocks_on(&tr, fd, 0).n, 200);
    ctr_trace_free(&tr);
    close(fd);
}

/* The collector's writes of the trace file go through the write wrapper too
 * (when linked, as here): they must not be recorded, even at io_min_ns = 1. */
static void test_collector_not_traced(void **state)
{
    (void)state;
    int fd = open_filled_file();
    struct trace_options o = {.path = path, .io_min_ns = 1, .flush_ms = 1};
    assert_int_equal(trace_start_opts(&o), 0);
    int trace_fd = ctr__trace_fd();
    struct trace_counters k = {0};
    for (int i = 0; i < 5000 && k.chunks_flushed < 3; i++) {
        read_file_100_times(fd, 1);
        assert_int_equal(trace_get_counters(&k), 0);
    }
    assert_true(k.chunks_flushed >= 3); /* the collector wrote while tracing */
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_true(blocks_on(&tr, fd, CTR_REASON_READ).n >= 100);
    assert_int_equal(blocks_on(&tr, trace_fd, 0).n, 0);
    ctr_trace_free(&tr);
    close(fd);
}

/* A call that cannot block is no wait, even at io_min_ns = 1: non-blocking
 * descriptors (not regular files, where O_NONBLOCK changes nothing),
 * MSG_DONTWAIT, zero timeouts. errno is the call's own. The same calls that
 * may block are recorded. */
static void test_calls_that_cannot_block(void **state)
{
    (void)state;
    int nb[2], bl[2], sv[2], ep = epoll_create1(0);
    assert_true(ep >= 0);
    assert_int_equal(pipe2(nb, O_NONBLOCK), 0);
    assert_int_equal(pipe(bl), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    int lst = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(lst >= 0);
    assert_int_equal(listen(lst, 1), 0);
    int file = open(fpath, O_RDONLY | O_NONBLOCK);
    assert_true(file >= 0);
    start(1);
    char c = 'x';
    errno = 0;
    assert_int_equal(read(nb[0], &c, 1), -1);
    assert_int_equal(errno, EAGAIN);
    assert_int_equal(write(nb[1], &c, 1), 1);
    assert_int_equal(recv(sv[0], &c, 1, MSG_DONTWAIT), -1);
    assert_int_equal(errno, EAGAIN);
    assert_int_equal(send(sv[1], &c, 1, MSG_DONTWAIT), 1);
    assert_int_equal(accept(lst, NULL, NULL), -1);
    assert_int_equal(errno, EAGAIN);
    struct pollfd pf = {bl[0], POLLIN, 0};
    assert_int_equal(poll(&pf, 1, 0), 0);
    struct epoll_event ev;
    assert_int_equal(epoll_wait(ep, &ev, 1, 0), 0);
    struct timeval tv = {0, 0};
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(bl[0], &rd);
    assert_int_equal(select(bl[0] + 1, &rd, NULL, NULL, &tv), 0);
    struct timespec ts = {0, 0};
    assert_int_equal(ppoll(&pf, 1, &ts, NULL), 0);
    /* And what may block: recorded. */
    assert_true(read(file, &c, 1) >= 0);
    assert_int_equal(write(bl[1], &c, 1), 1);
    assert_int_equal(read(bl[0], &c, 1), 1);
    assert_int_equal(recv(sv[0], &c, 1, 0), 1);
    assert_int_equal(poll(&pf, 1, 1), 0);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    for (int i = 0; i < 2; i++)
        assert_int_equal(blocks_on(&tr, nb[i], 0).n, 0);
    assert_int_equal(blocks_on(&tr, sv[1], 0).n, 0);
    assert_int_equal(blocks_on(&tr, lst, 0).n, 0);
    assert_int_equal(blocks_on(&tr, ep, 0).n, 0);
    assert_int_equal(blocks_on(&tr, bl[0], CTR_REASON_SELECT).n, 0);
    assert_int_equal(blocks_on(&tr, bl[0], CTR_REASON_PPOLL).n, 0);
    assert_int_equal(blocks_on(&tr, bl[0], CTR_REASON_POLL).n, 1); /* the 1 ms one */
    assert_int_equal(blocks_on(&tr, file, CTR_REASON_READ).n, 1);
    assert_int_equal(blocks_on(&tr, bl[0], CTR_REASON_READ).n, 1);
    assert_int_equal(blocks_on(&tr, sv[0], CTR_REASON_RECV).n, 1);
    assert_int_equal(blocks_on(&tr, sv[0], 0).n, 1);
    ctr_trace_free(&tr);
    int fds[] = {nb[0], nb[1], bl[0], bl[1], sv[0], sv[1], lst, file, ep};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        close(fds[i]);
}

/* A thread inside an I/O call (marked as the wrappers mark one) on fd
 * under `rules`, until released. It spins: a wrapped wait inside the mark
 * would be a call of its own. */
struct in_call {
    int fd, rules;
    atomic_int marked, release;
};

static void *stay_in_call(void *arg)
{
    struct in_call *c = arg;
    struct ctr_thread *t = ctr__self;
    int marked = ctr__io_begin(t, ctr__ticks(), CTR_REASON_RECV, c->rules, c->fd,
                               (uintptr_t)__builtin_frame_address(0));
    atomic_store(&c->marked, 1 + marked);
    while (!atomic_load(&c->release))
        sched_yield();
    if (marked)
        ctr__io_end(t);
    return NULL;
}

/* A call in progress as the trace ends (its trailer; PENDING records take
 * the same path) follows the rule of one that returned: on a descriptor
 * that cannot block it is no wait, on one that can it is a wait still open.
 * (prog-epoll's server, killed mid-sendmsg by its exit, showed one.) */
static void test_call_in_progress_at_the_end(void **state)
{
    (void)state;
    int nb[2], bl[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, nb), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, bl), 0);
    start(1);
    struct in_call calls[2] = {{.fd = nb[0], .rules = CTR_IO_NB_FD},
                               {.fd = bl[0], .rules = CTR_IO_NB_FD}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, stay_in_call, &calls[i]), 0);
    for (int i = 0; i < 2; i++) {
        while (!atomic_load(&calls[i].marked))
            sched_yield();
        assert_int_equal(atomic_load(&calls[i].marked), 2); /* the mark was set */
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL); /* past io_min_ns, whatever the clock's grain */
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    for (int i = 0; i < 2; i++) {
        atomic_store(&calls[i].release, 1);
        pthread_join(th[i], NULL);
    }
    assert_int_equal(blocks_on(&tr, nb[0], 0).n, 0);
    assert_int_equal(blocks_on(&tr, bl[0], CTR_REASON_RECV).n, 1);
    ctr_trace_free(&tr);
    for (int i = 0; i < 2; i++) {
        close(nb[i]);
        close(bl[i]);
    }
}

/* Each call's reason: NET_ variants on a socket, the plain ones elsewhere. */
static void test_reasons_by_call(void **state)
{
    (void)state;
    int sv[2], p[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    start(1);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    char buf[8] = "abcdefg";
    struct iovec iov = {buf, 1};
    assert_int_equal(writev(sv[1], &iov, 1), 1);
    assert_int_equal(readv(sv[0], &iov, 1), 1);
    assert_int_equal(send(sv[1], buf, 1, 0), 1);
    assert_int_equal(recv(sv[0], buf, 1, 0), 1);
    assert_int_equal(sendto(sv[1], buf, 1, 0, NULL, 0), 1);
    assert_int_equal(recvfrom(sv[0], buf, 1, 0, NULL, NULL), 1);
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    assert_int_equal(sendmsg(sv[1], &mh, 0), 1);
    assert_int_equal(recvmsg(sv[0], &mh, 0), 1);
    struct pollfd pf = {sv[0], POLLIN, 0};
    assert_int_equal(poll(&pf, 1, 1), 0); /* waits its millisecond: nothing to read */
    assert_int_equal(writev(p[1], &iov, 1), 1);
    assert_int_equal(readv(p[0], &iov, 1), 1);
    int d = dup2(sv[0], 100); /* 100 is now a socket */
    assert_int_equal(d, 100);
    assert_int_equal(write(sv[1], buf, 1), 1);
    assert_int_equal(read(d, buf, 1), 1);
    assert_int_equal(dup2(p[1], 100), 100); /* and now a pipe */
    assert_int_equal(write(d, buf, 1), 1);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_int_equal(blocks_on(&tr, sv[1], CTR_REASON_NET_WRITEV).n, 1);
    assert_int_equal(blocks_on(&tr, sv[0], CTR_REASON_NET_READV).n, 1);
    assert_int_equal(blocks_on(&tr, sv[1], CTR_REASON_SEND).n, 1);
    assert_int_equal(blocks_on(&tr, sv[0], CTR_REASON_RECV).n, 1);
    assert_int_equal(blocks_on(&tr, sv[1], CTR_REASON_SENDTO).n, 1);
    assert_int_equal(blocks_on(&tr, sv[0], CTR_REASON_RECVFROM).n, 1);
    assert_int_equal(blocks_on(&tr, sv[1], CTR_REASON_SENDMSG).n, 1);
    assert_int_equal(blocks_on(&tr, sv[0], CTR_REASON_RECVMSG).n, 1);
    assert_int_equal(blocks_on(&tr, sv[0], CTR_REASON_POLL).n, 1);
    assert_int_equal(blocks_on(&tr, p[1], CTR_REASON_WRITEV).n, 1);
    assert_int_equal(blocks_on(&tr, p[0], CTR_REASON_READV).n, 1);
    assert_int_equal(blocks_on(&tr, 100, CTR_REASON_NET_READ).n, 1);
    assert_int_equal(blocks_on(&tr, 100, CTR_REASON_WRITE).n, 1);
    assert_int_equal(blocks_on(&tr, 100, 0).n, 2);
    ctr_trace_free(&tr);
    close(d);
    close(p[0]);
    close(p[1]);
    close(sv[0]);
    close(sv[1]);
}

/* ---------------------------------------------------------------------------
 * errno
 * ------------------------------------------------------------------------- */

static void check_errnos(void)
{
    char c;
    /* A bad descriptor: EBADF, even though the recorded call's class is
     * looked up (fstat fails too). */
    int bad = open("/dev/null", O_RDONLY);
    assert_true(bad >= 0);
    close(bad);
    errno = 0;
    assert_int_equal(read(bad, &c, 1), -1);
    assert_int_equal(errno, EBADF);
    errno = 0;
    assert_int_equal(recv(bad, &c, 1, 0), -1);
    assert_int_equal(errno, EBADF);
    /* No data on a non-blocking socket: EAGAIN. */
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    errno = 0;
    assert_int_equal(read(sv[0], &c, 1), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    /* A call that succeeds leaves errno alone. */
    errno = EDOM;
    assert_int_equal(write(sv[1], "q", 1), 1);
    assert_int_equal(errno, EDOM);
    assert_int_equal(read(sv[0], &c, 1), 1);
    assert_int_equal(errno, EDOM);
    errno = 0;
    assert_int_equal(open("/nonexistent/ctrace", O_RDONLY), -1);
    assert_int_equal(errno, ENOENT);
    close(sv[0]);
    close(sv[1]);
}

static atomic_int go;

static void *errnos_thread(void *arg)
{
    (void)arg;
    /* Created before tracing, so its first traced call registers it, inside
     * the wrapper: that must keep errno too. */
    while (!atomic_load(&go))
        sched_yield();
    errno = ERANGE;
    char c;
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], "r", 1), 1);
    assert_int_equal(errno, ERANGE);
    assert_int_equal(read(p[0], &c, 1), 1);
    assert_int_equal(errno, ERANGE);
    close(p[0]);
    close(p[1]);
    check_errnos();
    return NULL;
}

static void test_errno_kept(void **state)
{
    (void)state;
    check_errnos(); /* not tracing */
    atomic_store(&go, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, errnos_thread, NULL), 0);
    start(1); /* every call recorded: the slow path runs every time */
    check_errnos();
    atomic_store(&go, 1);
    pthread_join(th, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    ctr_trace_free(&tr);
}

/* ---------------------------------------------------------------------------
 * The net and syscall delay profiles
 * ------------------------------------------------------------------------- */

/* The delay values (ns) of the samples of a gzip'd profile.proto: Profile
 * field 2 is Sample, whose field 2 holds the values (packed or not); the
 * second value is the delay. */
struct delays {
    size_t n;
    int64_t ns[64];
};

static uint64_t pb_varint(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    fail_msg("bad varint in the profile");
    return 0;
}

/* Visits the fields of the message [p, end); calls fn for each. */
static void pb_fields(const uint8_t *p, const uint8_t *end,
                      void (*fn)(void *ctx, int field, int wt, uint64_t v, const uint8_t *b,
                                 const uint8_t *e),
                      void *ctx)
{
    while (p < end) {
        uint64_t tag = pb_varint(&p, end);
        int wt = (int)(tag & 7), f = (int)(tag >> 3);
        uint64_t v = 0;
        const uint8_t *b = NULL;
        if (wt == 0) {
            v = pb_varint(&p, end);
        } else if (wt == 1 || wt == 5) {
            size_t n = wt == 1 ? 8 : 4;
            assert_true((size_t)(end - p) >= n);
            p += n;
        } else if (wt == 2) {
            v = pb_varint(&p, end);
            assert_true(v <= (uint64_t)(end - p));
            b = p;
            p += v;
        } else {
            fail_msg("wire type %d in the profile", wt);
        }
        fn(ctx, f, wt, v, b, b ? b + v : NULL);
    }
}

struct sample_vals {
    int64_t v[4];
    size_t n;
};

static void sample_field(void *ctx, int f, int wt, uint64_t v, const uint8_t *b, const uint8_t *e)
{
    struct sample_vals *s = ctx;
    if (f != 2)
        return;
    if (wt == 0) {
        if (s->n < 4)
            s->v[s->n++] = (int64_t)v;
        return;
    }
    while (b < e) {
        uint64_t x = pb_varint(&b, e);
        if (s->n < 4)
            s->v[s->n++] = (int64_t)x;
    }
}

static void profile_field(void *ctx, int f, int wt, uint64_t v, const uint8_t *b, const uint8_t *e)
{
    (void)v;
    struct delays *d = ctx;
    if (f != 2 || wt != 2)
        return;
    struct sample_vals s = {{0}, 0};
    pb_fields(b, e, sample_field, &s);
    assert_int_equal(s.n, 2); /* contentions, delay */
    assert_true(d->n < 64);
    d->ns[d->n++] = s.v[1];
}

static struct delays profile_delays(const struct ctr_trace *tr, int cls)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    char err[256];
    assert_int_equal(ctr_profile_write(tr, cls, NULL, f, NULL, err, sizeof(err)), 0);
    long gz_len = ftell(f);
    assert_true(gz_len > 0);
    rewind(f);
    uint8_t *gz = malloc((size_t)gz_len);
    assert_non_null(gz);
    assert_int_equal(fread(gz, 1, (size_t)gz_len, f), (size_t)gz_len);
    fclose(f);
    size_t cap = 1u << 20;
    uint8_t *raw = malloc(cap);
    assert_non_null(raw);
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
    z.next_in = gz;
    z.avail_in = (uInt)gz_len;
    z.next_out = raw;
    z.avail_out = (uInt)cap;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    size_t raw_len = cap - z.avail_out;
    inflateEnd(&z);
    struct delays d = {0};
    pb_fields(raw, raw + raw_len, profile_field, &d);
    free(raw);
    free(gz);
    return d;
}

static size_t count_near(const struct delays *d, uint64_t want_ns)
{
    size_t n = 0;
    for (size_t i = 0; i < d->n; i++)
        n += d->ns[i] >= (int64_t)(want_ns - want_ns / 10) &&
             d->ns[i] <= (int64_t)(want_ns + want_ns / 10);
    return n;
}

/* The blocked intervals on two descriptors, by profile class. */
struct by_class {
    int sock, pipe;
    uint64_t sock_net_ns, pipe_net_ns, sock_sys_ns, pipe_sys_ns;
};

static void add_interval(void *ctx, const struct ctr_interval *iv)
{
    struct by_class *c = ctx;
    if (iv->state != CTR_STATE_BLOCKED || iv->reason >= CTR_REASON_LIMIT)
        return;
    int cls = ctr_reason_specs[iv->reason].wait_class;
    uint64_t ns = iv->end_ns - iv->start_ns;
    if (iv->object == (uint64_t)c->sock && cls == CTR_CLASS_NET)
        c->sock_net_ns += ns;
    if (iv->object == (uint64_t)c->sock && cls == CTR_CLASS_SYSCALL)
        c->sock_sys_ns += ns;
    if (iv->object == (uint64_t)c->pipe && cls == CTR_CLASS_NET)
        c->pipe_net_ns += ns;
    if (iv->object == (uint64_t)c->pipe && cls == CTR_CLASS_SYSCALL)
        c->pipe_sys_ns += ns;
}

static void test_profiles_split_net_and_syscall(void **state)
{
    (void)state;
    int sv[2], p[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(pipe(p), 0);
    start(0);
    /* The socket read waits ~50 ms, the pipe read ~100 ms: the durations
     * tell the two samples apart in the profiles. */
    struct late_write w;
    late_write(&w, sv[1], 50);
    uint64_t took_sock = read_socket(sv[0]);
    pthread_join(w.th, NULL);
    uint64_t slept_sock = w.slept_ns;
    late_write(&w, p[1], 100);
    uint64_t took_pipe = read_pipe(p[0]);
    pthread_join(w.th, NULL);
    uint64_t slept_pipe = w.slept_ns;
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    /* Apart by more than the 10% tolerances, even on a loaded machine. */
    assert_true(took_pipe > took_sock + took_sock / 4);

    struct by_class c = {.sock = sv[0], .pipe = p[0]};
    ctr_state_walk(&tr, add_interval, &c);
    assert_wait(c.sock_net_ns, took_sock, slept_sock);
    assert_wait(c.pipe_sys_ns, took_pipe, slept_pipe);
    assert_int_equal(c.sock_sys_ns, 0);
    assert_int_equal(c.pipe_net_ns, 0);

    struct delays net = profile_delays(&tr, CTR_CLASS_NET);
    struct delays sys = profile_delays(&tr, CTR_CLASS_SYSCALL);
    assert_int_equal(count_near(&net, took_sock), 1);
    assert_int_equal(count_near(&net, took_pipe), 0);
    assert_int_equal(count_near(&sys, took_pipe), 1);
    assert_int_equal(count_near(&sys, took_sock), 0);
    ctr_trace_free(&tr);
    close(sv[0]);
    close(sv[1]);
    close(p[0]);
    close(p[1]);
}

/* Whether a descriptor can block is asked of the kernel once per
 * collector period (fdclass.c) for calls that returned: a flag set where no
 * wrapper sees it (ioctl FIONBIO) shows from the next period, but at once to
 * a question about a call still in progress (kept_ok 0); one set with fcntl
 * (wrapped) shows at once; a descriptor closed and its number reused
 * starts afresh; the class stays known through it. */
static void test_cannot_block_kept_for_a_period(void **state)
{
    (void)state;
    int sv[2];
    /* No round of the collector (which starts a period) during the test. */
    struct trace_options o = {.path = path, .flush_ms = 600000};
    assert_int_equal(trace_start_opts(&o), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(ctr__fd_cannot_block(sv[0], 1), 0);
    int on = 1, off = 0;
    assert_int_equal(ioctl(sv[0], FIONBIO, &on), 0);
    assert_int_equal(ctr__fd_cannot_block(sv[0], 1), 0); /* the period's answer */
    ctr__fd_period_tick();
    assert_int_equal(ctr__fd_cannot_block(sv[0], 1), 1);
    assert_int_equal(ioctl(sv[0], FIONBIO, &off), 0);
    assert_int_equal(ctr__fd_cannot_block(sv[0], 1), 1);
    assert_int_equal(ctr__fd_cannot_block(sv[0], 0), 0); /* asked afresh */
    assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    assert_int_equal(ctr__fd_cannot_block(sv[0], 1), 1); /* seen set: asked afresh */
    assert_int_equal(fcntl(sv[0], F_SETFL, 0), 0);
    assert_int_equal(ctr__fd_cannot_block(sv[0], 1), 0);
    assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    assert_int_equal(ctr__fd_cannot_block(sv[0], 0), 1);
    assert_int_equal(fcntl(sv[0], F_SETFL, 0), 0);
    assert_true(ctr__fd_is_socket(sv[0]));
    ctr__fd_period_tick();
    assert_int_equal(ctr__fd_cannot_block(sv[0], 1), 0);
    assert_true(ctr__fd_is_socket(sv[0]));

    /* A new descriptor under the number: no answer yet, its own class. */
    ctr__fd_period_tick();
    assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
    ctr__fd_period_tick();
    assert_int_equal(ctr__fd_cannot_block(sv[0], 1), 1);
    int num = sv[0];
    close(sv[0]);
    close(sv[1]);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int moved = fds[0] == num ? -1 : dup2(fds[0], num);
    assert_true(moved == -1 || moved == num);
    assert_int_equal(ctr__fd_cannot_block(num, 1), 0);
    assert_false(ctr__fd_is_socket(num));
    close(fds[0]);
    close(fds[1]);
    if (moved == num)
        close(num);
}

int main(void)
{
    setenv("DEBUGINFOD_URLS", "", 1); /* the symbolizer must not go online */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_socket_read_is_net, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipe_read_is_syscall, setup, teardown),
        cmocka_unit_test_setup_teardown(test_socket_classified_without_seeing_it_made, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fsync_and_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fast_read_records_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_call_recorded_at_1ns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collector_not_traced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reasons_by_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_calls_that_cannot_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_in_progress_at_the_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errno_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profiles_split_net_and_syscall, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cannot_block_kept_for_a_period, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
