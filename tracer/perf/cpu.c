/* SPDX-License-Identifier: MIT */
/* cpu.c - CPU samples: every 1/cpu_hz s of a traced thread's own CPU time,
 * what it was running (FORMAT.md §4.1), from one of two sources.
 *
 * perf_event (the default): each thread has a software task-clock event
 * that samples user-mode code only (no privilege needed where
 * perf_event_paranoid <= 2), with the registers and a copy of the top of
 * the stack (at most CPU_STACK_COPY bytes). The collector drains the rings
 * each generation and unwinds each copy (cpu_unwind.c): nothing runs on
 * the traced thread. Samples go into the thread's SWITCHES record, timed in
 * CLOCK_MONOTONIC ns by the kernel.
 *
 * The timer (trace_options.cpu_timer, or where perf_event cannot be used):
 * each thread has a POSIX timer on its own CPU-time clock that sends it
 * SIGPROF; the handler (on_sigprof) records the interrupted stack through
 * the one guarded emit path, into the thread's own buffer. Only while the
 * program leaves SIGPROF at its default: the handler is installed only over
 * SIG_DFL, and then stays (a signal queued before a stop must never find the
 * default action, which ends the process); SIGPROFs that are not our
 * timers' get the default action, as without the tracer.
 *
 * Phase: a thread's CPU clock starts at 0, so a sampler whose first sample
 * came after a whole period would never see a thread that lives less than
 * one (a server's per-request threads). The first sample comes after a
 * random part of a period instead (as Go's per-thread timers do), and
 * stands for a whole period: a thread with c < period of CPU is sampled
 * with probability c / period, which is its CPU on average. The timer's
 * first expiry is that random part. A perf event cannot be given one (its
 * PERF_EVENT_IOC_PERIOD restarts the count), so it starts with that part
 * as its period, and the collector sets the real one when it sees the
 * first sample. Until then the event samples every part: those samples
 * (and those the ring could not take, by their count) are thinned to one
 * per period of CPU, each standing for the periods it covers (`cpu_credit`).
 * The part is at least 1/CPU_PHASE_MIN_DIV of a period, which bounds that
 * flood; a thread with less CPU than that is never sampled.
 *
 * Lifecycle: a thread's sampler is opened once per session, by whichever of
 * the thread itself (its first event) and the session's start (every thread
 * alive then) claims the slot's cpu_epoch first. perf rings stay open
 * between sessions (re-enabled) until their slot is reused, or a session
 * with another rate or size starts while no one can read them (as sched.c
 * does with its rings); timers are
 * deleted at the session's end or the thread's, through the BUSY state of
 * cpu_timer_state (core/thread.h), so exactly one party deletes each.
 */
#include "perf/cpu.h"

#include "perf/cputime.h"

#include "core/clock.h"
#include "core/emit.h"
#include "core/hooks.h"
#include "core/lock.h"
#include "core/perfring.h"
#include "core/real.h"
#include "core/session.h"
#include "core/stack.h"
#include "core/thread.h"
#include "ctrace_format.h"
#include "ctrace_options.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Bytes of stack a perf sample copies from the stack pointer up. Deeper
 * frames are cut (a stack is true, or shorter than it could be), and so
 * are those beyond a page the thread never touched, where the kernel's copy
 * stops (glibc's regexec keeps 12 KiB of arrays on the stack, mostly
 * unwritten: a seventh of the gateway example's samples end there). perf
 * record's default, 8 KiB, cuts more. A ring holds a flush's samples and a
 * few, in at most CPU_RING_MAX bytes (locked memory, whose pages cost time
 * at each thread's start and end): at high rates the copy is smaller. */
#define CPU_STACK_COPY 16384u
#define CPU_STACK_COPY_MIN 4096u
#define CPU_RING_MAX ((size_t)1 << 20)
/* What a sample record takes besides its stack: header, tid, time, abi,
 * 17 registers, the copy's size and dyn_size. */
#define CPU_SAMPLE_EXTRA 256u
/* The registers a perf sample carries: AX..SP, IP (bits 0..8) and R8..R15
 * (bits 16..23), in this order in the record (PERF_REG_X86_*). */
#define CPU_REGS_MASK 0xff01ffull
/* A timer's sigev_value, to tell our SIGPROFs from any other. */
#define CPU_TIMER_COOKIE 0x63707573 /* "cpus" */

/* The shortest first period, as a fraction of the period: a perf event
 * samples at that rate until the collector's next round. */
#define CPU_PHASE_MIN_DIV 16

enum { TIMER_NONE = 0, TIMER_ARMED, TIMER_BUSY };
enum { HANDLER_NONE = 0, HANDLER_OURS, HANDLER_REFUSED };

/* The session's settings: stored under the API lock before the session is
 * published (relaxed; the epoch's release publishes them), read by
 * samplers and the collector after its acquire. */
static struct {
    _Atomic unsigned hz;
    _Atomic uint64_t period_ns;
    _Atomic int timer;           /* the timer source was asked for */
    _Atomic size_t ring_data;    /* perf rings' data bytes */
    _Atomic unsigned stack_copy; /* and the stack each sample copies */
    _Atomic uint64_t sources;    /* CTR_CPU_* bits used this session */
    _Atomic uint64_t lost;       /* samples lost in this session */
    _Atomic int handler;         /* HANDLER_*: set once, by CAS */
} cpu;

void ctr__cpu_lost(uint64_t n)
{
    /* relaxed: a counter read for SAMPLING records only. */
    atomic_fetch_add_explicit(&cpu.lost, n, memory_order_relaxed);
}

int ctr__cpu_sampling(uint64_t *sources, uint64_t *period_ns, uint64_t *lost)
{
    /* relaxed: see `cpu`; the counters are counters. */
    if (!atomic_load_explicit(&cpu.hz, memory_order_relaxed))
        return 0;
    *sources = atomic_load_explicit(&cpu.sources, memory_order_relaxed);
    *period_ns = atomic_load_explicit(&cpu.period_ns, memory_order_relaxed);
    *lost = atomic_load_explicit(&cpu.lost, memory_order_relaxed);
    return 1;
}

static void note_source(uint64_t bit)
{
    /* relaxed: a set of bits read for SAMPLING records only. */
    atomic_fetch_or_explicit(&cpu.sources, bit, memory_order_relaxed);
}

/* A random first period in [period / CPU_PHASE_MIN_DIV, period]: the
 * phase (see the top). Any thread; no quality needed beyond spreading. */
static uint64_t first_period(uint64_t period)
{
    static _Atomic uint64_t state;
    /* relaxed: a random number; concurrent callers may share a value. */
    uint64_t x = atomic_load_explicit(&state, memory_order_relaxed);
    if (x == 0)
        x = ctr__ticks() | 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17; /* xorshift64 */
    atomic_store_explicit(&state, x, memory_order_relaxed);
    uint64_t lo = period / CPU_PHASE_MIN_DIV + 1;
    return lo + x % (period - lo + 1);
}

/* ---------------------------------------------------------------------------
 * The timer source
 * ------------------------------------------------------------------------- */

static void on_sigprof(int sig, siginfo_t *si, void *uc)
{
    if (si->si_code != SI_TIMER || si->si_value.sival_int != CPU_TIMER_COOKIE) {
        /* Not ours: what SIG_DFL, the program's choice, would do. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        ctr__real.sigaction(sig, &dfl, NULL);
        raise(sig);
        return;
    }
    int saved_errno = errno;
    struct ctr_thread *t = ctr__self;
    /* The tracer's own work on this thread (an event half written, a stack
     * being unwound with libunwind) must not be re-entered: the sample is
     * lost, and counted. relaxed: the thread's own flag (core/thread.h). */
    if (t && t != &ctr__thread_off &&
        (t->internal || atomic_load_explicit(&t->writing, memory_order_relaxed))) {
        ctr__cpu_lost(1);
    } else if (t && t != &ctr__thread_off && ctr__write_begin(t)) {
        uint64_t now = ctr__ticks();
        /* relaxed: see `cpu`. */
        uint64_t period = atomic_load_explicit(&cpu.period_ns, memory_order_relaxed);
        uint64_t args[2] = {ctr__stack_signal(t, uc),
                            period * (1 + (uint64_t)(si->si_overrun > 0 ? si->si_overrun : 0))};
        ctr__emit_at(t, CTR_EV_CPU_SAMPLE, now, args);
        ctr__write_end(t);
    }
    errno = saved_errno;
}

/* Installs on_sigprof over SIG_DFL, once per process. @return whether it is
 * ours. */
static int handler_ready(void)
{
    /* acquire: pairs with the release below; the handler is installed. */
    int h = atomic_load_explicit(&cpu.handler, memory_order_acquire);
    if (h != HANDLER_NONE)
        return h == HANDLER_OURS;
    struct sigaction old, sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask); /* nothing else interrupts the handler's event */
    int verdict = HANDLER_REFUSED;
    /* Two threads may get here at once: the second sees our handler as
     * the program's and refuses; the CAS below keeps the first's verdict. */
    if (ctr__real.sigaction(SIGPROF, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
        old.sa_handler == SIG_DFL && ctr__real.sigaction(SIGPROF, &sa, NULL) == 0)
        verdict = HANDLER_OURS;
    int expected = HANDLER_NONE;
    /* release: the installation before any reader that sees OURS; acquire
     * on failure: the winner's. */
    if (!atomic_compare_exchange_strong_explicit(&cpu.handler, &expected, verdict,
                                                 memory_order_acq_rel, memory_order_acquire))
        verdict = expected;
    return verdict == HANDLER_OURS;
}

/* A thread's CPU-time clock (glibc's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED),
 * which pthread_getcpuclockid gives for a pthread_t): by kernel tid, so that
 * the session's start can arm it for a thread whose handle it cannot use. */

static void timer_delete_once(struct ctr_thread *t);

static int timer_open(struct ctr_thread *t)
{
    if (!handler_ready())
        return -EPERM;
    int expected = TIMER_NONE;
    /* acquire: whatever the last deleter did comes first. */
    if (!atomic_compare_exchange_strong_explicit(&t->cpu_timer_state, &expected, TIMER_BUSY,
                                                 memory_order_acquire, memory_order_relaxed))
        return 0; /* armed already, or being changed */
    struct sigevent ev;
    memset(&ev, 0, sizeof(ev));
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev.sigev_value.sival_int = CPU_TIMER_COOKIE;
    ev._sigev_un._tid = t->os_tid;
    int id, rc = 0;
    /* The raw calls: glibc's timer_create keeps ids of its own. */
    if (ctr__real.syscall(SYS_timer_create, ctr__thread_cpu_clock(t->os_tid), &ev, &id) != 0) {
        rc = -errno;
    } else {
        /* relaxed: see `cpu`. */
        uint64_t p = atomic_load_explicit(&cpu.period_ns, memory_order_relaxed);
        uint64_t f = first_period(p);
        struct itimerspec its = {{(time_t)(p / 1000000000u), (long)(p % 1000000000u)},
                                 {(time_t)(f / 1000000000u), (long)(f % 1000000000u)}};
        if (ctr__real.syscall(SYS_timer_settime, id, 0, &its, NULL) != 0) {
            rc = -errno;
            ctr__real.syscall(SYS_timer_delete, id);
        }
    }
    t->cpu_timer_id = id;
    /* release: the id before whoever next takes the state (CAS acquire). */
    atomic_store_explicit(&t->cpu_timer_state, rc == 0 ? TIMER_ARMED : TIMER_NONE,
                          memory_order_release);
    if (rc == 0)
        note_source(CTR_CPU_TIMER);
    /* The program took SIGPROF meanwhile (ctr__cpu_sigprof_yield may have
     * swept the timers before this one was armed). acquire: as above. */
    if (atomic_load_explicit(&cpu.handler, memory_order_acquire) != HANDLER_OURS)
        timer_delete_once(t);
    return rc;
}

static void timer_delete_once(struct ctr_thread *t)
{
    int expected = TIMER_ARMED;
    /* acquire: pairs with the release in timer_open (the id). */
    if (!atomic_compare_exchange_strong_explicit(&t->cpu_timer_state, &expected, TIMER_BUSY,
                                                 memory_order_acquire, memory_order_relaxed))
        return;
    ctr__real.syscall(SYS_timer_delete, t->cpu_timer_id);
    /* release: as in timer_open. */
    atomic_store_explicit(&t->cpu_timer_state, TIMER_NONE, memory_order_release);
}

/* ---------------------------------------------------------------------------
 * The perf_event source
 * ------------------------------------------------------------------------- */

/* Whether t's open ring is of the session's rate and sizes. */
static int ring_fits(const struct ctr_thread *t)
{
    /* relaxed: see `cpu`. */
    return t->cpu_ring_period == atomic_load_explicit(&cpu.period_ns, memory_order_relaxed) &&
           t->cpu_ring_data == atomic_load_explicit(&cpu.ring_data, memory_order_relaxed) &&
           t->cpu_ring_copy == atomic_load_explicit(&cpu.stack_copy, memory_order_relaxed);
}

/* Closes t's ring if it does not fit the session: only while no one can
 * read it (see ctr__cpu_session). */
static void close_misfit(struct ctr_thread *t, void *ctx)
{
    (void)ctx;
    if (ctr__perf_is_open(&t->cpu_ring) && !ring_fits(t))
        ctr__perf_close(&t->cpu_ring);
}

static int perf_open(struct ctr_thread *t)
{
    /* relaxed: see `cpu`. */
    uint64_t period = atomic_load_explicit(&cpu.period_ns, memory_order_relaxed);
    size_t data = atomic_load_explicit(&cpu.ring_data, memory_order_relaxed);
    if (ctr__perf_is_open(&t->cpu_ring)) {
        /* Another rate or size is a ring the session's start could not
         * close (the last stop gave up on a writer): the timer then. */
        if (!ring_fits(t))
            return -EBUSY;
        ctr__perf_restart(&t->cpu_ring); /* its phase is long random */
        return 0;
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = first_period(period);
    a.sample_type =
        PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = CPU_REGS_MASK;
    a.sample_stack_user = atomic_load_explicit(&cpu.stack_copy, memory_order_relaxed);
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    t->cpu_ring_period = period;
    t->cpu_ring_data = data;
    t->cpu_ring_copy = a.sample_stack_user;
    t->cpu_phase = 0;
    t->cpu_credit = 0;
    t->cpu_first = a.sample_period;
    int rc = ctr__perf_open(&t->cpu_ring, &a, t == ctr__self ? 0 : t->os_tid, data);
    if (rc == 0)
        note_source(CTR_CPU_PERF);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Lifecycle
 * ------------------------------------------------------------------------- */

void ctr__cpu_session(unsigned hz, int timer, unsigned flush_ms, int idle)
{
    /* relaxed: see `cpu`. */
    atomic_store_explicit(&cpu.hz, hz, memory_order_relaxed);
    atomic_store_explicit(&cpu.sources, 0, memory_order_relaxed);
    atomic_store_explicit(&cpu.lost, 0, memory_order_relaxed);
    if (!hz)
        return;
    atomic_store_explicit(&cpu.period_ns, 1000000000u / hz, memory_order_relaxed);
    atomic_store_explicit(&cpu.timer, timer, memory_order_relaxed);
    /* The samples of a flush and a few, so that a late round loses none:
     * at 100 Hz and 100 ms, 256 KiB of 16 KiB copies; at 1000 Hz, 1 MiB
     * of 8 KiB ones. */
    uint64_t per_flush = (uint64_t)hz * flush_ms / 1000 + 3;
    unsigned copy = CPU_STACK_COPY;
    while (copy > CPU_STACK_COPY_MIN && per_flush * (copy + CPU_SAMPLE_EXTRA) > CPU_RING_MAX)
        copy /= 2;
    size_t data = 64u << 10;
    while (data < per_flush * (copy + CPU_SAMPLE_EXTRA) && data < CPU_RING_MAX)
        data <<= 1;
    atomic_store_explicit(&cpu.stack_copy, copy, memory_order_relaxed);
    atomic_store_explicit(&cpu.ring_data, data, memory_order_relaxed);
    if (idle)
        ctr__threads_each(close_misfit, NULL);
}

void ctr__cpu_open(struct ctr_thread *t, uint32_t epoch)
{
    /* relaxed: see `cpu`. */
    if (!atomic_load_explicit(&cpu.hz, memory_order_relaxed))
        return;
    uint32_t seen = atomic_load_explicit(&t->cpu_epoch, memory_order_relaxed);
    /* relaxed: the claim orders nothing; each opener publishes what it
     * opens by itself (the ring's release, the timer state's). */
    if (seen == epoch ||
        !atomic_compare_exchange_strong_explicit(&t->cpu_epoch, &seen, epoch, memory_order_relaxed,
                                                 memory_order_relaxed))
        return;
    int rc = atomic_load_explicit(&cpu.timer, memory_order_relaxed) ? -1 : perf_open(t);
    if (rc != 0)
        timer_open(t); /* failing that too, the thread is not sampled */
}

void ctr__cpu_session_started(uint32_t epoch)
{
    /* relaxed: see `cpu`. */
    if (!atomic_load_explicit(&cpu.hz, memory_order_relaxed))
        return;
    /* The thread that starts the session may never make a traced call (a
     * program that only computes, started by `ctrace run`): it is one of
     * the threads alive now, registered here so that it is sampled too. */
    ctr__self_traced_keeping_errno();
    /* Under reclaim: a live slot cannot be freed and reused meanwhile.
     * acquire on high and on the state: as in ctr__thread_find (thread.c). */
    ctr_lock_acquire(&ctr__threads.reclaim);
    uint32_t high = atomic_load_explicit(&ctr__threads.high, memory_order_acquire);
    for (uint32_t i = 0; i < high && i < ctr__threads.capacity; i++) {
        struct ctr_thread *t = ctr__thread_at(i);
        if (t && atomic_load_explicit(&t->state, memory_order_acquire) == CTR_SLOT_LIVE)
            ctr__cpu_open(t, epoch);
    }
    ctr_lock_release(&ctr__threads.reclaim);
}

/* ctr__threads_each's form of timer_delete_once. */
static void delete_timer(struct ctr_thread *t, void *ctx)
{
    (void)ctx;
    timer_delete_once(t);
}

void ctr__cpu_session_ended(void)
{
    ctr__threads_each(delete_timer, NULL); /* the timers' state takes turns by CAS */
}

void ctr__cpu_sigprof_yield(void)
{
    int expected = HANDLER_OURS;
    /* acq_rel: as in handler_ready; a timer armed after the sweep below
     * sees the state (timer_open) and goes too. */
    if (!atomic_compare_exchange_strong_explicit(&cpu.handler, &expected, HANDLER_REFUSED,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        /* Not ours yet: it never will be (the program's action comes). */
        expected = HANDLER_NONE;
        atomic_compare_exchange_strong_explicit(&cpu.handler, &expected, HANDLER_REFUSED,
                                                memory_order_acq_rel, memory_order_acquire);
        return;
    }
    ctr__cpu_session_ended(); /* every timer goes */
}

void ctr__cpu_sigprof_hide(struct sigaction *old)
{
    /* By the handler alone: signal() hands back a bare pointer, flags and
     * all unknown (sa_handler and sa_sigaction share their storage). */
    if (old->sa_sigaction == on_sigprof) {
        memset(old, 0, sizeof(*old));
        old->sa_handler = SIG_DFL;
    }
}

void ctr__cpu_thread_exit(struct ctr_thread *t)
{
    timer_delete_once(t);
}

void ctr__cpu_close(struct ctr_thread *t)
{
    timer_delete_once(t);
    ctr__perf_close(&t->cpu_ring);
    /* relaxed: the slot is being taken by its new owner, before it is
     * published (its release store of LIVE). */
    atomic_store_explicit(&t->cpu_epoch, 0, memory_order_relaxed);
}

void ctr__cpu_disable(struct ctr_thread *t)
{
    ctr__perf_disable(&t->cpu_ring);
}

void ctr__cpu_forked(struct ctr_thread *t)
{
    ctr__perf_forget(&t->cpu_ring);
    /* relaxed: alone in the child. */
    atomic_store_explicit(&t->cpu_timer_state, TIMER_NONE, memory_order_relaxed);
    atomic_store_explicit(&t->cpu_epoch, 0, memory_order_relaxed);
}

/* ---------------------------------------------------------------------------
 * Draining perf samples (collector)
 * ------------------------------------------------------------------------- */

/* One drain's samples, weighed once all are read (collector only). */
struct pending_sample {
    uint64_t ns, stack;
};

static struct {
    struct pending_sample *p;
    size_t n, cap;
    uint64_t since_ns;
} D;

/* A PERF_RECORD_SAMPLE of sample_type TID | TIME | REGS_USER | STACK_USER:
 *   u32 pid, tid; u64 time; u64 abi; u64 regs[weight(CPU_REGS_MASK)] (when
 *   abi is not 0); u64 size; u8 data[size]; u64 dyn_size (when size is not
 *   0). (No PERIOD: a task-clock event reports its first period even after
 *   PERF_EVENT_IOC_PERIOD changed it.) Read as hostile as any input: a
 *   short record is skipped. */
static void on_record(void *ctx, const struct perf_event_header *h, const uint8_t *body, size_t len)
{
    (void)ctx;
    if (h->type != PERF_RECORD_SAMPLE)
        return;
    size_t nregs = (size_t)__builtin_popcountll(CPU_REGS_MASK), at = 8;
    uint64_t ns, abi, size = 0, dyn = 0;
    struct ctr_sample_regs r = {0};
    if (len < 24)
        return;
    memcpy(&ns, body + at, 8);
    memcpy(&abi, body + at + 8, 8);
    at += 16;
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
        if (len < at + nregs * 8)
            return;
        memcpy(r.regs, body + at, nregs * 8);
        at += nregs * 8;
        r.have_all = 1;
        r.bp = r.regs[6];
        r.sp = r.regs[7];
        r.ip = r.regs[8];
    }
    if (len >= at + 8) {
        memcpy(&size, body + at, 8);
        at += 8;
    }
    const uint8_t *stack = body + at;
    if (size && len >= at + size + 8) {
        memcpy(&dyn, body + at + size, 8);
        if (dyn > size)
            dyn = 0;
    }
    if (ns < D.since_ns)
        return;
    if (D.n == D.cap) {
        size_t cap = D.cap ? 2 * D.cap : 64;
        struct pending_sample *p = realloc(D.p, cap * sizeof(*p));
        if (!p) {
            ctr__cpu_lost(1);
            return;
        }
        D.p = p;
        D.cap = cap;
    }
    uintptr_t pcs[CTR_STACK_MAX];
    unsigned n = r.ip ? ctr__unwind_copy(&r, stack, (size_t)dyn, pcs, ctr__session.stack_depth) : 0;
    D.p[D.n++] = (struct pending_sample){ns, ctr__stack_intern(pcs, n)};
}

void ctr__cpu_drain(struct ctr_thread *t, uint64_t since_ns,
                    void (*on_sample)(void *ctx, uint64_t ns, uint64_t stack, uint64_t cpu_ns),
                    void *ctx)
{
    /* relaxed: see `cpu`. */
    uint64_t period = atomic_load_explicit(&cpu.period_ns, memory_order_relaxed);
    D.n = 0;
    D.since_ns = since_ns;
    uint64_t lost = ctr__perf_drain(&t->cpu_ring, on_record, NULL);
    size_t i = 0;
    /* Until the real period is set, the event samples every first period,
     * and those samples (with the CPU of those the ring could not take)
     * are thinned; after, every sample is a period (the few taken between
     * this read and the ioctl below are counted so too). */
    uint64_t each = period;
    if (!t->cpu_phase && D.n) {
        /* The first sample: a whole period, and the real one from now on
         * (the event restarts its count). */
        on_sample(ctx, D.p[0].ns, D.p[0].stack, period);
        ctr__perf_period(&t->cpu_ring, period);
        t->cpu_phase = 1;
        i = 1;
        each = t->cpu_first;
        if (D.n > 1)
            each += lost * t->cpu_first / (D.n - 1);
        else
            t->cpu_credit += lost * t->cpu_first;
        lost = 0;
    }
    for (; i < D.n; i++) {
        t->cpu_credit += each;
        if (t->cpu_credit < period)
            continue; /* thinned */
        uint64_t w = t->cpu_credit / period * period;
        t->cpu_credit -= w;
        on_sample(ctx, D.p[i].ns, D.p[i].stack, w);
    }
    if (lost)
        ctr__cpu_lost(lost);
}
