/* SPDX-License-Identifier: MIT */
/* flightrec.c - the flight recorder's API (ctrace/flightrec.h) and its sink.
 *
 * flightrec_start attaches the recorder's sink (tracer/collect/sink.h) to the
 * tracing session, starting one if trace_start has not; the collector then
 * hands it every generation, which the window (window.c) keeps while the
 * bounds allow. Start and stop are serialized by the API lock that
 * trace_start/trace_stop use. A dump is written by its caller's thread
 * (dump.c), from a snapshot of the window, after giving the collector a few
 * milliseconds to add what the threads wrote until now; a second concurrent
 * dump does not wait: it gets -EBUSY at once, before touching any file. The
 * latency trigger asks the collector for a dump, which the sink writes as
 * the next generation ends (on the collector thread, so the slow request's
 * thread does no I/O).
 */
#include "collect/collector.h"
#include "collect/face.h"
#include "collect/records.h"
#include "collect/sink.h"
#include "core/abi.h"
#include "core/hooks.h"
#include "core/lock.h"
#include "core/real.h"
#include "ctrace/trace.h"
#include "ctrace_options.h"
#include "ctrace/flightrec.h"
#include "recorder.h"
#include "window.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TRIGGER_INTERVAL_NS (10ull * 1000 * 1000 * 1000)

static struct recorder {
    struct ctr_sink sink;
    /* The latency trigger (flightrec_trigger_latency): the directory and
     * interval are written with the trigger disarmed, and read by the
     * collector after it loads a non-zero threshold (acquire). */
    struct ctr_lock trigger_lock; /* trigger_dir: the API writes it, the collector reads it */
    char trigger_dir[4096];
    _Atomic uint64_t trigger_min_interval_ns;
    _Atomic uint64_t trigger_latency_ns; /* 0: not armed */
    _Atomic uint64_t trigger_last_ns;
    _Atomic int trigger_pending;
    _Atomic uint64_t dumps_written, dumps_failed, triggers_dropped;
    /* The dump signal (ctr__fr_signal_arm): the directory is written before
     * the signal is stored (release); the collector loads the signal
     * (acquire) before it reads the directory. pending: set by the handler. */
    char signal_dir[4096];
    _Atomic int signal;
    _Atomic int signal_pending;
} R;

static _Atomic int dumping;
static int take_dump_turn(void);
static void end_dump_turn(void);

/* ---------------------------------------------------------------------------
 * The sink
 * ------------------------------------------------------------------------- */

static void on_gen_begin(struct ctr_sink *s, uint64_t gen, const struct ctr_clock_sample *start)
{
    (void)s;
    ctr__fr_gen_begin(gen, start);
}

static void on_frame(struct ctr_sink *s, const void *z, size_t n)
{
    (void)s;
    ctr__fr_frame(z, n);
}

/* Counts a dump the recorder wrote on its own (trigger, signal, `ctrace
 * ctl`), for flightrec_get_stats. */
static void count_dump(int rc)
{
    /* relaxed: counters, read only for statistics. */
    atomic_fetch_add_explicit(rc == 0 ? &R.dumps_written : &R.dumps_failed, 1,
                              memory_order_relaxed);
}

/* Dumps the window into dir as ctrace-PID-SECONDS-N.bin, a new file. */
static void dump_into(const char *dir)
{
    char path[4096 + 64];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    /* relaxed: counters, read for a file name alone. */
    uint64_t n = atomic_load_explicit(&R.dumps_written, memory_order_relaxed) +
                 atomic_load_explicit(&R.dumps_failed, memory_order_relaxed);
    snprintf(path, sizeof(path), "%s/ctrace-%d-%lld-%llu.bin", dir, (int)getpid(),
             (long long)now.tv_sec, (unsigned long long)n);
    count_dump(ctr__fr_dump_file(
        ctr__real.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600)));
}

/* A dump asked for by the latency trigger or the dump signal, now that the
 * generation that saw it is whole in the window. */
static void serve_requests(void)
{
    /* acq_rel: the trigger's directory (written before it was armed) is
     * seen (pairs with the release store of trigger_pending in
     * flightrec_latency, itself after the acquire of the armed threshold);
     * one round serves each request. */
    if (atomic_exchange_explicit(&R.trigger_pending, 0, memory_order_acq_rel)) {
        char dir[sizeof(R.trigger_dir)];
        /* Under the lock: a late flightrec_latency of an earlier arming may
         * ask while flightrec_trigger_latency rewrites the directory. */
        ctr_lock_acquire(&R.trigger_lock);
        memcpy(dir, R.trigger_dir, sizeof(dir));
        ctr_lock_release(&R.trigger_lock);
        dump_into(dir);
    }
    /* relaxed: the handler's flag says only "now"; acquire on the signal:
     * pairs with ctr__fr_signal_arm's release store, after the directory. */
    if (atomic_exchange_explicit(&R.signal_pending, 0, memory_order_relaxed) &&
        atomic_load_explicit(&R.signal, memory_order_acquire))
        dump_into(R.signal_dir);
}

static void on_gen_end(struct ctr_sink *s, const struct ctr_gen_summary *g)
{
    (void)s;
    ctr__fr_gen_end(g->end.mono, g->open_waits, g->nopen_waits);
    serve_requests();
}

static void on_detached(struct ctr_sink *s)
{
    (void)s;
    ctr__fr_clear(); /* the window is freed */
}

static void on_forked(struct ctr_sink *s)
{
    (void)s;
    /* relaxed: the child's only thread; nothing to order. */
    atomic_store_explicit(&R.trigger_latency_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&R.trigger_pending, 0, memory_order_relaxed);
    atomic_store_explicit(&R.signal_pending, 0, memory_order_relaxed);
    atomic_store_explicit(&dumping, 0, memory_order_relaxed); /* a dump of the parent's thread */
    R.trigger_lock = (struct ctr_lock){0};                    /* the collector's, in the parent */
    ctr__fr_forked();
}

/* `ctrace ctl PID status`'s lines (CONTROL.md). */
static size_t on_status(struct ctr_sink *s, char *buf, size_t cap)
{
    (void)s;
    struct flightrec_stats st;
    uint64_t min_age, max_bytes;
    flightrec_get_stats(&st);
    ctr__fr_bounds(&min_age, &max_bytes);
    /* relaxed: a setting read for the report alone. */
    int n = snprintf(buf, cap,
                     "recorder.window_bytes=%llu\nrecorder.window_span_ns=%llu\n"
                     "recorder.generations=%llu\nrecorder.min_age_ns=%llu\n"
                     "recorder.max_bytes=%llu\nrecorder.dumps=%llu\nrecorder.dump_signal=%d\n",
                     (unsigned long long)st.window_bytes, (unsigned long long)st.window_span_ns,
                     (unsigned long long)st.generations, (unsigned long long)min_age,
                     (unsigned long long)max_bytes, (unsigned long long)st.dumps_written,
                     atomic_load_explicit(&R.signal, memory_order_relaxed));
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* `ctrace ctl PID dump`: the window, into the client's file (the collector
 * has just run a round: it is up to date). */
static int on_dump(struct ctr_sink *s, struct ctr_owned_fd *out)
{
    (void)s;
    if (!take_dump_turn())
        return -EBUSY;
    int rc = ctr__fr_dump_owned(out);
    end_dump_turn();
    count_dump(rc);
    return rc;
}

static const struct ctr_sink_ops recorder_ops = {
    .gen_begin = on_gen_begin,
    .frame = on_frame,
    .gen_end = on_gen_end,
    .detached = on_detached,
    .forked = on_forked,
    .status = on_status,
    .dump = on_dump,
};

/* ---------------------------------------------------------------------------
 * The API
 * ------------------------------------------------------------------------- */

/* As abi.c for trace.h's structs: each ends with a field (trace.h, "ABI"). */
_Static_assert(offsetof(struct flightrec_config, trace) + sizeof(void *) ==
                   sizeof(struct flightrec_config),
               "struct flightrec_config must end without padding");
_Static_assert(offsetof(struct flightrec_trigger, min_interval_ns) + sizeof(uint64_t) ==
                   sizeof(struct flightrec_trigger),
               "struct flightrec_trigger must end without padding");
_Static_assert(offsetof(struct flightrec_stats, triggers_limited) + sizeof(uint64_t) ==
                   sizeof(struct flightrec_stats),
               "struct flightrec_stats must end without padding");

int flightrec__start(const struct flightrec_config *cfg, size_t cfg_size, size_t opts_size)
{
    struct flightrec_config c = {0};
    struct trace_options o = {0};
    int copied = cfg ? ctr__abi_copy_in(&c, sizeof(c), cfg, cfg_size, sizeof(c)) : 0;
    if (copied == 0 && c.trace)
        copied = ctr__options_copy_in(&o, c.trace, opts_size);
    if (copied != 0)
        return copied;
    uint64_t min_age, max_bytes;
    if (ctr_option_resolve(ctr_flightrec_option(CTR_FR_OPT_min_age_ns), c.min_age_ns, &min_age) ||
        ctr_option_resolve(ctr_flightrec_option(CTR_FR_OPT_max_bytes), c.max_bytes, &max_bytes) ||
        ctr__options_check(&o) != 0)
        return -EINVAL;
    ctr__api_lock();
    /* The channel first (once open it stays: trace.h). */
    int rc = o.control ? ctr__control_open(&o) : 0;
    if (rc == 0 && ctr__sink_is_attached(&R.sink))
        rc = -EBUSY;
    else if (rc == 0) {
        ctr__fr_configure(min_age, max_bytes);
        R.sink.ops = &recorder_ops;
        R.sink.name = "recorder";
        /* Frames small enough for the window to hold several. */
        uint64_t quarter = max_bytes / 4;
        R.sink.frame_bytes = quarter < (64u << 10) ? (64u << 10) : (size_t)quarter;
        rc = ctr__sink_attach(&R.sink, &o);
    }
    ctr__api_unlock();
    return rc;
}

int flightrec_stop(void)
{
    ctr__api_lock();
    /* relaxed: disarming publishes nothing; the detach below ends the
     * collector's reads of the trigger. */
    atomic_store_explicit(&R.trigger_latency_ns, 0, memory_order_relaxed);
    int rc = ctr__sink_detach(&R.sink);
    ctr__api_unlock();
    return rc;
}

int flightrec_is_running(void)
{
    return ctr__sink_is_attached(&R.sink);
}

/* How long a dump gives the collector to put what the threads wrote until
 * now into the window; under load it goes on without it (the window then
 * ends at the collector's last frame, at most a round behind). */
#define DUMP_CATCH_UP_NS (10ull * 1000 * 1000)

static int take_dump_turn(void)
{
    int zero = 0;
    /* acq_rel: one dump at a time; the winner's file work after the CAS,
     * and the previous winner's before it (pairs with the release store in
     * end_dump_turn). */
    return atomic_compare_exchange_strong_explicit(&dumping, &zero, 1, memory_order_acq_rel,
                                                   memory_order_relaxed);
}

static void end_dump_turn(void)
{
    /* release: this dump's work before the next take_dump_turn's CAS. */
    atomic_store_explicit(&dumping, 0, memory_order_release);
}

/* Gives the collector a moment to bring the window up to now. @return 0,
 * or -ENOENT when no recorder runs. */
static int catch_up(void)
{
    if (!flightrec_is_running())
        return -ENOENT;
    /* Just after flightrec_start the window may not have begun yet (a
     * loaded machine): not "no recorder". A second at most. */
    for (int i = 0; i < 100 && !ctr__fr_window_begun() && flightrec_is_running(); i++)
        ctr__collector_sync_for(DUMP_CATCH_UP_NS);
    ctr__collector_sync_for(DUMP_CATCH_UP_NS);
    return 0;
}

int flightrec_dump_fd(int fd)
{
    if (fd < 0)
        return -EBADF;
    if (!take_dump_turn())
        return -EBUSY;
    int rc = catch_up();
    if (rc == 0)
        rc = ctr__fr_dump(fd);
    end_dump_turn();
    return rc;
}

int flightrec_dump(const char *path)
{
    if (!path)
        return -EINVAL;
    if (!take_dump_turn())
        return -EBUSY; /* before touching anything: the other dump's file is its own */
    /* Written beside the path under a temporary name, created 0600 (it holds
     * the program's logs) with O_EXCL, then renamed over the path: a reader
     * never sees half a dump, a failed dump leaves the old file, and a
     * symlink at the path is replaced, never followed. */
    char tmp[PATH_MAX];
    int rc = snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) < (int)sizeof(tmp) ? 0 : -ENAMETOOLONG;
    if (rc == 0)
        rc = catch_up();
    if (rc == 0) {
        int fd = mkostemp(tmp, O_CLOEXEC);
        rc = ctr__fr_dump_file(fd);
        if (rc == 0 && rename(tmp, path) != 0)
            rc = -errno;
        /* Not a file that stalled: its unlink would stall too (it stays,
         * cut short, under its temporary name). */
        if (rc != 0 && rc != -ETIMEDOUT && fd >= 0)
            unlink(tmp);
    }
    end_dump_turn();
    return rc;
}

int flightrec__trigger_latency(const struct flightrec_trigger *trigger, size_t trigger_size)
{
    struct flightrec_trigger own;
    const struct flightrec_trigger *t = NULL;
    if (trigger) {
        int copied = ctr__abi_copy_in(&own, sizeof(own), trigger, trigger_size, sizeof(own));
        if (copied != 0)
            return copied;
        t = &own;
    }
    if (t && (!t->dir || !t->latency_ns || strlen(t->dir) >= sizeof(R.trigger_dir) - 96))
        return -EINVAL;
    ctr__api_lock();
    int rc = 0;
    if (!flightrec_is_running())
        rc = -ENOENT;
    else if (!t) /* relaxed: as in flightrec_stop */
        atomic_store_explicit(&R.trigger_latency_ns, 0, memory_order_relaxed);
    else {
        /* Disarmed, and no request left, while the collector might read the
         * directory: one round later it no longer does. relaxed: the
         * release bump of ctr__collector_sync orders them before that
         * round. */
        atomic_store_explicit(&R.trigger_latency_ns, 0, memory_order_relaxed);
        atomic_store_explicit(&R.trigger_pending, 0, memory_order_relaxed);
        ctr__collector_sync();
        ctr_lock_acquire(&R.trigger_lock);
        strcpy(R.trigger_dir, t->dir);
        ctr_lock_release(&R.trigger_lock);
        /* relaxed: a bound read on its own (flightrec_latency). */
        atomic_store_explicit(&R.trigger_min_interval_ns,
                              t->min_interval_ns ? t->min_interval_ns : DEFAULT_TRIGGER_INTERVAL_NS,
                              memory_order_relaxed);
        /* relaxed: published by the release store of the threshold below. */
        atomic_store_explicit(&R.trigger_last_ns, 0, memory_order_relaxed);
        /* release: the directory and interval before the threshold (pairs
         * with flightrec_latency's acquire load). */
        atomic_store_explicit(&R.trigger_latency_ns, t->latency_ns, memory_order_release);
    }
    ctr__api_unlock();
    return rc;
}

int flightrec_latency(uint64_t latency_ns)
{
    struct recorder *s = &R;
    /* acquire: pairs with flightrec_trigger_latency's release store. */
    uint64_t threshold = atomic_load_explicit(&s->trigger_latency_ns, memory_order_acquire);
    if (!threshold || latency_ns < threshold)
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    /* relaxed: a first guess for the CAS below. */
    uint64_t last = atomic_load_explicit(&s->trigger_last_ns, memory_order_relaxed);
    /* One trigger per interval: the CAS picks the one caller that wins. */
    /* relaxed CAS: it only picks the winner; the request below carries the
     * rest (release). */
    /* relaxed: a bound read on its own; an arming in progress at worst
     * applies the old one to this call. */
    uint64_t interval = atomic_load_explicit(&s->trigger_min_interval_ns, memory_order_relaxed);
    if ((last && now - last < interval) ||
        !atomic_compare_exchange_strong_explicit(&s->trigger_last_ns, &last, now,
                                                 memory_order_relaxed, memory_order_relaxed)) {
        /* relaxed: a counter read only for statistics. */
        atomic_fetch_add_explicit(&s->triggers_dropped, 1, memory_order_relaxed);
        return 0;
    }
    /* release: pairs with serve_trigger's exchange. */
    atomic_store_explicit(&s->trigger_pending, 1, memory_order_release);
    ctr__collector_kick(); /* the collector writes it, not this thread */
    return 1;
}

int flightrec__get_stats(struct flightrec_stats *out, size_t out_size)
{
    if (!out)
        return -EINVAL;
    struct flightrec_stats st = {0};
    ctr__fr_stats(&st.window_bytes, &st.window_span_ns, &st.generations);
    /* relaxed: counters read only for statistics. */
    st.dumps_written = atomic_load_explicit(&R.dumps_written, memory_order_relaxed);
    st.dumps_failed = atomic_load_explicit(&R.dumps_failed, memory_order_relaxed);
    st.triggers_limited = atomic_load_explicit(&R.triggers_dropped, memory_order_relaxed);
    return ctr__abi_copy_out(out, out_size, &st, sizeof(st), sizeof(st));
}

/* The handler of the dump signal: async-signal-safe, it only asks; the
 * collector writes the dump at the end of its next round. */
static void on_dump_signal(int sig)
{
    (void)sig;
    /* relaxed: a request flag (see serve_requests). */
    atomic_store_explicit(&R.signal_pending, 1, memory_order_relaxed);
}

int ctr__fr_signal_arm(int sig, const char *dir)
{
    if (strlen(dir) >= sizeof(R.signal_dir) - 96)
        return -ENAMETOOLONG;
    memcpy(R.signal_dir, dir, strlen(dir) + 1);
    /* release: the directory before the signal (pairs with serve_requests's
     * acquire load). */
    atomic_store_explicit(&R.signal, sig, memory_order_release);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_dump_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* the program's calls go on where they can */
    return ctr__real.sigaction(sig, &sa, NULL) == 0 ? 0 : -errno;
}

/* Free the window when the program exits normally. */
__attribute__((destructor)) static void flightrec_at_exit(void)
{
    if (flightrec_is_running())
        flightrec_stop();
}
