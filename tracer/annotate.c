/* SPDX-License-Identifier: MIT */
/* annotate.c - the user's own structure in the trace: tasks, regions and
 * logs (the API is in ctrace/trace.h, whose inline functions check
 * trace__active before calling in here).
 *
 * A task id is a process-wide counter (one atomic add per task: tasks are
 * requests, not events). Type, region and category names are interned
 * strings; a log's message travels inline, after its event (FORMAT.md §4),
 * so that messages never fill the string table. Each event is written in a
 * write section of its own (internal.h), so a signal handler that calls
 * these in the middle of another event is counted as a drop, not mixed in.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

CTR_EXPORT int trace__active;

static _Atomic uint64_t next_task = 1;

static uint64_t string_id(const char *s)
{
    return s ? ctr__intern(&ctr__strings, s, (uint32_t)strnlen(s, 256)) : 0;
}

CTR_EXPORT trace_task_t trace__task_begin(const char *type, trace_task_t parent)
{
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return 0;
    /* relaxed: the counter only hands out distinct ids. */
    uint64_t id = atomic_fetch_add_explicit(&next_task, 1, memory_order_relaxed);
    uint64_t args[3] = {id, parent, string_id(type)};
    ctr__emit_one(t, CTR_EV_TASK_BEGIN, args);
    return id;
}

CTR_EXPORT void trace__task_end(trace_task_t task)
{
    struct ctr_thread *t = ctr__self_traced();
    if (t)
        ctr__emit_one(t, CTR_EV_TASK_END, &task);
}

CTR_EXPORT void trace__region(trace_task_t task, const char *name, int begin)
{
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return;
    uint64_t args[2] = {task, string_id(name)};
    ctr__emit_one(t, begin ? CTR_EV_REGION_BEGIN : CTR_EV_REGION_END, args);
}

CTR_EXPORT void trace__log(trace_task_t task, const char *category, const char *message)
{
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return;
    size_t len = message ? strnlen(message, CTR_MAX_EVENT_PAYLOAD) : 0;
    uint64_t args[3] = {task, string_id(category), len};
    if (ctr__write_begin(t)) {
        ctr__emit_payload(t, CTR_EV_LOG, ctr__ticks(), args, message, len);
        ctr__write_end(t);
    }
}

CTR_EXPORT void trace__logf(trace_task_t task, const char *category, const char *fmt, ...)
{
    char msg[CTR_MAX_EVENT_PAYLOAD + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    trace__log(task, category, msg);
}
