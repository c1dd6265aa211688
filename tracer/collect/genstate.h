/* SPDX-License-Identifier: MIT */
/* genstate.h - what makes each generation stand alone (genstate.c): the
 * collector's per-generation tables and its view of each thread's state.
 * Collector thread only. */
#ifndef CTR_GENSTATE_H
#define CTR_GENSTATE_H

#include <stddef.h>
#include <stdint.h>

struct ctr_outbuf;

/* A generation begins: no stack or string is needed yet; the threads
 * blocked now are the ones its WAITING records will name. */
void ctr__gen_begin(void);
/* Reads a batch of the thread in `slot` (its events from base_ticks on):
 * the stacks and strings they need, and the thread's state. */
void ctr__gen_observe(uint32_t slot, uint64_t thread_id, uint64_t base_ticks, const uint8_t *p,
                      size_t n);
/* The generation needs this stack / string (0: none). */
void ctr__gen_need_stack(uint64_t id);
void ctr__gen_need_string(uint64_t id);
/* The slot's thread is gone: nothing more is known of who uses it. */
void ctr__gen_forget(uint32_t slot);
/* The thread in slot has records of its own in this generation (switches,
 * drops) besides its batches, which ctr__gen_observe notes. */
void ctr__gen_thread_seen(uint32_t slot, uint64_t thread_id);
/* A PENDING record names this thread and stack (ctr__rec_pending). */
void ctr__gen_pending_noted(uint32_t slot, uint64_t thread_id, uint64_t stack);
/* Whether the thread in slot needs a THREAD record in this generation: it
 * has events or records in it, or was waiting as it began (or nothing is
 * known of it). */
int ctr__gen_thread_in(uint32_t slot, uint64_t thread_id);
/* Whether the thread in slot is inside a recorded wait, as far as its
 * events so far said (0 when nothing is known of it). */
int ctr__gen_thread_blocked(uint32_t slot, uint64_t thread_id);
/* The latest name (string id) of the thread in slot, as its events said,
 * else `registered`. */
uint32_t ctr__gen_thread_name(uint32_t slot, uint64_t thread_id, uint32_t registered);
/* The executable mappings that the generation's stacks are in (rescanned
 * when objects were loaded or unloaded), each with the id it has for the
 * whole process. After the last stack is needed, before
 * ctr__gen_write_tables: their paths are strings it writes. */
void ctr__gen_write_mappings(struct ctr_outbuf *o);
/* Every mapping of the process, with its path's STRING record, whatever
 * the generation refers to: for a sink whose events do not pass through
 * the generation (lttng.c). Collector thread. */
void ctr__gen_write_all_mappings(struct ctr_outbuf *o);
/* The WAITING records, then the STACK and STRING records of everything
 * needed so far in this generation. */
void ctr__gen_write_tables(struct ctr_outbuf *o);
/* When each wait still going on began (ticks, ascending), but for sleeps:
 * *since is valid until the next call. @return how many. */
size_t ctr__gen_open_waits(const uint64_t **since);
/* A new session: no thread's state is known. */
void ctr__gen_session(void);
/* In a forked child, after the intern tables were emptied. */
void ctr__gen_forked(void);

#endif
