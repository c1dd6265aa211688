#!/usr/bin/env bash
# bench_epoll.sh - what tracing costs an event-loop server's throughput:
# prog-epoll's server (2 worker threads, non-blocking sockets, epoll) under a
# closed-loop load over loopback (CONNS blocking client connections in another
# process, each sending a 64-byte request and waiting for its echo), untraced
# and under `ctrace run`, in interleaved pairs; prints each run and the
# medians. Never passes or fails on timing.
# usage: bench_epoll.sh CTRACE_BINARY PROG_EPOLL [PAIRS (default 8)] [MS (default 2000)]
#        [CONNS (default 4)] [-- extra `ctrace run` flags]
set -euo pipefail
ctrace=$1 prog=$2 pairs=${3:-8} ms=${4:-2000} conns=${5:-4}
shift $(( $# < 5 ? $# : 5 ))
[[ ${1:-} == -- ]] && shift
extra=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one_run traced|untraced: starts the server, loads it, prints requests/s.
one_run() {
    local how=$1 port rate
    mkfifo "$tmp/in"
    if [[ $how == traced ]]; then
        "$ctrace" run -o "$tmp/t.bin" "${extra[@]}" -- "$prog" serve 2 <"$tmp/in" >"$tmp/port" &
    else
        "$prog" serve 2 <"$tmp/in" >"$tmp/port" &
    fi
    local pid=$!
    exec {keep}>"$tmp/in" # the server's stdin: open until the run ends
    until [[ -s $tmp/port ]]; do sleep 0.01; done
    port=$(cat "$tmp/port")
    rate=$("$prog" load "$port" "$conns" "$ms")
    exec {keep}>&-
    wait "$pid"
    rm -f "$tmp/in" "$tmp/port"
    echo "$rate"
}

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

: >"$tmp/untraced"; : >"$tmp/traced"
echo "epoll echo server, $conns connections, ${ms} ms per run, $pairs interleaved pairs"
printf "  %4s %14s %14s %8s\n" pair untraced traced ratio
for i in $(seq 1 "$pairs"); do
    u=$(one_run untraced); t=$(one_run traced)
    echo "$u" >>"$tmp/untraced"; echo "$t" >>"$tmp/traced"
    printf "  %4d %14s %14s %8.3f\n" "$i" "$u" "$t" "$(awk "BEGIN {print $t / $u}")"
done
mu=$(median <"$tmp/untraced"); mt=$(median <"$tmp/traced")
printf "  %4s %14s %14s %8.3f   (requests/s, medians; throughput change %+.1f%%)\n" median "$mu" "$mt" \
    "$(awk "BEGIN {print $mt / $mu}")" "$(awk "BEGIN {print ($mt / $mu - 1) * 100}")"
