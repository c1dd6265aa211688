#!/usr/bin/env bash
# make.sh - how the golden traces of this directory and their expected
# outputs were made, for the record. The expected files are what the
# analyzer computed BEFORE its streaming rewrite (commit of this file's
# first version): tests/golden.sh holds every later analyzer to them. Do
# not remake them to make a difference go away; a deliberate change of
# output is remade with --expected and said in its commit.
#
# The traces (each a few KB to ~80 KB):
#   waits-sched.bin     prog-waits under `ctrace run -sched 1 -flush-ms 10`:
#                       a wait of every sync kind (mutex, rwlock read and
#                       write, cond and timed cond, semaphore, barrier, spin,
#                       join), the blame profile, and context switches over
#                       several generations (sched: preempted)
#   gateway.bin         examples/gateway traced 0.3 s: tasks, regions and
#                       logs, net waits (poll), syscall waits (write), the
#                       leak finder's helpers blocked in write at the end
#   epoll.bin           tests/prog-epoll (server and load): net waits
#                       (epoll_wait, recv, send, connect)
#   killed.bin          tests/prog-killed killed by SIGINT: no END, the
#                       reader's blocked read known from PENDING records
#   flight.bin          prog-waits' flight-recorder dump (30 ms window, main
#                       in join since the start): WAITING records open its
#                       first generation
#   flight-example.bin  examples/flight's dump by its latency trigger
#   gens.bin            tests/prog-cxx under `ctrace run -flush-ms 1`: many
#                       small generations (C++ code, condvar waits)
#   gateway-cut.bin     gateway.bin cut in the middle of its last frame:
#                       damaged, every command exits 3
#
# usage: tests/golden/make.sh BUILD_DIR              remakes the traces and
#                                                    the expected files
#        tests/golden/make.sh --expected BUILD_DIR   the expected files only
set -euo pipefail
traces=1
[[ ${1:-} == --expected ]] && { traces=0; shift; }
[[ $# -eq 1 ]] || { echo "usage: $0 [--expected] BUILD_DIR" >&2; exit 2; }
build=$(realpath "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ctrace=$build/ctrace

if [[ $traces -eq 1 ]]; then
    cd "$here"
    rm -f ./*.bin ./*.expected
    "$ctrace" run -sched 1 -flush-ms 10 -o waits-sched.bin -- "$build/tests/prog-waits" run 3
    "$build/examples/gateway" -seconds 0.3 -trace gateway.bin
    "$ctrace" run -flush-ms 20 -o epoll.bin -- "$build/tests/prog-epoll" both 2 4 1000
    "$ctrace" run -flush-ms 20 -o killed.bin -- "$build/tests/prog-killed" INT || [[ $? -eq 130 ]]
    "$build/tests/prog-waits" flight flight.bin
    tmp=$(mktemp -d)
    CTRACE_BIN=$ctrace "$build/examples/flight" "$tmp" >/dev/null
    mv "$tmp"/ctrace-*.bin flight-example.bin
    rmdir "$tmp"
    "$ctrace" run -flush-ms 1 -o gens.bin -- "$build/tests/prog-cxx" >/dev/null
    # The last frame begins at the last zstd magic number (28 b5 2f fd).
    size=$(stat -c %s gateway.bin)
    last=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' gateway.bin | tail -1 | cut -d: -f1)
    head -c $((last + (size - last) / 2)) gateway.bin >gateway-cut.bin
    chmod 644 ./*.bin
    for f in *.bin; do
        "$ctrace" stats "$f" >/dev/null 2>&1 || echo "note: ctrace stats $f exits $?"
    done
fi
"$here/../../e2e/golden.sh" --write "$ctrace" "$build/tests/golden-dump" "$here"
