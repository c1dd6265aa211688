/* SPDX-License-Identifier: MIT */
/* sums.c - values summed per key (sums.h). */
#include "profile/sums.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctrace_grow.h"

static uint64_t hash(const struct ctr_sum_key *k)
{
    uint64_t h = k->w[0] * 0x9e3779b97f4a7c15ull;
    h = (h ^ k->w[1]) * 0xff51afd7ed558ccdull;
    h = (h ^ k->w[2]) * 0xc4ceb9fe1a85ec53ull;
    h = (h ^ k->w[3]) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static int rehash(struct ctr_sums *s)
{
    size_t n = s->nslots ? s->nslots * 2 : 256;
    size_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        size_t j = (size_t)hash(&s->v[i].key) & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = i + 1;
    }
    free(s->slots);
    s->slots = slots;
    s->nslots = n;
    return 0;
}

int ctr_sums_add(struct ctr_sums *s, const struct ctr_sum_key *key, int64_t count, int64_t ns)
{
    if ((s->n + 1) * 2 > s->nslots && rehash(s) != 0)
        return -ENOMEM;
    size_t j = (size_t)hash(key) & (s->nslots - 1);
    for (; s->slots[j]; j = (j + 1) & (s->nslots - 1)) {
        struct ctr_sum *e = &s->v[s->slots[j] - 1];
        if (memcmp(&e->key, key, sizeof(*key)) == 0) {
            e->count += count;
            e->ns += ns;
            return 0;
        }
    }
    if (ctr_grow(&s->v, &s->cap, s->n + 1, sizeof(*s->v)) != 0)
        return -ENOMEM;
    s->v[s->n] = (struct ctr_sum){*key, count, ns};
    s->slots[j] = ++s->n;
    return 0;
}

void ctr_sums_free(struct ctr_sums *s)
{
    free(s->v);
    free(s->slots);
    memset(s, 0, sizeof(*s));
}
