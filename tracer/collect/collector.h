/* SPDX-License-Identifier: MIT */
/* collector.h - the collector thread's life and the rounds it runs
 * (collector.c, round.c); its wake-up, ctr__collector_kick, is in
 * core/hooks.h (threads call it). */
#ifndef CTR_COLLECTOR_H
#define CTR_COLLECTOR_H

#include <stdint.h>

/* Under the API lock: start feeds the session `epoch` to the collector
 * (creating its thread unless the control channel keeps it up); stop runs
 * its final round and waits for it (from the collector itself, a command
 * of the channel's: runs it). @return 0 or -errno. */
int ctr__collector_start(uint32_t epoch);
void ctr__collector_stop(void);
/* Under the API lock (control.c): keep the collector's thread up between
 * sessions, creating it if none runs (@return 0 or -errno); release lets it
 * end with the last session, or now if none runs (not from the collector
 * itself). */
int ctr__collector_keep(void);
void ctr__collector_release(void);
/* Whether the calling thread is the collector's. */
int ctr__collector_is_self(void);
/* Around a fork (pthread_atfork, in the forking thread): prepare waits for
 * the collector's round to end and holds off the next; parent lets it go;
 * in the child, ctr__collector_forked frees it and forgets the round the
 * parent's collector was in. */
void ctr__collector_fork_prepare(void);
void ctr__collector_fork_parent(void);
void ctr__collector_forked(void);
/* Makes a request (see ctr_session) and waits until the collector has run
 * a round that saw it (on the collector itself: runs one). */
void ctr__collector_sync(void);
/* The same, waiting at most timeout_ns. @return 0, or -ETIMEDOUT. */
int ctr__collector_sync_for(uint64_t timeout_ns);

#endif /* CTR_COLLECTOR_H */
