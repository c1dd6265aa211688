/* SPDX-License-Identifier: MIT */
/* abi.c - the library's version, and the copying of the program's
 * extensible structs (abi.h; the rule is in trace.h, "ABI").
 *
 * This is Linux's copy_struct_from_user() scheme (clone3, openat2): the size
 * travels with the struct, the shorter side decides what is copied, and the
 * longer side's extra bytes must be zero (coming in) or are zeroed (going
 * out).
 */
#include "core/abi.h"

#include "ctrace/trace.h"

#include <errno.h>
#include <string.h>

/* Each public struct ends with a field, not with padding (trace.h, "ABI"):
 * a field added in the wrong size fails here (flightrec.h's: flightrec.c). */
_Static_assert(offsetof(struct trace_options, control) + sizeof(int) ==
                   sizeof(struct trace_options),
               "struct trace_options must end without padding");
_Static_assert(sizeof(struct trace_options) % 8 == 0 && TRACE_OPTIONS_SIZE_VER0 % 8 == 0,
               "struct trace_options grows 8 bytes at a time");
_Static_assert(offsetof(struct trace_counters, chunks_flushed) + sizeof(uint64_t) ==
                   sizeof(struct trace_counters),
               "struct trace_counters must end without padding");

unsigned ctrace_version(void)
{
    return CTRACE_VERSION_NUMBER;
}

const char *ctrace_version_string(void)
{
    return CTRACE_VERSION_STRING;
}

/* The shorter of the two decides; the rest of dst is zero. */
static void copy_zero_rest(void *dst, size_t dst_size, const void *src, size_t src_size)
{
    size_t n = src_size < dst_size ? src_size : dst_size;
    memcpy(dst, src, n);
    memset((unsigned char *)dst + n, 0, dst_size - n);
}

int ctr__abi_copy_in(void *dst, size_t dst_size, const void *src, size_t src_size, size_t min_size)
{
    if (src_size < min_size)
        return -EINVAL;
    const unsigned char *bytes = src;
    for (size_t i = dst_size; i < src_size; i++)
        if (bytes[i])
            return -E2BIG;
    copy_zero_rest(dst, dst_size, src, src_size);
    return 0;
}

int ctr__abi_copy_out(void *dst, size_t dst_size, const void *src, size_t src_size, size_t min_size)
{
    if (dst_size < min_size)
        return -EINVAL;
    copy_zero_rest(dst, dst_size, src, src_size);
    return 0;
}

int ctr__options_copy_in(struct trace_options *own, const struct trace_options *opts,
                         size_t opts_size)
{
    return ctr__abi_copy_in(own, sizeof(*own), opts, opts_size, TRACE_OPTIONS_SIZE_VER0);
}
