/* flightrec.c - the flight recorder's API (ctrace/flightrec.h): starting and
 * stopping it within the tracing session, dumps, and the latency trigger.
 *
 * The collector feeds the window (window.c); this file states wishes in the
 * session (fr_want, trigger_pending) and, where the caller must know the
 * outcome, waits for the collector's next round (ctr__collector_sync).
 * Start and stop are serialized by the API lock that trace_start/trace_stop
 * use. A dump is written by its caller's thread (dump.c), from a snapshot
 * of the window, after giving the collector a few milliseconds to add what
 * the threads wrote until now; a second concurrent dump does not wait: it
 * gets -EBUSY at once, before touching any file.
 */
#include "ctrace/flightrec.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MIN_AGE_NS (10ull * 1000 * 1000 * 1000)
#define DEFAULT_MAX_BYTES (16ull << 20)
#define DEFAULT_TRIGGER_INTERVAL_NS (10ull * 1000 * 1000 * 1000)

static _Atomic int dumping;

int flightrec_start(const struct flightrec_config *cfg)
{
    struct flightrec_config c = cfg ? *cfg : (struct flightrec_config){0};
    struct trace_options defaults = {0};
    const struct trace_options *o = c.trace ? c.trace : &defaults;
    if ((c.max_bytes && c.max_bytes < (64u << 10)) || ctr__options_check(o) != 0)
        return -EINVAL;
    ctr__api_lock();
    struct ctr_session *s = &ctr__session;
    int rc = 0;
    if (atomic_load(&s->fr_want)) {
        rc = -EBUSY;
        goto out;
    }
    s->fr_min_age_ns = c.min_age_ns ? c.min_age_ns : DEFAULT_MIN_AGE_NS;
    s->fr_max_bytes = c.max_bytes ? c.max_bytes : DEFAULT_MAX_BYTES;
    /* release: the window's bounds before the collector acts on the wish. */
    atomic_store_explicit(&s->fr_want, 1, memory_order_release);
    if (atomic_load(&s->epoch) != 0)
        ctr__collector_sync(); /* trace_start's session: join it */
    else if ((rc = ctr__session_begin(o)) != 0)
        atomic_store(&s->fr_want, 0);
out:
    ctr__api_unlock();
    return rc;
}

int flightrec_stop(void)
{
    ctr__api_lock();
    struct ctr_session *s = &ctr__session;
    if (!atomic_load(&s->fr_want)) {
        ctr__api_unlock();
        return -ENOENT;
    }
    atomic_store(&s->trigger_latency_ns, 0);
    ctr__sink_stop(&s->fr_want); /* the window is freed */
    ctr__api_unlock();
    return 0;
}

int flightrec_is_running(void)
{
    return atomic_load_explicit(&ctr__session.fr_want, memory_order_relaxed) != 0;
}

/* How long a dump gives the collector to put what the threads wrote until
 * now into the window; under load it goes on without it (the window then
 * ends at the collector's last frame, at most a round behind). */
#define DUMP_CATCH_UP_NS (10ull * 1000 * 1000)

static int take_dump_turn(void)
{
    int zero = 0;
    /* acq_rel: one dump at a time; the winner's file work after the CAS. */
    return atomic_compare_exchange_strong_explicit(&dumping, &zero, 1, memory_order_acq_rel,
                                                   memory_order_relaxed);
}

static void end_dump_turn(void)
{
    atomic_store_explicit(&dumping, 0, memory_order_release);
}

/* Gives the collector a moment to bring the window up to now. @return 0,
 * or -ENOENT when no recorder runs. */
static int catch_up(void)
{
    if (!flightrec_is_running())
        return -ENOENT;
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
        if (rc != 0 && fd >= 0)
            unlink(tmp);
    }
    end_dump_turn();
    return rc;
}

int flightrec_trigger_latency(const struct flightrec_trigger *t)
{
    struct ctr_session *s = &ctr__session;
    if (t && (!t->dir || !t->latency_ns || strlen(t->dir) >= sizeof(s->trigger_dir) - 96))
        return -EINVAL;
    ctr__api_lock();
    int rc = 0;
    if (!atomic_load(&s->fr_want))
        rc = -ENOENT;
    else if (!t)
        atomic_store(&s->trigger_latency_ns, 0);
    else {
        /* Disarmed while the collector might read the directory. */
        atomic_store(&s->trigger_latency_ns, 0);
        ctr__collector_sync();
        strcpy(s->trigger_dir, t->dir);
        s->trigger_min_interval_ns =
            t->min_interval_ns ? t->min_interval_ns : DEFAULT_TRIGGER_INTERVAL_NS;
        atomic_store(&s->trigger_last_ns, 0);
        /* release: the directory and interval before the threshold. */
        atomic_store_explicit(&s->trigger_latency_ns, t->latency_ns, memory_order_release);
    }
    ctr__api_unlock();
    return rc;
}

int flightrec_latency(uint64_t latency_ns)
{
    struct ctr_session *s = &ctr__session;
    uint64_t threshold = atomic_load_explicit(&s->trigger_latency_ns, memory_order_acquire);
    if (!threshold || latency_ns < threshold)
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t last = atomic_load_explicit(&s->trigger_last_ns, memory_order_relaxed);
    /* One trigger per interval: the CAS picks the one caller that wins. */
    if ((last && now - last < s->trigger_min_interval_ns) ||
        !atomic_compare_exchange_strong(&s->trigger_last_ns, &last, now)) {
        atomic_fetch_add_explicit(&s->triggers_dropped, 1, memory_order_relaxed);
        return 0;
    }
    atomic_store_explicit(&s->trigger_pending, 1, memory_order_release);
    ctr__collector_kick(); /* the collector writes it, not this thread */
    return 1;
}

int flightrec_get_stats(struct flightrec_stats *out)
{
    if (!out)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    ctr__fr_stats(&out->window_bytes, &out->window_span_ns, &out->generations);
    out->dumps_written = atomic_load(&ctr__session.dumps_written);
    out->dumps_failed = atomic_load(&ctr__session.dumps_failed);
    out->triggers_limited = atomic_load(&ctr__session.triggers_dropped);
    return 0;
}

/* Free the window when the program exits normally. */
__attribute__((destructor)) static void flightrec_at_exit(void)
{
    if (flightrec_is_running())
        flightrec_stop();
}
