/* SPDX-License-Identifier: MIT */
/* pf_proto.h - the field numbers of Perfetto's perfetto_trace.proto that
 * the export writes (the subset is tests/data/proto/perfetto.proto, which
 * the tests decode every output with), and its sequences: one table for
 * the encoder (perfetto_enc.c) and the critical paths' writer
 * (perfetto_paths.c). */
#ifndef CTR_PF_PROTO_H
#define CTR_PF_PROTO_H

/* Field numbers of perfetto_trace.proto (tests/data/proto/perfetto.proto). */
/* clang-format off */
enum {
    TRACE_PACKET = 1,
    PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11, PKT_INTERNED = 12,
    PKT_SEQ_FLAGS = 13, PKT_TRACK_DESCRIPTOR = 60,
    SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2,
    TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
    TD_RANK = 12, TD_THREAD_ORDERING = 20,
    PD_PID = 1, PD_NAME = 6,
    THD_PID = 1, THD_TID = 2, THD_NAME = 5,
    CD_UNIT = 3, UNIT_COUNT = 2,
    TE_CATEGORY_IIDS = 3, TE_ARGS = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11,
    TE_NAME = 23, TE_COUNTER = 30, TE_FLOWS = 47, TE_TERMINATING_FLOWS = 48, TE_CALLSTACK = 56,
    TE_EXTRA_COUNTER_VALUES = 12, TE_EXTRA_COUNTER_TRACKS = 31,
    TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4,
    DA_NAME_IID = 1, DA_UINT = 3, DA_STRING = 6, DA_POINTER = 7, DA_NAME = 10, DA_STRING_IID = 17,
    ID_CATEGORIES = 1, ID_NAMES = 2, ID_ARG_NAMES = 3, ID_FUNCTIONS = 5, ID_FRAMES = 6,
    ID_CALLSTACKS = 7, ID_BUILD_IDS = 16, ID_MAPPING_PATHS = 17, ID_SOURCE_PATHS = 18,
    ID_MAPPINGS = 19, ID_STRING_VALUES = 29,
    FR_IID = 1, FR_FUNCTION = 2, FR_MAPPING = 3, FR_REL_PC = 4, FR_SOURCE = 5, FR_LINE = 6,
    CS_IID = 1, CS_FRAMES = 2,
    MP_IID = 1, MP_BUILD_ID = 2, MP_START_OFFSET = 3, MP_START = 4, MP_END = 5, MP_PATHS = 7,
};
/* clang-format on */

/* trusted_packet_sequence_id: the timeline, in time order with its
 * interned data; then the critical paths, written after it, with nothing
 * interned (a sequence of its own, so that each sequence's packets stay
 * in time order). */
enum { PF_SEQ_TIMELINE = 1, PF_SEQ_PATHS = 2 };

#endif
