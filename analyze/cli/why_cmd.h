/* SPDX-License-Identifier: MIT */
/* why_cmd.h - `ctrace why` (why_cmd.c), for main.c. */
#ifndef CTR_WHY_CMD_H
#define CTR_WHY_CMD_H

/* ctr_cmd_why() : `ctrace why [FLAGS] TRACE`, argv[0] being "why".
 * @return the exit status: 0, 1 (an error said on stderr), CTR_EXIT_USAGE,
 *         or 3 for a damaged trace (its damage said). */
int ctr_cmd_why(int argc, char **argv);

#endif
