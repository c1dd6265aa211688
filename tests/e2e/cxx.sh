#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cxx.sh - a C++ program's sync profile names its functions as C++ reads
# them (analyze/symbols/symname.h): qualified, demangled, the same from DWARF and
# from the symbol table, so that two classes' lock() stay apart (in -top
# and in the pprof file Go reads), an inlined method is qualified too, a
# class template's method carries its arguments, std::thread::join comes
# demangled from libstdc++'s symbol table, and a frame without symbols is a
# file and an address in it, never an address ASLR picked.
# usage: cxx.sh CTRACE_BINARY PROG_CXX PROG_CXX_SOURCE
set -uo pipefail
ctrace=$1 prog=$2 src=$3
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
command -v go >/dev/null || { echo "cxx: go (golang-go) is required" >&2; exit 1; }

ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    "$ctrace" run -o "$tmp/trace.bin" -- "$prog" > "$tmp/out.txt" ||
    { echo "cxx: the traced program failed"; cat "$tmp/out.txt"; exit 1; }
"$ctrace" -pprof=sync -top -n 100 "$tmp/trace.bin" > "$tmp/top.txt" ||
    { echo "cxx: ctrace -top failed"; exit 1; }
cat "$tmp/top.txt"
file=$(basename "$src")

# frame NAME: a frame line naming NAME exactly, at a line of the program.
frame() {
    grep -Eq "^ +$1 \\(.*/$file:[0-9]+\\)$" "$tmp/top.txt"
}
check "Table::lock, called, qualified" frame 'store::Table::lock'
check "Journal::lock, inlined, qualified" frame 'store::Journal::lock'
check "the class template's method, with its argument" frame 'store::Queue<int>::pop'
check "the workers' lambda, qualified by main" frame 'main::\{lambda[^ ]*\}::operator\(\)'
check "no name unqualified or mangled" bash -c \
    "! grep -Eq '^ +(lock|pop|operator\\(\\)|_Z[A-Za-z0-9_]*)( |$)' '$tmp/top.txt'"
check "no address without its file" bash -c \
    "! grep -Eq '(^ +|%  )0x[0-9a-f]+$' '$tmp/top.txt'"

# stacks LEAF: each stack whose leaf is LEAF, as one line of its frames
# (function names only), innermost first, separated by '|'.
stacks() {
    awk -v leaf="$1" '
        /^ +[0-9.]+(ns|us|ms|s) +[0-9]+ +[0-9.]+%  / {
            if (s != "") print s
            s = ""; keep = ($NF == leaf); next }
        keep && NF { sub(/^ +/, ""); sub(/ [(\[].*$/, ""); s = s "|" $0 }
        END { if (s != "") print s }' "$tmp/top.txt"
}
check "the condition variable waits are in Queue<int>::pop" bash -c \
    "grep -q '|store::Queue<int>::pop|' <<<'$(stacks pthread_cond_wait)'"
joins=$(stacks pthread_join)
check "main waits in a join" test -n "$joins"
# libstdc++ has no DWARF here: its symbol table's _ZNSt6thread4joinEv.
# libstdc++ keeps no frame pointers either: main, below it, is found by
# libunwind (tracer/core/stack.c), not skipped by the frame-pointer walk.
check "... std::thread::join, demangled, then main" bash -c \
    "! grep -vq '^|std::thread::join|main|' <<<'$joins'"

# Go's pprof reads the two lock()s as two functions (it marks the inlined
# one so).
"$ctrace" -pprof=sync -o "$tmp/sync.pb.gz" "$tmp/trace.bin"
go tool pprof -top -nodefraction=0 "$tmp/sync.pb.gz" > "$tmp/pprof.txt" 2>&1
check "pprof: store::Table::lock" grep -q ' store::Table::lock$' "$tmp/pprof.txt"
check "pprof: store::Journal::lock" grep -Eq ' store::Journal::lock( \(inline\))?$' "$tmp/pprof.txt"
finish
