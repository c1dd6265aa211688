/* SPDX-License-Identifier: MIT */
/* cpuleaves.h - the CPU leaves a task gathered (model/cpufuncs.h), printed
 * as the functions that ran most, symbolized once per distinct PC. */
#ifndef CTR_CPULEAVES_H
#define CTR_CPULEAVES_H

#include <stddef.h>
#include <stdio.h>

#include "model/cpufuncs.h"
#include "symbols/tracesym.h"

/* ctr_cpu_leaves_print() : prints the `top` functions with the most CPU in
 * l, heaviest first, as "NAME P% (FILE:LINE)" separated by ", " on one
 * line (no newline): FILE:LINE is the sample's own place, or for code
 * without source (a library's) the first caller's that has one, as
 * "(CALLER FILE:LINE)"; FILE without its directories. Symbolized by ps over
 * t's tables. @return 0 or -ENOMEM. */
int ctr_cpu_leaves_print(FILE *out, const struct ctr_trace *t, struct ctr_profile_sym *ps,
                         const struct ctr_cpu_leaves *l, size_t top);

#endif
