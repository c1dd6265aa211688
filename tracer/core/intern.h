/* SPDX-License-Identifier: MIT */
/* intern.h - the tables of stacks and strings, each entry given an id once
 * (intern.c). */
#ifndef CTR_INTERN_H
#define CTR_INTERN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/segarr.h"

/* ---------------------------------------------------------------------------
 * Intern tables (intern.c): content-addressed, insert-only, lock-free.
 * ------------------------------------------------------------------------- */

struct ctr_intern {
    _Atomic uint32_t *slots; /* 0 = empty, else arena offset / 8 + 1 */
    uint32_t mask;
    /* The entries, in 8-byte words mapped a segment at a time
     * (core/segarr.h); an entry never spans two segments. */
    struct ctr_segarr arena;
    size_t arena_bytes;
    _Atomic size_t arena_used;
    _Atomic uint32_t next_id;   /* ids start at 1; 0 means "none" */
    _Atomic uint64_t overflows; /* lookups that found the table full */
    /* Arena position (as in slots) of each id's entry, 0 = none: stored by
     * the inserter before it publishes the entry (ctr__intern_entry).
     * Elements are _Atomic uint32_t. */
    struct ctr_segarr by_id;
    uint32_t max_ids;
};

/* An arena entry: filled before it is published, read-only after. */
struct ctr_intern_entry {
    uint64_t hash;
    uint32_t id;
    uint32_t len;
    uint8_t bytes[];
};

/* Empty tables of `slots` hash slots (a power of two) for at most
 * arena_bytes of entries. Maps the hash slots now, the entries and the id
 * index as they fill. @return 0 (also when t was made already), or
 * -ENOMEM with nothing left mapped. */
int ctr__intern_init(struct ctr_intern *t, uint32_t slots, size_t arena_bytes);
/* Unmaps t (empty again, as before ctr__intern_init), for a first start
 * that failed: only while no id of it can be in use. */
void ctr__intern_release(struct ctr_intern *t);
/* Bytes of address space the tables hold. */
size_t ctr__intern_mapped_bytes(const struct ctr_intern *t);
uint32_t ctr__intern(struct ctr_intern *t, const void *bytes, uint32_t len);
/* In a forked child (alone): t empty again, ids from 1. @return 0, or
 * -errno (t is left as it was). */
int ctr__intern_forked(struct ctr_intern *t);
/* The entry of `id`, which the caller read in an event or got from
 * ctr__intern (so it is published); NULL for 0 or an id never given out.
 * Any thread, no lock. */
const struct ctr_intern_entry *ctr__intern_entry(const struct ctr_intern *t, uint32_t id);
extern struct ctr_intern ctr__stacks;  /* bytes: uintptr_t PCs */
extern struct ctr_intern ctr__strings; /* bytes: characters, no NUL */

#endif /* CTR_INTERN_H */
