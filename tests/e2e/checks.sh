# SPDX-License-Identifier: MIT
# checks.sh - sourced by the shell tests: a temporary directory ($tmp,
# removed at exit), and counting checks (a command's success, or its exit
# status and output) with the "N passed, N failed" line at the end that test
# runners read.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# check NAME COMMAND...: passes when the command succeeds.
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}

# expect NAME STATUS PATTERN -- command...: the command exits STATUS and its
# stdout+stderr match PATTERN (grep -E).
expect() {
    local name=$1 want=$2 pattern=$3; shift 4
    local out status
    out=$("$@" 2>&1); status=$?
    if [ "$status" -eq "$want" ] && grep -qE -- "$pattern" <<<"$out"; then
        ok "$name"
    else
        bad "$name: exit $status (want $want), output:"; echo "$out" | head -20
    fi
}

# wait_match PATTERN FILE [TENTHS]: until FILE has a line matching PATTERN
# (grep -E), for at most TENTHS tenths of a second (default 100).
wait_match() {
    for _ in $(seq "${3:-100}"); do
        grep -qE -- "$1" "$2" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# channel PID: until PID answers `ctrace ctl PID status` (30 s at most),
# with the CLI the sourcing script keeps in $ctrace.
channel() {
    for _ in $(seq 300); do
        "$ctrace" ctl "$1" status >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

# finish: the closing line; its status is whether every check passed.
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}

# The line of the cache example's bug, the lock taken for a whole miss
# (cache_get_slow's first pthread_mutex_lock), read from the source, so that
# tests name it wherever edits move it.
cache_lock_line=$(awk '/cache_get_slow\(/ { inside = 1 }
    inside && /pthread_mutex_lock\(&cache_lock\)/ { print NR; exit }' \
    "$(dirname "${BASH_SOURCE[0]}")/../../examples/cache/cache.c")

# to_ns VALUE: ctrace's durations (0ns, 957.8us, 150.6ms, 1.05s) in ns.
to_ns() {
    awk -v v="$1" 'BEGIN {
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        m = u == "ns" ? 1 : u == "us" ? 1e3 : u == "ms" ? 1e6 : u == "s" ? 1e9 : -1
        printf "%.0f\n", m < 0 ? -1 : n * m }'
}
