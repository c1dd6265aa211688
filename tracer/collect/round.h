/* SPDX-License-Identifier: MIT */
/* round.h - the collector's round (round.c), for the thread that runs it
 * (collector.c). Every call but ctr__round_open is made under the round
 * lock (collector.c), which keeps a round and a session's set-up apart. */
#ifndef CTR_ROUND_H
#define CTR_ROUND_H

#include <stdint.h>

/* Prepares the compression stream of the generations' frames at `level`,
 * before a session's set-up. @return 0 or -ENOMEM. */
int ctr__round_open(int level);
/* Sets the rounds up for the session `epoch` (its pool, clock, period)
 * and forgets what the last one's requests were. */
void ctr__round_session(uint32_t epoch);
/* The session the rounds are for, 0 when none. */
uint32_t ctr__round_epoch(void);
/* The session's period in ns, the sleep between rounds; 0 when none. */
uint64_t ctr__round_period(void);
/* Maps in the chunks threads will take next (ctr__pool_prefault). */
void ctr__round_prefault(void);
/* No session any more: the rounds have nothing to take. */
void ctr__round_stop(void);
/* Runs one round of the session, its last when `final`: the generations of
 * what the threads wrote since the last one, handed to the sinks. */
void ctr__round_run(int final);
/* Acknowledges the requests up to `seen`, waking their waiters
 * (ctr__collector_sync_for). */
void ctr__round_ack(uint32_t seen);
/* In a forked child: forgets the round the parent's collector was in. */
void ctr__round_forked(void);

#endif /* CTR_ROUND_H */
