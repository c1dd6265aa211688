#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cpu.sh - CPU samples through the CLI, on the synthetic sampled trace of
# tests/progs/cputrace.h (its answers are there): `ctrace stats` names the source,
# rate and losses; -pprof=cpu is Go's CPU profile (read back by
# `go tool pprof -raw` when go is there), its -task/-region/-latmin filters
# keep the samples taken inside; `ctrace tasks` and `ctrace threads` show
# the CPU; the Perfetto export holds the samples; an unsampled trace gives
# a clear error for -pprof=cpu and its stats print nothing about samples.
# usage: cpu.sh CTRACE_BINARY CPU_TRACE_GEN_BINARY [PERFETTO_CHECK_PY]
set -uo pipefail
ctrace=$1 gen=$2 pcheck=${3:-}
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

"$gen" "$tmp/timer.bin" timer 3 || { echo "cpu-trace-gen failed"; exit 1; }
"$gen" "$tmp/perf.bin" perf || { echo "cpu-trace-gen failed"; exit 1; }
"$gen" "$tmp/none.bin" none || { echo "cpu-trace-gen failed"; exit 1; }

# stats
expect "stats: timer" 0 "^cpu samples: +37 \(timer, 100 Hz, 3 lost\)$" -- "$ctrace" stats "$tmp/timer.bin"
expect "stats: loss warned" 0 "3 CPU samples lost .*undercounts" -- "$ctrace" stats "$tmp/timer.bin"
expect "stats: perf" 0 "^cpu samples: +37 \(perf_event, 100 Hz, 0 lost\)$" -- "$ctrace" stats "$tmp/perf.bin"
check "stats: perf, no loss warned" bash -c "! '$ctrace' stats '$tmp/perf.bin' | grep -q 'samples lost'"
check "stats: unsampled says nothing of samples" \
    bash -c "! '$ctrace' stats '$tmp/none.bin' | grep -qi 'cpu.sample'"

# -top: "cpu profile (FILTER): TOTAL of CPU in N samples"
for src in timer perf; do
    t=$tmp/$src.bin
    expect "$src: top" 0 "^cpu profile: 380.0ms of CPU in 37 samples, 4 distinct" -- \
        "$ctrace" -pprof=cpu -top "$t"
    expect "$src: top names the code" 0 "150.0ms +15 +39.5%  cpu_regcomp \(.*cputrace.c:[0-9]+\)" -- \
        "$ctrace" -pprof=cpu -top "$t"
    expect "$src: -task" 0 "^cpu profile \(tasks of type request\): 280.0ms of CPU in 27 samples" -- \
        "$ctrace" -pprof=cpu -top -task request "$t"
    expect "$src: -latmin" 0 "\): 260.0ms of CPU in 25 samples" -- \
        "$ctrace" -pprof=cpu -top -latmin 100ms "$t"
    expect "$src: -region" 0 "\): 150.0ms of CPU in 15 samples, 1 distinct" -- \
        "$ctrace" -pprof=cpu -top -region parse "$t"
    expect "$src: -region -latmin" 0 "\): 110.0ms of CPU in 10 samples, 1 distinct" -- \
        "$ctrace" -pprof=cpu -top -region hash -latmin 100ms "$t"
    expect "$src: -j 1 the same" 0 "\): 280.0ms of CPU in 27 samples" -- \
        "$ctrace" -pprof=cpu -top -j 1 -task request "$t"
    expect "$src: from stdin" 0 "\): 280.0ms of CPU in 27 samples" -- \
        bash -c "'$ctrace' -pprof=cpu -top -task request - < '$t'"
done

# The profile as Go reads it: the sample and period types, the period, and
# the samples with their values and no synthetic leaf.
"$ctrace" -pprof=cpu -o "$tmp/cpu.pb.gz" "$tmp/timer.bin"
check "profile written" test -s "$tmp/cpu.pb.gz"
"$ctrace" -pprof=cpu -task request -o "$tmp/cpu-task.pb.gz" "$tmp/perf.bin"
if command -v go >/dev/null; then
    raw=$(go tool pprof -raw -symbolize=none "$tmp/cpu.pb.gz" 2>&1)
    check "go: period type" grep -qx "PeriodType: cpu nanoseconds" <<<"$raw"
    check "go: period" grep -qx "Period: 10000000" <<<"$raw"
    check "go: sample types" grep -qx "samples/count cpu/nanoseconds" <<<"$raw"
    check "go: regcomp's samples" grep -qE "^ +15 +150000000: " <<<"$raw"
    check "go: the double period" grep -qE "^ +12 +130000000: " <<<"$raw"
    check "go: leaf is the code" bash -c "go tool pprof -top -symbolize=none -sample_index=cpu \
        '$tmp/cpu.pb.gz' 2>&1 | grep -qE '150ms +39.47% .* cpu_regcomp$'"
    raw=$(go tool pprof -raw -symbolize=none "$tmp/cpu-task.pb.gz" 2>&1)
    total=$(awk '/^Samples:/{s=1;next} /^Locations/{s=0} s && /:/{n+=$1; c+=$2} END{print n, c}' <<<"$raw")
    check "go: -task keeps 27 samples, 280ms" test "$total" = "27 280000000"
else
    echo "go not found: the profile is not read back by Go"
fi

# ctrace tasks: the functions that ran while working for each slow task.
for src in timer perf; do
    t=$tmp/$src.bin
    expect "$src: tasks, task 1's cpu" 0 \
        "^    cpu      260.0ms in 25 samples: cpu_regcomp 58% \(cputrace.c:[0-9]+\), cpu_hash 42% \(cputrace.c:[0-9]+\)$" -- \
        "$ctrace" tasks "$t"
    expect "$src: tasks, task 2's cpu" 0 "^    cpu      20.0ms in 2 samples: cpu_hash 100% " -- \
        "$ctrace" tasks "$t"
done
check "unsampled: tasks has no cpu line" bash -c "! '$ctrace' tasks '$tmp/none.bin' | grep -q '^    cpu '"

# ctrace threads: the CPU per start function, from the samples.
for src in timer perf; do
    expect "$src: threads' cpu column" 0 "^ *threads +running .* sleep +cpu  start function$" -- \
        "$ctrace" threads "$tmp/$src.bin"
    expect "$src: workers' cpu" 0 "^ +2 .* 360.0ms  cpu_worker \(" -- "$ctrace" threads "$tmp/$src.bin"
    expect "$src: main's cpu" 0 "^ +1 .* 20.0ms  \(running at trace start\)" -- \
        "$ctrace" threads "$tmp/$src.bin"
done
check "unsampled: threads has no cpu column" bash -c "! '$ctrace' threads '$tmp/none.bin' | grep -q ' cpu '"

# Perfetto: every sample an instant on its thread's track, with its
# callstack interned; perfetto_check.py validates the whole file.
if [ -n "$pcheck" ] && command -v protoc >/dev/null; then
    for src in timer perf; do
        "$ctrace" -perfetto -o "$tmp/$src.pftrace" "$tmp/$src.bin"
        expect "$src: perfetto samples" 0 "^slice_name cpu sample 37$" -- \
            python3 "$pcheck" "$tmp/$src.pftrace"
    done
else
    echo "protoc or perfetto_check.py missing: the Perfetto export is not checked"
fi

# No samples: an error that says how to record them, and no output file.
expect "unsampled: -pprof=cpu" 1 "the trace has no CPU samples: record it with .ctrace run -cpu HZ. or trace_options.cpu_hz" -- \
    "$ctrace" -pprof=cpu -o "$tmp/none.pb.gz" "$tmp/none.bin"
check "unsampled: no profile left" test ! -e "$tmp/none.pb.gz"
expect "unsampled: -top" 1 "has no CPU samples" -- "$ctrace" -pprof=cpu -top "$tmp/none.bin"
expect "unsampled: sync still works" 0 "sync profile: no samples" -- \
    "$ctrace" -pprof=sync -top "$tmp/none.bin"

finish
