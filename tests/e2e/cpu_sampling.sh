#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cpu_sampling.sh - CPU samples end to end, from each source (perf_event,
# the default, and the timer: -cpu-timer), on real programs:
#   - tests/prog-cpu burns known CPU in two functions on two threads (900
#     and 300 ms, measured by the program itself): the cpu profile gives
#     them the same ratio within 10%, at their own file and line (at 250 Hz,
#     75 samples in the smaller: with 25, one missed sample was 4% of it and
#     a 12 ms gap under load, seen once, broke the 10%); stats
#     names the source and the rate; `-cpu` alone samples at 100 Hz;
#   - examples/gateway, slow build: the requests' cpu profile (-top -task
#     request) has the regex compilation (regcomp) under the redaction
#     function at its top; with -fix=redact, regcomp is under 5% of it;
#   - a program with a SIGPROF handler and a profiling timer of its own
#     keeps both under -cpu-timer (its signals are its own) and under -cpu.
# usage: cpu_sampling.sh CTRACE PROG_CPU GATEWAY PROG_SIGPROF
set -uo pipefail
ctrace=$1 prog_cpu=$2 gateway=$3 prog_sigprof=$4
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

# ms_of TEXT: a duration as -top prints it (1.5s, 260.0ms, 40us) in ms.
ms_of() {
    awk -v v="$1" 'BEGIN {
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        print (u == "s" ? n * 1000 : u == "us" ? n / 1000 : u == "ns" ? n / 1e6 : n) }'
}

# cpu_of FUNCTION TOP: the CPU (ms) of the -top stacks whose innermost
# frame is FUNCTION.
cpu_of() {
    local fn=$1 total=0 v
    while read -r v; do
        total=$(awk -v a="$total" -v b="$(ms_of "$v")" 'BEGIN { print a + b }')
    done < <(grep -E "^ +[0-9.]+[mun]?s +[0-9]+ +[0-9.]+%  $fn " <<<"$2" | awk '{print $1}')
    echo "$total"
}

for source in perf timer; do
    flags=(-cpu 250)
    [[ $source == timer ]] && flags+=(-cpu-timer)
    name=${source/perf/perf_event}

    # ---- two functions, 900 and 300 ms of CPU
    out=$("$ctrace" run "${flags[@]}" -o "$tmp/cpu-$source.bin" -- "$prog_cpu" 900 300 2>&1)
    a_ms=$(sed -nE 's/^burn_a ([0-9.]+) ms$/\1/p' <<<"$out")
    b_ms=$(sed -nE 's/^burn_b ([0-9.]+) ms$/\1/p' <<<"$out")
    check "$source: the program ran ($a_ms ms, $b_ms ms)" test -n "$a_ms" -a -n "$b_ms"
    stats=$("$ctrace" stats "$tmp/cpu-$source.bin" 2>&1)
    check "$source: stats names the source and the rate" \
        grep -qE "^cpu samples: +[0-9]+ \($name, 250 Hz, [0-9]+ lost\)" <<<"$stats"
    top=$("$ctrace" -pprof=cpu -top -n 100 "$tmp/cpu-$source.bin" 2>&1)
    got_a=$(cpu_of burn_a "$top") got_b=$(cpu_of burn_b "$top")
    check "$source: burn_a and burn_b sampled ($got_a ms, $got_b ms)" \
        awk -v a="$got_a" -v b="$got_b" 'BEGIN { exit !(a > 0 && b > 0) }'
    check "$source: their ratio as measured, within 10% ($got_a/$got_b vs $a_ms/$b_ms)" \
        awk -v a="$got_a" -v b="$got_b" -v wa="$a_ms" -v wb="$b_ms" 'BEGIN {
            if (b == 0 || wb == 0) exit 1
            r = (a / b) / (wa / wb); exit !(r > 0.9 && r < 1.1) }'
    check "$source: at their own file and line" \
        grep -qE "burn_a \(.*prog-cpu\.c:[0-9]+\)" <<<"$top"
    check "$source: called from the thread's start routine" \
        grep -qE "^ +run \(.*prog-cpu\.c:[0-9]+\)" <<<"$top"

    # ---- the gateway's first bug, and its fix
    for build in slow redact; do
        args=(-seconds 2)
        [[ $build == redact ]] && args+=(-fix=redact)
        "$ctrace" run -cpu ${flags[2]+"${flags[2]}"} -o "$tmp/gw-$source-$build.bin" -- \
            "$gateway" "${args[@]}" >/dev/null 2>&1
        top=$("$ctrace" -pprof=cpu -top -n 1000 -task request "$tmp/gw-$source-$build.bin" 2>&1)
        if [[ $build == slow ]]; then
            first=$(awk 'BEGIN { RS = "" } NR == 2 { print; exit }' <<<"$top")
            check "$source: the slow build's top CPU is regcomp under redact_pii" \
                bash -c 'grep -qE "^ +[0-9.]+[mun]?s .*regcomp" <<<"$1" && grep -q redact_pii <<<"$1"' \
                _ "$first"
            [[ $fail -eq 0 ]] || echo "$top" | head -30
        else
            share=$(awk 'BEGIN { RS = "" } /regcomp/ { split($0, f, " "); s += f[3] }
                         END { print s + 0 }' <<<"$top")
            check "$source: with -fix=redact, regcomp is under 5% ($share%)" \
                awk -v s="$share" 'BEGIN { exit !(s < 5) }'
        fi
    done
done

# ---- -cpu alone: 100 Hz
"$ctrace" run -cpu -o "$tmp/alone.bin" -- "$prog_cpu" 50 50 >/dev/null 2>&1
check "-cpu alone samples at 100 Hz" \
    grep -qE "^cpu samples: .*, 100 Hz," <<<"$("$ctrace" stats "$tmp/alone.bin" 2>&1)"

# ---- the program's own SIGPROF: its handler and its timer's signals stay
# its own; the timer source gives way (no timer samples), perf_event does not
# need SIGPROF
expect "a program's own SIGPROF, under -cpu -cpu-timer" 0 "^sigprof: [1-9][0-9]* signals$" -- \
    "$ctrace" run -cpu -cpu-timer -o "$tmp/sigprof-timer.bin" -- "$prog_sigprof"
expect "a program's own SIGPROF set with signal(), under -cpu -cpu-timer" 0 \
    "^sigprof: [1-9][0-9]* signals$" -- \
    "$ctrace" run -cpu -cpu-timer -o "$tmp/sigprof-signal.bin" -- "$prog_sigprof" signal
check "-cpu-timer beside the program's SIGPROF: no timer samples" \
    grep -qE "^cpu samples: +0 " <<<"$("$ctrace" stats "$tmp/sigprof-timer.bin" 2>&1)"
expect "a program's own SIGPROF, under -cpu (perf_event)" 0 "^sigprof: [1-9][0-9]* signals$" -- \
    "$ctrace" run -cpu -o "$tmp/sigprof-perf.bin" -- "$prog_sigprof"
check "-cpu beside the program's SIGPROF: sampled by perf_event" \
    grep -qE "^cpu samples: +[1-9][0-9]* \(perf_event" <<<"$("$ctrace" stats "$tmp/sigprof-perf.bin" 2>&1)"

finish
