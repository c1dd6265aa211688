/* SPDX-License-Identifier: MIT */
/* why_cmd.h - `ctrace why` (why_cmd.c), for main.c. */
#ifndef CTR_WHY_CMD_H
#define CTR_WHY_CMD_H

#include <stdint.h>

/* ctr_cmd_why() : `ctrace why [FLAGS] TRACE`, argv[0] being "why".
 * @return the exit status: 0, 1 (an error said on stderr), CTR_EXIT_USAGE,
 *         or 3 for a damaged trace (its damage said). */
int ctr_cmd_why(int argc, char **argv);

/* ctr_cmd_critical() : `ctrace -pprof=critical [-task T] [-region NAME]
 * [-latmin D] [-o FILE] TRACE`: the critical paths of every task filter f
 * keeps, as a pprof profile into out_path (NULL: stdout, not a terminal).
 * @return the exit status, as ctr_cmd_why(). */
struct ctr_pipeline_opts;
struct ctr_profile_filter;
int ctr_cmd_critical(const struct ctr_profile_filter *f, const char *out_path, const char *path,
                     const struct ctr_pipeline_opts *po);

#endif
