/* SPDX-License-Identifier: MIT */
/* autostart.c - the flight recorder of an unmodified program: `ctrace run
 * -flight SPEC` sets CTRACE_FLIGHT, and a constructor here starts the
 * recorder at load with that window (ctr_flight_parse) and the other
 * CTRACE_* options, as tracer/autostart.c starts a trace for CTRACE_OUTPUT.
 * CTRACE_DUMP_SIGNAL (off by default) names a signal that dumps the window
 * into CTRACE_DUMP_DIR (default: the directory the program started in).
 *
 * The same rules as tracer/autostart.c's: a bad variable or a recorder
 * that cannot start says one line on stderr and the program runs on
 * without it; secure_getenv, so a set-user-ID program never takes them
 * from its caller. Every process that loads libctrace with the variable
 * set has a recorder of its own: one that execs (the variables stay in the
 * environment), and one that forks (a daemon's child, a pre-forked
 * worker), which starts its own in the child; `ctrace ctl -list` shows
 * them. This file, with tracer/autostart.c, is all of libctrace that
 * prints: it speaks for `ctrace run`.
 */
#include "ctrace/flightrec.h"
#include "collect/face.h"
#include "ctrace/trace.h"
#include "ctrace_options.h"
#include "recorder.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct flightrec_config started;
static struct trace_options started_opts;

/* Starts the recorder with the config read at load. @return as
 * flightrec_start, said on stderr when it fails. */
static int start(void)
{
    struct flightrec_config cfg = started;
    struct trace_options o = started_opts;
    cfg.trace = &o;
    int rc = flightrec_start(&cfg);
    if (rc != 0 && rc != -EBUSY)
        fprintf(stderr, "ctrace: %s: the flight recorder did not start: %s\n", CTR_FLIGHT_ENV,
                strerror(-rc));
    return rc;
}

/* In a forked child (after api.c's handler let go of the parent's
 * session): a recorder of its own. */
static void start_in_child(void)
{
    start();
}

/* The dump signal, if CTRACE_DUMP_SIGNAL names one. */
static void arm_signal(void)
{
    const char *name = secure_getenv(CTR_DUMP_SIGNAL_ENV);
    if (!name || !*name)
        return;
    int sig = ctr_dump_signal_parse(name);
    if (sig < 0) {
        fprintf(stderr, "ctrace: %s: want %s: '%s'\n", CTR_DUMP_SIGNAL_ENV, CTR_DUMP_SIGNAL_WANT,
                name);
        return;
    }
    const char *dir = secure_getenv(CTR_DUMP_DIR_ENV);
    char cwd[PATH_MAX];
    if (!dir || !*dir) /* where it started: a daemon's chdir("/") changes nothing */
        dir = getcwd(cwd, sizeof(cwd));
    int rc = dir ? ctr__fr_signal_arm(sig, dir) : -errno;
    if (rc != 0)
        fprintf(stderr, "ctrace: %s: not armed: %s\n", CTR_DUMP_SIGNAL_ENV, strerror(-rc));
}

__attribute__((constructor)) static void flightrec_autostart(void)
{
    const char *spec = secure_getenv(CTR_FLIGHT_ENV);
    if (!spec || !*spec || strcmp(spec, "0") == 0)
        return;
    uint64_t min_age, max_bytes;
    int rc = ctr_flight_parse(spec, &min_age, &max_bytes);
    if (rc != 0) {
        fprintf(stderr, "ctrace: %s: want %s%s: '%s'\n", CTR_FLIGHT_ENV, CTR_FLIGHT_WANT,
                rc == -ERANGE ? " (a value is out of range)" : "", spec);
        return;
    }
    if (ctr__options_from_env(&started_opts) != 0)
        return;
    started.min_age_ns = min_age;
    started.max_bytes = max_bytes;
    if (start() != 0)
        return;
    arm_signal();
    /* After api.c's (the start registered it): children run their fork
     * handlers in the order they were registered. */
    pthread_atfork(NULL, NULL, start_in_child);
}
