#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rawcalls.sh - the tracer never traces itself (docs/internals.md): its own
# raw system calls in tracer/ and flightrec/ go through ctr__real.syscall,
# never through syscall(), which libctrace wraps (wrap/interpose_futex.c:
# a futex wait there is a traced wait, a wake a Release). The one plain call
# allowed is real.c's last word when libc cannot be resolved at all;
# comment lines are skipped. Each
# found is named file:line; the pattern is first shown to catch such calls.
# usage: rawcalls.sh SOURCE_DIR
set -uo pipefail
root=$1
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/checks.sh"

plain='(^|[^._[:alnum:]])syscall[[:space:]]*\(SYS_'

printf '%s\n' 'syscall(SYS_futex, w, op);' '    (int)syscall(SYS_gettid);' \
    'x = syscall (SYS_wait4, pid);' >"$tmp/bad.c"
printf '%s\n' 'ctr__real.syscall(SYS_futex, w, op);' 'long syscall(long nr, ...)' \
    ' * syscall(2) is variadic' >"$tmp/good.c"
check "the pattern catches each plain call" test "$(grep -cE "$plain" "$tmp/bad.c")" -eq 3
check "the pattern passes calls through ctr__real" test "$(grep -cE "$plain" "$tmp/good.c")" -eq 0

for dir in tracer flightrec; do
    found=$(cd "$root" && grep -rnE --include='*.c' --include='*.h' "$plain" "$dir" |
        grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*)' | grep -v '^tracer/core/real.c:.*SYS_write, 2, msg')
    if [ -z "$found" ]; then
        ok "$dir/: its raw system calls bypass the syscall wrapper"
    else
        bad "$dir/: plain syscall() calls, which the tracer would trace:"
        printf '%s\n' "$found" | sed 's/^/    /'
    fi
done
finish
