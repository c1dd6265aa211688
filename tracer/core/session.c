/* SPDX-License-Identifier: MIT */
/* session.c - the session state every layer reads (session.h): set up and
 * published by api.c (ctr__session_begin), and where events go besides the
 * chunks, which collect/sink.c sets as sinks come and go (emit.h). Here, at
 * the bottom, so that the threads' write path needs nothing defined above.
 */
#include "core/session.h"

#include "core/emit.h"

struct ctr_session ctr__session;

_Atomic int ctr__inline_mode;
