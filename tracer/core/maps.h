/* SPDX-License-Identifier: MIT */
/* maps.h - the executable mappings of the traced process (see maps.c). */
#ifndef CTR_MAPS_H
#define CTR_MAPS_H

#include <stddef.h>
#include <stdint.h>

struct ctr_map_info {
    uint64_t start, limit, file_offset, bias;
    const char *path; /* valid during the visit only */
    uint8_t build_id[64];
    size_t build_id_len;
};

/* Calls visit once per executable PT_LOAD segment of every loaded object. */
void ctr__maps_scan(void (*visit)(void *ctx, const struct ctr_map_info *m), void *ctx);

/* A number that changes whenever objects are loaded or unloaded. */
uint64_t ctr__maps_version(void);

#endif
