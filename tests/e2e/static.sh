#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# static.sh - libctrace.a and a -static executable: such a program could
# not run with the wrappers in it (no dynamic linker to find libc's real
# functions, which the wrappers shadow), so the link fails, naming why;
# the same program linked dynamically with libctrace.a runs and traces.
# Exit 77 (skipped) where a -static link cannot be made at all (no libc.a)
# or in sanitizer builds (their runtimes cannot be linked statically).
# usage: static.sh CC LIBCTRACE_A INCLUDE_DIR
set -uo pipefail
cc=$1
lib=$2
inc=$3
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

if [ -n "${CTRACE_SANITIZE:-}" ] && [ "$CTRACE_SANITIZE" != OFF ]; then
    echo "skipped: sanitizer build"; exit 77
fi
if [ -n "${CTRACE_TSAN:-}" ] && [ "$CTRACE_TSAN" != OFF ]; then
    echo "skipped: sanitizer build"; exit 77
fi
printf 'int main(void) { return 0; }\n' >"$tmp/plain.c"
if ! "$cc" -static -o "$tmp/plain" "$tmp/plain.c" 2>/dev/null || ! "$tmp/plain"; then
    echo "skipped: no static libc here"; exit 77
fi

cat >"$tmp/prog.c" <<'C'
#include <pthread.h>
#include <stdio.h>
#include "ctrace/trace.h"
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
int main(int argc, char **argv)
{
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    printf("trace_start: %d\n", argc > 1 ? trace_start(argv[1]) : 0);
    return argc > 1 ? trace_stop() : 0;
}
C
"$cc" -static -I"$inc" -o "$tmp/static" "$tmp/prog.c" "$lib" -lzstd -lpthread -ldl \
    >"$tmp/static.log" 2>&1
echo $? >"$tmp/static.status"
check "-static: the link fails" sh -c "! grep -qx 0 '$tmp/static.status'"
check "-static: the linker names the reason" \
    grep -q "libctrace_cannot_be_linked_into_a_static_executable" "$tmp/static.log"
check "-static: no program was made" test ! -e "$tmp/static"

"$cc" -I"$inc" -o "$tmp/dynamic" "$tmp/prog.c" "$lib" -lzstd -lpthread -ldl >"$tmp/dynamic.log" 2>&1
check "dynamic with libctrace.a: links" test -x "$tmp/dynamic"
check "dynamic with libctrace.a: runs and traces" \
    sh -c "'$tmp/dynamic' '$tmp/t.bin' | grep -qx 'trace_start: 0' && test -s '$tmp/t.bin'"
[ "$fail" -eq 0 ] || cat "$tmp/static.log" "$tmp/dynamic.log"
finish
