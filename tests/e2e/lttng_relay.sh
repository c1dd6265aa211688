#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lttng_relay.sh - a fleet through LTTng's relay daemon, on loopback: two
# traced processes (the cache example and the gateway example, LTTng only)
# stream one session to an lttng-relayd of the test's own; ctrace reads what
# the relay daemon wrote:
#   - without -pid it refuses to mix them, and names both pids;
#   - -pid PID gives each process's own profile (the cache's lock line, the
#     gateway's requests);
#   - -pid all gives the merged one: its samples are the sum of the two.
# usage: lttng_relay.sh CTRACE CACHE GATEWAY
set -uo pipefail
ctrace=$1 cache=$2 gateway=$3
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/checks.sh"
source "$here/../tools/lttng_daemon.sh"
session=ctrace-fleet-$$
relayd=
trap 'lttng destroy "$session" >/dev/null 2>&1; [[ -n $relayd ]] && kill $relayd 2>/dev/null;
      wait 2>/dev/null; lttng_daemon_stop; rm -rf "$tmp"' EXIT
if ! lttng_daemon_start; then
    echo "FAIL no LTTng session daemon answers, and lttng-sessiond --daemonize --no-kernel failed"
    exit 1
fi

# Three free ports for the relay daemon (control, data, live).
read -r ctl data live < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
lttng-relayd -C "tcp://127.0.0.1:$ctl" -D "tcp://127.0.0.1:$data" -L "tcp://127.0.0.1:$live" \
    -o "$tmp/relay" >"$tmp/relayd.log" 2>&1 &
relayd=$!
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$ctl") 2>/dev/null && break
    sleep 0.1
done

lttng_session_start "$session" --set-url="net://127.0.0.1:$ctl:$data" 4M 8 1
check "session streamed to the relay daemon" test $? -eq 0
"$ctrace" run -lttng -- "$cache" slow >/dev/null & p1=$!
"$ctrace" run -lttng -- "$gateway" -seconds 1 >/dev/null & p2=$!
wait $p1 $p2
lttng_session_stop "$session" >/dev/null
lttng destroy "$session" >/dev/null
trace=$(find "$tmp/relay" -name metadata -printf '%h\n' | head -1)
check "the relay daemon wrote the session ($trace)" test -n "$trace"
dir=$tmp/relay

expect "without -pid: refused, the pids named" 1 \
    "several processes \(pids [0-9]+ and [0-9]+ at least\)" -- "$ctrace" stats "$dir"

samples() { sed -nE '1s/.* in ([0-9]+) samples.*/\1/p' "$1"; }
"$ctrace" -pprof=sync -top -n 20 -pid "$p1" "$dir" >"$tmp/p1.top" 2>"$tmp/p1.err"
"$ctrace" -pprof=sync -top -n 20 -pid "$p2" "$dir" >"$tmp/p2.top" 2>"$tmp/p2.err"
"$ctrace" -pprof=sync -top -n 40 -pid all "$dir" >"$tmp/all.top" 2>"$tmp/all.err"
check "-pid (cache): the lock line on top" \
    grep -qE "^ {20,}cache_get_slow \(.*cache\.c:$cache_lock_line\)" <(sed -n 5p "$tmp/p1.top")
check "-pid (gateway): its own waits, none of the cache's" \
    bash -c "grep -q gateway '$tmp/p2.top' && ! grep -q cache_get_slow '$tmp/p2.top'"
n1=$(samples "$tmp/p1.top") n2=$(samples "$tmp/p2.top") na=$(samples "$tmp/all.top")
check "-pid all: the samples of both ($n1 + $n2 = $na)" test -n "$na" -a "$((n1 + n2))" = "$na"
check "-pid all: both programs' stacks" \
    bash -c "grep -q cache_get_slow '$tmp/all.top' && grep -q gateway '$tmp/all.top'"
expect "-pid all: both processes' threads" 0 "^threads: +[0-9]+" -- "$ctrace" stats -pid all "$dir"
t1=$("$ctrace" stats -pid "$p1" "$dir" | sed -nE 's/^threads: +([0-9]+).*/\1/p')
t2=$("$ctrace" stats -pid "$p2" "$dir" | sed -nE 's/^threads: +([0-9]+).*/\1/p')
ta=$("$ctrace" stats -pid all "$dir" | sed -nE 's/^threads: +([0-9]+).*/\1/p')
check "-pid all: threads add up ($t1 + $t2 = $ta)" test "$((t1 + t2))" = "$ta"
finish
