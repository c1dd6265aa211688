/* SPDX-License-Identifier: MIT */
/* lttng.h - the LTTng sink (lttng.c); what it sends as events are written
 * is declared in core/hooks.h. */
#ifndef CTR_SINKS_LTTNG_H
#define CTR_SINKS_LTTNG_H

#include "ctrace/trace.h"

struct ctr_sink;

/* Under the API lock: ctr__lttng_start loads the provider and attaches the
 * LTTng sink (0; -ELIBACC when no provider library loads; as
 * ctr__sink_attach), which ctr__lttng_sink gives for detaching
 * (collect/sink.h). */
int ctr__lttng_start(const struct trace_options *o);
struct ctr_sink *ctr__lttng_sink(void);

#endif /* CTR_SINKS_LTTNG_H */
