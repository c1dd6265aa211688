/* stats.h - `ctrace stats`: what a trace holds and how healthy it is. */
#ifndef CTR_STATS_H
#define CTR_STATS_H

#include <stdio.h>

#include "reader.h"

/* Prints the summary of t (read from `name`) to out. */
void ctr_stats_print(const struct ctr_trace *t, const char *name, FILE *out);

#endif
