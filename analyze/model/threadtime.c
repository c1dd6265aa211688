/* SPDX-License-Identifier: MIT */
/* threadtime.c - each thread's time by kind (see threadtime.h). */
#include "model/threadtime.h"

#include <errno.h>
#include <stdlib.h>

#include "ctrace_format.h"
#include "ctrace_grow.h"
#include "model/cpucheck.h"

const char *const ctr_time_names[CTR_TIME_N] = {"running", "runnable", "sync",   "net",
                                                "syscall", "sleep",    "off-cpu"};

enum ctr_time_kind ctr_time_kind_of(const struct ctr_interval *iv)
{
    if (iv->state == CTR_STATE_RUNNING)
        return CTR_TIME_RUNNING;
    if (iv->state == CTR_STATE_RUNNABLE)
        return CTR_TIME_RUNNABLE;
    uint8_t cls = iv->reason < CTR_REASON_LIMIT ? ctr_reason_specs[iv->reason].wait_class : 0;
    return cls == CTR_CLASS_NET       ? CTR_TIME_NET
           : cls == CTR_CLASS_SYSCALL ? CTR_TIME_SYSCALL
           : cls == CTR_CLASS_SLEEP   ? CTR_TIME_SLEEP
                                      : CTR_TIME_SYNC;
}

void ctr_time_move(uint64_t *times, uint64_t runnable_ns, uint64_t offcpu_ns)
{
    uint64_t take = runnable_ns + offcpu_ns;
    if (take > times[CTR_TIME_RUNNING])
        take = times[CTR_TIME_RUNNING];
    /* Short of running time (rounding): off-cpu first, the claim that
     * matters most. */
    uint64_t off = offcpu_ns < take ? offcpu_ns : take;
    times[CTR_TIME_RUNNING] -= take;
    times[CTR_TIME_RUNNABLE] += take - off;
    times[CTR_TIME_OFFCPU] += off;
}

struct ctr_threadtime {
    const struct ctr_trace *t;
    uint64_t (*rows)[CTR_TIME_N]; /* per thread index */
    size_t nrows;
    struct ctr_cpucheck *cpu;
    struct ctr_consumer check; /* cpu's consumer, fed by ours */
    int oom;
};

struct ctr_threadtime *ctr_threadtime_new(const struct ctr_trace *t)
{
    struct ctr_threadtime *tt = calloc(1, sizeof(*tt));
    if (!tt)
        return NULL;
    tt->t = t;
    if (!(tt->cpu = ctr_cpucheck_new(t))) {
        free(tt);
        return NULL;
    }
    tt->check = ctr_cpucheck_consumer(tt->cpu);
    return tt;
}

void ctr_threadtime_free(struct ctr_threadtime *tt)
{
    if (tt) {
        ctr_cpucheck_free(tt->cpu);
        free(tt->rows);
        free(tt);
    }
}

static void on_interval(void *ctx, const struct ctr_interval *iv)
{
    struct ctr_threadtime *tt = ctx;
    tt->check.interval(tt->check.ctx, iv);
    uint32_t th = (uint32_t)(iv->thread - tt->t->threads);
    if (ctr_grow_zeroed(&tt->rows, &tt->nrows, (size_t)th + 1, sizeof(*tt->rows)) != 0) {
        tt->oom = 1;
        return;
    }
    tt->rows[th][ctr_time_kind_of(iv)] += iv->end_ns - iv->start_ns;
}

static void on_cputime(void *ctx, const struct ctr_trace *t, uint32_t th,
                       const struct ctr_cpu_reading *r)
{
    struct ctr_threadtime *tt = ctx;
    tt->check.cputime(tt->check.ctx, t, th, r);
}

static void on_settle(void *ctx, uint64_t ns)
{
    struct ctr_threadtime *tt = ctx;
    tt->check.settle(tt->check.ctx, ns);
}

struct ctr_consumer ctr_threadtime_consumer(struct ctr_threadtime *tt)
{
    return (struct ctr_consumer){
        .ctx = tt, .interval = on_interval, .cputime = on_cputime, .settle = on_settle};
}

int ctr_threadtime_finish(struct ctr_threadtime *tt, struct ctr_time_totals *tot)
{
    *tot = (struct ctr_time_totals){.checked = tt->t->has_cpu_time};
    /* Threads that had no interval get a row of zeros too. */
    if (tt->oom || ctr_cpucheck_finish(tt->cpu) != 0 ||
        ctr_grow_zeroed(&tt->rows, &tt->nrows, tt->t->nthreads, sizeof(*tt->rows)) != 0)
        return -ENOMEM;
    for (size_t i = 0; i < tt->nrows; i++) {
        uint64_t *row = tt->rows[i];
        struct ctr_cpu_moved m;
        ctr_cpucheck_thread(tt->cpu, (uint32_t)i, &m);
        tot->modelled_ns += row[CTR_TIME_RUNNING];
        ctr_time_move(row, m.runnable_ns, m.offcpu_ns);
        uint64_t any = 0;
        for (int k = 0; k < CTR_TIME_N; k++) {
            tot->times[k] += row[k];
            any |= row[k];
        }
        tot->nthreads += any != 0;
    }
    return 0;
}

const uint64_t *ctr_threadtime_row(const struct ctr_threadtime *tt, uint32_t th)
{
    return tt->rows[th];
}
