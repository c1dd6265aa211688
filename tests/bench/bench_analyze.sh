#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_analyze.sh - how fast the analyzer (`ctrace`) reads big traces, and
# how much memory it takes: the baseline that a rewrite of analyze/ is held to.
#
# Traces pingpong.c (two pairs of threads ping-ponging through semaphores:
# sem_wait BLOCK/UNBLOCK and sem_post RELEASE, ~6 events a round trip) under
# `ctrace run`, long enough for a trace of at least 10 M events (calibrated
# from a 1 s run), then a second trace four times as long (~4x the events).
# On each it times `ctrace stats`, `ctrace -pprof=sync -o /dev/null`,
# `ctrace -perfetto -o /dev/null` (the Perfetto timeline: two readings, the
# second encoding every wait, release and state), `ctrace why` and
# `ctrace -pprof=critical -o /dev/null` (the critical paths of the 3
# slowest tasks, and of all of them summed: every 16th round trip of one
# pair is a task), each with `-j 1` (one worker) and with the default
# jobs; the old analyzer has no -j (detected from `ctrace -h`),
# and then only the default runs and the -j 1 rows show '-'. Every
# measurement is repeated 3 times, interleaved (all commands on both traces,
# then again), and the table gives the medians of: wall seconds, CPU seconds
# (user + system), events per wall second and per CPU second (millions),
# and peak RSS (MB).
#
# Targets for the streaming analyzer:
#   - 20 M events/s per core for `stats` and `-pprof=sync`, symbolization
#     excluded (pingpong's handful of stacks make symbolization a small,
#     fixed cost here: compare the Mev/cpu-s of -j 1, one core);
#   - peak RSS <= 100 MB on the 10 M-event trace, and on the 4x one at most
#     10% more than on the 10 M one (memory must not grow with the trace);
#   - -perfetto: at least 5 M events/s (wall, default jobs) and peak RSS
#     under 100 MB;
#   - why and -pprof=critical: at least half the speed of -pprof=sync.
# Never passes or fails on timing: exits 0 unless something fails to run.
# Compare figures of one run (machines are shared and noisy), not across runs.
#
# usage: tests/bench/bench_analyze.sh [BUILD_DIR]   (default build/; it must
#        hold a built ctrace and tracer/libctrace.so: nothing is built here
#        but pingpong, with cc)
# Environment: CTR_BENCH_EVENTS the first trace's least events (default
# 10 M); CTR_BENCH_REPS the repetitions (default 3); CTR_BENCH_ONE_TRACE=1
# the first trace alone (run.sh's analyzer rows).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-build}
ctrace=$build/ctrace
min_events=${CTR_BENCH_EVENTS:-10000000} # smaller for a quick try of the script
reps=${CTR_BENCH_REPS:-3}
one_trace=${CTR_BENCH_ONE_TRACE:-0}
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "$0: CTR_BENCH_REPS: a count, not '$reps'" >&2; exit 2; }
[[ -x $ctrace ]] || { echo "$0: $ctrace: not an executable (build first, or give BUILD_DIR)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cc -O2 -pthread -fno-omit-frame-pointer "$here/pingpong.c" -o "$tmp/pingpong" -ldl

# measure OUT CMD...: runs CMD (its output discarded) and writes
# "wall_s cpu_s maxrss_kb" to OUT. GNU time when it is there; else a small
# wrapper of our own (wait4's rusage and the monotonic clock).
if /usr/bin/time -f '%e' true 2>/dev/null; then
    measure() {
        local out=$1
        shift
        /usr/bin/time -o "$tmp/raw" -f '%e %U %S %M' "$@" >/dev/null 2>"$tmp/stderr" ||
            { cat "$tmp/stderr" >&2; echo "$0: failed: $*" >&2; exit 1; }
        awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$tmp/raw" >"$out"
    }
else
    cat >"$tmp/rtime.c" <<'EOF'
/* rtime: runs argv[2..] and writes "wall_s cpu_s maxrss_kb" to argv[1]. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct timespec a, b; struct rusage ru; int st;
    if (argc < 3) return 2;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t pid = fork();
    if (pid == 0) { execvp(argv[2], argv + 2); _exit(127); }
    if (pid < 0 || wait4(pid, &st, 0, &ru) != pid) return 1;
    clock_gettime(CLOCK_MONOTONIC, &b);
    FILE *f = fopen(argv[1], "w");
    if (!f) return 1;
    fprintf(f, "%.3f %.2f %ld\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
            ru.ru_utime.tv_sec + ru.ru_stime.tv_sec
                + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6, ru.ru_maxrss);
    return fclose(f) != 0 || !WIFEXITED(st) ? 1 : WEXITSTATUS(st);
}
EOF
    cc -O2 "$tmp/rtime.c" -o "$tmp/rtime"
    measure() {
        local out=$1
        shift
        "$tmp/rtime" "$out" "$@" >/dev/null 2>"$tmp/stderr" ||
            { cat "$tmp/stderr" >&2; echo "$0: failed: $*" >&2; exit 1; }
    }
fi

events_of() { "$ctrace" stats "$1" | awk '$1 == "events:" { print $2 }'; }

# record SECONDS FILE: a traced pingpong run; prints the trace's events.
record() {
    "$ctrace" run -o "$2" -- "$tmp/pingpong" "$1" ||
        { echo "$0: traced pingpong $1 failed" >&2; exit 1; }
    events_of "$2"
}

# Calibrate on 1 s, then aim 15% over 10 M (the rate varies run to run);
# lengthen until the trace holds at least 10 M events.
rate=$(record 1 "$tmp/cal.bin")
rm -f "$tmp/cal.bin"
[[ $rate -gt 0 ]] || { echo "$0: the calibration trace has no events" >&2; exit 1; }
secs=$(awk -v r="$rate" -v m="$min_events" 'BEGIN { printf "%.1f", m * 1.15 / r }')
while :; do
    ev1=$(record "$secs" "$tmp/t1.bin")
    [[ $ev1 -ge $min_events ]] && break
    secs=$(awk -v s="$secs" -v e="$ev1" -v m="$min_events" 'BEGIN { printf "%.1f", s * m * 1.15 / e }')
done
# The second four times as long, re-run (twice at most, rescaled) when the
# rate changed so much that it holds under 3.6x or over 4.4x the events;
# the run closest to 4x is kept.
secs4=$(awk -v s="$secs" 'BEGIN { printf "%.1f", 4 * s }')
best=-1 traces=(t1)
[[ $one_trace == 1 ]] || traces+=(t4)
for _ in 1 2 3; do
    [[ $one_trace == 1 ]] && break
    ev=$(record "$secs4" "$tmp/try.bin")
    off=$((ev > 4 * ev1 ? ev - 4 * ev1 : 4 * ev1 - ev))
    if [[ $best -lt 0 || $off -lt $best ]]; then
        best=$off ev4=$ev used4=$secs4
        mv "$tmp/try.bin" "$tmp/t4.bin"
    fi
    [[ $((ev * 10)) -ge $((ev1 * 36)) && $((ev * 10)) -le $((ev1 * 44)) ]] && break
    secs4=$(awk -v s="$secs4" -v e="$ev" -v m="$((ev1 * 4))" 'BEGIN { printf "%.1f", s * m / e }')
done
rm -f "$tmp/try.bin"

if "$ctrace" -h 2>&1 | grep -qE -- '(^|[[:space:][])-j\b'; then
    jobs_list=("1" "")
else
    jobs_list=("")
fi
commands=("stats" "-pprof=sync -o /dev/null")
# The tasks report (two readings: its model, then the slowest tasks').
if "$ctrace" tasks -h >/dev/null 2>&1; then
    commands+=("tasks")
fi
# The Perfetto export, where this ctrace has it.
if "$ctrace" -h 2>&1 | grep -q -- '-perfetto'; then
    commands+=("-perfetto -o /dev/null")
fi
# The critical paths (two readings), where this ctrace has them: of the 3
# slowest tasks, and of every task summed (about 1 event in 100 is a task's).
if "$ctrace" why -h >/dev/null 2>&1; then
    commands+=("why" "-pprof=critical -o /dev/null")
fi

# run_cmd TRACE CMD JOBS OUT: one measurement; -j goes right after the verb
# (or the -pprof flag).
run_cmd() {
    local trace=$1 cmd=$2 jobs=$3 out=$4 argv
    read -r -a argv <<<"$cmd"
    if [[ -n $jobs ]]; then
        argv=("${argv[0]}" -j "$jobs" "${argv[@]:1}")
    fi
    measure "$out" "$ctrace" "${argv[@]}" "$trace"
}

for ((r = 0; r < reps; r++)); do
    for t in "${traces[@]}"; do
        for c in "${!commands[@]}"; do
            for j in "${jobs_list[@]}"; do
                run_cmd "$tmp/$t.bin" "${commands[$c]}" "$j" "$tmp/m.$t.$c.${j:-d}.$r"
            done
        done
    done
done

# shellcheck source=tests/bench/stats.sh
source "$here/stats.sh"

echo "# ctrace analyzer benchmark ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -r))"
if [[ $one_trace == 1 ]]; then
    echo "# $ctrace; trace: pingpong $secs s -> $ev1 events ($(stat -c %s "$tmp/t1.bin") bytes)"
else
    echo "# $ctrace; traces: pingpong $secs s -> $ev1 events ($(stat -c %s "$tmp/t1.bin") bytes)," \
        "pingpong $used4 s -> $ev4 events ($(stat -c %s "$tmp/t4.bin") bytes," \
        "$(awk -v a="$ev4" -v b="$ev1" 'BEGIN { printf "%.2f", a / b }')x)"
fi
echo "# medians of $reps interleaved runs; Mev/s = million events per wall second," \
    "Mev/cpu-s = per CPU second (user + system)"
echo
printf '| %-8s | %-26s | %-7s | %10s | %7s | %7s | %7s | %9s | %11s |\n' \
    trace command jobs events "wall s" "cpu s" "Mev/s" "Mev/cpu-s" "peak RSS MB"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n' ---------- ---------------------------- --------- \
    ------------ --------- --------- --------- ----------- -------------
for t in "${traces[@]}"; do
    ev=$ev1 label=$(awk -v m="$min_events" 'BEGIN { printf(m >= 1e6 ? "%gM" : "%gk", m >= 1e6 ? m / 1e6 : m / 1e3) }')
    [[ $t == t4 ]] && ev=$ev4 label="4x"
    for c in "${!commands[@]}"; do
        for j in 1 ""; do
            name="-j ${j:-default}"
            [[ -z $j ]] && name=default
            if [[ ! -e $tmp/m.$t.$c.${j:-d}.0 ]]; then
                printf '| %-8s | %-26s | %-7s | %10s | %7s | %7s | %7s | %9s | %11s |\n' \
                    "$label" "${commands[$c]}" "$name" "$ev" - - - - -
                continue
            fi
            wall=$(cat "$tmp/m.$t.$c.${j:-d}".* | awk '{ print $1 }' | median)
            cpu=$(cat "$tmp/m.$t.$c.${j:-d}".* | awk '{ print $2 }' | median)
            rss=$(cat "$tmp/m.$t.$c.${j:-d}".* | awk '{ print $3 }' | median)
            awk -v l="$label" -v c="${commands[$c]}" -v n="$name" -v e="$ev" -v w="$wall" \
                -v u="$cpu" -v m="$rss" 'BEGIN {
                printf "| %-8s | %-26s | %-7s | %10d | %7.2f | %7.2f | %7.2f | %9.2f | %11.1f |\n",
                    l, c, n, e, w, u, (w > 0 ? e / w / 1e6 : 0), (u > 0 ? e / u / 1e6 : 0), m / 1024 }'
        done
    done
done
