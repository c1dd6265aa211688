#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# flight_example.sh - end to end: examples/flight runs the slow cache with the
# flight recorder on; its first request over 30 ms must dump the window into
# the given directory, and the sync top it prints (ctrace -pprof=sync -top)
# must put the waiting on pthread_mutex_lock in cache_get_slow.
# usage: flight_example.sh FLIGHT_BINARY CTRACE_BINARY
set -uo pipefail
flight=$1 ctrace=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"


out=$(CTRACE_BIN=$ctrace timeout 60 "$flight" "$tmp/dumps" 2>&1); status=$?
echo "$out"
check "flight exits 0" test "$status" -eq 0
dumps=("$tmp"/dumps/ctrace-*.bin)
check "a dump file is in the directory" test -s "${dumps[0]}"
check "the example names the dump" grep -qF -- "${dumps[0]}" <<<"$out"
# A stack's first line: delay, count, share, then its leaf frame.
check "the top names pthread_mutex_lock" \
    grep -qE '^ +[0-9.]+(ns|us|ms|s) +[0-9]+ +[0-9.]+%  pthread_mutex_lock$' <<<"$out"
check "... called from cache_get_slow, with its line" \
    grep -qE '^ +cache_get_slow \(.*flight\.c:[0-9]+\)$' <<<"$out"
check "the dump is a complete trace" bash -c "'$ctrace' stats '${dumps[0]}' | grep -q '(complete)'"

finish
