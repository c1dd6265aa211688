/* SPDX-License-Identifier: MIT */
/* test-proc.c - the wrappers of the waits for processes and signals
 * (tracer/wrap/interpose_proc.c): a wait for a child or a signal is recorded with
 * the duration the test measured around it, its reason (syscall class), its
 * object (the child or the signal) and the caller's stack and line; a call
 * that cannot block (WNOHANG, a zero timeout) records nothing; errno and
 * the results are the real calls'; a thread still waiting at the end is a
 * wait open at the end; the syscall profile counts these waits.
 *
 * Expects -g (line numbers are checked against __LINE__ markers written on
 * the same line as the calls they describe).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "testwait.h"

#include "ctrace/trace.h"
#include "ctrace_format.h"
#include "profile/profile.h"
#include "read/trace.h"
#include "read/state.h"
#include "symbols/symbolize.h"

#define NOINLINE __attribute__((noinline))

static char path[64]; /* the trace */

static void start(unsigned io_min_ns)
{
    struct trace_options o = {.path = path, .io_min_ns = io_min_ns};
    assert_int_equal(trace_start_opts(&o), 0);
}

static int setup(void **state)
{
    (void)state;
    ctr_test_temp(path, sizeof(path), "proc");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return ctr_test_trace_end(path);
}

/* The Block events of `reason`: how many, and of the last one its object,
 * duration (to its Unblock; 0 if none follows) and stack. */
struct block {
    size_t n;
    uint64_t object, wait_ns, stack;
};

static struct block blocks_of(const struct ctr_trace *tr, int reason)
{
    struct block b = {0};
    for (size_t i = 0; i < tr->nthreads; i++) {
        const struct ctr_thread_info *th = &tr->threads[i];
        for (size_t k = 0; k < th->nevents; k++) {
            const struct ctr_trace_event *e = &th->events[k];
            if (e->type != CTR_EV_BLOCK || e->args[0] != (uint64_t)reason)
                continue;
            b.n++;
            b.object = e->args[1];
            b.stack = e->args[2];
            b.wait_ns = k + 1 < th->nevents && th->events[k + 1].type == CTR_EV_UNBLOCK
                            ? th->events[k + 1].ns - e->ns
                            : 0;
        }
    }
    return b;
}

/* What a child measured, for its parent: how long the parent's waiting
 * thread slept before the child exited (shared memory, made once). */
static _Atomic uint64_t *child_slept_ns;

/* A child that exits with `code` `ms` milliseconds after the parent's
 * thread `sleeper` sleeps (in its wait for the child), having measured that
 * span into *child_slept_ns; or after its own start when sleeper is 0. */
static pid_t child_exiting_after(unsigned ms, int code, pid_t sleeper)
{
    if (!child_slept_ns) {
        void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        assert_true(m != MAP_FAILED);
        child_slept_ns = m;
    }
    atomic_store(child_slept_ns, 0);
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (sleeper) {
            atomic_store(child_slept_ns, ctr_test_asleep_for(parent, sleeper, ms));
        } else {
            struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000L};
            nanosleep(&d, NULL);
        }
        _exit(code);
    }
    return pid;
}

/* A child that exits with `code` once the parent closes *release (no
 * timing: it runs until told). */
static pid_t child_exiting_when_released(int code, int *release)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[1]);
        char c;
        while (read(p[0], &c, 1) > 0) {
        }
        _exit(code);
    }
    close(p[0]);
    *release = p[1];
    return pid;
}

/* ---------------------------------------------------------------------------
 * Waits for children
 * ------------------------------------------------------------------------- */

static int waitpid_line;

static NOINLINE uint64_t wait_for_child(pid_t pid, int *status)
{
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(waitpid(pid, status, 0), pid); waitpid_line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

static void test_waitpid_recorded(void **state)
{
    (void)state;
    start(0);
    pid_t pid = child_exiting_after(50, 7, ctr_test_tid());
    int status = 0;
    errno = 1234; /* a call that succeeds leaves errno alone, traced or not */
    uint64_t took = wait_for_child(pid, &status);
    assert_int_equal(errno, 1234);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 7);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct block b = blocks_of(&tr, CTR_REASON_WAITPID);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.object, (uint64_t)pid);
    assert_wait(b.wait_ns, took, atomic_load(child_slept_ns));
    assert_stack_at(&tr, b.stack, "wait_for_child", waitpid_line);
    assert_int_equal(ctr_reason_specs[CTR_REASON_WAITPID].wait_class, CTR_CLASS_SYSCALL);
    assert_string_equal(ctr_reason_specs[CTR_REASON_WAITPID].call, "waitpid");
    ctr_trace_free(&tr);
}

/* wait, wait3, wait4, waitid: each its own reason; the object is the child
 * reported (waitid: from its siginfo). */
static void test_wait_family_reasons(void **state)
{
    (void)state;
    start(1);
    int status;
    struct rusage ru;
    siginfo_t si;
    pid_t a = child_exiting_after(20, 1, 0);
    assert_int_equal(wait(&status), a);
    pid_t b = child_exiting_after(20, 2, 0);
    assert_int_equal(wait3(&status, 0, &ru), b);
    pid_t c = child_exiting_after(20, 3, 0);
    assert_int_equal(wait4(c, &status, 0, &ru), c);
    assert_int_equal(WEXITSTATUS(status), 3);
    pid_t d = child_exiting_after(20, 4, 0);
    memset(&si, 0, sizeof(si));
    assert_int_equal(waitid(P_ALL, 0, &si, WEXITED), 0);
    assert_int_equal(si.si_pid, d);
    assert_int_equal(si.si_status, 4);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct block w = blocks_of(&tr, CTR_REASON_WAIT), w3 = blocks_of(&tr, CTR_REASON_WAIT3),
                 w4 = blocks_of(&tr, CTR_REASON_WAIT4), wi = blocks_of(&tr, CTR_REASON_WAITID);
    assert_int_equal(w.n, 1);
    assert_int_equal(w.object, (uint64_t)a);
    assert_int_equal(w3.n, 1);
    assert_int_equal(w3.object, (uint64_t)b);
    assert_int_equal(w4.n, 1);
    assert_int_equal(w4.object, (uint64_t)c);
    assert_int_equal(wi.n, 1);
    assert_int_equal(wi.object, (uint64_t)d);
    assert_int_equal(blocks_of(&tr, CTR_REASON_WAITPID).n, 0);
    ctr_trace_free(&tr);
}

/* WNOHANG cannot block: never a wait, even at a 1 ns threshold, whatever
 * it returns (0: the child runs; ECHILD: none). errno is the real call's. */
static void test_wnohang_is_not_a_wait(void **state)
{
    (void)state;
    int release;
    pid_t pid = child_exiting_when_released(0, &release);
    start(1);
    int status;
    siginfo_t si;
    for (int i = 0; i < 100; i++) {
        assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
        assert_int_equal(wait4(pid, &status, WNOHANG, NULL), 0);
        assert_int_equal(wait3(&status, WNOHANG, NULL), 0);
        memset(&si, 0, sizeof(si));
        assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG), 0);
    }
    errno = 0;
    assert_int_equal(waitpid(pid + 100000, &status, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    assert_int_equal(blocks_of(&tr, CTR_REASON_WAITPID).n, 0);
    assert_int_equal(blocks_of(&tr, CTR_REASON_WAIT4).n, 0);
    assert_int_equal(blocks_of(&tr, CTR_REASON_WAIT3).n, 0);
    assert_int_equal(blocks_of(&tr, CTR_REASON_WAITID).n, 0);
    ctr_trace_free(&tr);
    close(release);
    assert_int_equal(waitpid(pid, &status, 0), pid);
}

/* A failed wait keeps its errno (ECHILD) and its result. */
static void test_wait_errno_kept(void **state)
{
    (void)state;
    start(1);
    int status;
    errno = 0;
    assert_int_equal(waitpid(-1, &status, 0), -1);
    assert_int_equal(errno, ECHILD);
    errno = 0;
    assert_int_equal(wait(&status), -1);
    assert_int_equal(errno, ECHILD);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct block b = blocks_of(&tr, CTR_REASON_WAITPID);
    if (b.n) /* recorded only if it was slow on a busy machine */
        assert_int_equal(b.object, (uint64_t)-1);
    ctr_trace_free(&tr);
}

/* ---------------------------------------------------------------------------
 * Waits for signals
 * ------------------------------------------------------------------------- */

/* A thread that sends `sig` to `to` ms milliseconds after `to` sleeps (in
 * its wait for the signal), and measures how long `to` slept before the
 * signal (slept_ns, for assert_wait). */
struct late_signal {
    pthread_t to, th;
    int sig;
    unsigned ms;
    pid_t to_tid;
    uint64_t slept_ns;
};

static void *late_signal_main(void *arg)
{
    struct late_signal *s = arg;
    s->slept_ns = ctr_test_asleep_for(getpid(), s->to_tid, s->ms);
    assert_int_equal(pthread_kill(s->to, s->sig), 0);
    return NULL;
}

static void late_signal(struct late_signal *s, int sig, unsigned ms)
{
    *s = (struct late_signal){pthread_self(), 0, sig, ms, ctr_test_tid(), 0};
    assert_int_equal(pthread_create(&s->th, NULL, late_signal_main, s), 0);
}

/* The set of sig alone. */
static sigset_t only(int sig)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    return set;
}

/* Blocks sig in the calling thread; returns the old mask. */
static sigset_t block_signal(int sig)
{
    sigset_t set = only(sig), old;
    assert_int_equal(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
    return old;
}

static int sigwait_line;

static NOINLINE uint64_t wait_signal(const sigset_t *set, int *sig)
{
    uint64_t t0 = ctr_test_now_ns();
    /* clang-format off */
    assert_int_equal(sigwait(set, sig), 0); sigwait_line = __LINE__;
    /* clang-format on */
    return ctr_test_now_ns() - t0;
}

static void test_sigwait_recorded(void **state)
{
    (void)state;
    sigset_t old = block_signal(SIGUSR1), set = only(SIGUSR1);
    start(0);
    struct late_signal s;
    late_signal(&s, SIGUSR1, 50);
    int sig = 0;
    errno = 4321;
    uint64_t took = wait_signal(&set, &sig);
    assert_int_equal(errno, 4321);
    assert_int_equal(sig, SIGUSR1);
    pthread_join(s.th, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct block b = blocks_of(&tr, CTR_REASON_SIGWAIT);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.object, SIGUSR1);
    assert_wait(b.wait_ns, took, s.slept_ns);
    assert_stack_at(&tr, b.stack, "wait_signal", sigwait_line);
    ctr_trace_free(&tr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* sigwaitinfo returns the signal; sigtimedwait times out with EAGAIN (a
 * wait of its length, taking no signal: object 0) or, with a zero timeout,
 * does not wait at all and is not recorded. */
static void test_sigwaitinfo_and_sigtimedwait(void **state)
{
    (void)state;
    sigset_t old = block_signal(SIGUSR2), set = only(SIGUSR2);
    start(1);
    struct late_signal s;
    late_signal(&s, SIGUSR2, 30);
    siginfo_t si;
    uint64_t t0 = ctr_test_now_ns();
    assert_int_equal(sigwaitinfo(&set, &si), SIGUSR2);
    uint64_t took_info = ctr_test_now_ns() - t0;
    assert_int_equal(si.si_signo, SIGUSR2);
    pthread_join(s.th, NULL);
    for (int i = 0; i < 100; i++) {
        struct timespec zero = {0, 0};
        errno = 0;
        assert_int_equal(sigtimedwait(&set, &si, &zero), -1);
        assert_int_equal(errno, EAGAIN);
    }
    struct timespec ts = {0, 40 * 1000 * 1000};
    errno = 0;
    t0 = ctr_test_now_ns();
    assert_int_equal(sigtimedwait(&set, &si, &ts), -1);
    uint64_t took_timed = ctr_test_now_ns() - t0;
    assert_int_equal(errno, EAGAIN);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct block bi = blocks_of(&tr, CTR_REASON_SIGWAITINFO);
    assert_int_equal(bi.n, 1);
    assert_int_equal(bi.object, SIGUSR2);
    assert_wait(bi.wait_ns, took_info, s.slept_ns);
    struct block bt = blocks_of(&tr, CTR_REASON_SIGTIMEDWAIT);
    assert_int_equal(bt.n, 1); /* the 100 zero timeouts are not waits */
    assert_int_equal(bt.object, 0);
    /* No other side: the kernel waits at least the timeout. */
    assert_wait(bt.wait_ns, took_timed, ts.tv_nsec);
    ctr_trace_free(&tr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
    handled = sig;
}

/* pause and sigsuspend return -1 EINTR once a handler ran: recorded with
 * that errno kept; the handler's disposition is the program's. */
static void test_pause_and_sigsuspend(void **state)
{
    (void)state;
    struct sigaction sa = {0}, old_sa;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old_sa), 0);
    start(1);
    struct late_signal s;
    late_signal(&s, SIGUSR1, 30);
    handled = 0;
    uint64_t t0 = ctr_test_now_ns();
    assert_int_equal(pause(), -1);
    uint64_t took_pause = ctr_test_now_ns() - t0;
    assert_int_equal(errno, EINTR);
    assert_int_equal(handled, SIGUSR1);
    pthread_join(s.th, NULL);
    uint64_t slept_pause = s.slept_ns;

    sigset_t old = block_signal(SIGUSR1), during;
    sigemptyset(&during);
    late_signal(&s, SIGUSR1, 30);
    handled = 0;
    t0 = ctr_test_now_ns();
    assert_int_equal(sigsuspend(&during), -1);
    uint64_t took_suspend = ctr_test_now_ns() - t0;
    assert_int_equal(errno, EINTR);
    assert_int_equal(handled, SIGUSR1);
    pthread_join(s.th, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct block bp = blocks_of(&tr, CTR_REASON_PAUSE);
    assert_int_equal(bp.n, 1);
    assert_wait(bp.wait_ns, took_pause, slept_pause);
    struct block bs = blocks_of(&tr, CTR_REASON_SIGSUSPEND);
    assert_int_equal(bs.n, 1);
    assert_wait(bs.wait_ns, took_suspend, s.slept_ns);
    ctr_trace_free(&tr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    sigaction(SIGUSR1, &old_sa, NULL);
}

/* ---------------------------------------------------------------------------
 * A wait still going on at the end, and the profile
 * ------------------------------------------------------------------------- */

static pid_t waiter_tid;

static void *sigwait_forever(void *arg)
{
    (void)arg;
    __atomic_store_n(&waiter_tid, ctr_test_tid(), __ATOMIC_RELEASE);
    sigset_t set = only(SIGUSR2);
    int sig;
    sigwait(&set, &sig); /* until the test sends it, after the trace ends */
    return NULL;
}

/* A thread in sigwait when the trace stops (a shutdown thread whose signal
 * never came) is a wait open at the end: Block with no Unblock. */
static void test_sigwait_open_at_end(void **state)
{
    (void)state;
    sigset_t old = block_signal(SIGUSR2); /* the thread inherits the mask */
    start(0);
    pthread_t th;
    waiter_tid = 0;
    assert_int_equal(pthread_create(&th, NULL, sigwait_forever, NULL), 0);
    while (!__atomic_load_n(&waiter_tid, __ATOMIC_ACQUIRE))
        sched_yield();
    ctr_test_until_asleep(waiter_tid);
    struct timespec d = {0, 20 * 1000 * 1000}; /* past io_min_ns, by far */
    nanosleep(&d, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct block b = blocks_of(&tr, CTR_REASON_SIGWAIT);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.wait_ns, 0); /* still open */
    ctr_trace_free(&tr);
    assert_int_equal(pthread_kill(th, SIGUSR2), 0);
    pthread_join(th, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

struct calls {
    int64_t waitpid_ns, sigwait_ns;
};

static int on_sample(void *ctx, const struct ctr_pprof_frame *frames, size_t n, int64_t count,
                     int64_t delay_ns)
{
    (void)count;
    struct calls *c = ctx;
    if (n && frames[0].function && strcmp(frames[0].function, "waitpid") == 0)
        c->waitpid_ns += delay_ns;
    if (n && frames[0].function && strcmp(frames[0].function, "sigwait") == 0)
        c->sigwait_ns += delay_ns;
    return 0;
}

/* The syscall profile counts the waits, with their call as the leaf; the
 * sync and net profiles do not. */
static void test_syscall_profile(void **state)
{
    (void)state;
    sigset_t old = block_signal(SIGUSR1), set = only(SIGUSR1);
    start(0);
    pid_t pid = child_exiting_after(30, 0, ctr_test_tid());
    int status, sig;
    uint64_t took_wait = wait_for_child(pid, &status);
    uint64_t slept_wait = atomic_load(child_slept_ns);
    struct late_signal s;
    late_signal(&s, SIGUSR1, 30);
    uint64_t took_sig = wait_signal(&set, &sig);
    pthread_join(s.th, NULL);
    struct ctr_trace tr;
    ctr_test_stop_and_read(path, &tr);
    struct calls c = {0};
    assert_int_equal(ctr_profile_samples(&tr, CTR_PROFILE_SYSCALL, NULL, on_sample, &c), 0);
    assert_wait((uint64_t)c.waitpid_ns, took_wait, slept_wait);
    assert_wait((uint64_t)c.sigwait_ns, took_sig, s.slept_ns);
    struct calls none = {0};
    assert_int_equal(ctr_profile_samples(&tr, CTR_PROFILE_SYNC, NULL, on_sample, &none), 0);
    assert_int_equal(ctr_profile_samples(&tr, CTR_PROFILE_NET, NULL, on_sample, &none), 0);
    assert_int_equal(none.waitpid_ns + none.sigwait_ns, 0);
    ctr_trace_free(&tr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_waitpid_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_family_reasons, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wnohang_is_not_a_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_errno_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigwait_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigwaitinfo_and_sigtimedwait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pause_and_sigsuspend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigwait_open_at_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_syscall_profile, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
