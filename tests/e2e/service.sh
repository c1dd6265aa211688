#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# service.sh - end to end: examples/service (issue 16: a real service under
# load) with service-load, its closed-loop load generator, which checks
# every answer exactly. Each run starts the service on a free port, loads it
# for a second with 16 connections, and stops it with SIGTERM; every run
# must answer everything right (service-load exits 0, errors=0) and stop
# cleanly, its served= equal to the requests the load made.
#   - untraced;
#   - traced (-trace): the trace's "request" tasks (ctrace tasks -tsv) as
#     many as served; the top of the sync profile is the lookups' wait for
#     the table lock, in table_lookup at its lock line; the blame profile
#     names the write path, table_update's unlock, among its top two stacks
#     (the update holds the lock across its 300 us call; glibc wakes one
#     waiter per unlock, so the lookups queued behind an update are mostly
#     released by each other and blamed on table_lookup's unlock);
#   - with the flight recorder (-flight -flight-dump): the dump is a trace
#     ctrace stats reads, with request tasks in it;
#   - bad requests (service-load -bad): each malformed one refused with its
#     4xx, clients leaving mid-request dropped, the service still serving
#     after them; a lookup's answer as Python's json module reads it; loads
#     with other key counts and more updates; served= and bad= as counted.
# And the usage errors of both programs exit 2.
# usage: service.sh SERVICE_BINARY LOAD_BINARY CTRACE_BINARY
set -uo pipefail
service=$1 load=$2 ctrace=$3
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
src=$(dirname "${BASH_SOURCE[0]}")/../../examples/service/service.c

# The lines of the table lock in the read path and the write path, read
# from the source so that edits may move them.
lookup_lock=$(awk '/static void table_lookup\(/ { f = 1 }
    f && /pthread_mutex_lock\(&table_lock\)/ { print NR; exit }' "$src")
update_unlock=$(awk '/static uint64_t table_update\(/ { f = 1 }
    f && /pthread_mutex_unlock\(&table_lock\)/ { print NR; exit }' "$src")

# field NAME LINE: the value of NAME=VALUE in a result line.
field() { sed -nE "s/(^|.* )$1=([0-9.]+).*/\2/p" <<<"$2"; }

# start NAME ARGS...: starts the service with ARGS in the background; sets
# pid, and port once it says it listens (empty if it does not within 10 s).
start() {
    local name=$1
    shift
    out=$tmp/$name.out
    "$service" "$@" >"$out" 2>"$tmp/$name.err" &
    pid=$! port=
    for _ in $(seq 100); do
        port=$(sed -nE 's/^listening 127\.0\.0\.1:([0-9]+)$/\1/p' "$out")
        if [ -n "$port" ] || ! kill -0 "$pid" 2>/dev/null; then break; fi
        sleep 0.1
    done
    check "$name: says where it listens" test -n "$port"
}

# run_load NAME ARGS...: service-load -port $port ARGS; sets line, status
# and the line's fields.
run_load() {
    local name=$1
    shift
    line=$(timeout 120 "$load" -port "${port:-1}" "$@"); status=$?
    echo "$name: service-load $*: $line"
    requests=$(field requests "$line") errors=$(field errors "$line")
    check "$name: service-load exits 0" test "$status" -eq 0
    check "$name: requests made" test "${requests:-0}" -gt 0
    check "$name: every answer right" test "${errors:-x}" = 0
}

# stop NAME: SIGTERM, then waits (30 s at most, then SIGKILL); sets status,
# served and bad from its last line.
stop() {
    local name=$1 last
    kill -TERM "$pid" 2>/dev/null
    timeout 30 tail --pid="$pid" -f /dev/null || kill -KILL "$pid" 2>/dev/null
    wait "$pid"; status=$?
    last=$(tail -n 1 "$out")
    echo "$name: service: $last"
    served=$(field served "$last") bad=$(field bad "$last")
    check "$name: the service exits 0 on SIGTERM" test "$status" -eq 0
    check "$name: its stderr is empty" test ! -s "$tmp/$name.err"
    [ -s "$tmp/$name.err" ] && head -5 "$tmp/$name.err"
}

# run NAME ARGS...: the service with ARGS under a second of load.
run() {
    local name=$1
    start "$@"
    run_load "$name" -conns 16 -duration 1
    stop "$name"
    check "$name: served= the requests made" test "${served:-x}" = "$requests"
    check "$name: nothing refused" test "${bad:-x}" = 0
}

echo "== untraced =="
run plain

echo "== traced =="
run traced -trace "$tmp/trace.bin"
tsv=$("$ctrace" tasks -tsv "$tmp/trace.bin"); echo "$tsv"
tasks=$(awk -F'\t' '!/^#/ && $1 == "request" { print $2 }' <<<"$tsv")
check "traced: one request task per request served" test "${tasks:-x}" = "$served"
top=$("$ctrace" -pprof=sync -top -n 1 "$tmp/trace.bin"); echo "$top"
check "traced: sync top is a wait in pthread_mutex_lock" \
    grep -qE '^ +[0-9.]+(ns|us|ms|s) +[0-9]+ +[0-9.]+%  pthread_mutex_lock$' <<<"$top"
check "... in table_lookup, at its lock (service.c:$lookup_lock)" \
    grep -qE "^ +table_lookup \(.*service\.c:$lookup_lock\)$" <<<"$top"
blame=$("$ctrace" -pprof=blame -top -n 2 "$tmp/trace.bin"); echo "$blame"
check "traced: blame's top two name table_update's unlock (service.c:$update_unlock)" \
    grep -qE "^ +table_update \(.*service\.c:$update_unlock\)$" <<<"$blame"

# Why the slowest were slow: their critical paths cross to the threads
# that held the table, and reach table_update's sleep under the lock.
# The 20 slowest: on a loaded machine the very slowest may be requests
# whose thread lost its CPU (shown as running without -sched), not waits.
why=$("$ctrace" why -n 20 "$tmp/trace.bin"); status=$?
echo "$why" | head -40
check "traced: ctrace why exits 0" test "$status" -eq 0
check "traced: ctrace why explains the 20 slowest requests" \
    test "$(grep -c '^task [0-9]* request: ' <<<"$why")" -eq 20
check "traced: their paths leave the request's thread at the table's lock" \
    grep -qE "behind other threads .*: pthread_mutex_lock at table_lookup \(service\.c:$lookup_lock\)" <<<"$why"
check "traced: and reach table_update's sleep under the lock" \
    grep -qE 'blocked in clock_nanosleep at .* in table_update \(service\.c:[0-9]+\)' <<<"$why"

echo "== flight recorder =="
run flight -flight -flight-dump "$tmp/flight.bin"
expect "flight: ctrace stats reads the dump" 0 '^events: +[0-9]+' -- "$ctrace" stats "$tmp/flight.bin"
tasks=$("$ctrace" tasks -tsv "$tmp/flight.bin" | awk -F'\t' '!/^#/ && $1 == "request" { print $2 }')
echo "flight: the dump holds ${tasks:-no} request tasks of $served"
check "flight: the dump holds request tasks" test "${tasks:-0}" -gt 0
expect "flight: ctrace why reads the dump" 0 '^task [0-9]+ request: ' -- \
    "$ctrace" why -n 1 "$tmp/flight.bin"

echo "== bad requests =="
start bad
cases=$(timeout 120 "$load" -port "${port:-1}" -bad); status=$?
echo "bad: service-load -bad: $cases"
check "bad: service-load -bad exits 0" test "$status" -eq 0
check "bad: every case passed" test "$(field failed "$cases")" = 0 -a -n "$(field cases "$cases")"
# The answer as another reader sees it: bytes from bash, JSON from Python's
# json module, values from the definition in proto.h (svc_value: splitmix64's
# finalizer of key ^ 0x5eed), so that a fault shared by service-load's reader
# and the service's writer (both proto.c) shows too.
answer=$(exec 3<>"/dev/tcp/127.0.0.1/${port:-1}" &&
    printf 'POST /lookup HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 14\r\n\r\n%s' \
        '{"keys":[1,2]}' >&3 && timeout 10 cat <&3)
check "bad: a lookup's answer is right as Python reads it" python3 -c '
import json, sys
head, _, body = sys.argv[1].partition("\r\n\r\n")
lines = head.split("\r\n")
fields = dict(l.split(": ", 1) for l in lines[1:])
def mix(x):
    m = (1 << 64) - 1
    x ^= x >> 30; x = x * 0xbf58476d1ce4e5b9 & m
    x ^= x >> 27; x = x * 0x94d049bb133111eb & m
    return x ^ x >> 31
want = {"items": [{"key": k, "value": mix(k ^ 0x5eed)} for k in [1, 2] * 10]}
sys.exit(not (lines[0] == "HTTP/1.1 200 OK" and fields["Content-Type"] == "application/json"
              and int(fields["Content-Length"]) == len(body.encode())
              and fields.get("Connection") == "close" and json.loads(body) == want))
' "$answer"
run_load bad -conns 4 -duration 0.3 -keys 7 -write-percent 20
load1=${requests:-0}
run_load bad -conns 4 -duration 0.3 -keys 64
load2=${requests:-0}
stop bad
check "bad: served= the 200s service-load counted, and Python's" \
    test "${served:-x}" = "$(($(field good "$cases") + 1 + load1 + load2))"
check "bad: bad= the 4xx service-load counted" test "${bad:-x}" = "$(field bad "$cases")"

echo "== usage =="
expect "service: an unknown flag exits 2" 2 "unknown argument '-bogus'" -- "$service" -bogus
expect "service: -flight-dump without -flight exits 2" 2 'need -flight' -- \
    "$service" -flight-dump "$tmp/x.bin"
expect "service-load: no -port exits 2" 2 '-port is required' -- "$load"
expect "service: -duration stops it by itself" 0 '^served=0 bad=0$' -- "$service" -duration 0.2

finish
