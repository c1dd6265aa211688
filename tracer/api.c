/* api.c - trace_start / trace_stop and the session they manage.
 *
 * A session is numbered by its epoch (never 0). Publishing the epoch turns
 * tracing on for every thread at once; storing 0 turns it off. Threads check
 * the epoch on each event, so they notice a new session without any
 * coordination: a chunk from an older epoch is simply abandoned.
 * start/stop are serialized by a small spin lock (they are rare, and taking
 * a pthread mutex here would go through our own wrappers).
 */
#include "ctrace/trace.h"
#include "interpose.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

struct ctr_session ctr__session;

static atomic_flag api_lock = ATOMIC_FLAG_INIT;
static int atfork_registered;

static void lock_api(void)
{
    while (atomic_flag_test_and_set_explicit(&api_lock, memory_order_acquire))
        sched_yield();
}

static void unlock_api(void)
{
    atomic_flag_clear_explicit(&api_lock, memory_order_release);
}

/* In a forked child the collector thread does not exist and the file is the
 * parent's: the child simply does not trace. */
static void atfork_child(void)
{
    atomic_store_explicit(&ctr__session.epoch, 0, memory_order_relaxed);
    atomic_flag_clear(&api_lock);
}

static size_t round_pow2(size_t v)
{
    size_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

static int write_header(void)
{
    uint8_t h[CTR_FILE_HEADER_LEN] = {0};
    memcpy(h, CTR_FILE_MAGIC, CTR_FILE_MAGIC_LEN);
    h[8] = CTR_VERSION_MAJOR & 0xff;
    h[9] = CTR_VERSION_MAJOR >> 8;
    h[10] = CTR_VERSION_MINOR & 0xff;
    h[11] = CTR_VERSION_MINOR >> 8;
    return ctr__sink_write(h, sizeof(h));
}

static int init_once(void)
{
    ctr__interpose_init();
    ctr__clock_init();
    ctr__threads_init();
    if (!ctr__threads.slab)
        return -ENOMEM;
    int rc = ctr__intern_init(&ctr__stacks, 1u << 18, 64u << 20);
    if (rc == 0)
        rc = ctr__intern_init(&ctr__strings, 1u << 16, 8u << 20);
    if (rc == 0 && !atfork_registered) {
        rc = -pthread_atfork(NULL, NULL, atfork_child);
        atfork_registered = rc == 0;
    }
    return rc;
}

int trace_start(const char *path)
{
    if (!path)
        return -EINVAL;
    struct trace_options o = {.path = path};
    return trace_start_opts(&o);
}

int trace_start_opts(const struct trace_options *o)
{
    if (!o || (!o->path && o->fd < 1))
        return -EINVAL;
    size_t chunk = o->chunk_bytes ? round_pow2(o->chunk_bytes) : (64u << 10);
    size_t pool = o->pool_bytes ? o->pool_bytes : (64u << 20);
    if (chunk < (4u << 10) || chunk > (1u << 20) || pool < 4 * chunk || o->stack_depth > CTR_STACK_MAX ||
        o->compression_level < 0 || o->compression_level > 22)
        return -EINVAL;

    lock_api();
    int rc = 0;
    if (atomic_load(&ctr__session.epoch) != 0) {
        rc = -EBUSY;
        goto out;
    }
    if ((rc = init_once()) != 0)
        goto out;
    struct ctr_session *s = &ctr__session;
    if (o->path) {
        s->fd = open(o->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (s->fd < 0) {
            rc = -errno;
            goto out;
        }
        s->close_fd = 1;
    } else {
        s->fd = o->fd;
        s->close_fd = 0;
    }
    atomic_store(&s->write_error, 0);
    atomic_store(&s->bytes_written, 0);
    atomic_store(&s->chunks_flushed, 0);
    atomic_store(&s->events_dropped, 0);
    s->flush_ms = o->flush_ms ? o->flush_ms : 100;
    s->level = o->compression_level ? o->compression_level : 1;
    s->stack_depth = o->stack_depth ? o->stack_depth : 32;
    s->io_min_ns = o->io_min_ns ? o->io_min_ns : 10000;
    s->sched = o->sched_switches != 0;
    atomic_store(&s->sched_failed, 0);
    atomic_store(&s->io_min_ticks, s->io_min_ns);
    if ((rc = write_header()) != 0 ||
        (rc = ctr__pool_init(&s->pool, pool / chunk * chunk, chunk)) != 0)
        goto fail;
    ctr_lfstack_init(&s->full, s->pool.base, chunk, offsetof(struct ctr_chunk, node));
    atomic_store(&s->full_count, 0);
    ctr__threads_reset_session();
    uint32_t epoch = ++s->last_epoch ? s->last_epoch : ++s->last_epoch;
    ctr__clock_sample(&s->start_ticks, &s->start_mono, &s->start_real);
    if ((rc = ctr__collector_start(epoch)) != 0)
        goto fail;
    /* release: the session fields above before any thread sees it on. */
    atomic_store_explicit(&s->epoch, epoch, memory_order_release);
    goto out;
fail:
    if (s->close_fd)
        close(s->fd);
out:
    unlock_api();
    return rc;
}

int trace_stop(void)
{
    lock_api();
    struct ctr_session *s = &ctr__session;
    if (atomic_load(&s->epoch) == 0) {
        unlock_api();
        return -ENOENT;
    }
    atomic_store_explicit(&s->epoch, 0, memory_order_release);
    ctr__collector_stop();
    int rc = atomic_load(&s->write_error);
    if (s->close_fd && close(s->fd) != 0 && rc == 0)
        rc = -errno;
    ctr__pool_reset(&s->pool);
    unlock_api();
    return rc;
}

int trace_is_running(void)
{
    return atomic_load_explicit(&ctr__session.epoch, memory_order_relaxed) != 0;
}

int trace_get_counters(struct trace_counters *out)
{
    if (!out)
        return -EINVAL;
    out->events_dropped = atomic_load(&ctr__session.events_dropped);
    out->bytes_written = atomic_load(&ctr__session.bytes_written);
    out->chunks_flushed = atomic_load(&ctr__session.chunks_flushed);
    return 0;
}

/* Flush a running trace when the program exits normally. */
__attribute__((destructor)) static void trace_at_exit(void)
{
    if (trace_is_running())
        trace_stop();
}
