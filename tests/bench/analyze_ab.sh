#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# analyze_ab.sh - the reader and the writer of two builds side by side, as a
# change to the writer or the format must be measured (DEVELOPERS.md): each
# build's tracer records pingpong.c for SECONDS (default 3; about 8 M events
# a second traced here), which gives the writer's figures (events, bytes
# per event); then the analyzers of both builds read the OLD build's trace
# (so the reader's change alone is measured), interleaved RUNS times
# (default 3): `stats`, `-pprof=sync -o /dev/null`, `threads`, `tasks` and
# `-perfetto -o /dev/null`, each with -j 1, printing the medians of wall
# seconds, CPU seconds and peak RSS (MB), and new/old ratios. Also the NEW
# analyzer on the NEW trace (what a user of the new build gets).
#   git worktree add /tmp/old <base>; build both; then
#   tests/bench/analyze_ab.sh /tmp/old/build build
# Prints tables; never passes or fails on timing.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 OLD_BUILD NEW_BUILD [SECONDS] [RUNS]" >&2; exit 2; }
old=$1 new=$2 secs=${3:-3} runs=${4:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for b in "$old" "$new"; do
    [[ -x $b/ctrace ]] || { echo "$0: $b/ctrace: not an executable" >&2; exit 2; }
done
/usr/bin/time -f '%e' true 2>/dev/null || { echo "$0: needs GNU time (/usr/bin/time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -pthread -fno-omit-frame-pointer "$here/pingpong.c" -o "$tmp/pingpong" -ldl
. "$here/stats.sh"

echo "writer: pingpong $secs s traced by each build"
printf '%-6s %12s %12s %10s\n' build events bytes bytes/ev
for side in old new; do
    b=${!side}
    "$b/ctrace" run -o "$tmp/$side.bin" -- "$tmp/pingpong" "$secs" >/dev/null
    ev=$("$b/ctrace" stats "$tmp/$side.bin" | awk '$1 == "events:" { print $2 }')
    by=$(stat -c %s "$tmp/$side.bin")
    printf '%-6s %12s %12s %10.2f\n' "$side" "$ev" "$by" "$(awk -v a="$by" -v b="$ev" 'BEGIN { print a / b }')"
done

verbs=("stats" "-pprof=sync -o /dev/null" "threads" "tasks" "-perfetto -o /dev/null")
# run SIDE TRACE I K: verb K of SIDE's analyzer on TRACE, repetition I.
run() {
    local b=${!1}
    # shellcheck disable=SC2086 # the verb's words
    /usr/bin/time -o "$tmp/m.$1.$2.$4.$3" -f '%e %U %S %M' "$b/ctrace" ${verbs[$4]} -j 1 \
        "$tmp/$2.bin" >/dev/null 2>&1 || echo "$0: $1 ${verbs[$4]} on the $2 trace failed" >&2
}
for ((i = 0; i < runs; i++)); do
    for k in "${!verbs[@]}"; do
        run old old "$i" "$k"
        run new old "$i" "$k"
        run new new "$i" "$k"
    done
done
# fig SIDE TRACE K FIELD: the median of a measure over the repetitions.
fig() {
    cat "$tmp"/m."$1"."$2"."$3".* 2>/dev/null | awk -v f="$4" '{
        v = f == 1 ? $1 : f == 2 ? $2 + $3 : $4 / 1024; printf "%.2f\n", v }' | median
}
echo
echo "reader: medians of $runs interleaved runs, -j 1 (old trace: both analyzers; new: the new one)"
printf '%-28s %8s %8s %6s %8s %8s %6s %8s %8s %8s\n' verb "old s" "new s" new/old \
    "old cpu" "new cpu" "" "old MB" "new MB" "new,newtr"
for k in "${!verbs[@]}"; do
    ow=$(fig old old "$k" 1) nw=$(fig new old "$k" 1)
    oc=$(fig old old "$k" 2) nc=$(fig new old "$k" 2)
    om=$(fig old old "$k" 3) nm=$(fig new old "$k" 3) nn=$(fig new new "$k" 3)
    printf '%-28s %8s %8s %6.2f %8s %8s %6.2f %8s %8s %8s\n' "${verbs[$k]% -o *}" "$ow" "$nw" \
        "$(awk -v a="$ow" -v b="$nw" 'BEGIN { print (a > 0 ? b / a : 0) }')" "$oc" "$nc" \
        "$(awk -v a="$oc" -v b="$nc" 'BEGIN { print (a > 0 ? b / a : 0) }')" "$om" "$nm" "$nn"
done
