/* SPDX-License-Identifier: MIT */
/* ctl.h - `ctrace ctl`: the client side of the control channel
 * (format/CONTROL.md): ask a running process that accepts commands
 * for its state, its flight recorder's window, or a trace of the next
 * seconds. */
#ifndef CTR_CTL_H
#define CTR_CTL_H

/* ctr_cmd_ctl() : `ctrace ctl PID COMMAND [-for DURATION] [FILE]` or
 * `ctrace ctl -list`, argv[0] being "ctl". Finds PID's listening socket in
 * /proc/net/unix, talks only to PID itself (SO_PEERCRED), sends one request
 * of the table (CTR_CTL_COMMANDS) with FILE's descriptor, and prints the
 * reply. FILE is written whole or not at all: the process writes into a
 * temporary file beside it, renamed over FILE when the reply is "ok".
 * -h prints the usage on stdout. Installs handlers for SIGINT and SIGTERM
 * (unless ignored) for the time of a request, and restores them.
 * @return the exit status for main(): 0 success; 1 an error (no such
 *         process, one that accepts no commands or is not the one asked
 *         for, the process's error reply, no reply, a file not written),
 *         said in one line on stderr; CTR_EXIT_USAGE a usage error; 128 +
 *         the signal (130, 143) when SIGINT or SIGTERM ended the wait.
 *         Not thread-safe (signal handlers). */
int ctr_cmd_ctl(int argc, char **argv);

#endif
