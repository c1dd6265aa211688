#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# symbol_sources.sh - the symbolizer finds names where distributions put them
# (docs/analyzer.md, "Function names and where they come from"): one trace of prog-contend, read while
# the file at the traced path is, in turn (the same build-id each time),
#   - the binary as built: DWARF gives worker its file:line;
#   - stripped: worker has no name: its frame is the file and an address in
#     it (prog+0x...);
#   - stripped with a .gnu_debuglink to a separate debug file beside it:
#     DWARF again, from that file;
#   - stripped with MiniDebugInfo (.gnu_debugdata, an xz'd ELF of the
#     function symbols, as Fedora ships): worker by name, without file:line.
# usage: symbol_sources.sh CTRACE PROG_CONTEND
set -uo pipefail
ctrace=$1 built=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
for tool in objcopy strip nm xz; do
    command -v $tool >/dev/null || { echo "symbol_sources: $tool is required" >&2; exit 1; }
done

prog=$tmp/prog
cp "$built" "$prog"
"$prog" stop "$tmp/trace.bin" || { echo "symbol_sources: prog-contend failed"; exit 1; }
objcopy --only-keep-debug "$built" "$tmp/full.debug"
strip --strip-all -o "$tmp/stripped" "$built"

# The MiniDebugInfo: function symbols that .dynsym does not have.
nm -D --format=posix --defined-only "$built" | awk '{ print $1 }' | sort > "$tmp/dynsyms"
nm --format=posix --defined-only "$built" | awk '$2 ~ /^[Tt]$/ { print $1 }' | sort > "$tmp/funcsyms"
comm -13 "$tmp/dynsyms" "$tmp/funcsyms" > "$tmp/keep"
objcopy -S --remove-section .gdb_index --remove-section .comment \
    --keep-symbols="$tmp/keep" "$tmp/full.debug" "$tmp/mini"
xz -f "$tmp/mini"
cp "$tmp/stripped" "$tmp/minidebug"
objcopy --add-section .gnu_debugdata="$tmp/mini.xz" "$tmp/minidebug"

# top VARIANT: the sync top with the file at the traced path being VARIANT.
top() {
    cp "$1" "$prog"
    "$ctrace" -pprof=sync -top -n 20 "$tmp/trace.bin" 2>"$tmp/warnings.txt"
}
worker_line='^ +worker \(.*prog-contend\.c:[0-9]+\)$'

top "$built" > "$tmp/top.built"
check "as built: worker at its line (DWARF)" grep -Eq "$worker_line" "$tmp/top.built"

top "$tmp/stripped" > "$tmp/top.stripped"
check "stripped: no worker" bash -c "! grep -q worker '$tmp/top.stripped'"
check "stripped: the file and an address in it" grep -Eq "^ +$prog\\+0x[0-9a-f]+$" "$tmp/top.stripped"

cp "$tmp/stripped" "$tmp/linked"
objcopy --add-gnu-debuglink="$tmp/full.debug" "$tmp/linked"
top "$tmp/linked" > "$tmp/top.linked"
check "debuglink: worker at its line, from the debug file" grep -Eq "$worker_line" "$tmp/top.linked"

top "$tmp/minidebug" > "$tmp/top.minidebug"
check "MiniDebugInfo: worker by name" grep -Eq "^ +worker \\[$prog\\]$" "$tmp/top.minidebug"
check "MiniDebugInfo: warned that there is no DWARF" grep -q "no debug info" "$tmp/warnings.txt"
finish
