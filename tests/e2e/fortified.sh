#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fortified.sh - a program built with _FORTIFY_SOURCE calls __read_chk, not
# read; its 50 ms pipe read must still be in the syscall profile, at its line.
# usage: fortified.sh PROG_FORTIFIED CTRACE
set -euo pipefail
prog=$1 ctrace=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Whether the read became __read_chk is the compiler's call: gcc does it,
# clang 14 does not. Without it there is nothing to test: skip (77).
objdump -T "$prog" | grep -q "__read_chk" || {
    echo "fortified: skipped: this compiler did not fortify the read ($prog)"; exit 77; }
"$prog" "$tmp/t.bin"
top=$("$ctrace" -pprof=syscall -top -n 1 "$tmp/t.bin")
echo "$top"
grep -q "read_late" <<<"$top" && grep -qE "^ +[0-9.]+ms +1 " <<<"$top" || {
    echo "fortified: the fortified read is not in the syscall profile" >&2; exit 1; }
echo "1 passed, 0 failed"
