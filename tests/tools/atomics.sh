#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# atomics.sh - every atomic operation in format/, tracer/, flightrec/ and analyze/
# states its memory order (STYLE.md, "The hot path and lock-free code"): no
# call of the C11 functions without _explicit (their order is a silent
# seq_cst) and no __sync builtin (a full barrier, whatever is needed). Each
# found is named file:line. The pattern is first shown to catch such calls,
# so that a pass does not come from a pattern that matches nothing.
# (Plain reads and writes of an _Atomic object are implicit seq_cst too;
# grep cannot see them: clang's -Watomic-implicit-seq-cst can.)
# usage: atomics.sh SOURCE_DIR
set -uo pipefail
root=$1
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/checks.sh"

implicit='\b(atomic_(load|store|exchange|compare_exchange_(strong|weak)|fetch_(add|sub|or|xor|and)|flag_test_and_set|flag_clear)|__sync_[a-z_]+)[[:space:]]*\('

# The pattern against calls it must and must not catch.
printf '%s\n' 'x = atomic_load(&a);' 'atomic_store (&a, 1);' 'atomic_fetch_add(&n, 1);' \
    'atomic_compare_exchange_weak(&h, &o, w);' 'atomic_flag_clear(&f);' \
    '__sync_fetch_and_add(&n, 1);' >"$tmp/bad.c"
printf '%s\n' 'x = atomic_load_explicit(&a, memory_order_acquire);' \
    'atomic_fetch_add_explicit(&n, 1, memory_order_relaxed);' \
    'atomic_thread_fence(memory_order_release);' '__atomic_load_n(&w, __ATOMIC_RELAXED);' \
    'my_atomic_load(&a);' >"$tmp/good.c"
check "the pattern catches each default-order call" \
    test "$(grep -cE "$implicit" "$tmp/bad.c")" -eq 6
check "the pattern passes explicit orders" \
    test "$(grep -cE "$implicit" "$tmp/good.c")" -eq 0

for dir in format tracer flightrec analyze; do
    if [ ! -d "$root/$dir" ]; then
        bad "$dir/ exists"
        continue
    fi
    found=$(cd "$root" && grep -rnE --include='*.c' --include='*.h' "$implicit" "$dir")
    if [ -z "$found" ]; then
        ok "$dir/: every atomic operation names its memory order"
    else
        bad "$dir/: atomic operations without an explicit memory order:"
        printf '%s\n' "$found" | sed 's/^/    /'
    fi
done
finish
