/* flightrec.c - the flight recorder's API (ctrace/flightrec.h): starting and
 * stopping it within the tracing session, dumps, and the latency trigger.
 *
 * The window itself lives in the collector thread (window.c); this file only
 * states wishes in the session (fr_want, dump_fd, trigger_pending) and, where
 * the caller must know the outcome, waits for the collector's next round
 * (ctr__collector_sync). Start, stop and dumps are serialized by the API
 * lock that trace_start/trace_stop use; a second concurrent dump does not
 * wait for it: it gets -EBUSY at once.
 */
#include "ctrace/flightrec.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
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

int flightrec_dump_fd(int fd)
{
    if (fd < 0)
        return -EBADF;
    int zero = 0;
    if (!atomic_compare_exchange_strong(&dumping, &zero, 1))
        return -EBUSY;
    ctr__api_lock(); /* keeps the session (and its collector) alive meanwhile */
    int rc = -ENOENT;
    if (atomic_load(&ctr__session.fr_want)) {
        /* release (in sync's bump): dump_fd before the round that sees it. */
        atomic_store_explicit(&ctr__session.dump_fd, fd, memory_order_relaxed);
        ctr__collector_sync();
        rc = ctr__session.dump_rc;
    }
    ctr__api_unlock();
    atomic_store(&dumping, 0);
    return rc;
}

int flightrec_dump(const char *path)
{
    if (!path)
        return -EINVAL;
    if (!flightrec_is_running())
        return -ENOENT;
    struct stat st;
    int existed = stat(path, &st) == 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = flightrec_dump_fd(fd);
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc != 0 && !existed)
        unlink(path); /* no half dump left behind; never a file we did not make */
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
