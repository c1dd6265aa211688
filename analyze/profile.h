/* profile.h - delay profiles: where threads waited, as pprof profiles. */
#ifndef CTR_PROFILE_H
#define CTR_PROFILE_H

#include <stdio.h>

#include "reader.h"

/* ctr_profile_write() : writes the delay profile of wait class `cls` (enum
 * ctr_wait_class) of trace t to out, gzip'd profile.proto with Go's sample
 * types (contentions/count, delay/nanoseconds). Each wait is one sample whose
 * leaf frame is the blocking call (e.g. pthread_mutex_lock) above the stack
 * where it was called. Symbolization problems are printed to `warn` (may be
 * NULL). @return 0, or a negative errno with a one-line reason in err. */
int ctr_profile_write(const struct ctr_trace *t, int cls, FILE *out, FILE *warn, char *err,
                      size_t errlen);

/* Names of the wait classes as the CLI spells them ("sync", ...); NULL for
 * an unknown class. ctr_wait_class_parse returns 0 for an unknown name. */
const char *ctr_wait_class_name(int cls);
int ctr_wait_class_parse(const char *name);

#endif
