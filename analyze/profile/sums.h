/* SPDX-License-Identifier: MIT */
/* sums.h - values summed per key: how the profiles sum their samples
 * (profile.c per leaf and stack, critical.c per leaf, stack, thread and
 * task type) before they are written, so their memory grows with the
 * distinct keys, not with the trace (sums.c).
 *
 * A key is four 64-bit words compared bit for bit: pointers to strings
 * that are interned or static go in as their addresses. Entries stay in the
 * order first seen, so a profile written from them does not depend on the
 * hash. */
#ifndef CTR_SUMS_H
#define CTR_SUMS_H

#include <stddef.h>
#include <stdint.h>

struct ctr_sum_key {
    uint64_t w[4];
};

struct ctr_sum {
    struct ctr_sum_key key;
    int64_t count, ns;
};

struct ctr_sums {
    struct ctr_sum *v; /* v[0..n-1], in the order first seen */
    size_t n, cap;
    size_t *slots; /* open addressing: entry index + 1, 0 empty */
    size_t nslots;
};

/* ctr_sums_add() : adds count and ns to key's entry in s (a zeroed struct
 * is an empty table), made if new. @return 0 or -ENOMEM. */
int ctr_sums_add(struct ctr_sums *s, const struct ctr_sum_key *key, int64_t count, int64_t ns);

void ctr_sums_free(struct ctr_sums *s);

#endif
