#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dlsym.sh - threads that a library creates through the pthread_create it
# looked up (dlsym(RTLD_NEXT, ...) as jemalloc does, and RTLD_DEFAULT),
# under `ctrace run`: traced from their start like any other (their start
# routine in ctrace threads, not "running at trace start"; their names;
# their waits in the sync profile), while every other lookup of the
# library answers as untraced (RTLD_NEXT still searches after the caller).
# usage: dlsym.sh CTRACE_BINARY PROG_DLSYM
set -uo pipefail
ctrace=$1
prog=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

"$prog" >"$tmp/ref.out" 2>&1
echo $? >"$tmp/ref.status"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$ctrace" run -o "$tmp/t.bin" -- \
    "$prog" >"$tmp/run.out" 2>&1
echo $? >"$tmp/run.status"
check "status 0 untraced" grep -qx 0 "$tmp/ref.status"
check "status the same traced" cmp -s "$tmp/ref.status" "$tmp/run.status"
check "the library's lookups answer as untraced" cmp -s "$tmp/ref.out" "$tmp/run.out"
check "RTLD_NEXT still searches after the caller" grep -qx "next probe: none" "$tmp/run.out"
"$ctrace" threads "$tmp/t.bin" >"$tmp/threads.txt" 2>&1
if [ "${CTRACE_SANITIZE:-OFF}" = ON ]; then
    # ASan's pthread_create comes first (in RTLD_DEFAULT's answer too) and
    # hands ours its own start routine.
    check "ctrace threads: the three threads from their start" \
        grep -Eq '^ +3 .*asan_thread_start' "$tmp/threads.txt"
else
    check "ctrace threads: the two RTLD_NEXT threads by their start routine" \
        grep -Eq '^ +2 .*next_worker' "$tmp/threads.txt"
    check "ctrace threads: the RTLD_DEFAULT thread by its start routine" \
        grep -Eq '^ +1 .*default_worker' "$tmp/threads.txt"
fi
check "ctrace threads: only main runs from the trace's start" \
    grep -Eq '^ +1 .*\(running at trace start\)' "$tmp/threads.txt"
"$ctrace" -pprof=sync -top "$tmp/t.bin" >"$tmp/sync.txt" 2>&1
check "sync profile: the RTLD_NEXT threads' waits" \
    sh -c "grep -A1 pthread_mutex_lock '$tmp/sync.txt' | grep -q next_worker"
check "sync profile: the RTLD_DEFAULT thread's wait" \
    sh -c "grep -A1 pthread_mutex_lock '$tmp/sync.txt' | grep -q default_worker"

[ "$fail" -eq 0 ] || cat "$tmp/ref.out" "$tmp/run.out" "$tmp/threads.txt" "$tmp/sync.txt"
finish
