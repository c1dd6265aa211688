/* SPDX-License-Identifier: MIT */
/* text.h - what the text outputs of the analyzer share (-top, tasks,
 * threads): durations as people read and write them, and symbolized code
 * frames printed as "function (file:line)". */
#ifndef CTR_TEXT_H
#define CTR_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ctrace_options.h" /* ctr_parse_duration */
#include "symbols/tracesym.h"

/* Room for ctr_symbolizer_module_offset()'s "PATH+0xADDR"; a longer path
 * is cut. */
#define CTR_TEXT_WHERE_MAX 4160

/* ctr_text_ns() : ns as "812ns", "3.4us", "12.5ms" or "4.52s" into buf.
 * @return buf. */
const char *ctr_text_ns(int64_t ns, char *buf, size_t len);

/* ctr_text_pc() : prints the code address pc (already the call instruction:
 * a return address minus one) symbolized with ps, as its inline chain
 * innermost first, one "function (file:line)" a line; the first line
 * continues the current one, the others start with `indent`. An address
 * that does not symbolize is printed as its file and the address in it,
 * "/lib/libfoo.so+0x1234" (ctr_symbolizer_module_offset()), which stays
 * the same from run to run; one in no mapping as 0x... */
void ctr_text_pc(FILE *out, struct ctr_profile_sym *ps, uint64_t pc, const char *indent);

/* ctr_text_clean() : s (len bytes, from a trace: hostile) with control
 * characters escaped (\n, \t, \xNN), or made spaces for a tab-separated
 * form (tsv); UTF-8 passes as it is. */
void ctr_text_clean(FILE *out, const char *s, size_t len, int tsv);

/* ctr_text_thread() : "thread ID (name)" for thread index i of t; no name
 * part when it has none. */
struct ctr_trace;
void ctr_text_thread(FILE *out, const struct ctr_trace *t, uint32_t i);

/* ctr_text_frame() : the innermost frame of pc (a call instruction, as for
 * ctr_text_pc()) on one line, as "function (file.c:line)" with the file's
 * base name, and when that frame was inlined, " in " the function it was
 * inlined into, the same way; or the address form when it does not
 * symbolize; sep between
 * function and place ("\t" for a tab-separated form, which prints
 * "function\tfile.c:line", "?" for what is unknown). No newline. */
void ctr_text_frame(FILE *out, struct ctr_profile_sym *ps, uint64_t pc, const char *sep);

#endif
