#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""perfetto_check.py - validates a Perfetto trace (`ctrace -perfetto`) the way
Perfetto's importer would need it, and prints what the trace holds.

usage: perfetto_check.py [--proto-dir DIR] [--json] TRACE.pftrace

The trace is decoded by protoc with the project's subset schema (DIR,
default tests/data/proto beside this script's folder, file perfetto.proto):
    protoc --decode=perfetto.protos.Trace -I DIR perfetto.proto < TRACE
The file is cut into runs of whole packets that protoc decodes one at a
time, and protoc's text output is read line by line: a trace of millions of
packets is never held decoded in memory.

A valid trace keeps these rules (each broken one is an error naming the
file, the packet's index and byte offset, and what is wrong):
  - protoc decodes it; no field is unknown to the schema (protoc prints one
    as a bare number, `47: 7` or `47 {`, at any depth); the file holds
    nothing but Trace.packet fields.
  - Sequences: every packet has a non-zero trusted_packet_sequence_id; a
    sequence that uses incremental state (interned data, iids, or flag
    SEQ_NEEDS_INCREMENTAL_STATE) begins with a packet that sets
    SEQ_INCREMENTAL_STATE_CLEARED; a packet that uses iids sets
    SEQ_NEEDS_INCREMENTAL_STATE; first_packet_on_sequence only on the first.
  - Tracks: every descriptor has a uuid, unique; uuid 0 only on the root
    descriptor, which carries ordering hints alone; parent_uuid names a track
    declared earlier; thread descriptors have pid and tid, process ones pid.
  - Events: each has a timestamp (in its packet), a type, and a track_uuid
    that an earlier descriptor declared (not 0); per track, timestamps never
    go backwards in file order, SLICE_END closes the innermost open
    SLICE_BEGIN, no slice is left open at the end; COUNTER events (with a
    counter_value) only on counter tracks, slices and instants never there;
    slices and instants have a name.
  - Interning: every iid used (event names, categories, annotation names,
    callstacks, a callstack's frames, a frame's function name, mapping and
    source path, a mapping's build id and path) is defined by this or an
    earlier packet of the same sequence since its last
    SEQ_INCREMENTAL_STATE_CLEARED; an iid is never defined twice with
    different content, nor as 0.
  - Flows: each flow id starts on exactly one event (flow_ids) and ends on
    exactly one other (terminating_flow_ids), no later in time than its end;
    flows only on slices and instants; extra counter values only for
    counter tracks declared before, one value each, time never going back.

On success it prints one fact a line (exit 0); a NAME may hold spaces (never
a line break: control characters and backslashes are C-escaped), and the
number is always the last field:
  packets N          sequences N        tracks N (uuid != 0)
  thread_tracks N    slices N (complete BEGIN/END pairs)
  instants N         counters N (COUNTER events)
  flows N (complete) bytes N (file size)
  first_ts N         last_ts N (the earliest and latest event's timestamp)
  thread TID NAME RANK        per thread descriptor, in file order; RANK is
                              sibling_order_rank, "-" when absent
  slice_name NAME COUNT       BEGIN and INSTANT events by name (interned
                              names resolved), sorted by name
  slice_category CAT COUNT    the same events by category, sorted
  track_slices TRACK COUNT    complete slices per non-counter track, in
                              declaration order
  flows_into NAME COUNT       flows by the name of the slice they end on
  counter_max TRACK MAX       per counter track with events, the largest
                              value (the running sum for incremental ones)
--json prints the same as one JSON object. On errors it prints them to
stderr (the first MAX_ERRORS, then how many more) and exits 1; 2 on a usage
error or when protoc is missing.
"""

import argparse
import io
import json
import mmap
import os
import re
import shutil
import subprocess
import sys
import tempfile

MAX_ERRORS = 20
CHUNK_BYTES = 4 << 20  # packets handed to one protoc run

# TracePacket.sequence_flags bits.
SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2

# Fields the root track descriptor (uuid 0) may carry.
ROOT_FIELDS = frozenset(('uuid', 'thread_ordering', 'child_ordering'))

# InternedData fields, and for each the fields of its entries that name
# entries of another kind (field -> InternedData field).
INTERNED_REFS = {
    'event_categories': {},
    'event_names': {},
    'debug_annotation_names': {},
    'debug_annotation_string_values': {},
    'build_ids': {},
    'mapping_paths': {},
    'source_paths': {},
    'function_names': {},
    'mappings': {'build_id': 'build_ids', 'path_string_ids': 'mapping_paths'},
    'frames': {'function_name_id': 'function_names', 'mapping_id': 'mappings',
               'source_path_iid': 'source_paths'},
    'callstacks': {'frame_ids': 'frames'},
}

C_ESCAPE = re.compile(r'\\([0-7]{1,3}|x[0-9a-fA-F]{1,2}|.)')
SIMPLE_ESCAPES = {'n': b'\n', 'r': b'\r', 't': b'\t', 'a': b'\a', 'b': b'\b',
                  'f': b'\f', 'v': b'\v'}
CONTROL = re.compile(r'[\x00-\x1f\x7f\\]')


class FatalError(Exception):
    """A fault after which the rest of the file cannot be read."""


# ------------------------------------------------------------------ values

def unquote(raw):
    """The text of a string protoc printed: quoted, with C escapes."""
    body = raw[1:-1]
    if '\\' not in body:
        return body
    out = bytearray()
    pos = 0
    for m in C_ESCAPE.finditer(body):
        out += body[pos:m.start()].encode('utf-8', 'surrogateescape')
        esc = m.group(1)
        if esc[0] in '01234567':
            out.append(int(esc, 8) & 0xff)
        elif esc[0] == 'x' and len(esc) > 1:
            out.append(int(esc[1:], 16))
        else:
            out += SIMPLE_ESCAPES.get(esc, esc.encode('utf-8', 'surrogateescape'))
        pos = m.end()
    out += body[pos:].encode('utf-8', 'surrogateescape')
    return out.decode('utf-8', 'replace')


def one_line(text):
    """text with control characters and backslashes C-escaped."""
    return CONTROL.sub(lambda m: {'\n': '\\n', '\t': '\\t', '\\': '\\\\'}.get(
        m.group(0), '\\x%02x' % ord(m.group(0))), text)


def first(msg, field, default=None):
    """The first value of a field of a decoded message, or default."""
    values = msg.get(field)
    return values[0] if values else default


def first_int(msg, field, default=None):
    values = msg.get(field)
    return int(values[0]) if values else default


# ------------------------------------------------------------------ framing

def read_varint(data, pos, end):
    """(value, next position) of the varint at pos, or None if cut short."""
    value = shift = 0
    while pos < end:
        b = data[pos]
        pos += 1
        value |= (b & 0x7f) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            return None
    return None


def packet_runs(data, chunk_bytes):
    """Yields (index of the first packet, byte offsets of the packets, bytes)
    for runs of whole Trace.packet fields; raises FatalError where the file
    is not a sequence of them."""
    end = len(data)
    pos = start = index = 0
    offsets = []
    while pos < end:
        tag = read_varint(data, pos, end)
        if tag is None:
            raise FatalError('byte %d: a field tag cut short by the end of the file' % pos)
        if tag[0] != (1 << 3 | 2):
            raise FatalError(
                'byte %d: field %d (wire type %d) at the top level: a Trace holds '
                'only packets (field 1, length-delimited)' % (pos, tag[0] >> 3, tag[0] & 7))
        length = read_varint(data, tag[1], end)
        if length is None or length[1] + length[0] > end:
            raise FatalError('packet %d (byte %d): its length runs past the end of the file'
                             % (index + len(offsets), pos))
        offsets.append(pos)
        pos = length[1] + length[0]
        if pos - start >= chunk_bytes:
            yield index, offsets, data[start:pos]
            index += len(offsets)
            offsets = []
            start = pos
    if offsets:
        yield index, offsets, data[start:pos]


# ------------------------------------------------------------------ decoding

def parse_packets(lines):
    """Yields (packet, unknown) for each top-level `packet { ... }` of
    protoc's text output: packet maps each field name to the list of its
    values (raw text for scalars, dicts for messages); unknown lists the
    paths of fields printed as bare numbers."""
    stack = []          # enclosing messages of cur
    names = []          # field names from the packet down to cur
    cur = None
    unknown = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if line == '}':
            names.pop()
            if stack:
                cur = stack.pop()
            else:
                yield cur, unknown
                cur = None
                unknown = []
            continue
        if line[-1] == '{':               # "name {": strings end in '"'
            name = line[:-2]
            child = {}
            if cur is None:
                if name != 'packet':
                    unknown.append('Trace.' + name)
            else:
                values = cur.get(name)
                if values is None:
                    cur[name] = [child]
                else:
                    values.append(child)
                stack.append(cur)
            names.append(name)
            if name[0].isdigit():
                unknown.append('.'.join(names[1:]) + ' {')
            cur = child
            continue
        name, _, value = line.partition(': ')
        if cur is None:
            unknown.append('Trace.' + line)
            continue
        if name[0].isdigit():
            unknown.append('.'.join(names[1:] + [line]))
        values = cur.get(name)
        if values is None:
            cur[name] = [value]
        else:
            values.append(value)


def decode_run(protoc, proto_dir, run):
    """Runs protoc on bytes holding whole packets; yields what parse_packets
    yields, then raises FatalError if protoc failed."""
    with tempfile.TemporaryFile() as src, tempfile.TemporaryFile() as err:
        src.write(run)
        src.seek(0)
        proc = subprocess.Popen(
            [protoc, '--decode=perfetto.protos.Trace', '-I', proto_dir, 'perfetto.proto'],
            stdin=src, stdout=subprocess.PIPE, stderr=err)
        text = io.TextIOWrapper(proc.stdout, encoding='utf-8', errors='surrogateescape')
        try:
            yield from parse_packets(text)
        finally:
            text.close()
            status = proc.wait()
        if status != 0:
            err.seek(0)
            why = err.read().decode('utf-8', 'replace').strip().replace('\n', '; ')
            raise FatalError('protoc failed (exit %d): %s' % (status, why or 'no message'))


# ------------------------------------------------------------------ checking

class Sequence:
    """A packet sequence's incremental state."""
    __slots__ = ('first_index', 'first_cleared', 'reported', 'interned')

    def __init__(self, index, cleared):
        self.first_index = index
        self.first_cleared = cleared
        self.reported = False       # its missing clear has been said
        self.interned = {kind: {} for kind in INTERNED_REFS}


class Track:
    """A declared track and what its events did so far."""
    __slots__ = ('uuid', 'name', 'counter', 'incremental', 'stack', 'last_ts',
                 'slices', 'counter_events', 'counter_max', 'counter_sum')

    def __init__(self, uuid, name, counter, incremental):
        self.uuid = uuid
        self.name = name
        self.counter = counter
        self.incremental = incremental
        self.stack = []             # open slices: (name, packet index)
        self.last_ts = None
        self.slices = 0
        self.counter_events = 0
        self.counter_max = None
        self.counter_sum = 0

    def __str__(self):
        return '%d (%s)' % (self.uuid, one_line(self.name))


def track_name(desc, uuid):
    for field in ('name', 'static_name'):
        if field in desc:
            return unquote(first(desc, field))
    for sub, field in (('thread', 'thread_name'), ('process', 'process_name')):
        if sub in desc and field in first(desc, sub):
            return unquote(first(first(desc, sub), field))
    return '#%d' % uuid


def canonical(entry):
    """Comparable form of an interned entry (a flat message)."""
    return sorted((k, tuple(v)) for k, v in entry.items())


class Checker:
    """Takes the packets in file order, collects errors and the summary."""

    def __init__(self, path):
        self.path = path
        self.errors = []
        self.error_count = 0
        self.packets = 0
        self.sequences = {}
        self.tracks = {}            # uuid -> Track, declaration order
        self.root_declared = False
        self.threads = []           # (tid, name, rank)
        self.thread_tracks = 0
        self.slices = self.instants = self.counters = 0
        self.slice_names = {}
        self.slice_categories = {}
        self.flow_starts = {}       # id -> (index, ts) of a flow not yet ended
        self.flow_ends = {}         # id -> (index, ts, name) of one not yet begun
        self.flows_done = set()     # ids of flows with both ends
        self.flows = 0
        self.first_ts = self.last_ts = None   # over every event
        self.flows_into = {}

    def error(self, index, offset, what):
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS:
            where = '' if index is None else 'packet %d (byte %d): ' % (index, offset)
            self.errors.append('%s: %s%s' % (self.path, where, what))

    # ---------------------------------------------------------------- packets

    def packet(self, index, offset, pkt, unknown):
        self.packets += 1
        if unknown:
            more = ' (and %d more)' % (len(unknown) - 1) if len(unknown) > 1 else ''
            self.error(index, offset, 'unknown field `%s`%s: a field the schema lacks '
                       '(add it to tests/data/proto/perfetto.proto with Perfetto\'s number) '
                       'or a wrong wire type' % (unknown[0][:80], more))
        err = lambda what: self.error(index, offset, what)
        sid = first_int(pkt, 'trusted_packet_sequence_id')
        if sid is None:
            err('no trusted_packet_sequence_id')
        elif sid == 0:
            err('trusted_packet_sequence_id 0 (sequences are numbered from 1)')
        flags = first_int(pkt, 'sequence_flags', 0)
        seq = self.sequences.get(sid)
        if seq is None:
            seq = Sequence(index, bool(flags & SEQ_INCREMENTAL_STATE_CLEARED))
            self.sequences[sid] = seq
        elif first(pkt, 'first_packet_on_sequence') == 'true':
            err('first_packet_on_sequence, but sequence %s began at packet %d'
                % (sid, seq.first_index))
        if flags & SEQ_INCREMENTAL_STATE_CLEARED:
            seq.interned = {kind: {} for kind in INTERNED_REFS}

        event = first(pkt, 'track_event')
        uses_iids = event is not None and event_uses_iids(event)
        interned = first(pkt, 'interned_data')
        if (uses_iids or interned is not None or flags & SEQ_NEEDS_INCREMENTAL_STATE) \
                and not seq.first_cleared and not seq.reported:
            seq.reported = True
            err('sequence %s uses incremental state, but its first packet (%d) does not '
                'set SEQ_INCREMENTAL_STATE_CLEARED (sequence_flags 1)'
                % (sid, seq.first_index))
        if uses_iids and not flags & SEQ_NEEDS_INCREMENTAL_STATE:
            err('the event uses iids but the packet does not set '
                'SEQ_NEEDS_INCREMENTAL_STATE (sequence_flags 2)')
        if interned is not None:
            self.intern(seq, interned, err)

        desc = first(pkt, 'track_descriptor')
        if desc is not None:
            self.descriptor(desc, err)
        if event is not None:
            self.event(index, first_int(pkt, 'timestamp'), event, seq, uses_iids, err)

    def intern(self, seq, data, err):
        """Adds a packet's interned entries, then checks what they name."""
        added = []
        for kind, entries in data.items():
            table = seq.interned.get(kind)
            if table is None:
                continue            # an unknown field: already reported
            for entry in entries:
                iid = first_int(entry, 'iid', 0)
                if iid == 0:
                    err('interned %s entry without an iid (iids start at 1)' % kind)
                    continue
                old = table.get(iid)
                if old is None:
                    table[iid] = entry
                    added.append((kind, iid, entry))
                elif canonical(old) != canonical(entry):
                    err('interned %s iid %d defined again with other content' % (kind, iid))
        for kind, iid, entry in added:
            for field, target in INTERNED_REFS[kind].items():
                for ref in entry.get(field, ()):
                    if int(ref) not in seq.interned[target]:
                        err('interned %s iid %d: %s %s names no %s entry of this sequence'
                            % (kind, iid, field, ref, target))

    def descriptor(self, desc, err):
        if 'uuid' not in desc:
            err('track descriptor without a uuid (trace processor drops it; '
                'the root has uuid 0 written out)')
            return
        uuid = first_int(desc, 'uuid')
        if uuid == 0:
            extra = sorted(set(desc) - ROOT_FIELDS)
            if extra:
                err('track descriptor with uuid 0 carries %s: only the root '
                    'descriptor may have uuid 0, with ordering fields alone' % ', '.join(extra))
            elif self.root_declared:
                err('track uuid 0 declared twice')
            self.root_declared = True
            return
        if uuid in self.tracks:
            err('track uuid %d declared twice' % uuid)
            return
        parent = first_int(desc, 'parent_uuid')
        if parent is not None and parent not in self.tracks:
            err('track %d: parent_uuid %d names no track declared before' % (uuid, parent))
        thread = first(desc, 'thread')
        if thread is not None:
            self.thread_tracks += 1
            if 'pid' not in thread or 'tid' not in thread:
                err('track %d: thread descriptor without both pid and tid' % uuid)
            name = first(thread, 'thread_name')
            self.threads.append((first(thread, 'tid', '?'),
                                 unquote(name) if name is not None else '',
                                 first(desc, 'sibling_order_rank', '-')))
        process = first(desc, 'process')
        if process is not None and 'pid' not in process:
            err('track %d: process descriptor without pid' % uuid)
        counter = first(desc, 'counter')
        self.tracks[uuid] = Track(uuid, track_name(desc, uuid), counter is not None,
                                  counter is not None and
                                  first(counter, 'is_incremental') == 'true')

    def event(self, index, ts, event, seq, uses_iids, err):
        kind = first(event, 'type')
        if kind == 'TYPE_UNSPECIFIED':
            kind = None
        if kind is None:
            err('track_event without a type')
        if ts is None:
            err('track_event in a packet without a timestamp')
        uuid = first_int(event, 'track_uuid', 0)
        track = self.tracks.get(uuid)
        if track is None:
            if uuid == 0:
                err('track_event without a track_uuid, or on uuid 0 (the root, no track)')
            else:
                err('track_event on track %d, which no earlier track_descriptor declares' % uuid)
        if uses_iids:
            self.check_event_iids(event, seq, err)
        name = self.event_name(event, seq)
        if track is None or kind is None or ts is None:
            return

        if track.last_ts is not None and ts < track.last_ts:
            err('track %s: time goes backwards, %d after %d' % (track, ts, track.last_ts))
        track.last_ts = ts
        self.first_ts = ts if self.first_ts is None else min(self.first_ts, ts)
        self.last_ts = ts if self.last_ts is None else max(self.last_ts, ts)
        self.extra_counters(ts, event, err)
        if kind == 'TYPE_COUNTER':
            if not track.counter:
                err('COUNTER event on track %s, which has no counter descriptor' % track)
            elif 'counter_value' not in event:
                err('COUNTER event without a counter_value')
            else:
                self.counter(track, int(first(event, 'counter_value')))
        elif track.counter:
            err('%s event on counter track %s' % (kind, track))
            return
        elif kind == 'TYPE_SLICE_BEGIN' or kind == 'TYPE_INSTANT':
            if name is None:
                err('%s event without a name (name or name_iid)' % kind)
            self.count_named(event, name, seq)
            if kind == 'TYPE_SLICE_BEGIN':
                track.stack.append((name, index))
            else:
                self.instants += 1
        elif kind == 'TYPE_SLICE_END':
            if not track.stack:
                err('SLICE_END on track %s with no slice open' % track)
            else:
                name = track.stack.pop()[0]
                track.slices += 1
                self.slices += 1
        self.event_flows(index, ts, event, kind, name, err)

    def check_event_iids(self, event, seq, err):
        def need(kind, iid, what):
            if int(iid) not in seq.interned[kind]:
                err('%s %s names no %s entry of this sequence' % (what, iid, kind))
        for iid in event.get('name_iid', ()):
            need('event_names', iid, 'name_iid')
        for iid in event.get('category_iids', ()):
            need('event_categories', iid, 'category_iid')
        for iid in event.get('callstack_iid', ()):
            need('callstacks', iid, 'callstack_iid')
        for note in event.get('debug_annotations', ()):
            for iid in note.get('name_iid', ()):
                need('debug_annotation_names', iid, 'debug annotation name_iid')
            for iid in note.get('string_value_iid', ()):
                need('debug_annotation_string_values', iid, 'debug annotation string_value_iid')

    def event_name(self, event, seq):
        """The event's name as protoc printed it (quoted), or None."""
        if 'name' in event:
            return first(event, 'name')
        iid = first_int(event, 'name_iid')
        entry = seq.interned['event_names'].get(iid) if iid is not None else None
        return first(entry, 'name') if entry is not None else None

    def count_named(self, event, name, seq):
        if name is not None:
            self.slice_names[name] = self.slice_names.get(name, 0) + 1
        cats = list(event.get('categories', ()))
        for iid in event.get('category_iids', ()):
            entry = seq.interned['event_categories'].get(int(iid))
            if entry is not None and 'name' in entry:
                cats.append(first(entry, 'name'))
        for cat in cats:
            self.slice_categories[cat] = self.slice_categories.get(cat, 0) + 1

    def extra_counters(self, ts, event, err):
        """Counter values an event carries for other tracks (extra_counter_*)."""
        uuids = [int(u) for u in event.get('extra_counter_track_uuids', ())]
        values = [int(v) for v in event.get('extra_counter_values', ())]
        if len(uuids) != len(values):
            err('%d extra counter values for %d extra counter tracks' % (len(values), len(uuids)))
            return
        for uuid, value in zip(uuids, values):
            track = self.tracks.get(uuid)
            if track is None or not track.counter:
                err('extra counter value for track %d, which is no counter track declared before'
                    % uuid)
                continue
            if track.last_ts is not None and ts < track.last_ts:
                err('track %s: time goes backwards, %d after %d' % (track, ts, track.last_ts))
            track.last_ts = ts
            self.counter(track, value)

    def counter(self, track, value):
        self.counters += 1
        track.counter_events += 1
        if track.incremental:
            track.counter_sum += value
            value = track.counter_sum
        if track.counter_max is None or value > track.counter_max:
            track.counter_max = value

    def event_flows(self, index, ts, event, kind, name, err):
        if 'flow_ids' not in event and 'terminating_flow_ids' not in event:
            return
        starts = [int(fid) for fid in event.get('flow_ids', ())]
        ends = [int(fid) for fid in event.get('terminating_flow_ids', ())]
        if (starts or ends) and kind == 'TYPE_COUNTER':
            err('flow ids on a COUNTER event')
            return
        for fid in starts:
            if fid in self.flow_starts or fid in self.flows_done:
                err('flow %d starts on a second event' % fid)
                continue
            end = self.flow_ends.pop(fid, None)
            if end is None:
                self.flow_starts[fid] = (index, ts)
            else:
                self.flow_done(fid, (index, ts), end, err)
        for fid in ends:
            if fid in starts:
                err('flow %d starts and ends on the same event' % fid)
            elif fid in self.flow_ends or fid in self.flows_done:
                err('flow %d ends on a second event' % fid)
            else:
                start = self.flow_starts.pop(fid, None)
                if start is None:
                    self.flow_ends[fid] = (index, ts, name)
                else:
                    self.flow_done(fid, start, (index, ts, name), err)

    def flow_done(self, fid, start, end, err):
        if start[1] > end[1]:
            err('flow %d ends (packet %d, %d ns) before it starts (packet %d, %d ns)'
                % (fid, end[0], end[1], start[0], start[1]))
        self.flows += 1
        self.flows_done.add(fid)
        if end[2] is not None:
            self.flows_into[end[2]] = self.flows_into.get(end[2], 0) + 1

    # ---------------------------------------------------------------- the end

    def finish(self):
        if self.packets == 0:
            self.error(None, 0, 'no packets')
        for track in self.tracks.values():
            if track.stack:
                name, index = track.stack[-1]
                self.error(None, 0, 'track %s: %d slice(s) never ended, the innermost (%s) '
                           'begun at packet %d' % (track, len(track.stack),
                                                   one_line(unquote(name or '""')), index))
        for fid, start in self.flow_starts.items():
            self.error(None, 0, 'flow %d starts at packet %d and never ends' % (fid, start[0]))
        for fid, end in self.flow_ends.items():
            self.error(None, 0, 'flow %d ends at packet %d but never starts' % (fid, end[0]))

    def summary(self, size):
        named = lambda counts: sorted((unquote(k), v) for k, v in counts.items())
        return {
            'packets': self.packets,
            'sequences': len(self.sequences),
            'tracks': len(self.tracks),
            'thread_tracks': self.thread_tracks,
            'slices': self.slices,
            'instants': self.instants,
            'counters': self.counters,
            'flows': self.flows,
            'bytes': size,
            'first_ts': self.first_ts or 0,
            'last_ts': self.last_ts or 0,
            'threads': [{'tid': int(tid) if tid != '?' else None, 'name': name,
                         'rank': int(rank) if rank != '-' else None}
                        for tid, name, rank in self.threads],
            'slice_names': dict(named(self.slice_names)),
            'slice_categories': dict(named(self.slice_categories)),
            'track_slices': [{'track': t.name, 'uuid': t.uuid, 'slices': t.slices}
                             for t in self.tracks.values() if not t.counter],
            'flows_into': dict(named(self.flows_into)),
            'counter_max': [{'track': t.name, 'uuid': t.uuid, 'max': t.counter_max}
                            for t in self.tracks.values() if t.counter_events],
        }


def event_uses_iids(event):
    if 'name_iid' in event or 'category_iids' in event or 'callstack_iid' in event:
        return True
    return any('name_iid' in note for note in event.get('debug_annotations', ()))


# ------------------------------------------------------------------ output

def print_summary(s, out):
    for key in ('packets', 'sequences', 'tracks', 'thread_tracks', 'slices', 'instants',
                'counters', 'flows', 'bytes', 'first_ts', 'last_ts'):
        print(key, s[key], file=out)
    for t in s['threads']:
        print('thread', '?' if t['tid'] is None else t['tid'], one_line(t['name']),
              '-' if t['rank'] is None else t['rank'], file=out)
    for key, label in (('slice_names', 'slice_name'), ('slice_categories', 'slice_category')):
        for name, count in s[key].items():
            print(label, one_line(name), count, file=out)
    for t in s['track_slices']:
        print('track_slices', one_line(t['track']), t['slices'], file=out)
    for name, count in s['flows_into'].items():
        print('flows_into', one_line(name), count, file=out)
    for t in s['counter_max']:
        print('counter_max', one_line(t['track']), t['max'], file=out)


def check_file(path, proto_dir, protoc):
    """(checker, file size); FatalError faults are in checker.errors."""
    checker = Checker(path)
    with open(path, 'rb') as f:
        size = os.fstat(f.fileno()).st_size
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b''
        try:
            for base, offsets, run in packet_runs(data, CHUNK_BYTES):
                n = 0
                for pkt, unknown in decode_run(protoc, proto_dir, run):
                    if n < len(offsets):
                        checker.packet(base + n, offsets[n], pkt, unknown)
                    n += 1
                if n != len(offsets):
                    raise FatalError('protoc printed %d packets for the %d of packets %d..%d'
                                     % (n, len(offsets), base, base + len(offsets) - 1))
        except FatalError as e:
            checker.error(None, 0, str(e))
            return checker, size
        finally:
            if size:
                data.close()
    checker.finish()
    return checker, size


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(
        description='Validate a Perfetto trace written by ctrace and summarize it.')
    ap.add_argument('--proto-dir', default=os.path.join(here, '..', 'data', 'proto'),
                    help='folder holding perfetto.proto (default: %(default)s)')
    ap.add_argument('--json', action='store_true', help='print the summary as JSON')
    ap.add_argument('trace')
    args = ap.parse_args(argv)

    protoc = os.environ.get('PROTOC') or shutil.which('protoc')
    if not protoc:
        print('perfetto_check: protoc not found (Debian: protobuf-compiler)', file=sys.stderr)
        return 2
    if not os.path.isfile(os.path.join(args.proto_dir, 'perfetto.proto')):
        print('perfetto_check: no perfetto.proto in %s' % args.proto_dir, file=sys.stderr)
        return 2
    try:
        checker, size = check_file(args.trace, args.proto_dir, protoc)
    except OSError as e:
        print('perfetto_check: %s' % e, file=sys.stderr)
        return 1
    if checker.error_count:
        for line in checker.errors:
            print(line, file=sys.stderr)
        if checker.error_count > len(checker.errors):
            print('%s: ... and %d more errors' % (args.trace,
                                                  checker.error_count - len(checker.errors)),
                  file=sys.stderr)
        print('perfetto_check: %s: INVALID (%d errors)' % (args.trace, checker.error_count),
              file=sys.stderr)
        return 1
    summary = checker.summary(size)
    try:
        if args.json:
            json.dump(summary, sys.stdout, indent=1, ensure_ascii=False)
            print()
        else:
            print_summary(summary, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader stopped early (grep -q): the trace was valid all the same.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
