#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# killed.sh - a program killed by a signal (prog-killed: SIGINT as Ctrl-C
# sends it, SIGTERM) while a thread is blocked in read(): it dies by that
# signal, with the status it has untraced, and its trace, cut short where
# the signal struck (no END), still shows the reader blocked in read at
# the end (ctrace threads: the leak finder), from the PENDING records of
# its last generation. A normal exit with the reader blocked shows it once.
# usage: killed.sh CTRACE_BINARY PROG_KILLED
set -uo pipefail
ctrace=$1
prog=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

# Both ways through a function, so that the shell's own word on a death
# by signal ("Terminated") lands in both outputs alike.
untraced() {
    "$@"
}

traced() {
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$ctrace" run "$@"
}

for how in INT TERM exit; do
    untraced "$prog" "$how" >"$tmp/$how.ref.out" 2>&1
    echo $? >"$tmp/$how.ref.status"
    traced -o "$tmp/$how.bin" -flush-ms 20 -- "$prog" "$how" >"$tmp/$how.out" 2>&1
    echo $? >"$tmp/$how.status"
    check "$how: status as untraced ($(cat "$tmp/$how.ref.status"))" \
        cmp -s "$tmp/$how.ref.status" "$tmp/$how.status"
    check "$how: output as untraced" cmp -s "$tmp/$how.ref.out" "$tmp/$how.out"
    "$ctrace" stats "$tmp/$how.bin" >"$tmp/$how.stats" 2>&1
    "$ctrace" threads "$tmp/$how.bin" >"$tmp/$how.threads" 2>&1
    check "$how: ctrace threads: the reader is blocked in read at the end" \
        sh -c "grep -A1 -E '^ +1  read, blocked .*\(reader\)' '$tmp/$how.threads' | grep -q reader_main"
    check "$how: only once" test "$(grep -c '  read, blocked' "$tmp/$how.threads")" -eq 1
done
check "INT: died by SIGINT" grep -qx 130 "$tmp/INT.status"
check "TERM: died by SIGTERM" grep -qx 143 "$tmp/TERM.status"
check "INT: the trace is cut short" grep -q 'incomplete' "$tmp/INT.stats"
check "TERM: the trace is cut short" grep -q 'incomplete' "$tmp/TERM.stats"
check "exit: the trace is whole" grep -q '(complete)' "$tmp/exit.stats"

[ "$fail" -eq 0 ] || for f in "$tmp"/*.threads "$tmp"/*.stats "$tmp"/*.out; do
    echo "--- $f"; head -30 "$f"; done
finish
