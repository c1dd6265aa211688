/* SPDX-License-Identifier: MIT */
/* perfetto_cmd.h - `ctrace -perfetto` (perfetto_cmd.c), for main.c. */
#ifndef CTR_PERFETTO_CMD_H
#define CTR_PERFETTO_CMD_H

/* ctr_cmd_perfetto() : `ctrace -perfetto [FLAGS] TRACE`, argv[0] being
 * "ctrace"; the other flags may come in any order around -perfetto.
 * @return the exit status: 0, 1 (an error said on stderr), CTR_EXIT_USAGE,
 *         or 3 for a damaged trace (its damage said). */
int ctr_cmd_perfetto(int argc, char **argv);

#endif
