#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/demo.sh - ctrace end to end on the cache example: installs what is
# missing (Debian 12, tests/tools/deps.sh), builds, traces `cache`, prints the trace's
# summary and the sync (lock contention) profile, which points at the
# pthread_mutex_lock() line in cache_get_slow() that holds the lock across a
# slow fetch.
#
# Usage: examples/demo.sh [--no-install]
# Works from any directory; leaves its files in /tmp/ctrace-demo.
set -euo pipefail

install=1
for arg in "$@"; do
    case $arg in
    --no-install) install=0 ;;
    -h | --help) echo "usage: examples/demo.sh [--no-install]"; exit 0 ;;
    *) echo "examples/demo.sh: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=tests/tools/deps.sh
source tests/tools/deps.sh

out=/tmp/ctrace-demo

# show CMD...: prints the command, then runs it.
show() {
    echo
    echo "\$ $*"
    "$@"
}

if [[ $install -eq 1 ]]; then
    ctrace_install_deps
fi

echo "== build =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 >/dev/null

mkdir -p "$out"
echo
echo "== trace the cache example (64 threads, one mutex held across a 500 us fetch) =="
show build/examples/cache trace "$out/trace.bin"
show build/ctrace stats "$out/trace.bin"

echo
echo "== the sync profile: where threads waited for a contended mutex =="
show build/ctrace -pprof=sync -o "$out/sync.pb.gz" "$out/trace.bin"
show go tool pprof -top -nodecount=12 "$out/sync.pb.gz"

# Captured first, then cut: a `| head` would kill pprof with SIGPIPE.
echo
echo "\$ go tool pprof -list cache_get_slow $out/sync.pb.gz | head -20"
listing=$(go tool pprof -list cache_get_slow "$out/sync.pb.gz")
head -20 <<<"$listing"

echo
echo "To browse it (flame graph, source, graph):"
echo "  go tool pprof -http=:8080 $out/sync.pb.gz"
