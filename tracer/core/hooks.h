/* SPDX-License-Identifier: MIT */
/* hooks.h - what core/ calls in the rooms above it, by name: the inline sink,
 * the event sources of a thread, the collector's wake-up, a wrapper's open
 * call. Each is defined in the room named with it; core/ includes no header
 * of theirs (the layers stay one-way), and the definers include this one.
 */
#ifndef CTR_HOOKS_H
#define CTR_HOOKS_H

#include <stddef.h>
#include <stdint.h>

struct ctr_intern;
struct ctr_intern_entry;
struct ctr_thread;

/* ---------------------------------------------------------------------------
 * The inline sink: events and table entries sent as they are written
 * (sinks/lttng.c), while ctr__inline_mode (core/emit.h) says so
 * ------------------------------------------------------------------------- */

/* LTTng (sinks/lttng.c). ctr__lttng_entry sends a new table entry, once, by
 * the thread that added it (intern.c, while ctr__inline_mode is on). */
void ctr__lttng_entry(const struct ctr_intern *table, const struct ctr_intern_entry *e);
/* Sends one event to LTTng as its thread writes it (sinks/lttng.c). */
void ctr__lttng_event(struct ctr_thread *t, uint8_t type, uint64_t now, const uint64_t *args,
                      const void *payload, size_t len);

/* ---------------------------------------------------------------------------
 * A thread's event sources (perf/sched.c, perf/cpu.c, perf/cputime.c), opened, closed and
 * forgotten as the thread registers, writes, ends or forks (thread.c)
 * ------------------------------------------------------------------------- */

/* Owner, once per session: opens (or re-enables) t's context-switch ring. */
void ctr__sched_open(struct ctr_thread *t);
/* Opens t's sampler for the session `epoch` unless one is open for it
 * (t's own thread at its first event, or the session's start). */
void ctr__cpu_open(struct ctr_thread *t, uint32_t epoch);
/* The calling thread ends: its timer goes. */
void ctr__cpu_thread_exit(struct ctr_thread *t);
/* The calling thread registers, or ends: its CPU time read into t's
 * start_cpu or end_cpu fields (perf/cputime.c): the first bounds its
 * running from its first event on, and no one can read an ended thread's
 * clock. Keep errno. */
void ctr__cputime_thread_start(struct ctr_thread *t);
void ctr__cputime_thread_end(struct ctr_thread *t);
/* A slot is reused: the previous occupant's sampler goes. */
void ctr__cpu_close(struct ctr_thread *t);
/* In a forked child: the parent's samplers are gone (timers are not
 * inherited; ring descriptors went with the tracer's others). */
void ctr__cpu_forked(struct ctr_thread *t);

/* ---------------------------------------------------------------------------
 * The collector (collect/collector.c), woken as chunks fill (thread.c)
 * ------------------------------------------------------------------------- */

void ctr__collector_kick(void); /* wake the collector early (queue filling) */

/* ---------------------------------------------------------------------------
 * The open call of a wrapper (wrap/wait.c), ended by a jump out of a signal
 * handler (wrap/interpose.c) or by the thread's end (thread.c)
 * ------------------------------------------------------------------------- */

/* Ends t's open call now, as a call that did not return: an I/O call as a
 * wait from its start (if long enough), a wait with its Unblock. _jump: the
 * call's frames are still whole (a longjmp about to leave them), so the
 * wait gets its full stack; _abandon: they are gone (the thread's end), the
 * call site alone. */
void ctr__call_jump(struct ctr_thread *t);
void ctr__call_abandon(struct ctr_thread *t);

#endif /* CTR_HOOKS_H */
