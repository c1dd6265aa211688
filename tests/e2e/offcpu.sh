#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# offcpu.sh - nothing blocked is shown as running: prog-offcpu's sleeper
# blocks 100 ms where no wrapper can see it (its own syscall instruction),
# and its spinners outnumber the CPUs. Held against the kernel's count of
# each thread's CPU time (CPU_TIME records), `ctrace threads` must show, for
# each thread group, running within 5% (or 2 ms a thread) of the CPU time
# the threads measured themselves; the sleeper's hidden wait as off-cpu (its
# end, before the sleeper got a CPU back, may be runnable), with a warning;
# the spinners' preemption as runnable, not off-cpu; `ctrace stats` sums
# the split over the threads. With -sched and without. With -sched, the
# hidden sleeps the collector finds in progress are named (FORMAT.md §4.2),
# the others off-cpu; and a futex wait and a flock made by the program's own
# syscall instruction, each 300 ms, are named by the collector: each in its
# profile under its call's name, at its stack, lasting what the program
# measured (5%); the futex wait's blame goes to main's FUTEX_WAKE. The
# same for a wrapper switched off (CTRACE_TEST_UNWRAP=flock).
# usage: offcpu.sh CTRACE_BINARY PROG_OFFCPU
set -uo pipefail
ctrace=$1
prog=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

# column NAME FILE: column NAME of the `ctrace threads` row of the run's
# workers (the one group that is not "(running at trace start)"), in ns.
column() {
    local k
    k=$(awk -v c="$1" 'NR < 8 && $1 == "threads" { for (i = 1; i <= NF; i++) if ($i == c) print i; exit }' "$2")
    to_ns "$(awk -v k="$k" '$1 == "threads" { h = 1; next }
        h && $1 ~ /^[0-9]+$/ && !/\(running at trace start\)/ { print $k; exit }' "$2")"
}
# near GOT WANT SLACK_NS: GOT within 5% of WANT, or within SLACK_NS.
near() {
    local d=$(($1 > $2 ? $1 - $2 : $2 - $1))
    [ $((d * 20)) -le "$2" ] || [ "$d" -le "$3" ]
}

for mode in plain sched; do
    flags=()
    [ "$mode" = sched ] && flags=(-sched 1)
    for kind in sleeper spinners; do
        "$ctrace" run "${flags[@]}" -o "$tmp/$mode-$kind.bin" -- "$prog" $kind >"$tmp/$mode-$kind.out" 2>&1
        check "$mode: the $kind ran" test $? -eq 0
        "$ctrace" threads "$tmp/$mode-$kind.bin" >"$tmp/$mode-$kind.txt" 2>&1
        check "$mode: ctrace threads of the $kind" test $? -eq 0
        cat "$tmp/$mode-$kind.txt"
    done
    read -r _ blocked sleeper_cpu < <(grep '^sleeper ' "$tmp/$mode-sleeper.out")
    read -r _ spin_cpu spin_wall < <(grep '^spinners ' "$tmp/$mode-spinners.out")
    echo "# measured: sleeper blocked $blocked ns, CPU $sleeper_cpu ns; spinners CPU $spin_cpu ns, wall $spin_wall ns"
    off=$(column off-cpu "$tmp/$mode-sleeper.txt")
    run=$(column running "$tmp/$mode-sleeper.txt")
    q=$(column runnable "$tmp/$mode-sleeper.txt")
    # The wait's end, before the sleeper ran again, was waiting for a CPU
    # (runnable by the kernel's count) on a loaded machine: the hidden wait
    # is off-cpu, or runnable, never running.
    check "$mode: the sleeper's running is its CPU time ($run ns, measured $sleeper_cpu)" \
        near "$run" "$sleeper_cpu" 2000000
    "$ctrace" stats "$tmp/$mode-sleeper.bin" >"$tmp/$mode-stats.txt" 2>&1
    check "$mode: ctrace stats of the sleeper" test $? -eq 0
    soff=$(to_ns "$(sed -n 's/^thread time: .* off-cpu \([^ ]*\) (summed.*/\1/p' "$tmp/$mode-stats.txt")")
    if [ "$mode" = plain ]; then
        check "$mode: the sleeper's hidden wait is off-cpu, at most ($off ns, measured $blocked)" \
            test "$off" -le $((blocked + 2000000))
        check "$mode: ... named so, in part at least ($off ns)" test "$off" -ge $((blocked / 10))
        check "$mode: ... or runnable ($off + $q ns)" test $((off + q)) -ge $((blocked - blocked / 20))
        check "$mode: a warning names the unattributed time" \
            grep -q '^warning: .* was off the CPU (off-cpu)' "$tmp/$mode-sleeper.txt"
        # `ctrace stats` sums the same split over the threads, and warns too.
        check "$mode: stats: the thread time's off-cpu is the hidden wait's ($soff ns)" \
            test "$soff" -ge $((blocked / 10)) -a "$soff" -le $((blocked + 4000000))
        check "$mode: stats: the warning" grep -q '^warning: .* was off the CPU (off-cpu)' "$tmp/$mode-stats.txt"
    else
        # The collector names the hidden sleeps it finds in progress as a
        # round ends (nanosleep: sleep), with their stack; the others are
        # off-cpu, as without -sched: never running.
        sys=$(column syscall "$tmp/$mode-sleeper.txt")
        slp=$(column sleep "$tmp/$mode-sleeper.txt")
        # (The end of a sleep, before the sleeper got a CPU back, may be
        # runnable; so may the preempted parts of its spins, on a loaded
        # machine: runnable bounds the sum from below only.)
        check "$mode: the sleeper's hidden sleeps are waits or off-cpu, at most ($sys + $slp + $off ns, measured $blocked)" \
            test $((sys + slp + off)) -le $((blocked + 3000000))
        check "$mode: ... or runnable ($sys + $slp + $off + $q ns)" \
            test $((sys + slp + off + q)) -ge $((blocked - blocked / 20))
    fi
    srun=$(column running "$tmp/$mode-spinners.txt")
    sq=$(column runnable "$tmp/$mode-spinners.txt")
    soff=$(column off-cpu "$tmp/$mode-spinners.txt")
    check "$mode: the spinners' running is their CPU time ($srun ns, measured $spin_cpu)" \
        near "$srun" "$spin_cpu" 6000000
    check "$mode: the spinners' other time is runnable, not off-cpu ($sq, $soff ns)" \
        test "$soff" -le $((spin_wall / 20 + 6000000))
    check "$mode: the spinners' time adds up to their wall time" \
        near $((srun + sq + soff)) "$spin_wall" 6000000
done

# top_delay PROFILE CALL FUNCTION FILE: the delay in ns of the -top entry
# whose leaf is CALL and whose stack names FUNCTION; empty if none.
top_delay() {
    "$ctrace" -pprof="$1" -top "$4" 2>/dev/null | awk -v call="$2" -v fn="$3" '
        $3 ~ /%$/ { d = ($4 == call) ? $1 : ""; next }
        d != "" && index($0, fn " (") { print d; exit }'
}
"$ctrace" run -sched 1 -o "$tmp/named.bin" -- "$prog" named >"$tmp/named.out" 2>&1
check "named: the program ran" test $? -eq 0
read -r _ futex_ns < <(grep '^futex ' "$tmp/named.out")
read -r _ flock_ns < <(grep '^flock ' "$tmp/named.out")
echo "# measured: futex wait $futex_ns ns, flock $flock_ns ns"
"$ctrace" -pprof=sync -top "$tmp/named.bin"
"$ctrace" -pprof=syscall -top "$tmp/named.bin"
got=$(to_ns "$(top_delay sync futex_wait futex_waiter "$tmp/named.bin")")
check "named: the hidden futex wait is futex_wait at futex_waiter ($got ns)" test "$got" -gt 0
check "named: ... lasting what the program measured ($got ns, measured $futex_ns)" \
    near "$got" "$futex_ns" 2000000
got=$(to_ns "$(top_delay syscall flock flock_waiter "$tmp/named.bin")")
check "named: the hidden flock is flock at flock_waiter ($got ns)" test "$got" -gt 0
check "named: ... lasting what the program measured ($got ns, measured $flock_ns)" \
    near "$got" "$flock_ns" 2000000
"$ctrace" -pprof=sync -top "$tmp/named.bin" | grep -q 'start_thread'
check "named: ... down to start_thread" test $? -eq 0
got=$(to_ns "$(top_delay blame futex_wake named "$tmp/named.bin")")
check "named: blamed on main's traced FUTEX_WAKE ($got ns)" near "$got" "$futex_ns" 2000000

# A wrapper switched off (CTRACE_TEST_UNWRAP=flock): libc's flock, 300 ms,
# is then a call no wrapper sees: off-cpu, never running, without -sched;
# with -sched, flock at flock_waiter, named by the collector.
for mode in plain sched; do
    flags=()
    [ "$mode" = sched ] && flags=(-sched 1)
    CTRACE_TEST_UNWRAP=flock "$ctrace" run "${flags[@]}" -o "$tmp/unwrap-$mode.bin" -- \
        "$prog" libc-flock >"$tmp/unwrap-$mode.out" 2>&1
    check "unwrapped $mode: the program ran" test $? -eq 0
    read -r _ flock_ns < <(grep '^flock ' "$tmp/unwrap-$mode.out")
    "$ctrace" threads "$tmp/unwrap-$mode.bin" >"$tmp/unwrap-$mode.txt" 2>&1
    cat "$tmp/unwrap-$mode.txt"
    "$ctrace" -pprof=syscall -top "$tmp/unwrap-$mode.bin" >"$tmp/unwrap-$mode.top" 2>&1
    cat "$tmp/unwrap-$mode.top"
    run=$(column running "$tmp/unwrap-$mode.txt")
    check "unwrapped $mode: the flock is not running ($run ns, measured $flock_ns)" \
        test "$run" -le $((flock_ns / 10))
    if [ "$mode" = plain ]; then
        off=$(column off-cpu "$tmp/unwrap-$mode.txt")
        q=$(column runnable "$tmp/unwrap-$mode.txt")
        check "unwrapped plain: ... but off-cpu ($off ns)" \
            test "$off" -le $((flock_ns + 2000000)) -a "$off" -ge $((flock_ns / 2))
        check "unwrapped plain: ... or, its end, runnable ($off + $q ns)" \
            test $((off + q)) -ge $((flock_ns - flock_ns / 20))
    else
        got=$(to_ns "$(top_delay syscall flock flock_waiter "$tmp/unwrap-$mode.bin")")
        check "unwrapped sched: ... but flock at flock_waiter ($got ns, measured $flock_ns)" \
            near "$got" "$flock_ns" 2000000
    fi
done
finish
