/* SPDX-License-Identifier: MIT */
/* recorder.h - what flightrec.c (the recorder's API and sink) offers the
 * rest of flightrec/: the dump signal, armed by autostart.c. */
#ifndef CTR_FLIGHTREC_RECORDER_H
#define CTR_FLIGHTREC_RECORDER_H

/* Installs the handler of signal sig (SA_RESTART), which makes the
 * collector dump the window into dir (as the latency trigger does: a new
 * ctrace-PID-SECONDS-N.bin) at the end of its next round. Once, before the
 * program's threads run (a constructor). @return 0, -ENAMETOOLONG, or
 * -errno from sigaction. */
int ctr__fr_signal_arm(int sig, const char *dir);

#endif
