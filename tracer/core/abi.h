/* SPDX-License-Identifier: MIT */
/* abi.h - the rule by which the public structs grow (trace.h, "ABI"): the
 * program passes each struct's size as it was compiled, and these two
 * functions reconcile it with the library's own. Used by the exported
 * functions of filesink.c and flightrec/flightrec.c.
 */
#ifndef CTR_ABI_H
#define CTR_ABI_H

#include <stddef.h>

/* ctr__abi_copy_in() : copies the program's struct (src, src_size bytes)
 * into the library's (dst, dst_size bytes): fields the program's header did
 * not have are zero; bytes of fields this library does not know must be.
 * @return 0; -EINVAL if src_size < min_size (older than the first sized
 *         layout); -E2BIG if a field unknown here is set (non-zero). */
int ctr__abi_copy_in(void *dst, size_t dst_size, const void *src, size_t src_size, size_t min_size);

/* ctr__abi_copy_out() : gives the program's struct (dst, dst_size bytes)
 * the library's (src, src_size): the fields both know, and zero in the
 * fields only the program knows.
 * @return 0; -EINVAL if dst_size < min_size. */
int ctr__abi_copy_out(void *dst, size_t dst_size, const void *src, size_t src_size,
                      size_t min_size);

struct trace_options;

/* ctr__options_copy_in() : ctr__abi_copy_in() for struct trace_options,
 * whose first layout is TRACE_OPTIONS_SIZE_VER0 (trace.h): the one place
 * that knows it, for trace__start_opts and flightrec__start. */
int ctr__options_copy_in(struct trace_options *own, const struct trace_options *opts,
                         size_t opts_size);

#endif
