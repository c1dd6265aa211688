/* SPDX-License-Identifier: MIT */
/* symbolize.h - turns code addresses recorded in a trace into function, file and
 * line, using the trace's memory-mapping table and DWARF (elfutils libdw).
 *
 * The tracer records raw PCs and the mappings (path, load bias, build-id) they
 * fall in; all symbolization happens here, in the analyzer, offline.
 */
#ifndef CTR_SYMBOLIZE_H
#define CTR_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

/* One executable mapping as recorded in the trace (MAPPING record). */
struct ctr_sym_mapping {
    uint64_t start, limit;   /* [start, limit) in the traced process */
    uint64_t file_offset;    /* file offset that `start` maps */
    uint64_t bias;           /* load bias: runtime address - ELF vaddr */
    const char *path;        /* absolute path of the ELF file */
    const uint8_t *build_id; /* GNU build-id bytes, or NULL */
    size_t build_id_len;
};

/* One source frame. Strings are owned by the symbolizer and live until
 * ctr_symbolizer_free(). */
struct ctr_sym_frame {
    const char *function; /* in symname.h's form; NULL if unknown */
    const char *file;     /* absolute source path if known, else NULL */
    int line;             /* 0 if unknown */
    int function_line;    /* first line of the function, 0 if unknown */
};

struct ctr_symbolizer;

/* ctr_symbolizer_new() : prepares to symbolize addresses in `maps` (copied).
 * Files are opened lazily; a file that is missing or whose build-id differs
 * from the recorded one is skipped (its addresses stay unsymbolized) and
 * reported once through ctr_symbolizer_warnings().
 * @return the symbolizer, or NULL if out of memory. */
struct ctr_symbolizer *ctr_symbolizer_new(const struct ctr_sym_mapping *maps, size_t n);

/* ctr_symbolize() : symbolizes `pc`, an address in the traced process. For a
 * return address, pass the return address minus one.
 * Fills out[0..k-1] with the inline chain, innermost frame first (out[0] is the
 * inlined callee that contains pc, out[k-1] the real function), k <= max.
 * @return k >= 1 on success; 0 if pc is in no mapping or has no symbol.
 *         out[i].file/line may be unknown even when function is known. */
int ctr_symbolize(struct ctr_symbolizer *s, uint64_t pc, struct ctr_sym_frame *out, int max);

/* ctr_symbolizer_mapping() : @return the index in `maps` of the mapping that
 * contains pc, or -1. */
int ctr_symbolizer_mapping(const struct ctr_symbolizer *s, uint64_t pc);

/* ctr_symbolizer_module_offset() : names pc without symbols, in a form
 * that holds across runs (ASLR) and that addr2line -e takes:
 * "PATH+0xADDR", ADDR being pc's address in the ELF file of the mapping
 * that contains it (pc minus the mapping's load bias); "0xPC" when pc is in
 * no mapping or s is NULL. Written into buf as snprintf writes (cut to
 * len - 1 bytes). Does not open any file.
 * @return buf. */
const char *ctr_symbolizer_module_offset(const struct ctr_symbolizer *s, uint64_t pc, char *buf,
                                         size_t len);

/* ctr_symbolizer_warnings() : @return a NUL-terminated text of one line per
 * problem met so far (missing file, build-id mismatch, no debug info), or "". */
const char *ctr_symbolizer_warnings(const struct ctr_symbolizer *s);

void ctr_symbolizer_free(struct ctr_symbolizer *s);

#endif
