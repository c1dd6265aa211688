#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run.sh - what leaving ctrace on costs: the one table docs/overhead.md quotes
# (issue 16), in one command, on a fresh Debian machine (it installs what is
# missing and builds, as tests/run.sh does).
#
#   1. examples/service (an HTTP/1.1 service: 4 worker threads, epoll, a
#      table behind one mutex, a task with regions per request) under a
#      closed-loop load (service-load: 32 keep-alive connections, DURATION
#      s), in four modes: untraced; -trace (trace_start, the whole run in a
#      file); -flight (the flight recorder, its defaults); -flight -cpu 100
#      (and CPU samples). Per mode: requests per second, p99 latency, and
#      the service's CPU time per request (utime + stime of the process,
#      collector included). The service runs on CPU 0 and the load on the
#      others (taskset), so the service is CPU-bound on its core.
#   2. examples/cache (64 threads, one mutex held across 500 us fetches) in
#      the same four modes (cache slow / trace / flight / -cpu 100 flight):
#      its requests per second (12800 / total) and p99.
#      Each round runs every mode of both once, in an order that rotates by
#      one each round; ROUNDS rounds (default 8). Medians, with the spread
#      as benchstat shows it (stats.sh), and each mode against untraced.
#   3. The hot paths, tracing off and on (bench_hotpath, bench_io: variants
#      interleaved in one process, medians): one event, an uncontended
#      lock+unlock, sem_post+sem_wait, a 1-byte pipe read, each annotation.
#   4. Bytes per event, on disk (the last round's trace files) and in the
#      flight recorder's window (the last round's dumps), per example, as
#      `ctrace stats` counts them.
#   5. The analyzer (bench_analyze.sh, its first trace alone): events per
#      second and peak RSS of `stats`, `-pprof=sync`, `tasks`, `-perfetto`
#      (and `why`, `-pprof=critical`) on a traced pingpong of 10 M events or
#      more, at -j 1 and the default, medians of 3 interleaved runs: a
#      change to the writer that costs the reader shows here too.
# Prints tables, headed by the date and the machine; never passes or fails
# on timing (exit 0 unless something fails to build or run). Compare the
# figures of one run (machines are shared and noisy), not across runs.
#
# usage: tests/bench/run.sh [--no-install] [BUILD_DIR (default build)] [ROUNDS (default 8)]
#                           [DURATION (default 2 s of load per service run)]
# (ROUNDS below 3 is a smoke run: the hot paths get few iterations.)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
prog=tests/bench/run.sh
install=1
if [[ ${1:-} == --no-install ]]; then
    install=0
    shift
fi
build=${1:-$root/build}
rounds=${2:-8}
duration=${3:-2}
[[ $rounds =~ ^[1-9][0-9]*$ && $duration =~ ^[1-9][0-9]*$ ]] || {
    echo "usage: $prog [--no-install] [BUILD_DIR] [ROUNDS] [DURATION]" >&2
    exit 2
}
# shellcheck source=tests/bench/stats.sh
source "$root/tests/bench/stats.sh"
# A smoke run (fewer than 3 rounds: ctest's bench-run-smoke) times the hot
# paths briefly too.
hot_iters=2000000 io_iters=200000 analyze_events=10000000 analyze_reps=3
if [[ $rounds -lt 3 ]]; then
    hot_iters=100000 io_iters=10000 analyze_events=300000 analyze_reps=1
fi

# ------------------------------------------------------------------ set-up
if [[ $install -eq 1 ]]; then
    # shellcheck source=tests/tools/deps.sh
    source "$root/tests/tools/deps.sh"
    ctrace_install_deps >&2 || { echo "$prog: installing packages failed" >&2; exit 1; }
fi
need=(ctrace examples/service examples/service-load examples/cache examples/gateway
    tests/bench_hotpath tests/bench_io)
built=1
for f in "${need[@]}"; do [[ -x $build/$f ]] || built=0; done
if [[ $built -eq 0 ]]; then
    echo "== building $build ==" >&2
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON >&2
    cmake --build "$build" -j2 --target ctrace_cli service service-load cache gateway \
        bench_hotpath bench_io >&2
fi
build=$(cd "$build" && pwd)
ctrace=$build/ctrace
tmp=$(mktemp -d)
svc_pid=
cleanup() {
    [[ -n $svc_pid ]] && kill -KILL "$svc_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# The service on CPU 0, its load on the others: the service is then
# CPU-bound on a core of its own, so its throughput is what its CPU per
# request allows (tracing's cost shows in it), and the load generator's
# threads do not preempt it (a spread of 20-40% between runs, unpinned, on
# 2 vCPUs). On one CPU, both share it.
svc_cpus=() load_cpus=()
if [[ $(nproc) -ge 2 ]] && command -v taskset >/dev/null; then
    svc_cpus=(taskset -c 0) load_cpus=(taskset -c "1-$(($(nproc) - 1))")
fi

modes=(off trace flight flightcpu)
declare -A label=([off]="untraced" [trace]="trace_start (file)" [flight]="flight recorder"
    [flightcpu]="flight recorder + CPU 100 Hz")

# ------------------------------------------------------------------ runs
# run_service MODE: one service run under load; appends "rps p99_us cpu_us"
# to $tmp/service.MODE.dat, and leaves its trace or window in
# $tmp/service.MODE.bin.
run_service() {
    local m=$1 args=() port= out i ticks
    out=$tmp/service.$m.bin
    case $m in
    trace) args=(-trace "$out") ;;
    flight) args=(-flight -flight-dump "$out") ;;
    flightcpu) args=(-flight -cpu 100 -flight-dump "$out") ;;
    esac
    # Emptied here, not only by the background job's redirection, which may
    # come after the loop below has read the last run's port.
    : >"$tmp/svc.out"
    ${svc_cpus[@]+"${svc_cpus[@]}"} "$build/examples/service" ${args[@]+"${args[@]}"} \
        >"$tmp/svc.out" 2>"$tmp/svc.err" &
    svc_pid=$!
    for ((i = 0; i < 200; i++)); do
        port=$(sed -nE 's/^listening 127\.0\.0\.1:([0-9]+)$/\1/p' "$tmp/svc.out")
        [[ -z $port ]] || break
        sleep 0.05
    done
    [[ -n $port ]] || { cat "$tmp/svc.err" >&2; echo "$prog: the service did not start" >&2; exit 1; }
    ${load_cpus[@]+"${load_cpus[@]}"} "$build/examples/service-load" -port "$port" -conns 32 \
        -duration "$duration" >"$tmp/load.out" ||
        { cat "$tmp/load.out" >&2; echo "$prog: service-load failed ($m)" >&2; exit 1; }
    # utime + stime, in clock ticks: the service's CPU so far (the
    # command name, field 2, is "service": no spaces to shift the fields).
    ticks=$(awk '{ print $14 + $15 }' "/proc/$svc_pid/stat")
    kill -TERM "$svc_pid"
    wait "$svc_pid" || { cat "$tmp/svc.err" >&2; echo "$prog: the service failed ($m)" >&2; exit 1; }
    svc_pid=
    awk -v ticks="$ticks" -v hz="$(getconf CLK_TCK)" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        printf "%s %s %.2f\n", f["rps"], f["p99_us"], ticks / hz * 1e6 / f["requests"] }' \
        "$tmp/load.out" >>"$tmp/service.$m.dat"
}

# run_cache MODE: one run of the cache example; appends "rps p99_us".
run_cache() {
    local m=$1 cmd=("$build/examples/cache") out
    out=$tmp/cache.$m.bin
    case $m in
    off) cmd+=(slow) ;;
    trace) cmd+=(trace "$out") ;;
    flight) cmd+=(flight "$out") ;;
    flightcpu) cmd+=(-cpu 100 flight "$out") ;;
    esac
    "${cmd[@]}" >"$tmp/cache.out" 2>&1 || { cat "$tmp/cache.out" >&2; echo "$prog: ${cmd[*]} failed" >&2; exit 1; }
    sed -nE 's/^slow: requests=([0-9]+) .* p99=([0-9.]+)us .* total=([0-9.]+)ms$/\1 \2 \3/p' \
        "$tmp/cache.out" | awk '{ printf "%.1f %s\n", $1 / ($3 / 1000), $2 }' >>"$tmp/cache.$m.dat"
}

start=$(date +%s)
for ((r = 0; r < rounds; r++)); do
    echo "round $((r + 1))/$rounds ..." >&2
    for ((i = 0; i < ${#modes[@]}; i++)); do
        run_service "${modes[$(((i + r) % ${#modes[@]}))]}"
    done
    for ((i = 0; i < ${#modes[@]}; i++)); do
        run_cache "${modes[$(((i + r) % ${#modes[@]}))]}"
    done
done
echo "hot paths ..." >&2
"$build/tests/bench_hotpath" "$hot_iters" 5 >"$tmp/hotpath.out"
"$build/tests/bench_io" "$io_iters" 5 >"$tmp/io.out"
"$build/examples/gateway" -trace "$tmp/gateway.bin" >/dev/null 2>&1 ||
    { echo "$prog: gateway -trace failed" >&2; exit 1; }
echo "analyzer ..." >&2
CTR_BENCH_EVENTS=$analyze_events CTR_BENCH_REPS=$analyze_reps CTR_BENCH_ONE_TRACE=1 \
    "$root/tests/bench/bench_analyze.sh" "$build" >"$tmp/analyze.out" ||
    { echo "$prog: tests/bench/bench_analyze.sh failed" >&2; exit 1; }
elapsed=$(($(date +%s) - start))

# ------------------------------------------------------------------ tables
cpu=$(sed -nE 's/^model name\s*: (.*)/\1/p' /proc/cpuinfo | head -n 1)
echo "# ctrace always-on cost, $(date -u '+%Y-%m-%d %H:%M UTC'), commit" \
    "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# machine: ${cpu:-?}, $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)," \
    "Linux $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
echo "# $rounds interleaved rounds (modes in rotating order), $elapsed s in all"

# table NAME UNIT-COLUMNS...: one row per mode: median, spread and the
# change against untraced, for each column of $tmp/NAME.MODE.dat.
table() {
    local name=$1 m c med base
    shift
    local heads=("$@")
    printf '| %-29s |' mode
    for c in "${heads[@]}"; do printf ' %-28s |' "$c"; done
    echo
    printf '|%s|' -------------------------------
    for c in "${heads[@]}"; do printf '%s|' ------------------------------; done
    echo
    for m in "${modes[@]}"; do
        printf '| %-29s |' "${label[$m]}"
        for ((c = 1; c <= ${#heads[@]}; c++)); do
            med=$(col "$tmp/$name.$m.dat" "$c" | median)
            base=$(col "$tmp/$name.off.dat" "$c" | median)
            # %-29s: the cell's "±" is two bytes, one column.
            if [[ $m == off ]]; then
                printf ' %-29s |' "$(printf '%.1f %s' "$med" "$(col "$tmp/$name.$m.dat" "$c" | spread)")"
            else
                printf ' %-29s |' "$(printf '%.1f %s (%s)' "$med" \
                    "$(col "$tmp/$name.$m.dat" "$c" | spread)" "$(pct "$med" "$base")")"
            fi
        done
        echo
    done
}

echo
echo "## examples/service: 32 connections, ${duration} s per run${svc_cpus[*]:+, the service on CPU 0 and its load on the others}"
table service "requests/s" "p99 us" "service CPU us per request"
echo
echo "## examples/cache slow: 64 threads x 200 requests"
table cache "requests/s" "p99 us"
echo
echo "## hot paths (bench_hotpath $hot_iters 5, bench_io $io_iters 5: medians of interleaved rounds)"
grep -v '^$' "$tmp/hotpath.out" "$tmp/io.out" | sed -E 's/^[^:]*://'
echo
echo "## bytes per event (ctrace stats of the last round's files)"
printf '| %-10s | %-24s | %-24s |\n' example "on disk (trace_start)" "flight recorder window"
printf '|%s|%s|%s|\n' ------------ -------------------------- --------------------------
per_event() { "$ctrace" stats "$1" | sed -nE 's/^bytes: +([0-9]+) in the file, ([0-9.]+) per event.*/\2 (\1 bytes)/p'; }
for ex in service cache; do
    printf '| %-10s | %-24s | %-24s |\n' "$ex" "$(per_event "$tmp/$ex.trace.bin")" \
        "$(per_event "$tmp/$ex.flight.bin")"
done
printf '| %-10s | %-24s | %-24s |\n' gateway "$(per_event "$tmp/gateway.bin")" -
echo
echo "## the analyzer (tests/bench/bench_analyze.sh, medians of $analyze_reps interleaved runs)"
sed -n '/^# .*; trace: /p; /^|/p' "$tmp/analyze.out" | sed 's/^# .*; trace: /# trace: /'
echo
echo "Medians of $rounds runs; ±: the largest distance from the median, outliers set aside"
echo "(benchstat's way); (+x%): against untraced. Service CPU: utime + stime of the whole"
echo "process (workers and the collector) over the requests served."
