/* SPDX-License-Identifier: MIT */
/* prog-harm.c - programs that do to their own signals and descriptors what
 * real programs do, run with and without `ctrace run` by harm.sh, which
 * compares what they print and write. Built without frame pointers, so that
 * stacks need libunwind (and its descriptors exist).
 *
 * usage: prog-harm MODE [FILE]
 *   sigwait     SIGTERM blocked before any thread, taken by sigwait() in a
 *               dedicated thread, sent process-directed: the usual shutdown
 *   closeall    close every fd >= 3 (a loop to 1024), then write FILE while
 *               threads contend for a lock
 *   closerange  the same with close_range(3, ~0U)
 *   closefrom   the same with closefrom(3)
 *   fdreuse     close every fd >= 3, make two socketpairs (numbers printed),
 *               contend for a lock, then pass a message over each pair
 *   dup2top     dup2 a file onto the highest descriptor open at start (the
 *               tracer's, if any), write FILE through it, contend for a lock
 *   rawclose    contend, then close every fd >= 3 with raw syscalls (which no
 *               wrapper sees), then write FILE while threads contend: the
 *               tracer finds its file again by its path
 *   rawrange    the same with a raw close_range(3, ~0U)
 *   rawlost     close every fd >= 3 with raw syscalls and unlink TRACE (the
 *               tracer cannot find its file again: ctrace run says so)
 *   fdcount     contend, then open /dev/null until it fails, print how many
 *               (under a descriptor limit, the tracer's share shows)
 *   memhog      contend (the threads' creation must succeed), print VmSize,
 *               then malloc and touch 1 MiB blocks until malloc fails or
 *               FILE (a number) MiB are had; print how many (under
 *               `ulimit -v`, the tracer's share of the address space shows)
 * Prints what it saw; exits 0 when everything went as it would untraced.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vmsize.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* Waits that libctrace records, with stacks through code without frame
 * pointers. */
static __attribute__((noinline)) void work(void)
{
    pthread_mutex_lock(&mu);
    usleep(500);
    pthread_mutex_unlock(&mu);
}

static void *contend(void *arg)
{
    for (int i = 0; i < 100; i++)
        work();
    return arg;
}

/* Three threads contend for a lock. @return how many could not be made. */
static int contention(void)
{
    pthread_t t[3];
    int made[3], failed = 0;
    for (int i = 0; i < 3; i++)
        failed += !(made[i] = pthread_create(&t[i], NULL, contend, NULL) == 0);
    for (int i = 0; i < 3; i++)
        if (made[i])
            pthread_join(t[i], NULL);
    return failed;
}

/* Writes 20 lines to fd while threads contend, then closes it. */
static int write_data(int fd)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, contend, NULL);
    for (int i = 0; i < 20; i++) {
        char line[64];
        int n = snprintf(line, sizeof(line), "line %d of the program's data\n", i);
        if (write(fd, line, (size_t)n) != n)
            return 1;
        usleep(2000);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return close(fd) != 0;
}

static int open_data(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    printf("data fd=%d\n", fd);
    return fd;
}

static void *wait_for_term(void *arg)
{
    sigset_t *set = arg;
    int sig = 0;
    sigwait(set, &sig);
    printf("sigwait got signal %d\n", sig);
    return NULL;
}

static int mode_sigwait(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_t waiter;
    pthread_create(&waiter, NULL, wait_for_term, &set);
    contention();
    kill(getpid(), SIGTERM); /* process-directed: any thread that accepts it */
    pthread_join(waiter, NULL);
    return 0;
}

static void close_all_loop(void)
{
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
}

static int mode_fdreuse(void)
{
    close_all_loop();
    int a[2], b[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, a) || socketpair(AF_UNIX, SOCK_STREAM, 0, b))
        return 1;
    printf("fds a=%d,%d b=%d,%d\n", a[0], a[1], b[0], b[1]);
    if (write(a[0], "hello-a", 7) != 7 || write(b[1], "hello-b", 7) != 7)
        return 1;
    contention();
    char buf[64] = {0};
    ssize_t n = read(a[1], buf, sizeof(buf) - 1);
    printf("a: %zd '%s'\n", n, n > 0 ? buf : "");
    memset(buf, 0, sizeof(buf));
    n = read(b[0], buf, sizeof(buf) - 1);
    printf("b: %zd '%s'\n", n, n > 0 ? buf : "");
    int fl = fcntl(b[1], F_GETFL);
    fcntl(b[1], F_SETFL, fl | O_NONBLOCK);
    n = read(b[1], buf, sizeof(buf));
    printf("nothing else arrived: %s\n", n < 0 ? "yes" : "no");
    return 0;
}

/* The highest descriptor open now. */
static int highest_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    int top = -1, own = d ? dirfd(d) : -1;
    for (struct dirent *e; d && (e = readdir(d));) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd != own && fd > top)
            top = fd;
    }
    if (d)
        closedir(d);
    return top;
}

static int mode_dup2top(const char *path)
{
    contention(); /* the tracer's descriptors exist by now, if traced */
    int top = highest_fd();
    int target = top > 2 ? top : 100; /* untraced: a number of its own choosing */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, target) != target)
        return 1;
    close(fd);
    printf("writing through a dup2'd descriptor\n");
    return write_data(target);
}

static int mode_memhog(long cap_mib)
{
    int failed = contention();
    printf("threads %s\nvmsize %ld\n", failed ? "failed" : "made", ctr_test_vm_size_kib());
    long got = 0;
    char *block;
    while (got < cap_mib && (block = malloc(1 << 20))) {
        memset(block, 1, 1 << 20); /* kept: the point is to run out */
        got++;
    }
    printf("got %ld\n", got);
    return failed;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *file = argc > 2 ? argv[2] : "data.txt";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(mode, "sigwait"))
        return mode_sigwait();
    if (!strcmp(mode, "closeall")) {
        close_all_loop();
        return write_data(open_data(file));
    }
    if (!strcmp(mode, "closerange")) {
        close_range(3, ~0u, 0);
        return write_data(open_data(file));
    }
    if (!strcmp(mode, "closefrom")) {
        closefrom(3);
        return write_data(open_data(file));
    }
    if (!strcmp(mode, "fdreuse"))
        return mode_fdreuse();
    if (!strcmp(mode, "dup2top"))
        return mode_dup2top(file);
    if (!strcmp(mode, "rawclose") || !strcmp(mode, "rawlost")) {
        contention(); /* the tracer's descriptors exist by now, if traced */
        int lost = !strcmp(mode, "rawlost");
        if (lost)
            unlink(file);
        for (long fd = 3; fd < 65536; fd++)
            syscall(SYS_close, fd);
        if (lost) {
            contention();
            return 0;
        }
        return write_data(open_data(file));
    }
    if (!strcmp(mode, "rawrange")) {
        contention();
        syscall(SYS_close_range, 3, ~0u, 0);
        return write_data(open_data(file));
    }
    if (!strcmp(mode, "memhog"))
        return mode_memhog(atol(file));
    if (!strcmp(mode, "fdcount")) {
        contention();
        int n = 0;
        while (open("/dev/null", O_RDONLY) >= 0)
            n++;
        printf("opened %d\n", n);
        return 0;
    }
    fprintf(stderr,
            "usage: prog-harm sigwait|closeall|closerange|closefrom|fdreuse|dup2top|rawclose|"
            "rawrange|rawlost|fdcount|memhog [FILE]\n");
    return 2;
}
