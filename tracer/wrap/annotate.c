/* SPDX-License-Identifier: MIT */
/* annotate.c - the user's own structure in the trace: tasks, regions and
 * logs (the API is in ctrace/trace.h, whose inline functions check
 * trace__active before calling in here).
 *
 * A task id is a process-wide counter (one atomic add per task: tasks are
 * requests, not events). Type, region and category names are interned
 * strings; a log's message travels inline, after its event (FORMAT.md §4),
 * so that messages never fill the string table. Each event is written in a
 * write section of its own (core/emit.h), so a signal handler that calls
 * these in the middle of another event is counted as a drop, not mixed in.
 */
#include "core/clock.h"
#include "core/common.h"
#include "core/emit.h"
#include "core/intern.h"
#include "core/thread.h"
#include "ctrace/trace.h"
#include "ctrace_format.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

CTR_EXPORT int trace__active;

static _Atomic uint64_t next_task = 1;

/* The longest name interned; a longer one is cut there. */
#define NAME_MAX_BYTES 256

/* Whether the name at s is e's: a byte loop, which stops at the first
 * difference, so it reads no further than e's length or s's terminator
 * (e's bytes hold no NUL), and s[len] is then within s. Names are short:
 * the loop beats a call to strncmp. */
static int name_is(const char *s, const struct ctr_intern_entry *e)
{
    for (uint32_t i = 0; i < e->len; i++)
        if (s[i] != (char)e->bytes[i])
            return 0;
    return e->len == NAME_MAX_BYTES || s[e->len] == '\0';
}

/* The id of name s for thread t. Programs pass the same few names (string
 * literals, mostly) on every call, so t remembers, by address, the entries
 * of the last names it used: in a set of CTR_NAME_MEMO_WAYS places that
 * the address's hash picks, the latest first (a program's handful of names
 * rarely put more in one set, so none evicts another on every call). A
 * remembered address is only a hint: the bytes there may have changed
 * since (a buffer reused for another name), so the entry counts only if
 * its bytes are still s's. */
static uint64_t string_id(struct ctr_thread *t, const char *s)
{
    if (!s)
        return 0;
    struct ctr_name_memo *set =
        &t->names[(((uintptr_t)s * 0x9E3779B97F4A7C15ull) >> (64 - CTR_NAME_MEMO_SET_BITS)) *
                  CTR_NAME_MEMO_WAYS];
    for (unsigned i = 0; i < CTR_NAME_MEMO_WAYS; i++)
        if (set[i].ptr == s && set[i].entry && name_is(s, set[i].entry))
            return set[i].entry->id;
    uint32_t id = ctr__intern(&ctr__strings, s, (uint32_t)strnlen(s, NAME_MAX_BYTES));
    memmove(&set[1], &set[0], (CTR_NAME_MEMO_WAYS - 1) * sizeof(*set));
    set[0].ptr = s;
    set[0].entry = ctr__intern_entry(&ctr__strings, id);
    return id;
}

CTR_EXPORT trace_task_t trace__task_begin(const char *type, trace_task_t parent)
{
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return 0;
    /* relaxed: the counter only hands out distinct ids. */
    uint64_t id = atomic_fetch_add_explicit(&next_task, 1, memory_order_relaxed);
    uint64_t args[3] = {id, parent, string_id(t, type)};
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
    uint64_t args[2] = {task, string_id(t, name)};
    ctr__emit_one(t, begin ? CTR_EV_REGION_BEGIN : CTR_EV_REGION_END, args);
}

CTR_EXPORT void trace__log(trace_task_t task, const char *category, const char *message)
{
    struct ctr_thread *t = ctr__self_traced();
    if (!t)
        return;
    size_t len = message ? strnlen(message, CTR_MAX_EVENT_PAYLOAD) : 0;
    uint64_t args[3] = {task, string_id(t, category), len};
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
