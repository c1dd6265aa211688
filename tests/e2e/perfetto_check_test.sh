#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# perfetto_check_test.sh - tests of the Perfetto trace checker itself: traces
# written by hand as protoc text, encoded with the project's schema
# (tests/data/proto/perfetto.proto); perfetto_check.py must accept a good one,
# print its summary exactly, and reject each kind of mistake, one trace a
# rule, naming it. Where trace_processor_shell is at hand, the good trace
# also goes through Perfetto's importer (perfetto_tp.sh).
# usage: perfetto_check_test.sh PERFETTO_CHECK_PY PROTO_DIR
set -uo pipefail
checker=$1 protodir=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
command -v protoc >/dev/null || {
    echo "perfetto_check_test: protoc (protobuf-compiler) is required" >&2; exit 1; }

# encode NAME: the protoc text on stdin as $tmp/NAME.pftrace.
encode() {
    protoc --encode=perfetto.protos.Trace -I "$protodir" perfetto.proto >"$tmp/$1.pftrace" ||
        bad "$1: the test's own text does not encode"
}

# check_trace FILE...: runs the checker.
check_trace() {
    python3 "$checker" --proto-dir "$protodir" "$@"
}

# ------------------------------------------------------------------ a good trace
# Two sequences: the first declares the tracks and holds main's events; the
# second holds worker's, with interned data of its own (its iid 1 is another
# name than the first sequence's iid 1). A flow goes from main to worker.
encode good <<'EOF'
packet { trusted_packet_sequence_id: 1 sequence_flags: 1 first_packet_on_sequence: true
  track_descriptor { uuid: 0 thread_ordering: THREAD_ORDERING_EXPLICIT } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 1
  process { pid: 100 cmdline: "prog" cmdline: "-x" process_name: "prog" start_timestamp_ns: 5 } } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 2 parent_uuid: 1 sibling_order_rank: 0
  thread { pid: 100 tid: 100 thread_name: "main" } } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 3 parent_uuid: 1 sibling_order_rank: 1
  thread { pid: 100 tid: 101 thread_name: "worker 1" } } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 4 parent_uuid: 1 name: "locks held"
  description: "mutexes held" counter { unit: UNIT_COUNT unit_name: "locks" is_incremental: true } } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 5 parent_uuid: 1 static_name: "queue"
  child_ordering: CHRONOLOGICAL counter { unit: UNIT_SIZE_BYTES } } }
packet { timestamp: 1000 timestamp_clock_id: 6 trusted_packet_sequence_id: 1 sequence_flags: 2
  interned_data {
    event_categories { iid: 1 name: "sync" }
    event_names { iid: 1 name: "pthread_mutex_lock" }
    event_names { iid: 2 name: "run" }
    debug_annotation_names { iid: 1 name: "mutex" }
    build_ids { iid: 1 str: "\x12\x34" }
    mapping_paths { iid: 1 str: "/usr/bin/prog" }
    source_paths { iid: 1 str: "prog.c" }
    function_names { iid: 1 str: "main" }
    function_names { iid: 2 str: "worker" }
    mappings { iid: 1 build_id: 1 start: 4096 end: 8192 load_bias: 0 path_string_ids: 1 }
    frames { iid: 1 function_name_id: 1 mapping_id: 1 rel_pc: 16 source_path_iid: 1 line_number: 10 }
    frames { iid: 2 function_name_id: 2 mapping_id: 1 rel_pc: 32 }
    callstacks { iid: 1 frame_ids: 1 frame_ids: 2 }
  }
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 2 name_iid: 2 category_iids: 1 } }
packet { timestamp: 1100 trusted_packet_sequence_id: 1 sequence_flags: 2
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 2 name_iid: 1 category_iids: 1 callstack_iid: 1
    debug_annotations { name_iid: 1 pointer_value: 4660 }
    debug_annotations { name: "spins" uint_value: 3 }
    flow_ids: 7 } }
packet { timestamp: 1100 trusted_packet_sequence_id: 1
  track_event { type: TYPE_COUNTER track_uuid: 4 counter_value: 1 } }
packet { timestamp: 1500 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_END track_uuid: 2 } }
packet { timestamp: 1500 trusted_packet_sequence_id: 1
  track_event { type: TYPE_COUNTER track_uuid: 4 counter_value: -1 } }
packet { timestamp: 1600 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "signal é \"x\"" categories: "io" } }
packet { timestamp: 2000 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_END track_uuid: 2 } }
packet { timestamp: 2000 trusted_packet_sequence_id: 1
  track_event { type: TYPE_COUNTER track_uuid: 5 counter_value: 64 } }
packet { timestamp: 2100 trusted_packet_sequence_id: 1
  track_event { type: TYPE_COUNTER track_uuid: 5 counter_value: 32 } }
packet { timestamp: 1200 trusted_packet_sequence_id: 2 sequence_flags: 3 first_packet_on_sequence: true
  interned_data { event_names { iid: 1 name: "pthread_cond_wait" } }
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 3 name_iid: 1 terminating_flow_ids: 7 } }
packet { timestamp: 1300 trusted_packet_sequence_id: 2 sequence_flags: 2
  track_event { type: TYPE_SLICE_END track_uuid: 3 } }
EOF
cat >"$tmp/good.want" <<'EOF'
packets 17
sequences 2
tracks 5
thread_tracks 2
slices 3
instants 1
counters 4
flows 1
thread 100 main 0
thread 101 worker 1 1
slice_name pthread_cond_wait 1
slice_name pthread_mutex_lock 1
slice_name run 1
slice_name signal é "x" 1
slice_category io 1
slice_category sync 2
track_slices prog 0
track_slices main 2
track_slices worker 1 1
flows_into pthread_cond_wait 1
counter_max locks held 1
counter_max queue 64
EOF
if check_trace "$tmp/good.pftrace" >"$tmp/good.out" 2>"$tmp/good.err"; then
    ok "good trace accepted"
else
    bad "good trace rejected:"; cat "$tmp/good.err"
fi
check "good trace: the summary" diff -u "$tmp/good.want" \
    <(grep -vE '^(bytes|first_ts|last_ts) ' "$tmp/good.out")
first_ts=$(sed -n 's/^first_ts //p' "$tmp/good.out") last_ts=$(sed -n 's/^last_ts //p' "$tmp/good.out")
check "good trace: its first and last event's time ($first_ts, $last_ts)" \
    test -n "$first_ts" -a -n "$last_ts" -a "${first_ts:-1}" -gt 0 -a "${first_ts:-1}" -lt "${last_ts:-0}"
check "good trace: bytes is the file size" \
    grep -qx "bytes $(stat -c %s "$tmp/good.pftrace")" "$tmp/good.out"
check "good trace: --json" python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["slices"] == 3 and s["flows"] == 1, s
assert s["threads"][1] == {"tid": 101, "name": "worker 1", "rank": 1}, s["threads"]
assert s["slice_names"]["signal é \"x\""] == 1, s["slice_names"]
assert s["counter_max"][1] == {"track": "queue", "uuid": 5, "max": 64}, s["counter_max"]
' < <(check_trace --json "$tmp/good.pftrace")

# The good trace as Perfetto's own importer reads it, where the binary is
# at hand (perfetto_tp.sh exits 77 without it): no import errors, and what
# the checker counted (trace processor's slices include instants).
tp_out=$("$(dirname "${BASH_SOURCE[0]}")/perfetto_tp.sh" "$tmp/good.pftrace" \
    slices=4 flows=1 threads=2 thread=main "thread=worker 1" 2>&1)
case $? in
0) ok "good trace: trace processor agrees" ;;
77) echo "skip good trace in trace processor: $tp_out" ;;
*) bad "good trace: trace processor disagrees:"; echo "$tp_out" ;;
esac

# ------------------------------------------------------------------ bad traces
# A base every bad trace starts from: the root, a process with a thread
# track (uuid 2) and a counter track (uuid 3), and interned names on
# sequence 1 (event name 1 "lock", category 1 "sync").
base='
packet { trusted_packet_sequence_id: 1 sequence_flags: 1
  track_descriptor { uuid: 0 thread_ordering: THREAD_ORDERING_EXPLICIT } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 1 process { pid: 100 } } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 2 parent_uuid: 1
  thread { pid: 100 tid: 100 thread_name: "main" } } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 3 parent_uuid: 1 name: "held"
  counter { } } }
packet { trusted_packet_sequence_id: 1 sequence_flags: 2
  interned_data { event_names { iid: 1 name: "lock" } event_categories { iid: 1 name: "sync" } } }
'
# rejects NAME PATTERN TEXT: the base and TEXT, encoded, are rejected with a
# message matching PATTERN (grep -E) that names the trace.
rejects() {
    local name=$1 pattern=$2
    printf '%s\n%s\n' "$base" "$3" | encode "$name"
    expect "rejects: $name" 1 "$name\.pftrace: .*$pattern" -- check_trace "$tmp/$name.pftrace"
}
# accepts NAME TEXT: the base and TEXT make a valid trace.
accepts() {
    printf '%s\n%s\n' "$base" "$2" | encode "$1"
    expect "accepts: $1" 0 "^packets " -- check_trace "$tmp/$1.pftrace"
}

accepts base ''
accepts iid-defined-in-the-same-packet '
packet { timestamp: 10 trusted_packet_sequence_id: 1 sequence_flags: 2
  interned_data { event_names { iid: 2 name: "wait" } }
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 2 } }'
accepts extra-counter-values-and-interned-argument-values '
packet { timestamp: 10 trusted_packet_sequence_id: 1 sequence_flags: 2
  interned_data { debug_annotation_names { iid: 1 name: "frame" }
                  debug_annotation_string_values { iid: 1 str: "f x.c:1" } }
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 1
                debug_annotations { name_iid: 1 string_value_iid: 1 }
                extra_counter_track_uuids: 3 extra_counter_values: 2 } }'
accepts iid-defined-again-alike '
packet { trusted_packet_sequence_id: 1 sequence_flags: 2
  interned_data { event_names { iid: 1 name: "lock" } } }'
accepts time-backwards-across-tracks '
packet { timestamp: 20 trusted_packet_sequence_id: 1
  track_event { type: TYPE_COUNTER track_uuid: 3 counter_value: 1 } }
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" } }'
accepts flow-ending-earlier-in-the-file '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "b" terminating_flow_ids: 5 } }
packet { timestamp: 5 trusted_packet_sequence_id: 1 track_descriptor { uuid: 4 parent_uuid: 1
  thread { pid: 100 tid: 101 } } }
packet { timestamp: 5 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 4 name: "a" flow_ids: 5 } }'

# --- the file and the schema
printf '' >"$tmp/empty.pftrace"
expect "rejects: empty" 1 "empty.pftrace: no packets" -- check_trace "$tmp/empty.pftrace"
# A field the subset schema lacks, deep in a packet: encoded with a schema
# that has it (TrackEvent.double_counter_value = 44, a real Perfetto field).
cat >"$tmp/extra.proto" <<'EOF'
syntax = "proto2";
package perfetto.protos;
message Trace { repeated TracePacket packet = 1; }
message TracePacket { optional uint32 trusted_packet_sequence_id = 10; optional uint64 timestamp = 8;
  optional TrackEvent track_event = 11; }
message TrackEvent { optional uint64 track_uuid = 11; optional double double_counter_value = 44;
  optional InlineCallstack callstack = 55; }
message InlineCallstack { repeated Frame frames = 1; }
message Frame { optional string function_name = 1; }
EOF
printf '%s\n' "$base" | encode unknown-field
printf 'packet { trusted_packet_sequence_id: 1 timestamp: 5 track_event { track_uuid: 3 double_counter_value: 1.5 } }\n' |
    protoc --encode=perfetto.protos.Trace -I "$tmp" extra.proto >>"$tmp/unknown-field.pftrace"
expect "rejects: unknown-field" 1 \
    'unknown-field.pftrace: packet 5 \(byte [0-9]+\): unknown field .track_event\.44: 0x3ff8' -- \
    check_trace "$tmp/unknown-field.pftrace"
# An unknown field that protoc can parse as a message: `55 {`.
printf '%s\n' "$base" | encode unknown-message
printf 'packet { trusted_packet_sequence_id: 1 timestamp: 5 track_event { track_uuid: 2 callstack { frames { function_name: "f" } } } }\n' |
    protoc --encode=perfetto.protos.Trace -I "$tmp" extra.proto >>"$tmp/unknown-message.pftrace"
expect "rejects: unknown-message" 1 \
    'unknown-message.pftrace: packet 5 .*unknown field .track_event\.55 \{. \(and 2 more\)' -- \
    check_trace "$tmp/unknown-message.pftrace"
# A known field with the wrong wire type is printed as a bare number too:
# field 8 (timestamp, a varint) as bytes.
printf '%s\n' "$base" | encode wrong-wire-type
printf '\x0a\x05\x42\x03abc' >>"$tmp/wrong-wire-type.pftrace"
expect "rejects: wrong-wire-type" 1 'wrong-wire-type.pftrace: packet 5 .*unknown field .8: "abc".' -- \
    check_trace "$tmp/wrong-wire-type.pftrace"
# Something other than a packet at the top level (field 2, a varint).
cp "$tmp/good.pftrace" "$tmp/top-level-field.pftrace"
printf '\x10\x01' >>"$tmp/top-level-field.pftrace"
expect "rejects: top-level-field" 1 "byte [0-9]+: field 2 \(wire type 0\) at the top level" -- \
    check_trace "$tmp/top-level-field.pftrace"
head -c -3 "$tmp/good.pftrace" >"$tmp/truncated.pftrace"
expect "rejects: truncated" 1 "packet 16 \(byte [0-9]+\): its length runs past the end" -- \
    check_trace "$tmp/truncated.pftrace"
# Bytes protoc cannot parse inside a packet (a field of wire type 7).
cp "$tmp/good.pftrace" "$tmp/garbage.pftrace"
printf '\x0a\x02\xff\xff' >>"$tmp/garbage.pftrace"
expect "rejects: garbage" 1 "garbage.pftrace: protoc failed" -- check_trace "$tmp/garbage.pftrace"

# --- sequences
rejects undefined-argument-value 'string_value_iid 7 names no debug_annotation_string_values' '
packet { timestamp: 10 trusted_packet_sequence_id: 1 sequence_flags: 2
  interned_data { debug_annotation_names { iid: 1 name: "frame" } }
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 1
                debug_annotations { name_iid: 1 string_value_iid: 7 } } }'
rejects extra-counter-on-a-slice-track 'extra counter value for track 2, which is no counter track' '
packet { timestamp: 10 trusted_packet_sequence_id: 1 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 1
                extra_counter_track_uuids: 2 extra_counter_values: 1 } }'
rejects extra-counter-values-missing '2 extra counter values for 1 extra counter tracks' '
packet { timestamp: 10 trusted_packet_sequence_id: 1 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 1
                extra_counter_track_uuids: 3 extra_counter_values: 1 extra_counter_values: 2 } }'
rejects no-sequence-id 'no trusted_packet_sequence_id' '
packet { timestamp: 10 track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" } }'
rejects sequence-id-0 'trusted_packet_sequence_id 0' '
packet { timestamp: 10 trusted_packet_sequence_id: 0
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" } }'
rejects first-packet-not-cleared 'sequence 2 uses incremental state, but its first packet \(5\)' '
packet { timestamp: 10 trusted_packet_sequence_id: 2
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" } }
packet { timestamp: 11 trusted_packet_sequence_id: 2 sequence_flags: 2
  interned_data { event_names { iid: 1 name: "b" } }
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 1 } }'
rejects needs-state-before-clear 'sequence 2 uses incremental state' '
packet { timestamp: 10 trusted_packet_sequence_id: 2 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" } }
packet { timestamp: 11 trusted_packet_sequence_id: 2 sequence_flags: 3
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" } }'
rejects iids-without-needs-flag 'packet 5 .*uses iids but the packet does not set SEQ_NEEDS_INCREMENTAL_STATE' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 1 } }'
rejects first-packet-flag-later 'first_packet_on_sequence, but sequence 1 began at packet 0' '
packet { trusted_packet_sequence_id: 1 first_packet_on_sequence: true }'

# --- track descriptors
rejects uuid-twice 'track uuid 2 declared twice' '
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 2 name: "again" } }'
rejects root-twice 'track uuid 0 declared twice' '
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 0 } }'
rejects uuid-0-with-name 'uuid 0 carries name' '
packet { trusted_packet_sequence_id: 2 track_descriptor { uuid: 0 name: "nameless" } }'
rejects no-uuid 'track descriptor without a uuid' '
packet { trusted_packet_sequence_id: 2 track_descriptor { thread_ordering: THREAD_ORDERING_EXPLICIT } }'
rejects event-on-uuid-0 'track_event without a track_uuid, or on uuid 0' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 0 name: "a" } }'
rejects event-without-track 'track_event without a track_uuid' '
packet { timestamp: 10 trusted_packet_sequence_id: 1 track_event { type: TYPE_INSTANT name: "a" } }'
rejects parent-undeclared 'track 9: parent_uuid 8 names no track declared before' '
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 9 parent_uuid: 8 name: "x" } }'
rejects thread-without-tid 'track 9: thread descriptor without both pid and tid' '
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 9 thread { pid: 100 } } }'
rejects process-without-pid 'track 9: process descriptor without pid' '
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 9 process { process_name: "p" } } }'

# --- events
rejects undeclared-track 'track_event on track 9, which no earlier track_descriptor declares' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 9 name: "a" } }'
rejects track-declared-late 'packet 5 .*track_event on track 9, which no earlier' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 9 name: "a" } }
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 9 name: "late" } }'
rejects no-timestamp 'track_event in a packet without a timestamp' '
packet { trusted_packet_sequence_id: 1 track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" } }'
rejects no-type 'track_event without a type' '
packet { timestamp: 10 trusted_packet_sequence_id: 1 track_event { track_uuid: 2 name: "a" } }'
rejects type-unspecified 'track_event without a type' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_UNSPECIFIED track_uuid: 3 counter_value: 1 } }'
rejects time-backwards 'packet 6 .*track 2 \(main\): time goes backwards, 10 after 20' '
packet { timestamp: 20 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 2 name: "a" } }
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_END track_uuid: 2 } }'
rejects end-without-begin 'SLICE_END on track 2 \(main\) with no slice open' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 2 name: "a" } }
packet { timestamp: 11 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_END track_uuid: 2 } }
packet { timestamp: 12 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_END track_uuid: 2 } }'
rejects slice-left-open 'track 2 \(main\): 2 slice\(s\) never ended, the innermost \(b\) begun at packet 6' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 2 name: "a" } }
packet { timestamp: 11 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 2 name: "b" } }'
rejects counter-on-thread-track 'COUNTER event on track 2 \(main\), which has no counter descriptor' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_COUNTER track_uuid: 2 counter_value: 1 } }'
rejects counter-without-value 'COUNTER event without a counter_value' '
packet { timestamp: 10 trusted_packet_sequence_id: 1 track_event { type: TYPE_COUNTER track_uuid: 3 } }'
rejects slice-on-counter-track 'TYPE_SLICE_BEGIN event on counter track 3 \(held\)' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 3 name: "a" } }'
rejects instant-on-counter-track 'TYPE_INSTANT event on counter track 3' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 3 name: "a" } }'
rejects unnamed-slice 'TYPE_SLICE_BEGIN event without a name' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_BEGIN track_uuid: 2 } }
packet { timestamp: 11 trusted_packet_sequence_id: 1
  track_event { type: TYPE_SLICE_END track_uuid: 2 } }'

# --- interning
rejects undefined-name-iid 'name_iid 2 names no event_names entry' '
packet { timestamp: 10 trusted_packet_sequence_id: 1 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 2 } }'
rejects undefined-category-iid 'category_iid 2 names no event_categories entry' '
packet { timestamp: 10 trusted_packet_sequence_id: 1 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 1 category_iids: 2 } }'
rejects undefined-annotation-name 'debug annotation name_iid 1 names no debug_annotation_names entry' '
packet { timestamp: 10 trusted_packet_sequence_id: 1 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a"
    debug_annotations { name_iid: 1 int_value: 5 } } }'
rejects undefined-callstack 'callstack_iid 1 names no callstacks entry' '
packet { timestamp: 10 trusted_packet_sequence_id: 1 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" callstack_iid: 1 } }'
rejects undefined-frame 'interned callstacks iid 1: frame_ids 2 names no frames entry' '
packet { trusted_packet_sequence_id: 1 sequence_flags: 2 interned_data {
  function_names { iid: 1 str: "f" } mappings { iid: 1 start: 0 end: 4096 }
  frames { iid: 1 function_name_id: 1 mapping_id: 1 rel_pc: 4 }
  callstacks { iid: 1 frame_ids: 1 frame_ids: 2 } } }'
rejects undefined-mapping 'interned frames iid 1: mapping_id 3 names no mappings entry' '
packet { trusted_packet_sequence_id: 1 sequence_flags: 2 interned_data {
  function_names { iid: 1 str: "f" } frames { iid: 1 function_name_id: 1 mapping_id: 3 rel_pc: 4 } } }'
rejects undefined-function-name 'interned frames iid 1: function_name_id 2 names no function_names entry' '
packet { trusted_packet_sequence_id: 1 sequence_flags: 2 interned_data {
  mappings { iid: 1 start: 0 end: 4096 } frames { iid: 1 function_name_id: 2 mapping_id: 1 } } }'
rejects undefined-source-path 'interned frames iid 1: source_path_iid 1 names no source_paths entry' '
packet { trusted_packet_sequence_id: 1 sequence_flags: 2 interned_data {
  mappings { iid: 1 start: 0 end: 4096 } frames { iid: 1 mapping_id: 1 source_path_iid: 1 } } }'
rejects undefined-build-id 'interned mappings iid 1: build_id 1 names no build_ids entry' '
packet { trusted_packet_sequence_id: 1 sequence_flags: 2 interned_data {
  mappings { iid: 1 build_id: 1 start: 0 end: 4096 } } }'
rejects undefined-mapping-path 'interned mappings iid 1: path_string_ids 4 names no mapping_paths entry' '
packet { trusted_packet_sequence_id: 1 sequence_flags: 2 interned_data {
  mapping_paths { iid: 3 str: "/lib" } mappings { iid: 1 path_string_ids: 3 path_string_ids: 4 } } }'
rejects iid-redefined 'interned event_names iid 1 defined again with other content' '
packet { trusted_packet_sequence_id: 1 sequence_flags: 2
  interned_data { event_names { iid: 1 name: "unlock" } } }'
rejects iid-zero 'interned event_names entry without an iid' '
packet { trusted_packet_sequence_id: 1 sequence_flags: 2
  interned_data { event_names { iid: 0 name: "zero" } } }'
rejects iid-before-clear 'packet 6 .*name_iid 1 names no event_names entry' '
packet { trusted_packet_sequence_id: 1 sequence_flags: 1 }
packet { timestamp: 10 trusted_packet_sequence_id: 1 sequence_flags: 2
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 1 } }'
rejects iid-of-another-sequence 'packet 5 .*name_iid 1 names no event_names entry' '
packet { timestamp: 10 trusted_packet_sequence_id: 2 sequence_flags: 3
  track_event { type: TYPE_INSTANT track_uuid: 2 name_iid: 1 } }'

# --- flows
rejects flow-never-ends 'flow 7 starts at packet 5 and never ends' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" flow_ids: 7 } }'
rejects flow-never-starts 'flow 7 ends at packet 5 but never starts' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" terminating_flow_ids: 7 } }'
rejects flow-backwards 'packet 7 .*flow 7 ends \(packet 7, 10 ns\) before it starts \(packet 6, 20 ns\)' '
packet { trusted_packet_sequence_id: 1 track_descriptor { uuid: 4 parent_uuid: 1
  thread { pid: 100 tid: 101 } } }
packet { timestamp: 20 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" flow_ids: 7 } }
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 4 name: "b" terminating_flow_ids: 7 } }'
rejects flow-two-starts 'packet 7 .*flow 7 starts on a second event' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" flow_ids: 7 } }
packet { timestamp: 11 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "b" terminating_flow_ids: 7 } }
packet { timestamp: 12 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "c" flow_ids: 7 } }'
rejects flow-two-ends 'packet 7 .*flow 7 ends on a second event' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" flow_ids: 7 } }
packet { timestamp: 11 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "b" terminating_flow_ids: 7 } }
packet { timestamp: 12 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "c" terminating_flow_ids: 7 } }'
rejects flow-on-itself 'flow 7 starts and ends on the same event' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_INSTANT track_uuid: 2 name: "a" flow_ids: 7 terminating_flow_ids: 7 } }'
rejects flow-on-counter 'flow ids on a COUNTER event' '
packet { timestamp: 10 trusted_packet_sequence_id: 1
  track_event { type: TYPE_COUNTER track_uuid: 3 counter_value: 1 flow_ids: 7 } }'

# --- many errors: the first ones, then a count
rejects many-errors '\.\.\. and 5 more errors' "$(for i in $(seq 25); do
    echo "packet { timestamp: $i trusted_packet_sequence_id: 1 track_event { type: TYPE_INSTANT track_uuid: 9 name: \"a\" } }"
done)"

finish
