/* SPDX-License-Identifier: MIT */
/* watchdog.h - a bound on calls into a library that may never return: a
 * thread that ends the process, with a message, when a call armed with
 * ctr_watchdog_arm() is still running (not disarmed) after the bound.
 *
 * Why the process ends: a thread spinning inside a library (babeltrace2 2.0
 * loops forever, or allocates without end, on some damaged CTF traces;
 * issue 29) cannot be stopped in-process any other way. pthread_cancel
 * needs the library to reach a cancellation point, which a loop over
 * memory never does; a signal handler that longjmps out leaves the
 * library's state, locks and memory half-changed, so no later call into it
 * is safe. For a CLI reading a trace, an error exit naming the trace is
 * what a user can act on; the exit status is 1, as for an unreadable
 * trace. It is a backstop: the damage known to cause such loops is found
 * before the library sees it (ctf_check.h).
 *
 * Arming and disarming are two atomic stores and a clock read: cheap
 * enough to wrap every call. The thread wakes four times per bound, so a
 * stuck call ends the process between 1 and 1.25 bounds after it began.
 * One thread arms and disarms a watchdog; start and stop are not
 * thread-safe with respect to the others.
 */
#ifndef CTR_WATCHDOG_H
#define CTR_WATCHDOG_H

struct ctr_watchdog;

/* ctr_watchdog_start() : a watchdog whose armed calls may last seconds
 * (> 0); when one lasts longer, message (copied; a line) is written to
 * stderr and the process exits with status 1 (_exit: nothing is flushed or
 * run at exit, as other threads may hold any lock). @return 0, or a
 * negative errno (-ENOMEM, or pthread_create's). */
int ctr_watchdog_start(struct ctr_watchdog **out, double seconds, const char *message);
/* ctr_watchdog_arm() : a call begins (w NULL: nothing). Async-signal-safe. */
void ctr_watchdog_arm(struct ctr_watchdog *w);
/* ctr_watchdog_disarm() : the call returned (w NULL: nothing).
 * Async-signal-safe. */
void ctr_watchdog_disarm(struct ctr_watchdog *w);
/* ctr_watchdog_stop() : stops and frees the watchdog (NULL: nothing). */
void ctr_watchdog_stop(struct ctr_watchdog *w);

#endif
