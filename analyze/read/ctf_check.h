/* SPDX-License-Identifier: MIT */
/* ctf_check.h - the damage in a CTF trace's files that babeltrace2 (2.0)
 * does not survive, found before it reads them, and named (issue 29):
 *   - a packetized metadata file (CTF 1.8 §7.1: packets of magic 0x75d11d57
 *     whose header gives content_size and packet_size, in bits) cut short:
 *     its ctf plugin reads the last packet's content in a loop that never
 *     sees the end of the file, and spins forever (what a killed LTTng
 *     session leaves);
 *   - an LTTng index (index/NAME.idx, lttng-index.h) with a packet outside
 *     its stream file: the plugin seeks there and aborts on an assertion.
 * Other damage babeltrace2 reports itself. These read the files only (a
 * header at a time); the checks are pure and thread-safe.
 */
#ifndef CTR_CTF_CHECK_H
#define CTR_CTF_CHECK_H

#include <stddef.h>

/* ctr_ctf_check_metadata() : checks the metadata file at path. A text
 * (TSDL) file passes: babeltrace2 stops at its damage itself.
 * @return 0, or a negative errno with a one-line reason naming the file in
 *         err: -EINVAL, not a regular file or a packet cut short; another,
 *         the file cannot be read. */
int ctr_ctf_check_metadata(const char *path, char *err, size_t errlen);

/* ctr_ctf_check_index() : checks the LTTng index at path (DIR/index/NAME.idx)
 * against its stream file (DIR/NAME). An index babeltrace2 would not use
 * (not one, another version, its stream file missing, its packets' sizes
 * not summing to the stream's: a stream cut short) passes.
 * @return 0, or -EINVAL with a one-line reason naming the file in err. */
int ctr_ctf_check_index(const char *path, char *err, size_t errlen);

#endif
