#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# golden.sh - the analyzer gives the same answers as it did: for every trace
# tests/data/golden/NAME.bin, the outputs that need no symbols (`ctrace stats`,
# `ctrace tasks` with and without -tsv, -type and -latmin, each with its
# stderr and exit status; golden-dump's profiles as code addresses, states
# and leaks) must equal NAME.cli.expected and NAME.dump.expected, and every
# other command (the five profiles, -top, threads) must exit as it did.
# golden-dump computes profiles and states twice, from the trace read whole
# and streamed as the CLI reads it, with -j 1 and with -j 4. The symbolized
# outputs (profiles, -top, threads) are compared between -j 1 and -j 4
# only: they depend on the binaries, named by the trace, of the machine
# that reads it. Commands run in tests/data/golden/, on
# relative paths, so that no output names this checkout.
# Prints the diff of every difference; exit status 0 when there is none.
#
# usage: golden.sh CTRACE GOLDEN_DUMP [GOLDEN_DIR]
#        golden.sh --write CTRACE GOLDEN_DUMP [GOLDEN_DIR]   (re)makes the
#        expected files from the analyzer at hand (tests/data/golden/make.sh)
set -uo pipefail
write=0
[[ ${1:-} == --write ]] && { write=1; shift; }
[[ $# -ge 2 ]] || { echo "usage: $0 [--write] CTRACE GOLDEN_DUMP [GOLDEN_DIR]" >&2; exit 2; }
ctrace=$(realpath "$1") dump=$(realpath "$2")
dir=${3:-$(dirname "${BASH_SOURCE[0]}")/../data/golden}
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
    local name=$1 jobs=$2 task region lat latns
    read -r task region lat latns <<<"$(filters "$name")"
    local argv=("$name.bin")
    [[ -n ${task:-} ]] && argv+=(-task "$task" -region "$region" -latmin "$latns")
    "$dump" "${argv[@]}" -j "$jobs" 2>&1
    echo "exit $?"
}

# jobs_run NAME JOBS: what the symbolized commands print with -j JOBS, and
# the bytes of the profiles they write.
jobs_run() {
    local name=$1 j=$2 f=$1.bin task region lat latns type
    read -r task region lat latns <<<"$(filters "$name")"
    for type in sync sched net syscall blame; do
        out -pprof="$type" -j "$j" -o "$tmp/p.$type" "$f" | sed "s|$tmp|TMP|g"
        cksum <"$tmp/p.$type" 2>/dev/null
        out -pprof="$type" -top -n 20 -j "$j" "$f"
        [[ -n ${task:-} ]] &&
            out -pprof="$type" -task "$task" -latmin "$lat" -top -j "$j" "$f"
    done
    out threads -j "$j" "$f"
    out threads -tsv -j "$j" "$f"
    [[ -n ${task:-} ]] && out tasks -n 3 -j "$j" "$f"
}

# same NAME WANT GOT: WANT and GOT are the same file, else the diff and a
# failure counted.
same() {
    if diff -u "$2" "$3" >"$tmp/diff"; then
        echo "ok   $1"
    else
        echo "FAIL $1 differs:"
        cat "$tmp/diff"
        fail=$((fail + 1))
    fi
}

fail=0 n=0 checks=0
for f in *.bin; do
    name=${f%.bin}
    n=$((n + 1)) checks=$((checks + 4))
    cli "$name" >"$tmp/$name.cli"
    golden_dump "$name" 1 >"$tmp/$name.dump"
    golden_dump "$name" 4 >"$tmp/$name.dump-j4"
    if [[ $write -eq 1 ]]; then
        cp "$tmp/$name.cli" "$name.cli.expected"
        cp "$tmp/$name.dump" "$name.dump.expected"
        continue
    fi
    jobs_run "$name" 4 | sed 's/ -j 4 / /' >"$tmp/$name.j4"
    if [[ ${CTRACE_SANITIZE:-OFF} == ON ]]; then
        # Under the sanitizers, the decoding threads (-j 4) are what they
        # must see; the plain builds compare the outputs with -j 1's. Half
        # of this test's time there (69 s under ASan).
        checks=$((checks - 1))
    else
        jobs_run "$name" 1 | sed 's/ -j 1 / /' >"$tmp/$name.j1"
        same "$name: profiles, top, threads of -j 1 and -j 4" "$tmp/$name.j1" "$tmp/$name.j4"
    fi
    same "$name.cli" "$name.cli.expected" "$tmp/$name.cli"
    same "$name.dump" "$name.dump.expected" "$tmp/$name.dump"
    same "$name.dump -j 4" "$name.dump.expected" "$tmp/$name.dump-j4"
done
[[ $n -gt 0 ]] || { echo "$0: no trace in $dir" >&2; exit 1; }
[[ $write -eq 1 ]] && { echo "wrote the expected files of $n traces in $dir"; exit 0; }
echo "$((checks - fail)) passed, $fail failed"
[[ $fail -eq 0 ]]
