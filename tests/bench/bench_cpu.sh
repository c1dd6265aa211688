#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_cpu.sh - the overhead of CPU sampling (issue 14): how much longer a
# program takes when `ctrace run -cpu HZ` samples its threads' stacks, at
# 100 Hz and 1000 Hz, with either source (perf_event, the default, and
# -cpu-timer: a CPU-time timer per thread and SIGPROF). Target: at most 1%
# at 100 Hz.
#
# Three workloads, each in six modes: untraced; traced (`ctrace run`, no
# sampling); traced + -cpu 100; traced + -cpu 1000; the same two with
# -cpu-timer.
#   - burn: tests/bench/bench_cpu_burn.c, a FIXED amount of CPU work on two
#     threads (100 M rounds of hashing each, ~1 s on both cores of an idle
#     machine); the time is its own (first thread's start to last one's end),
#     which leaves out exec, the preload's start and the trace's last flush.
#     (tests/prog-cpu burns a fixed CPU TIME, which would hide a slowdown.)
#   - churn: bench_cpu_burn churn, a thread per request (1000 threads one
#     after the other, ~0.1 ms of work each): what a sampler costs at each
#     thread's start and end (perf_event maps and unmaps a ring per thread);
#   - cache: examples/cache slow, 64 threads mostly waiting on one mutex held
#     across 500 us sleeps (~2.4 s, little CPU: few samples); the time is the
#     `total=` it prints.
# Each round runs every mode of both workloads once, the modes in an order
# that rotates by one each round; ROUNDS rounds. Per mode, the table gives
# the median of the program's own time (ms), its min and max, the median wall
# time of the whole process (exec to exit, trace written), the overhead of
# the medians relative to "traced" (the sampling's own cost) and to
# "untraced", that of the minimums relative to "traced", and from `ctrace stats` of the last round's trace the samples
# taken and lost (for burn, also the share of the samples expected from its
# threads' CPU time times HZ).
# Prints tables; never passes or fails on timing: exits 0 unless something
# fails to run. Compare the figures of one run (machines are shared and
# noisy), not across runs.
# usage: tests/bench/bench_cpu.sh [BUILD_DIR (default build)] [ROUNDS (default 7)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${2:-7}
ctrace=$build/ctrace
[[ -x $ctrace ]] || { echo "$0: $ctrace: not an executable (build first, or give BUILD_DIR)" >&2; exit 2; }
[[ -x $build/examples/cache ]] || { echo "$0: $build/examples/cache: not built" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [BUILD_DIR] [ROUNDS]" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The burner: the built one, else compiled here as CMake would.
burn=$build/tests/bench_cpu_burn
if [[ ! -x $burn ]]; then
    burn=$tmp/bench_cpu_burn
    cc -O2 -g -fno-omit-frame-pointer -pthread "$root/tests/bench/bench_cpu_burn.c" -o "$burn"
fi
burn_threads=2 burn_miters=100

modes=(untraced traced cpu100 cpu1000 timer100 timer1000)
declare -A label=([untraced]="untraced" [traced]="traced, no sampling"
    [cpu100]="-cpu 100" [cpu1000]="-cpu 1000"
    [timer100]="-cpu 100 -cpu-timer" [timer1000]="-cpu 1000 -cpu-timer")
declare -A flags=([untraced]="" [traced]="" [cpu100]="-cpu 100" [cpu1000]="-cpu 1000"
    [timer100]="-cpu 100 -cpu-timer" [timer1000]="-cpu 1000 -cpu-timer")
declare -A hz=([cpu100]=100 [cpu1000]=1000 [timer100]=100 [timer1000]=1000)
workloads=(burn churn cache)

# run_one WORKLOAD MODE: one run; appends "own_ms wall_ms cpu_ms" to
# $tmp/WORKLOAD.MODE.dat (cpu_ms: burn's threads, 0 for cache) and leaves
# the trace in $tmp/WORKLOAD.MODE.bin.
run_one() {
    local w=$1 m=$2 cmd pre=() f own cpu t0 t1
    if [[ $w == burn ]]; then
        cmd=("$burn" "$burn_threads" "$burn_miters")
    elif [[ $w == churn ]]; then
        cmd=("$burn" churn 1000)
    else
        cmd=("$build/examples/cache" slow)
    fi
    if [[ $m != untraced ]]; then
        read -r -a f <<<"${flags[$m]}"
        pre=("$ctrace" run ${f[@]+"${f[@]}"} -o "$tmp/$w.$m.bin" --)
    fi
    t0=$(date +%s%N)
    "${pre[@]}" "${cmd[@]}" >"$tmp/out" 2>"$tmp/err" ||
        { cat "$tmp/out" "$tmp/err" >&2; echo "$0: failed: ${pre[*]} ${cmd[*]}" >&2; exit 1; }
    t1=$(date +%s%N)
    if [[ $w != cache ]]; then
        own=$(sed -nE 's/.* elapsed_ms=([0-9.]+).*/\1/p' "$tmp/out")
        cpu=$(sed -nE 's/.* cpu_ms=([0-9.]+).*/\1/p' "$tmp/out")
    else
        own=$(sed -nE 's/.* total=([0-9.]+)ms.*/\1/p' "$tmp/out")
        cpu=0
    fi
    [[ -n $own && -n $cpu ]] || { cat "$tmp/out" >&2; echo "$0: no time in the output of ${cmd[*]}" >&2; exit 1; }
    echo "$own $(((t1 - t0) / 1000000)) $cpu" >>"$tmp/$w.$m.dat"
}

start=$(date +%s)
for ((r = 0; r < rounds; r++)); do
    echo "round $((r + 1))/$rounds ..." >&2
    for w in "${workloads[@]}"; do
        for ((i = 0; i < ${#modes[@]}; i++)); do
            run_one "$w" "${modes[$(((i + r) % ${#modes[@]}))]}"
        done
    done
done
elapsed=$(($(date +%s) - start))

# shellcheck source=tests/bench/stats.sh
source "$root/tests/bench/stats.sh"

echo "# ctrace CPU-sampling overhead ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg), perf_event_paranoid" \
    "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?'))"
echo "# $ctrace; $rounds interleaved rounds (modes in rotating order), ${elapsed} s in all;" \
    "target: <= 1% at 100 Hz"
for w in "${workloads[@]}"; do
    echo
    if [[ $w == burn ]]; then
        echo "burn: bench_cpu_burn $burn_threads threads x $burn_miters M rounds (fixed work);" \
            "own ms = its elapsed time"
    elif [[ $w == churn ]]; then
        echo "churn: bench_cpu_burn churn 1000 (a thread per request, ~0.1 ms each);" \
            "own ms = its elapsed time"
    else
        echo "cache: examples/cache slow (64 threads, mostly blocked); own ms = its total="
    fi
    printf '| %-21s | %8s | %8s | %8s | %8s | %9s | %11s | %9s | %7s | %5s | %8s |\n' mode "own ms" min max \
        "wall ms" "vs traced" "vs untraced" "min vs tr" samples lost expected
    printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' ----------------------- ---------- ---------- \
        ---------- ---------- ----------- ------------- ----------- --------- ------- ----------
    base_u=$(col "$tmp/$w.untraced.dat" 1 | median)
    base_t=$(col "$tmp/$w.traced.dat" 1 | median)
    min_t=$(col "$tmp/$w.traced.dat" 1 | minmax | cut -d' ' -f1)
    for m in "${modes[@]}"; do
        d=$tmp/$w.$m.dat
        med=$(col "$d" 1 | median)
        read -r lo hi < <(col "$d" 1 | minmax)
        wall=$(col "$d" 2 | median)
        vt=- vu=- mt=- samples=- lost=- expected=-
        [[ $m != untraced ]] && vu=$(pct "$med" "$base_u")
        if [[ -n ${hz[$m]:-} ]]; then
            vt=$(pct "$med" "$base_t") mt=$(pct "$lo" "$min_t")
            line=$("$ctrace" stats "$tmp/$w.$m.bin" | grep '^cpu samples:' || true)
            samples=$(sed -nE 's/^cpu samples: +([0-9]+).*/\1/p' <<<"$line")
            lost=$(sed -nE 's/.*, ([0-9]+) lost.*/\1/p' <<<"$line")
            samples=${samples:-0} lost=${lost:-?}
            if [[ $w == burn ]]; then
                cpu=$(tail -n 1 "$d" | awk '{ print $3 }')
                expected=$(awk -v s="$samples" -v c="$cpu" -v h="${hz[$m]}" \
                    'BEGIN { printf "%.0f%%", 100 * s / (c / 1000 * h) }')
            fi
        fi
        printf '| %-21s | %8.1f | %8.1f | %8.1f | %8.0f | %9s | %11s | %9s | %7s | %5s | %8s |\n' \
            "${label[$m]}" "$med" "$lo" "$hi" "$wall" "$vt" "$vu" "$mt" "$samples" "$lost" "$expected"
    done
done
echo
echo "own ms, wall ms: medians; min, max: of own ms; vs traced, vs untraced: the own-ms medians compared;"
echo "min vs tr: the own-ms minimums compared (on a shared machine, noise only adds time: the fastest"
echo "run of a mode is the one least disturbed)."
echo "samples, lost: \`ctrace stats\` of the last round's trace; expected: those samples over what"
echo "burn's threads' CPU time in that run times HZ would give."
