#!/usr/bin/env bash
# golden.sh - the analyzer gives the same answers as it did: for every trace
# tests/golden/NAME.bin, the outputs that need no symbols (`ctrace stats`,
# `ctrace tasks` with and without -tsv, -type and -latmin, each with its
# stderr and exit status; golden-dump's profiles as code addresses, states
# and leaks) must equal NAME.cli.expected and NAME.dump.expected, and every
# other command (the five profiles, -top, threads) must exit as it did.
# Symbolized output is not compared: it depends on the binaries, named by
# the trace, of the machine that reads it. Commands run in tests/golden/, on
# relative paths, so that no output names this checkout.
# Prints the diff of every difference; exit status 0 when there is none.
#
# usage: golden.sh CTRACE GOLDEN_DUMP [GOLDEN_DIR]
#        golden.sh --write CTRACE GOLDEN_DUMP [GOLDEN_DIR]   (re)makes the
#        expected files from the analyzer at hand (tests/golden/make.sh)
set -uo pipefail
write=0
[[ ${1:-} == --write ]] && { write=1; shift; }
[[ $# -ge 2 ]] || { echo "usage: $0 [--write] CTRACE GOLDEN_DUMP [GOLDEN_DIR]" >&2; exit 2; }
ctrace=$(realpath "$1") dump=$(realpath "$2")
dir=${3:-$(dirname "${BASH_SOURCE[0]}")/golden}
cd "$dir" || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A leak report of an ASan build would change what a command prints.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1

# The filters of the traces with tasks: a task type, a region, a latency.
filters() {
    case $1 in
    gateway | gateway-cut) echo "request quota 100ms 100000000" ;;
    esac
}

# out CMD...: the command's stdout, its stderr if any, and its exit status.
out() {
    echo "\$ ctrace $*"
    "$ctrace" "$@" >"$tmp/o" 2>"$tmp/e"
    local rc=$?
    cat "$tmp/o"
    [[ -s $tmp/e ]] && { echo "stderr:"; cat "$tmp/e"; }
    echo "exit $rc"
}

# status CMD...: the exit status alone (output to OUT, a file of $tmp).
status() {
    local argv=("${@//OUT/$tmp/p.out}")
    "$ctrace" "${argv[@]}" >/dev/null 2>&1
    echo "\$ ctrace $*: exit $?"
}

cli() {
    local name=$1 f=$1.bin task region lat latns
    out stats "$f"
    out tasks "$f"
    out tasks -tsv "$f"
    read -r task region lat latns <<<"$(filters "$name")"
    if [[ -n ${task:-} ]]; then
        out tasks -type "$task" "$f"
        out tasks -latmin "$lat" -n 3 "$f"
        out tasks -tsv -type "$task" -latmin "$lat" "$f"
    fi
    for type in sync sched net syscall blame; do
        status -pprof="$type" -o OUT "$f"
        status -pprof="$type" -top -n 5 "$f"
        [[ -n ${task:-} ]] &&
            status -pprof="$type" -task "$task" -region "$region" -latmin "$lat" -o OUT "$f"
    done
    status threads "$f"
    status threads -tsv "$f"
}

golden_dump() {
    local name=$1 task region lat latns
    read -r task region lat latns <<<"$(filters "$name")"
    local argv=("$name.bin")
    [[ -n ${task:-} ]] && argv+=(-task "$task" -region "$region" -latmin "$latns")
    "$dump" "${argv[@]}" 2>&1
    echo "exit $?"
}

fail=0 n=0
for f in *.bin; do
    name=${f%.bin}
    n=$((n + 1))
    cli "$name" >"$tmp/$name.cli"
    golden_dump "$name" >"$tmp/$name.dump"
    for kind in cli dump; do
        if [[ $write -eq 1 ]]; then
            cp "$tmp/$name.$kind" "$name.$kind.expected"
        elif diff -u "$name.$kind.expected" "$tmp/$name.$kind" >"$tmp/diff"; then
            echo "ok   $name.$kind"
        else
            echo "FAIL $name.$kind differs:"
            cat "$tmp/diff"
            fail=$((fail + 1))
        fi
    done
done
[[ $n -gt 0 ]] || { echo "$0: no trace in $dir" >&2; exit 1; }
[[ $write -eq 1 ]] && { echo "wrote the expected files of $n traces in $dir"; exit 0; }
echo "$((2 * n - fail)) passed, $fail failed"
[[ $fail -eq 0 ]]
