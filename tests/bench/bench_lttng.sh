#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_lttng.sh - the LTTng path against the native one, in one run:
#   1. the cost of one event to the thread that writes it (bench_lttng: the
#      native buffer, the `ctrace` tracepoint, both), with an LTTng session
#      recording ctrace:* into sub-buffers big enough to discard nothing;
#   2. the analyzer's speed (ctrace stats -j 1, events/s) on the native trace
#      and on the CTF trace of the same run (the gateway example, traced into
#      a file and LTTng at once), interleaved runs, median.
# Prints tables; never passes or fails on timing. Starts lttng-sessiond if
# none answers (tests/tools/lttng_daemon.sh), and stops it.
# usage: tests/bench/bench_lttng.sh [BUILD_DIR (default build)] [ROUNDS (default 7)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${2:-7}
source "$root/tests/tools/lttng_daemon.sh"
tmp=$(mktemp -d)
session=ctrace-bench-$$
trap 'lttng destroy "$session" >/dev/null 2>&1 || true; lttng_daemon_stop; rm -rf "$tmp"' EXIT
lttng_daemon_start

session_start() { lttng_session_start "$session" --output="$1" 16M 8 0; }
session_end() {
    echo "LTTng discarded events: $(lttng_session_stop "$session")"
    lttng destroy "$session" >/dev/null
}

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, $(uname -r)"
session_start "$tmp/hot"
"$build/tests/bench_lttng" 1000000 "$rounds"
session_end

session_start "$tmp/gw"
"$build/ctrace" run -lttng -sched -o "$tmp/gw.bin" -- "$build/examples/gateway" -seconds 3 >/dev/null
session_end
events=$("$build/ctrace" stats "$tmp/gw.bin" | sed -nE 's/^events: +([0-9]+).*/\1/p')
declare -a tn tc
for r in $(seq "$rounds"); do
    for which in native ctf; do
        src=$tmp/gw.bin
        [[ $which == ctf ]] && src=$tmp/gw
        t0=$(date +%s.%N)
        "$build/ctrace" stats -j 1 "$src" >/dev/null
        t1=$(date +%s.%N)
        d=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
        if [[ $which == native ]]; then tn+=("$d"); else tc+=("$d"); fi
    done
done
# shellcheck source=tests/bench/stats.sh
source "$root/tests/bench/stats.sh"
mn=$(printf '%s\n' "${tn[@]}" | median) mc=$(printf '%s\n' "${tc[@]}" | median)
echo
echo "The analyzer on the same $events events (gateway -seconds 3, with context switches;"
echo "ctrace stats -j 1, $rounds interleaved runs, median)"
printf '  %-30s %10s %14s\n' "trace" "seconds" "events/s"
printf '  %-30s %10.3f %14.0f\n' "native ($(du -k "$tmp/gw.bin" | cut -f1) KiB)" "$mn" "$(awk -v e="$events" -v t="$mn" 'BEGIN { print e / t }')"
printf '  %-30s %10.3f %14.0f\n' "CTF ($(du -sk "$tmp/gw" | cut -f1) KiB)" "$mc" "$(awk -v e="$events" -v t="$mc" 'BEGIN { print e / t }')"
