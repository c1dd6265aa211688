#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""layers.py - the include graph keeps the layering of docs/internals.md.

Every `#include "..."` of the sources (format/, tracer/, flightrec/, tp/,
analyze/, examples/) is resolved to the file it names, and two rules hold:

  1. No include goes up a layer. Each room has a rank (ROOMS below); a file
     may include files of its own room and of the rooms its room lists as
     below it, nothing else. So format/ includes nothing of the project,
     tracer/ never includes flightrec/, the analyzer never includes the
     tracer's internals, and the public headers (tracer/include,
     flightrec/include) are open to all.
  2. No include loop: among headers anywhere (a.h includes b.h includes
     a.h), and in the analyzer, whose stages are a pipeline, none between
     modules either (a module is NAME.c with NAME.h: a.c includes b.h and
     b.c includes a.h is a loop). Between rooms rule 1 already forbids one.
     The tracer's rooms still hold module loops inside a room (thread.c
     and intern.c call each other, say); those are not checked.

usage: layers.py ROOT        check the tree at ROOT; exit 0, or 1 with one
                             line per broken rule
       layers.py --self-test ROOT
                             copy the tree, plant an upward include and a
                             loop, and check that each is caught (exit 0
                             when both are, and the clean copy passes)
"""
import os
import re
import shutil
import sys
import tempfile

# room -> the rooms it may include besides itself. A room is a folder
# relative to ROOT; a file belongs to the longest room that is a prefix of
# its folder.
PUBLIC = ["tracer/include", "flightrec/include"]
TRACER_CORE = ["format", *PUBLIC, "tracer/core"]
TRACER_SOURCES = [*TRACER_CORE, "tracer/wrap", "tracer/perf"]
TRACER_COLLECT = [*TRACER_SOURCES, "tracer/collect"]
ANALYZE_ORDER = ["analyze/read", "analyze/symbols", "analyze/model", "analyze/profile",
                 "analyze/report", "analyze/perfetto", "analyze/cli"]
ROOMS = {
    "format": [],
    "tracer/include": ["format"],
    "flightrec/include": ["tracer/include"],
    "tracer/core": TRACER_CORE,
    # The SIGPROF wrappers (interpose_proc.c) hand the signal back from the
    # CPU sampler (perf/cpu.h) when the program takes it: wrap may call perf,
    # never the other way.
    "tracer/wrap": [*TRACER_CORE, "tracer/perf"],
    "tracer/perf": TRACER_CORE,
    "tracer/collect": TRACER_SOURCES,
    "tracer/sinks": TRACER_COLLECT,
    "flightrec": TRACER_COLLECT,
    "tracer": [*TRACER_COLLECT, "tracer/sinks"],
    "tp": ["format", *PUBLIC],
    "examples": [*PUBLIC],
}
for i, room in enumerate(ANALYZE_ORDER):
    ROOMS[room] = ["format", "tp", *PUBLIC, *ANALYZE_ORDER[:i]]

# Where a component's quoted includes are looked up, after the including
# file's own folder (the include directories its CMakeLists.txt gives it).
SEARCH = {
    "tracer": ["tracer", "format", *PUBLIC],
    "flightrec": ["flightrec", "tracer", "format", *PUBLIC],
    "tp": ["tp", "format", *PUBLIC],
    "analyze": ["analyze", "format", "tp", *PUBLIC],
    "examples": ["examples", *PUBLIC],
    "format": ["format", *PUBLIC, "tracer", "analyze"],
}
SOURCE = re.compile(r"\.(c|h|cpp)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A component's folder itself is a room only for the tracer's face.
ROOMLESS_OK = ()
# Where a loop between modules (not only between headers) is refused.
MODULE_LOOPS_CHECKED = ("analyze/", "format/")


def room_of(path):
    """The room of a file (path relative to ROOT), or None."""
    folder = os.path.dirname(path)
    best = None
    for room in ROOMS:
        if (folder == room or folder.startswith(room + "/")) and (best is None or len(room) > len(best)):
            best = room
    return best


def sources(root):
    for top in SEARCH:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("build"))
            for name in sorted(filenames):
                if SOURCE.search(name):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def resolve(root, path, target):
    """The file (relative to ROOT) that `#include "target"` in path names."""
    component = path.split("/", 1)[0]
    for base in [os.path.dirname(path), *SEARCH.get(component, [])]:
        candidate = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def module(path):
    return SOURCE.sub("", path)


def strongly_connected(graph):
    """Tarjan's algorithm, iterative: the groups of more than one node."""
    index, low, on_stack, stack, groups = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def check(root):
    problems = []
    modules, headers = {}, {}
    for path in sources(root):
        room = room_of(path)
        if room is None:
            if path.startswith(("tracer/", "analyze/")) and not path.startswith(ROOMLESS_OK):
                problems.append(f"{path}: in no room of layers.py's ROOMS: put it in one")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for target in INCLUDE.findall(text):
            found = resolve(root, path, target)
            if found is None:
                continue  # a generated or system header, outside the rooms
            to_room = room_of(found)
            if to_room is None:
                continue
            if to_room != room and to_room not in ROOMS[room]:
                problems.append(f"{path}: includes \"{target}\" ({to_room}/), "
                                f"which {room}/ may not include (layers.py, ROOMS)")
            if path.startswith(MODULE_LOOPS_CHECKED):
                if module(found) != module(path):
                    modules.setdefault(module(path), set()).add(module(found))
            elif path.endswith(".h") and found.endswith(".h"):
                headers.setdefault(path, set()).add(found)
    for group in strongly_connected(modules) + strongly_connected(headers):
        problems.append("include loop between " + ", ".join(group))
    return problems


# What the self-test plants, one case at a time in a clean copy: (what it
# is, {file: line appended (the file is made if missing)}, the start or a
# part of the problem that must be reported).
PLANTS = [
    ("core includes collect", {"tracer/core/clock.c": '#include "collect/sink.h"'},
     "tracer/core/clock.c: includes"),
    ("read includes cli", {"analyze/read/gen.c": '#include "cli/cli.h"'},
     "analyze/read/gen.c: includes"),
    ("format includes a public header", {"format/ctrace_format.h": '#include "ctrace/trace.h"'},
     "format/ctrace_format.h: includes"),
    ("a loop of new headers", {"analyze/read/loop_a.h": '#include "read/loop_b.h"',
                               "analyze/read/loop_b.h": '#include "read/loop_a.h"'},
     "analyze/read/loop_a, analyze/read/loop_b"),
    ("a loop of analyzer modules through their .c files",
     {"analyze/read/gen.c": '#include "read/bufpool.h"',
      "analyze/read/bufpool.c": '#include "read/gen.h"'},
     "analyze/read/bufpool, analyze/read/gen"),
    ("a loop of the tracer's headers", {"tracer/core/clock.h": '#include "core/pool.h"',
                                        "tracer/core/pool.h": '#include "core/clock.h"'},
     "tracer/core/clock.h, tracer/core/pool.h"),
]


def self_test(root):
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for top in SEARCH:
            shutil.copytree(os.path.join(root, top), os.path.join(tmp, top),
                            ignore=shutil.ignore_patterns("build*"))
        if check(tmp):
            print("self-test: the clean copy fails:", *check(tmp), sep="\n  ")
            return False
        for what, lines, expect in PLANTS:
            saved = {}
            for path, line in lines.items():
                full = os.path.join(tmp, path)
                saved[full] = open(full, encoding="utf-8").read() if os.path.exists(full) else None
                with open(full, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
            found = [p for p in check(tmp) if expect in p]
            print(f"self-test: {what}: {'caught' if found else 'NOT caught'}")
            ok &= bool(found)
            for full, text in saved.items():
                if text is None:
                    os.unlink(full)
                else:
                    with open(full, "w", encoding="utf-8") as f:
                        f.write(text)
    return ok


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-test":
        return 0 if self_test(argv[2]) else 1
    if len(argv) != 2:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    problems = check(argv[1])
    for p in problems:
        print(p)
    if not problems:
        print(f"layers: {sum(1 for _ in sources(argv[1]))} files, every include within its layer, no loop")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
