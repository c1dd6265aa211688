#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# record_count.sh - the record writer's compile-time checks (format/ctrace_record.h)
# cannot silently stop working: each case of record-count.c that passes a
# record the wrong number of fields, or uses a writer that does not fit the
# record's tail, must fail to compile, on the writer's own assertion (not on
# some other error); and the case that is right must compile, so that the
# failures are not the file's or the command's.
# usage: record_count.sh CC TRACER_DIR
set -uo pipefail
cc=$1
tracer=$2
src="$(dirname "${BASH_SOURCE[0]}")/record-count.c"
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/checks.sh"

compile() { # CASE: compiles record-count.c, its messages in $tmp/CASE.log
    "$cc" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$tracer" -I"$tracer/../format" \
        -DCASE="$1" "$src" >"$tmp/$1.log" 2>&1
}

if compile 0; then ok "the table's counts compile"; else
    bad "the table's counts compile"; cat "$tmp/0.log"; fi
for n in 1 2 3 4 5 6; do
    if ! compile "$n" && grep -q "the number of fields differs from CTR_RECORDS" "$tmp/$n.log"; then
        ok "case $n: a wrong field count does not compile"
    else
        bad "case $n: a wrong field count does not compile"; cat "$tmp/$n.log"
    fi
done
for n in 7 8 9; do
    if ! compile "$n" && grep -q "this writer does not write its tail" "$tmp/$n.log"; then
        ok "case $n: the wrong writer for the tail does not compile"
    else
        bad "case $n: the wrong writer for the tail does not compile"; cat "$tmp/$n.log"
    fi
done
finish
