#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_run_smoke.sh - tests/bench/run.sh, the always-on cost table, in one
# short round (its timings are not judged: machines are noisy): it runs to
# the end, and prints the service's and the cache's rows for all four modes
# with figures in them, the hot paths' tables, bytes per event on disk
# and in the recorder's window for both examples, and the analyzer's rows.
# usage: bench_run_smoke.sh RUN_SH BUILD_DIR
set -uo pipefail
run=$1 build=$2
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/checks.sh"

"$run" --no-install "$build" 1 1 >"$tmp/out" 2>"$tmp/err"
status=$?
check "run.sh exits 0" test $status -eq 0
[[ $status -eq 0 ]] || sed 's/^/  run.sh: /' "$tmp/err"
cat "$tmp/out"
num='[0-9]+\.[0-9]+ ±[0-9.]+%'
# figures MODE N: how many figures the Nth table's row of MODE holds.
figures() {
    awk -F'|' -v m="$1" '{ c = $2; gsub(/^ +| +$/, "", c) } c == m' "$tmp/out" | sed -n "$2p" |
        grep -Eo "$num" | wc -l
}
for m in "untraced" "trace_start (file)" "flight recorder" "flight recorder + CPU 100 Hz"; do
    check "service: $m, three figures" test "$(figures "$m" 1)" -eq 3
    check "cache: $m, two figures" test "$(figures "$m" 2)" -eq 2
done
for t in "Cost of writing one event" "Uncontended pthread_mutex_lock" "Uncontended sem_post" \
    "Annotations, per call" "1-byte read from a filled pipe"; do
    check "hot paths: $t" grep -qF "$t" "$tmp/out"
done
# The analyzer's rows: events per second and peak RSS, -j 1 and default.
for c in "stats" "-pprof=sync -o /dev/null" "tasks" "-perfetto -o /dev/null"; do
    for j in "-j 1" default; do
        check "analyzer: $c, $j" test "$(awk -F'|' -v c="$c" -v j="$j" '{
            for (i = 1; i <= NF; i++) gsub(/^ +| +$/, "", $i) }
            $3 == c && $4 == j && $7 ~ /^[0-9.]+$/ && $10 ~ /^[0-9.]+$/' "$tmp/out" | wc -l)" -eq 1
    done
done
for ex in service cache; do
    check "bytes per event: $ex, on disk and in the window" \
        grep -Eq "^\| $ex +\| [0-9.]+ \([0-9]+ bytes\) +\| [0-9.]+ \([0-9]+ bytes\)" "$tmp/out"
done
finish
