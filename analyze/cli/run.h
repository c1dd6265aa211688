/* SPDX-License-Identifier: MIT */
/* run.h - `ctrace run`: trace an unmodified, dynamically linked program from
 * start to exit, through LD_PRELOAD and libctrace's autostart. */
#ifndef CTR_RUN_H
#define CTR_RUN_H

/* ctr_cmd_run() : `ctrace run [-o FILE] [FLAGS] [--] CMD [ARG...]`, argv[0]
 * being "run". Sets the CTRACE_* variables from the flags (the options
 * table's, ctrace_options.h), puts libctrace.so first in LD_PRELOAD (after
 * ASan's runtime in an ASan build) and execs CMD: on success it does not
 * return, the process becoming CMD with its pid, descriptors and exit
 * status. -h prints the usage on stdout.
 * @return only when CMD was not run, the exit status for main(): 0 after
 *         -h; CTR_EXIT_USAGE for a usage error; 1 when libctrace.so is not
 *         found or cannot be preloaded, or the environment cannot be set;
 *         127 when CMD is not found, 126 when it cannot be run. Each
 *         failure but an allocation failure in setting LD_PRELOAD says why
 *         on stderr. Not thread-safe: it changes the environment. */
int ctr_cmd_run(int argc, char **argv);

#endif
