#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_epoll.sh - what tracing costs an event-loop server's throughput:
# prog-epoll's server (2 worker threads, non-blocking sockets, epoll) under a
# closed-loop load over loopback (CONNS blocking client connections in another
# process, each sending a 64-byte request and waiting for its echo), untraced
# and under `ctrace run`, in interleaved pairs; prints each run's throughput
# and the server's CPU time per request (user + system, what the server says
# it used: steadier than throughput on a shared machine), and their medians.
# Never passes or fails on timing.
# usage: bench_epoll.sh CTRACE_BINARY PROG_EPOLL [PAIRS (default 8)] [MS (default 2000)]
#        [CONNS (default 4)] [-- extra `ctrace run` flags]
set -euo pipefail
ctrace=$1 prog=$2 pairs=${3:-8} ms=${4:-2000} conns=${5:-4}
shift $(( $# < 5 ? $# : 5 ))
[[ ${1:-} == -- ]] && shift
extra=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# With two CPUs or more, the server (and the tracer's collector with it) and
# the load each get their own: fewer scheduling accidents between runs.
pin_server="" pin_client=""
if command -v taskset >/dev/null && [[ $(nproc) -ge 2 ]]; then
    pin_server="taskset -c 0" pin_client="taskset -c 1"
fi

# one_run traced|untraced: starts the server, loads it, prints
# "requests/s cpu-us/request".
one_run() {
    local how=$1 port rate cpu
    mkfifo "$tmp/in"
    if [[ $how == traced ]]; then
        $pin_server "$ctrace" run -o "$tmp/t.bin" "${extra[@]}" -- "$prog" serve 2 <"$tmp/in" >"$tmp/out" &
    else
        $pin_server "$prog" serve 2 <"$tmp/in" >"$tmp/out" &
    fi
    local pid=$!
    exec {keep}>"$tmp/in" # the server's stdin: open until the run ends
    until [[ -s $tmp/out ]]; do sleep 0.01; done
    port=$(head -1 "$tmp/out")
    rate=$($pin_client "$prog" load "$port" "$conns" "$ms")
    exec {keep}>&-
    wait "$pid"
    cpu=$(sed -n 2p "$tmp/out")
    rm -f "$tmp/in" "$tmp/out"
    echo "$rate $(awk "BEGIN {printf \"%.2f\", $cpu / ($rate * $ms / 1000)}")"
}

# shellcheck source=tests/bench/stats.sh
source "$(dirname "${BASH_SOURCE[0]}")/stats.sh"

: >"$tmp/ur"; : >"$tmp/tr"; : >"$tmp/uc"; : >"$tmp/tc"
echo "epoll echo server, $conns connections, ${ms} ms per run, $pairs interleaved pairs"
printf "  %6s %12s %12s %7s %14s %14s %7s\n" pair "untraced/s" "traced/s" ratio \
    "untraced us/req" "traced us/req" ratio
ratio() { awk "BEGIN {printf \"%.3f\", $1 / $2}"; }
for i in $(seq 1 "$pairs"); do
    read -r ur uc < <(one_run untraced)
    read -r tr tc < <(one_run traced)
    echo "$ur" >>"$tmp/ur"; echo "$tr" >>"$tmp/tr"; echo "$uc" >>"$tmp/uc"; echo "$tc" >>"$tmp/tc"
    printf "  %6d %12s %12s %7s %14s %14s %7s\n" "$i" "$ur" "$tr" "$(ratio "$tr" "$ur")" \
        "$uc" "$tc" "$(ratio "$tc" "$uc")"
done
mur=$(median <"$tmp/ur"); mtr=$(median <"$tmp/tr"); muc=$(median <"$tmp/uc"); mtc=$(median <"$tmp/tc")
printf "  %6s %12s %12s %7s %14s %14s %7s\n" median "$mur" "$mtr" "$(ratio "$mtr" "$mur")" \
    "$muc" "$mtc" "$(ratio "$mtc" "$muc")"
