#!/usr/bin/env bash
# bench_lttng.sh - the LTTng path against the native one, in one run:
#   1. the cost of one event to the thread that writes it (bench_lttng: the
#      native buffer, the `ctrace` tracepoint, both), with an LTTng session
#      recording ctrace:* into sub-buffers big enough to discard nothing;
#   2. the analyzer's speed (ctrace stats -j 1, events/s) on the native trace
#      and on the CTF trace of the same run (the gateway example, traced into
#      a file and LTTng at once), interleaved runs, median.
# Prints tables; never passes or fails on timing. Starts lttng-sessiond if
# none answers (tests/lttng_daemon.sh), and stops it.
# usage: tests/bench/bench_lttng.sh [BUILD_DIR (default build)] [ROUNDS (default 7)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${2:-7}
source "$root/tests/lttng_daemon.sh"
tmp=$(mktemp -d)
session=ctrace-bench-$$
trap 'lttng destroy "$session" >/dev/null 2>&1 || true; lttng_daemon_stop; rm -rf "$tmp"' EXIT
lttng_daemon_start

session_start() {
    lttng create "$session" --output="$1" >/dev/null
    lttng enable-channel -s "$session" -u ch --subbuf-size=16M --num-subbuf=8 >/dev/null
    lttng enable-event -s "$session" -u -c ch 'ctrace:*' >/dev/null
    lttng start "$session" >/dev/null
}
session_end() {
    lttng stop "$session" >/dev/null
    local discarded
    discarded=$(lttng list "$session" | sed -nE 's/.*[Dd]iscarded events: ([0-9]+).*/\1/p' |
                awk '{ n += $1 } END { print n + 0 }')
    lttng destroy "$session" >/dev/null
    echo "LTTng discarded events: $discarded"
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
        if [[ $which == native ]]; then tn+=("$(echo "$t1 - $t0" | bc)"); else tc+=("$(echo "$t1 - $t0" | bc)"); fi
    done
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mn=$(median "${tn[@]}") mc=$(median "${tc[@]}")
echo
echo "The analyzer on the same $events events (gateway -seconds 3, with context switches;"
echo "ctrace stats -j 1, $rounds interleaved runs, median)"
printf '  %-30s %10s %14s\n' "trace" "seconds" "events/s"
printf '  %-30s %10.3f %14.0f\n' "native ($(du -k "$tmp/gw.bin" | cut -f1) KiB)" "$mn" "$(echo "$events / $mn" | bc -l)"
printf '  %-30s %10.3f %14.0f\n' "CTF ($(du -sk "$tmp/gw" | cut -f1) KiB)" "$mc" "$(echo "$events / $mc" | bc -l)"
