#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# daemon.sh - `ctrace run` on a daemon (prog-daemon: daemon(3) forks, the
# parent exits at once, the child does the work and exits):
#   - with "%p" in the output name the forked child traces into its own
#     file: its threads (named, by start function), its contended mutex in
#     the sync profile, its read() on a pipe in the syscall profile, whole;
#   - without "%p", ctrace run says on stderr that forked processes are not
#     traced, and how to trace them;
#   - either way the daemon does its work as it does untraced.
# usage: daemon.sh CTRACE_BINARY PROG_DAEMON
set -uo pipefail
ctrace=$1
prog=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

traced() {
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$ctrace" run "$@"
}

# finished DIR: waits (at most 60 s) until the daemon that works for DIR
# has written DIR/done and exited (its trace is flushed at its exit).
finished() {
    local dir=$1 pid
    for _ in $(seq 600); do
        if [ -s "$dir/done" ]; then
            pid=$(cat "$dir/done")
            kill -0 "$pid" 2>/dev/null || return 0
        fi
        sleep 0.1
    done
    return 1
}

# Untraced: what the daemon does.
mkdir "$tmp/ref"
"$prog" "$tmp/ref" >"$tmp/ref.out" 2>&1
echo $? >"$tmp/ref.status"
check "untraced: the daemon finished" finished "$tmp/ref"

# Traced with %p: each process its own file.
mkdir "$tmp/p"
traced -o "$tmp/p/trace.%p.bin" -- "$prog" "$tmp/p" >"$tmp/p.out" 2>&1
echo $? >"$tmp/p.status"
check "%p: the daemon finished" finished "$tmp/p"
check "%p: status as untraced" cmp -s "$tmp/ref.status" "$tmp/p.status"
check "%p: output as untraced" cmp -s "$tmp/ref.out" "$tmp/p.out"
child=$(cat "$tmp/p/done" 2>/dev/null)
t="$tmp/p/trace.$child.bin"
check "%p: the daemon has a trace of its own" test -s "$t"
check "%p: the daemon's trace is whole" sh -c "'$ctrace' stats '$t' 2>&1 | head -1 | grep -q '(complete)'"
check "%p: the daemon's trace is its pid's" sh -c "'$ctrace' stats '$t' | grep -q '(pid $child)'"
"$ctrace" threads "$t" >"$tmp/threads.txt" 2>&1
if [ "${CTRACE_SANITIZE:-OFF}" = ON ]; then
    # ASan's pthread_create comes first and hands ours its own start routine.
    check "%p: ctrace threads: the three workers" grep -Eq '^ +3 .*asan_thread_start' "$tmp/threads.txt"
else
    check "%p: ctrace threads: the two contenders" grep -Eq '^ +2 .*contender_main' "$tmp/threads.txt"
    check "%p: ctrace threads: the reader" grep -Eq '^ +1 .*reader_main' "$tmp/threads.txt"
fi
"$ctrace" -pprof=sync -top "$t" >"$tmp/sync.txt" 2>&1
check "%p: sync profile: the contended lock in contender_main" \
    sh -c "grep -A1 pthread_mutex_lock '$tmp/sync.txt' | grep -q contender_main"
"$ctrace" -pprof=syscall -top "$t" >"$tmp/syscall.txt" 2>&1
check "%p: syscall profile: the read in reader_main" \
    sh -c "grep -A1 -E '  read$' '$tmp/syscall.txt' | grep -q reader_main"
check "%p: no message about forks" sh -c "! grep -q 'forked' '$tmp/p.out'"

# Traced without %p: said on stderr.
mkdir "$tmp/plain"
traced -o "$tmp/plain/trace.bin" -- "$prog" "$tmp/plain" >"$tmp/plain.out" 2>&1
echo $? >"$tmp/plain.status"
check "no %p: the daemon finished" finished "$tmp/plain"
check "no %p: status as untraced" cmp -s "$tmp/ref.status" "$tmp/plain.status"
check "no %p: ctrace run says forked processes are not traced, and what to do" \
    grep -q "forked processes (a daemon's) are not traced into $tmp/plain/trace.bin: use -o NAME%p" \
    "$tmp/plain.out"
check "no %p: said once" test "$(grep -c forked "$tmp/plain.out")" -eq 1

for f in "$tmp"/*.out "$tmp"/*.txt; do
    echo "--- $f"
    head -20 "$f"
done >"$tmp/log"
[ "$fail" -eq 0 ] || cat "$tmp/log"
finish
