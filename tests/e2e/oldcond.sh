#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# oldcond.sh - a program using glibc's old condvar ABI works under the tracer
# (prog-oldcond.c says why that is not a given) and its waits are recorded,
# both linked with libctrace and with libctrace only preloaded (then the
# program's references are bound to libc's GLIBC_2.2.5 at link time).
# usage: oldcond.sh PROG_LINKED PROG_PLAIN LIBCTRACE_SO CTRACE
set -euo pipefail
linked=$1 plain=$2 lib=$3 ctrace=$4
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

check_trace() { # NAME TRACE: the trace has condvar waits in its sync profile
    "$ctrace" stats "$2" > "$tmp/stats.txt"
    blocks=$(awk '$1 == "BLOCK" { print $2 }' "$tmp/stats.txt")
    [ "${blocks:-0}" -gt 0 ] || { echo "oldcond: $1: no waits recorded" >&2; exit 1; }
    "$ctrace" -pprof=sync -o "$tmp/sync.pb.gz" "$2"
    go tool pprof -top "$tmp/sync.pb.gz" | grep -q pthread_cond_wait || {
        echo "oldcond: $1: the sync profile has no pthread_cond_wait" >&2; exit 1; }
    ok "$1 ($blocks waits)"
}

for prog in "$linked" "$plain"; do
    # The program must reference the old versions, or the test proves nothing.
    objdump -T "$prog" | grep -q "GLIBC_2.2.5.*pthread_cond_wait" || {
        echo "oldcond: $prog does not use pthread_cond_wait@GLIBC_2.2.5" >&2; exit 1; }
done
timeout 60 "$linked" "$tmp/linked.bin"
check_trace "linked with libctrace" "$tmp/linked.bin"
if [ "${CTRACE_SANITIZE:-OFF}" = ON ]; then
    # An ASan-built library cannot be preloaded into a program without ASan.
    echo "skip libctrace preloaded (sanitizer build)"
else
    LD_PRELOAD="$lib" timeout 60 "$plain" "$tmp/preloaded.bin"
    check_trace "libctrace preloaded" "$tmp/preloaded.bin"
fi
finish
