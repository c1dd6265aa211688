/* SPDX-License-Identifier: MIT */
/* perfetto_paths.h - `-perfetto -critical N`: the critical paths of the N
 * slowest tasks (model/critpath.h) as tracks of the timeline, one per task,
 * under the process: each part of a path a slice named after its thread
 * and what it did there ("worker-3: running", "worker-2: clock_nanosleep"),
 * with the thread, the state, the call, the frame and the hops as
 * arguments, so the path can be followed down the thread tracks below it.
 *
 * A path is known only once the reading has passed its task's end, after
 * the timeline around it has gone out; so the paths are written after the
 * timeline, on a sequence of their own (pf_proto.h, PF_SEQ_PATHS) whose
 * packets are in time order among themselves and intern nothing, which
 * Perfetto's importer sorts in with the rest as it does any two sequences.
 */
#ifndef CTR_PERFETTO_PATHS_H
#define CTR_PERFETTO_PATHS_H

#include <stddef.h>
#include <stdint.h>

#include "model/critpath.h"
#include "perfetto/perfetto_enc.h"

/* pf_paths_write() : the paths of w[0..n-1] (slowest first), of trace
 * model m, cut to [from_ns, to_ns), through encoder e.
 * @return 0 or a negative errno. */
int pf_paths_write(struct pf_enc *e, const struct ctr_trace *m, const struct ctr_cp_task *w,
                   size_t n, uint64_t from_ns, uint64_t to_ns);

#endif
