#!/usr/bin/env bash
# cli.sh - the `ctrace` command line on good and bad input: usage errors exit 2
# with one line, unreadable input exits 1, a damaged trace is read up to the
# damage and exits 3, and a trace whose program ended without trace_stop is
# still complete (exit-time flush) or at least readable (_exit).
# usage: cli.sh CTRACE_BINARY PROG_CONTEND_BINARY
set -uo pipefail
ctrace=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# expect NAME STATUS PATTERN -- command...: the command exits STATUS and its
# stdout+stderr match PATTERN (grep -E).
expect() {
    local name=$1 want=$2 pattern=$3; shift 4
    local out status
    out=$("$@" 2>&1); status=$?
    if [ "$status" -eq "$want" ] && grep -qE -- "$pattern" <<<"$out"; then
        pass=$((pass + 1)); echo "ok   $name"
    else
        fail=$((fail + 1)); echo "FAIL $name: exit $status (want $want), output:"; echo "$out" | head -20
    fi
}

"$prog" stop "$tmp/t.bin" || { echo "prog-contend failed"; exit 1; }
"$prog" exit "$tmp/exit.bin" || { echo "prog-contend exit failed"; exit 1; }
"$prog" _exit "$tmp/_exit.bin" || { echo "prog-contend _exit failed"; exit 1; }
CTRACE_CLOCK=monotonic "$prog" stop "$tmp/mono.bin" || { echo "prog-contend (monotonic) failed"; exit 1; }
size=$(stat -c %s "$tmp/t.bin")
head -c $((size * 2 / 3)) "$tmp/t.bin" > "$tmp/cut.bin"
head -c 10 "$tmp/t.bin" > "$tmp/tiny.bin"
echo "hello, not a trace" > "$tmp/text.bin"
cp "$tmp/t.bin" "$tmp/flipped.bin"
printf '\xff\xff\xff\xff' | dd of="$tmp/flipped.bin" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null

expect "help" 0 "usage: ctrace" -- "$ctrace" -h
expect "stats help" 0 "usage: ctrace stats" -- "$ctrace" stats -h
expect "no arguments" 2 "^ctrace: no command" -- "$ctrace"
expect "unknown flag" 2 "unknown flag -bogus" -- "$ctrace" -bogus "$tmp/t.bin"
expect "unknown profile" 2 "unknown profile type 'cpu'" -- "$ctrace" -pprof=cpu "$tmp/t.bin"
expect "flag without value" 2 "needs a value" -- "$ctrace" "$tmp/t.bin" -pprof
expect "no trace" 2 "no trace file" -- "$ctrace" -pprof=sync
expect "two traces" 2 "one trace at a time" -- "$ctrace" -pprof=sync "$tmp/t.bin" "$tmp/t.bin"
expect "stats unknown flag" 2 "unknown flag" -- "$ctrace" stats -x "$tmp/t.bin"
expect "missing file" 1 "No such file" -- "$ctrace" stats "$tmp/nope.bin"
expect "directory" 1 "not a regular file" -- "$ctrace" stats "$tmp"
expect "not a trace" 1 "bad magic" -- "$ctrace" stats "$tmp/text.bin"
expect "shorter than a header" 1 "bad magic" -- "$ctrace" stats "$tmp/tiny.bin"
expect "good trace" 0 "complete" -- "$ctrace" stats "$tmp/t.bin"
expect "thread names" 0 "threads: +5 " -- "$ctrace" stats "$tmp/t.bin"
expect "clock fallback" 0 "clock: +monotonic" -- "$ctrace" stats "$tmp/mono.bin"
expect "clock fallback profile" 0 "pthread_mutex_lock" -- bash -c \
    "'$ctrace' -pprof=sync '$tmp/mono.bin' > '$tmp/mono.pb.gz' && go tool pprof -top '$tmp/mono.pb.gz'"
expect "exit-time flush" 0 "\(complete\)" -- "$ctrace" stats "$tmp/exit.bin"
expect "_exit: incomplete but readable" 0 "incomplete: no end record" -- "$ctrace" stats "$tmp/_exit.bin"
expect "truncated: stats" 3 "file offset [0-9]+" -- "$ctrace" stats "$tmp/cut.bin"
expect "truncated: profile" 3 "file offset [0-9]+" -- "$ctrace" -pprof=sync -o "$tmp/cut.pb.gz" "$tmp/cut.bin"
expect "corrupted: stats" 3 "damaged" -- "$ctrace" stats "$tmp/flipped.bin"
expect "profile to a full disk" 1 "No space left" -- "$ctrace" -pprof=sync -o /dev/full "$tmp/t.bin"
expect "profile to stdout" 0 "" -- bash -c "'$ctrace' -pprof=sync '$tmp/t.bin' > '$tmp/out.pb.gz'"
expect "go reads the profile" 0 "pthread_mutex_lock" -- go tool pprof -top "$tmp/out.pb.gz"
expect "go reads a damaged trace's profile" 0 "Type: delay" -- go tool pprof -top "$tmp/cut.pb.gz"
expect "empty class profile" 0 "" -- "$ctrace" --pprof net -o "$tmp/net.pb.gz" "$tmp/t.bin"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
