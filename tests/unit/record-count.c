/* SPDX-License-Identifier: MIT */
/* record-count.c - uses of the record writer (format/ctrace_record.h), one per
 * CASE, for tests/unit/record_count.sh, which only compiles them: case 0 is
 * right and must compile; every other case passes a record a number of
 * fields its line in CTR_RECORDS does not have, or uses a writer that does
 * not write the record's tail, and must fail on the writer's own
 * assertion. */
#include "ctrace_record.h"

void write_records(struct ctr_outbuf *o);

void write_records(struct ctr_outbuf *o)
{
#if CASE == 0 /* every writer, with the table's counts */
    CTR_REC_PUT(o, THREAD, 1, 2, 3, 4, 5);
    CTR_REC(o, CTR_REC_END, 1, 2, 3, 4);
    CTR_REC_PUT_BYTES(o, STRING, "a", 1, 7);
    CTR_REC_PUT_BYTES(o, MAPPING, "", 0, 1, 2, 3, 4, 5, 6);
    CTR_REC_PUT_UVARINTS(o, STACK, (const uintptr_t[]){0x401000}, 1, 3);
    ctr_rec_end(o, CTR_REC_OPEN(o, SWITCHES, 1, 2));
#elif CASE == 1 /* a field too few */
    CTR_REC_PUT(o, THREAD, 1, 2, 3, 4);
#elif CASE == 2 /* a field too many */
    CTR_REC_PUT(o, THREAD, 1, 2, 3, 4, 5, 6);
#elif CASE == 3 /* the enum's spelling, as tracer/collect/collector.c writes END */
    CTR_REC(o, CTR_REC_END, 1, 2, 3);
#elif CASE == 4 /* a record with bytes after its fields */
    CTR_REC_PUT_BYTES(o, MAPPING, "", 0, 1, 2, 3, 4, 5);
#elif CASE == 5 /* a record with a list after its fields */
    CTR_REC_PUT_UVARINTS(o, STACK, (const uintptr_t[]){0x401000}, 1, 3, 4);
#elif CASE == 6 /* a record written in parts */
    ctr_rec_end(o, CTR_REC_OPEN(o, BATCH, 1));
#elif CASE == 7 /* STRING's bytes left out */
    CTR_REC_PUT(o, STRING, 7);
#elif CASE == 8 /* bytes after a record that has none */
    CTR_REC_PUT_BYTES(o, THREAD, "", 0, 1, 2, 3, 4, 5);
#elif CASE == 9 /* a list where bytes go */
    CTR_REC_PUT_UVARINTS(o, STRING, (const uintptr_t[]){1}, 1, 7);
#endif
}
