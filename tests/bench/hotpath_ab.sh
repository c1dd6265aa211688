#!/bin/sh
# SPDX-License-Identifier: MIT
# hotpath_ab.sh - bench_hotpath of two builds side by side: runs OLD and NEW
# alternately RUNS times (default 7) and prints, for each figure, the median
# of each and their ratio. A change to the tracer is measured this way:
#   git worktree add /tmp/old <base>; build both; then
#   tests/bench/hotpath_ab.sh /tmp/old/build/tests/bench_hotpath \
#       build/tests/bench_hotpath
# Prints a table; never passes or fails on timing.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OLD_BENCH_HOTPATH NEW_BENCH_HOTPATH [RUNS] [ITERATIONS]" >&2; exit 2; }
old=$1 new=$2 runs=${3:-7} iters=${4:-10000000}
for b in "$old" "$new"; do
    [ -x "$b" ] || { echo "$0: $b: not an executable" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
i=0
while [ $i -lt "$runs" ]; do
    "$old" "$iters" 3 > "$out/old.$i"
    "$new" "$iters" 3 > "$out/new.$i"
    i=$((i + 1))
done
# One line per figure: "name<TAB>ns/op" from the tables' rows.
rows() { cat "$out"/$1.* | awk '/^  [a-z]/ && NF >= 4 && $(NF-2) ~ /^[0-9.]+$/ {
    name = $0; sub(/ +[0-9.]+ +[0-9.]+x +[0-9.-]+$/, "", name); sub(/^ +/, "", name)
    print name "\t" $(NF-2) }'; }
. "$(dirname "$0")/stats.sh"
printf '%-46s %9s %9s %7s\n' "figure (median of $runs runs, ns/op)" old new new/old
rows old | cut -f1 | awk '!seen[$0]++' | while IFS= read -r name; do
    o=$(rows old | awk -F'\t' -v n="$name" '$1 == n { print $2 }' | median)
    n=$(rows new | awk -F'\t' -v n="$name" '$1 == n { print $2 }' | median)
    printf '%-46s %9s %9s %7s\n' "$name" "$o" "$n" "$(awk -v a="$o" -v b="$n" 'BEGIN { printf "%.3f", b / a }')"
done
