#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# why.sh - `ctrace why` against ground truth: prog-chain's requests wait for
# a lock whose holder waits, under it, on a condition that an I/O thread
# signals after a read that ends 100 ms after the request asked (long
# enough that a preemption on a loaded machine stays inside the 5%). Each
# request's critical path must name every link (the lock, released by the
# holder at its unlock; the holder's wait, released by io; io's read, where
# the time went), put the read's time on io within 5% of what the program
# measured itself, and attribute the whole latency, once, to parts that sum
# to the latency the program measured (within 5%). Then bad input.
# usage: why.sh CTRACE_BINARY PROG_CHAIN
set -uo pipefail
ctrace=$1
prog=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
src=$(dirname "${BASH_SOURCE[0]}")/../progs/prog-chain.c

# The lines the stacks must name, from the source.
lock_line=$(awk '/^int main\(/ { f = 1 } f && /pthread_mutex_lock\(&table\)/ { print NR; exit }' "$src")
unlock_line=$(awk '/^static void \*holder\(/ { f = 1 }
    f && /pthread_mutex_unlock\(&table\)/ { print NR; exit }' "$src")
read_line=$(awk '/^static void \*io\(/ { f = 1 } f && /read\(pipefd/ { print NR; exit }' "$src")

requests=5
(cd "$tmp" && "$prog" "$tmp/chain.bin" $requests 100 >"$tmp/chain.out" 2>&1)
check "prog-chain ran" test $? -eq 0
check "prog-chain made its requests" test "$(grep -c '^request ' "$tmp/chain.out")" -eq $requests

"$ctrace" why -n $requests "$tmp/chain.bin" >"$tmp/why.txt" 2>&1
check "why: exit 0" test $? -eq 0
cat "$tmp/why.txt"
tid() { sed -nE "s/.*thread ([0-9]+) \($1\).*/\1/p" "$tmp/why.txt" | head -1; }
holder=$(tid holder) io=$(tid io) req=$(tid request)
check "why: every request explained" test "$(grep -c '^task [0-9]* request: ' "$tmp/why.txt")" -eq $requests
check "why: the request's wait is the lock, at main (prog-chain.c:$lock_line)" \
    test "$(grep -cE "behind other threads .*: pthread_mutex_lock at main \(prog-chain\.c:$lock_line\), released by thread $holder \(holder\) at holder \(prog-chain\.c:$unlock_line\)$" "$tmp/why.txt")" -eq $requests
check "why: what dominates is io's read (prog-chain.c:$read_line), behind the lock" \
    test "$(grep -cE "^  dominant: .* behind pthread_mutex_lock at main \(prog-chain\.c:$lock_line\); .* is blocked in read at io \(prog-chain\.c:$read_line\), on thread $io \(io\)$" "$tmp/why.txt")" -eq $requests
check "why: says what the data cannot tell" grep -q '^Uncontended acquisitions are not recorded' \
    "$tmp/why.txt"

"$ctrace" why -n $requests -tsv "$tmp/chain.bin" >"$tmp/why.tsv" 2>&1
check "why -tsv: exit 0" test $? -eq 0
check "why -tsv: a header" grep -q '^# task	thread	state	call	hopped	ns' "$tmp/why.tsv"
check "why -tsv: no part of any path is unknown" test "$(grep -c '	unknown	' "$tmp/why.tsv")" -eq 0
# Per task (in id order, which is the requests' order): the parts' sum, the
# read's part on io, and whether the holder is on the path.
awk -F'\t' -v io="$io" -v holder="$holder" '
    !/^#/ {
        sum[$1] += $6
        if ($2 == io && $3 == "blocked" && $4 == "read" && $5 == 1) rd[$1] += $6
        if ($2 == holder && $5 == 1) h[$1] = 1
        ids[$1] = 1
    }
    END { for (t in ids) print t, sum[t], rd[t] + 0, h[t] + 0 }
' "$tmp/why.tsv" | sort -n >"$tmp/paths"
i=0
while read -r task sum rd hold; do
    read -r _ _ _ latency _ measured_read < <(sed -n "$((i + 1))p" "$tmp/chain.out")
    check "request $i (task $task): the parts sum to its latency ($sum ns, measured $latency)" \
        awk "BEGIN { d = $sum - $latency; if (d < 0) d = -d; exit !(d <= 0.05 * $latency) }"
    check "request $i: io's read on the path ($rd ns, measured $measured_read)" \
        awk "BEGIN { d = $rd - $measured_read; if (d < 0) d = -d; exit !(d <= 0.05 * $measured_read) }"
    check "request $i: the holder on the path" test "$hold" -eq 1
    i=$((i + 1))
done <"$tmp/paths"
check "why -tsv: a path per request" test "$i" -eq $requests

# -pprof=critical: the paths summed as a profile that go tool pprof reads,
# whose delays sum to the tasks' latencies (the -tsv parts' sum), io's read
# the heaviest, with labels for thread, task and state.
"$ctrace" -pprof=critical -o "$tmp/critical.pb.gz" "$tmp/chain.bin"
check "-pprof=critical: exit 0" test $? -eq 0
total=$(awk -F'\t' '!/^#/ { s += $6 } END { print s + 0 }' "$tmp/why.tsv")
if command -v go >/dev/null; then
    go tool pprof -raw "$tmp/critical.pb.gz" >"$tmp/critical.raw" 2>"$tmp/critical.err"
    check "-pprof=critical: go tool pprof reads it" test $? -eq 0
    sum=$(awk '/^Samples:/ { s = 1; next } s && $2 ~ /^[0-9]+:$/ { t += $2 } END { print t + 0 }' \
        "$tmp/critical.raw")
    check "-pprof=critical: its delays sum to the tasks' latencies ($sum ns, paths $total ns)" \
        test "$sum" = "$total"
    check "-pprof=critical: labels thread, task and state" \
        grep -q "state:\[blocked\] task:\[request\] thread:\[$io io\]" "$tmp/critical.raw"
    go tool pprof -top "$tmp/critical.pb.gz" >"$tmp/critical.top" 2>&1
    check "-pprof=critical: io's read is the heaviest leaf" \
        sh -c "grep -E '^ +[0-9.]+m?s +[0-9.]+%' '$tmp/critical.top' | head -1 | grep -qE ' read$'"
else
    echo "skip: go not found (go tool pprof reads -pprof=critical)"
fi
expect "-pprof=critical -top: usage" 2 'takes no -top' -- \
    "$ctrace" -pprof=critical -top "$tmp/chain.bin"
expect "-pprof=critical -task other: said empty" 0 'no task of type other' -- \
    "$ctrace" -pprof=critical -task other -o "$tmp/empty.pb.gz" "$tmp/chain.bin"

# -perfetto -critical: the paths on tracks of their own, which the
# project's Perfetto checker accepts, each naming every link.
checker=$(dirname "${BASH_SOURCE[0]}")/perfetto_check.py
"$ctrace" -perfetto -critical $requests -o "$tmp/chain.pftrace" "$tmp/chain.bin" 2>"$tmp/pf.err"
check "-perfetto -critical: exit 0" test $? -eq 0
check "-perfetto -critical: says where the paths are" grep -q "the critical paths of the $requests slowest tasks" "$tmp/pf.err"
if python3 "$checker" "$tmp/chain.pftrace" >"$tmp/pf.facts" 2>"$tmp/pf.check"; then
    check "-perfetto -critical: a valid trace" true
    check "-perfetto -critical: a track per path" \
        test "$(grep -c '^track_slices critical path [0-9]*: request ' "$tmp/pf.facts")" -eq $requests
    check "-perfetto -critical: io's read on the paths" \
        test "$(awk '/^slice_name io: read / { print $NF }' "$tmp/pf.facts")" -eq $requests
    check "-perfetto -critical: the holder's part" grep -q '^slice_name holder: running ' "$tmp/pf.facts"
    check "-perfetto -critical: the request's own part" grep -q '^slice_name request: ' "$tmp/pf.facts"
elif [ $? -eq 2 ]; then
    echo "skip: protoc not found (perfetto_check.py decodes with it)"
else
    check "-perfetto -critical: a valid trace" false
    cat "$tmp/pf.check"
fi
expect "-perfetto -critical 0: usage" 2 '\-critical wants a number' -- \
    "$ctrace" -perfetto -critical 0 -o "$tmp/x.pftrace" "$tmp/chain.bin"

# -task (or -type), -region and -latmin filter; -n bounds.
expect "why -task request: every request" 0 '^task [0-9]+ request: ' -- \
    "$ctrace" why -task request "$tmp/chain.bin"
expect "why -region nosuch: nothing to explain" 0 '^no task to explain' -- \
    "$ctrace" why -region nosuch "$tmp/chain.bin"
expect "why -type other: nothing to explain" 0 '^no task to explain' -- \
    "$ctrace" why -type other "$tmp/chain.bin"
expect "why -latmin 1s: nothing to explain" 0 '^no task to explain' -- \
    "$ctrace" why -latmin 1s "$tmp/chain.bin"
expect "why -n 1: one task" 0 '^task [0-9]+ request: ' -- "$ctrace" why -n 1 "$tmp/chain.bin"
check "why -n 1: only one" test "$("$ctrace" why -n 1 "$tmp/chain.bin" | grep -c '^task ')" -eq 1

# Bad input: a clear message and a non-zero status.
expect "why without a trace: usage" 2 'why: no trace file given' -- "$ctrace" why
expect "why -n 0: usage" 2 'why: -n wants a number' -- "$ctrace" why -n 0 "$tmp/chain.bin"
expect "why -bogus: usage" 2 'why: unknown flag -bogus' -- "$ctrace" why -bogus "$tmp/chain.bin"
expect "why on a missing file" 1 'nosuch' -- "$ctrace" why "$tmp/nosuch.bin"
head -c 100 "$tmp/chain.bin" >"$tmp/cut.bin"
"$ctrace" why "$tmp/cut.bin" >/dev/null 2>"$tmp/cut.err"
status=$?
check "why on a trace cut short: not 0 ($status), said" \
    sh -c "test $status -ne 0 && test -s '$tmp/cut.err'"

finish
