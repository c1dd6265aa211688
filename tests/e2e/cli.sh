#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cli.sh - the `ctrace` command line on good and bad input: usage errors exit 2
# with one line, unreadable input exits 1, a damaged trace is read up to the
# damage and exits 3, and a trace whose program ended without trace_stop is
# still complete (exit-time flush) or at least readable (_exit).
# usage: cli.sh CTRACE_BINARY PROG_CONTEND_BINARY
set -uo pipefail
ctrace=$1 prog=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

"$prog" stop "$tmp/t.bin" || { echo "prog-contend failed"; exit 1; }
"$prog" exit "$tmp/exit.bin" || { echo "prog-contend exit failed"; exit 1; }
"$prog" _exit "$tmp/_exit.bin" || { echo "prog-contend _exit failed"; exit 1; }
CTRACE_CLOCK=monotonic "$prog" stop "$tmp/mono.bin" || { echo "prog-contend (monotonic) failed"; exit 1; }
size=$(stat -c %s "$tmp/t.bin")
# Cut inside the last frame (a zstd frame is longer than 3 bytes): a cut at a
# fixed fraction of the file can fall on a frame boundary, which is a whole
# (if unfinished) trace, not a damaged one.
head -c $((size - 3)) "$tmp/t.bin" > "$tmp/cut.bin"
head -c 10 "$tmp/t.bin" > "$tmp/tiny.bin"
head -c 16 "$tmp/t.bin" > "$tmp/header.bin"   # what a daemon's exited parent leaves
echo "hello, not a trace" > "$tmp/text.bin"
cp "$tmp/t.bin" "$tmp/flipped.bin"
printf '\xff\xff\xff\xff' | dd of="$tmp/flipped.bin" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null

expect "help" 0 "usage: ctrace" -- "$ctrace" -h
expect "stats help" 0 "usage: ctrace stats" -- "$ctrace" stats -h
expect "no arguments" 2 "^ctrace: no command" -- "$ctrace"
expect "unknown flag" 2 "unknown flag -bogus" -- "$ctrace" -bogus "$tmp/t.bin"
expect "unknown profile" 2 "unknown profile type 'bogus'" -- "$ctrace" -pprof=bogus "$tmp/t.bin"
expect "flag without value" 2 "needs a value" -- "$ctrace" "$tmp/t.bin" -pprof
expect "no trace" 2 "no trace file" -- "$ctrace" -pprof=sync
expect "two traces" 2 "one trace at a time" -- "$ctrace" -pprof=sync "$tmp/t.bin" "$tmp/t.bin"
expect "stats unknown flag" 2 "unknown flag" -- "$ctrace" stats -x "$tmp/t.bin"
expect "missing file" 1 "No such file" -- "$ctrace" stats "$tmp/nope.bin"
expect "directory" 1 "a directory with no CTF trace in it" -- "$ctrace" stats "$tmp"
expect "not a trace" 1 "bad magic" -- "$ctrace" stats "$tmp/text.bin"
expect "shorter than a header" 1 "bad magic" -- "$ctrace" stats "$tmp/tiny.bin"
expect "good trace" 0 "complete" -- "$ctrace" stats "$tmp/t.bin"
expect "thread names" 0 "threads: +5 " -- "$ctrace" stats "$tmp/t.bin"
expect "clock fallback" 0 "clock: +monotonic" -- "$ctrace" stats "$tmp/mono.bin"
expect "clock fallback profile" 0 "pthread_mutex_lock" -- bash -c \
    "'$ctrace' -pprof=sync '$tmp/mono.bin' > '$tmp/mono.pb.gz' && go tool pprof -top '$tmp/mono.pb.gz'"
expect "exit-time flush" 0 "\(complete\)" -- "$ctrace" stats "$tmp/exit.bin"
expect "_exit: incomplete but readable" 0 "incomplete: no end record" -- "$ctrace" stats "$tmp/_exit.bin"
# A trace that is a header alone: stats says so, with why, and exits 4;
# nothing is divided by its zero events; every verb warns on stderr.
expect "empty trace: stats exits 4 and says why" 4 "^empty: +no threads or no events, and no end record: .*daemon" -- \
    "$ctrace" stats "$tmp/header.bin"
expect "empty trace: no bytes per event" 4 "^bytes: +16 in the file \(no events\)$" -- \
    "$ctrace" stats "$tmp/header.bin"
expect "empty trace: a profile warns" 0 "^ctrace: .*header.bin: warning: no threads or no events" -- \
    "$ctrace" -pprof=sync -top "$tmp/header.bin"
expect "empty trace: the warning is not in the output" 0 "^0$" -- \
    bash -c "'$ctrace' -pprof=sync -top '$tmp/header.bin' 2>/dev/null | grep -c warning || true"
# Every verb on it: no thread is no array (UBSan stopped `threads`, which
# zeroed zero times at NULL; 737 of 3,500 fuzzed inputs).
expect "empty trace: threads" 0 "blocked at the end of the trace: no thread" -- \
    "$ctrace" threads "$tmp/header.bin"
expect "empty trace: threads -tsv" 0 "^# count	call	function	file:line$" -- \
    "$ctrace" threads -tsv "$tmp/header.bin"
expect "empty trace: tasks" 0 "^no tasks in the trace$" -- "$ctrace" tasks "$tmp/header.bin"
expect "empty trace: a Perfetto timeline" 0 ": 0 events as 2 packets" -- \
    "$ctrace" -perfetto -o "$tmp/empty.pftrace" "$tmp/header.bin"
for type in sync sched net syscall blame; do
    expect "empty trace: the $type profile" 0 "^$type profile: no samples$" -- \
        "$ctrace" -pprof=$type -top "$tmp/header.bin"
done
expect "empty trace: the cpu profile says how to get samples" 1 "no CPU samples: record it with .ctrace run -cpu HZ" -- \
    "$ctrace" -pprof=cpu -top "$tmp/header.bin"
expect "good trace: no empty warning" 0 "^0$" -- \
    bash -c "'$ctrace' stats '$tmp/t.bin' 2>&1 | grep -c -e '^empty:' -e 'warning: no threads' || true"
expect "help names status 4" 0 "4 \(stats\) an unfinished trace without threads" -- "$ctrace" -h
expect "truncated: stats" 3 "file offset [0-9]+" -- "$ctrace" stats "$tmp/cut.bin"
expect "truncated: profile" 3 "file offset [0-9]+" -- "$ctrace" -pprof=sync -o "$tmp/cut.pb.gz" "$tmp/cut.bin"
expect "corrupted: stats" 3 "damaged" -- "$ctrace" stats "$tmp/flipped.bin"
expect "profile to a full disk" 1 "No space left" -- "$ctrace" -pprof=sync -o /dev/full "$tmp/t.bin"
expect "profile to stdout" 0 "" -- bash -c "'$ctrace' -pprof=sync '$tmp/t.bin' > '$tmp/out.pb.gz'"
expect "go reads the profile" 0 "pthread_mutex_lock" -- go tool pprof -top "$tmp/out.pb.gz"
expect "go reads a damaged trace's profile" 0 "Type: delay" -- go tool pprof -top "$tmp/cut.pb.gz"
expect "empty class profile" 0 "" -- "$ctrace" --pprof net -o "$tmp/net.pb.gz" "$tmp/t.bin"

# ctrace run: the program's output and exit status are its own; a problem
# with a CTRACE_* variable is one line on stderr and never stops the program.
# In an ASan build, `ctrace run` preloads ASan's runtime too (see run.c).
expect_exact() { # NAME STATUS EXPECTED-OUTPUT -- command...: all of stdout+stderr
    local name=$1 want=$2 text=$3; shift 4
    local out status
    out=$("$@" 2>&1); status=$?
    if [ "$status" -eq "$want" ] && [ "$out" = "$text" ]; then
        ok "$name"
    else
        bad "$name: exit $status (want $want), output:"; echo "$out" | head -20
    fi
}
run=("$ctrace" run -o "$tmp/run.bin" --)
expect "run help" 0 "usage: ctrace run" -- "$ctrace" run -h
expect "help names run and blame" 0 "ctrace run .*-- CMD" -- "$ctrace" -h
expect "help lists blame" 0 "TYPE: .*blame" -- "$ctrace" -h
expect_exact "run: the program's status" 1 "" -- "${run[@]}" false
expect_exact "run: the program's output and status" 3 "out
err" -- "${run[@]}" sh -c 'echo out; echo err >&2; exit 3'
expect_exact "run: a missing program" 127 "ctrace: run: /nonexistent: No such file or directory" \
    -- "${run[@]}" /nonexistent
expect_exact "run: a command not in PATH" 127 "ctrace: run: ctrace-no-such-command: command not found" \
    -- "${run[@]}" ctrace-no-such-command
expect "run: not executable" 126 "Permission denied" -- "${run[@]}" "$tmp/text.bin"
expect "run: no command" 2 "no command given" -- "$ctrace" run -o "$tmp/run.bin"
expect "run: unknown flag" 2 "unknown flag -bogus" -- "$ctrace" run -bogus -- true
expect "run: bad flag value" 2 "-flush-ms wants milliseconds, not 'abc'" -- "$ctrace" run -flush-ms=abc -- true
expect "run: bad -unwind" 2 "-unwind wants fp, dwarf or auto" -- "$ctrace" run -unwind=x -- true
expect "run: -sched-ring-bytes not a size" 2 "-sched-ring-bytes wants a size from 4k to 256M, not 'big'" \
    -- "$ctrace" run -sched-ring-bytes=big -- true
expect "run: -sched-ring-bytes too small" 2 "-sched-ring-bytes wants a size from 4k to 256M, not '1000'" \
    -- "$ctrace" run -sched-ring-bytes 1000 -- true
expect_exact "run: CTRACE_SCHED_RING_BYTES too large warns once, the program runs" 0 \
"ctrace: CTRACE_SCHED_RING_BYTES: out of range (0, or 4096 to 268435456): '1G'
ran" -- env CTRACE_SCHED_RING_BYTES=1G "${run[@]}" sh -c 'echo ran'
expect_exact "run: bad CTRACE_FLUSH_MS warns once, the program runs" 0 \
"ctrace: CTRACE_FLUSH_MS: not a number: 'abc'
ran" -- env CTRACE_FLUSH_MS=abc "${run[@]}" sh -c 'echo ran'
expect_exact "run: bad CTRACE_UNWIND warns once, the program runs" 4 \
"ctrace: CTRACE_UNWIND: want fp, dwarf or auto: 'x'" -- env CTRACE_UNWIND=x "${run[@]}" sh -c 'exit 4'
expect_exact "run: a pool of fewer than 4 chunks warns once, the program runs" 0 \
"ctrace: not tracing: CTRACE_POOL_BYTES is less than 4 chunks (CTRACE_CHUNK_BYTES, 64k by default)
ran" -- env CTRACE_POOL_BYTES=16k CTRACE_CHUNK_BYTES=8k "${run[@]}" sh -c 'echo ran'
# Each flag sets the variable ctrace(1) names (test-options checks each
# flag's and each variable's range against the options table).
expect_exact "run: each flag sets its variable" 0 "7 8k 100000 3 5 1 1 16k dwarf" -- \
    "$ctrace" run -o "$tmp/flags.bin" -flush-ms 7 -chunk-bytes 8k -pool-bytes 100000 -level 3 \
    -stack-depth 5 -io-min-ns 1 -sched 1 -sched-ring-bytes 16k -unwind dwarf -- sh -c \
    'echo $CTRACE_FLUSH_MS $CTRACE_CHUNK_BYTES $CTRACE_POOL_BYTES $CTRACE_LEVEL $CTRACE_STACK_DEPTH \
     $CTRACE_IO_MIN_NS $CTRACE_SCHED $CTRACE_SCHED_RING_BYTES $CTRACE_UNWIND'
expect_exact "run: an unwritable trace path warns once, the program runs" 0 \
"ctrace: not tracing: $tmp/no/such/dir/r.bin: No such file or directory
ran" -- "$ctrace" run -o "$tmp/no/such/dir/r.bin" -- sh -c 'echo ran'
expect "run: CTRACE_LIB that is not there" 1 "CTRACE_LIB=$tmp/nope.so" -- \
    env CTRACE_LIB="$tmp/nope.so" "${run[@]}" true

# A program that calls trace_start() itself is already being traced: it gets
# -EBUSY (prog-contend then gives up with status 1), and the run's own trace
# is complete.
rm -f "$tmp/run.bin"
expect "run: trace_start under ctrace run" 1 "trace_start" -- \
    "$ctrace" run -o "$tmp/run.bin" -flush-ms 20 -- "$prog" exit "$tmp/self.bin"
expect "run: ... the run's trace is complete" 0 "\(complete\)" -- "$ctrace" stats "$tmp/run.bin"
expect "run: ... the program's own trace was not started" 1 "" -- test -e "$tmp/self.bin"

# %p: each process that execs writes its own file (xargs runs true as its
# child). Without %p only the process ctrace run started (CTRACE_PID) writes
# the file: the child leaves alone the trace its parent is still writing.
echo x > "$tmp/x.txt"
expect "run: %p, a child that execs" 0 "" -- "$ctrace" run -o "$tmp/kid.%p.bin" -- \
    xargs -a "$tmp/x.txt" /bin/true
kids=("$tmp"/kid.*.bin)
expect "run: %p gives each process its own file" 0 "" -- test "${#kids[@]}" -eq 2
for k in "${kids[@]}"; do
    expect "run: $(basename "$k") is complete" 0 "\(complete\)" -- "$ctrace" stats "$k"
done
expect "run: without %p" 0 "" -- "$ctrace" run -o "$tmp/one.bin" -- xargs -a "$tmp/x.txt" /bin/true
expect "run: ... the parent's trace" 0 "program: +[^ ]*xargs " -- "$ctrace" stats "$tmp/one.bin"
expect "run: ... complete" 0 "\(complete\)" -- "$ctrace" stats "$tmp/one.bin"
# The shell (which ends with _exit: a header only) outlives its child, whose
# complete trace would otherwise be all the file holds.
expect "run: a child leaves a %p-less path alone" 0 "" -- bash -c "'$ctrace' run \
    -o '$tmp/sh.bin' -- sh -c '/bin/true; exit 0' && test -e '$tmp/sh.bin' &&
    ! '$ctrace' stats '$tmp/sh.bin' 2>&1 | grep true"

# Stacks by eh_frame unwinding name the same code as the frame-pointer walk.
CTRACE_UNWIND=dwarf "$prog" stop "$tmp/dwarf.bin" || { echo "prog-contend (dwarf) failed"; exit 1; }
expect "dwarf: stats says how" 0 "stacks taken: eh_frame unwinding \(libunwind\)$" -- "$ctrace" stats "$tmp/dwarf.bin"
expect "dwarf: the profile names the program's functions" 0 " worker$" -- bash -c \
    "'$ctrace' -pprof=sync '$tmp/dwarf.bin' > '$tmp/dwarf.pb.gz' && go tool pprof -top '$tmp/dwarf.pb.gz'"
CTRACE_UNWIND=fp "$prog" stop "$tmp/fp.bin" || { echo "prog-contend (fp) failed"; exit 1; }
expect "fp: stats says how" 0 "stacks taken: frame-pointer walk$" -- "$ctrace" stats "$tmp/fp.bin"
expect "auto: stats says how" 0 "stacks taken: frame-pointer walk, and eh_frame" -- "$ctrace" stats "$tmp/t.bin"

# -top: the profile's heaviest stacks as text, symbolized, without Go. A
# stack's first line starts with its delay; its frames follow, indented.
stack_line='^ +[0-9.]+(ns|us|ms|s) +[0-9]+ +[0-9.]+%  '
expect "top: the lock" 0 "${stack_line}pthread_mutex_lock$" -- "$ctrace" -pprof=sync -top "$tmp/t.bin"
expect "top: the worker, with file and line" 0 "^ +worker \(.*prog-contend\.c:[0-9]+\)$" -- \
    "$ctrace" -pprof=sync -top "$tmp/t.bin"
expect "top -n 1: one stack" 0 "^1$" -- bash -c \
    "'$ctrace' -pprof=sync -top -n 1 '$tmp/t.bin' | grep -cE '$stack_line'"
expect_exact "top -o FILE: nothing on stdout" 0 "" -- "$ctrace" -pprof=sync -top -o "$tmp/top.txt" "$tmp/t.bin"
expect "top -o: the text is in FILE" 0 "${stack_line}pthread_mutex_lock$" -- cat "$tmp/top.txt"
expect "top: an empty profile" 0 "^net profile: no samples$" -- "$ctrace" -pprof=net -top "$tmp/t.bin"
expect "top: damaged trace" 3 "file offset [0-9]+" -- "$ctrace" -pprof=sync -top "$tmp/cut.bin"
expect "top: -n without -top" 2 "-n goes with -top" -- "$ctrace" -pprof=sync -n 3 "$tmp/t.bin"
expect "top: bad -n" 2 "-n wants a number" -- "$ctrace" -pprof=sync -top -n 0 "$tmp/t.bin"
expect "help names -top" 0 "-top \[-n N\]" -- "$ctrace" -h

# tasks and threads: help, usage errors, both verbs on a trace without tasks,
# the -tsv headers, and the profile filters' flags.
expect "tasks help" 0 "usage: ctrace tasks" -- "$ctrace" tasks -h
expect "threads help" 0 "usage: ctrace threads" -- "$ctrace" threads -h
expect "help names tasks and threads" 0 "ctrace threads \[-tsv\] TRACE" -- "$ctrace" -h
expect "help names the filters" 0 "-region NAME" -- "$ctrace" -h
expect "tasks: bad DURATION" 2 "tasks: -latmin wants a duration .* not '5x'" -- \
    "$ctrace" tasks -latmin 5x "$tmp/t.bin"
expect "tasks: DURATION without a unit" 2 "-latmin wants a duration" -- \
    "$ctrace" tasks -latmin=30 "$tmp/t.bin"
expect "profile: bad DURATION" 2 "^ctrace: -latmin wants a duration" -- \
    "$ctrace" -pprof=sync -latmin=fast -o "$tmp/f.pb.gz" "$tmp/t.bin"
expect "tasks: bad -n" 2 "-n wants a number" -- "$ctrace" tasks -n x "$tmp/t.bin"
expect "tasks: unknown flag" 2 "tasks: unknown flag -bogus" -- "$ctrace" tasks -bogus "$tmp/t.bin"
expect "threads: unknown flag" 2 "threads: unknown flag -bogus" -- "$ctrace" threads -bogus "$tmp/t.bin"
expect "tasks: no trace" 2 "tasks: no trace file" -- "$ctrace" tasks
expect "threads: missing file" 1 "No such file" -- "$ctrace" threads "$tmp/nope.bin"
expect "tasks on prog-contend" 0 "^no tasks in the trace$" -- "$ctrace" tasks "$tmp/t.bin"
expect "tasks -tsv: the header alone" 0 "^# type	count	p50_ns	p90_ns	p99_ns	max_ns$" -- \
    "$ctrace" tasks -tsv -latmin 1ms -type x "$tmp/t.bin"
# The 4 workers under their start routine. (In an ASan build, ASan's own
# pthread_create runs before libctrace.so's and hands it asan_thread_start.)
expect "threads on prog-contend" 0 \
    "^ +4 .*  (worker \(.*prog-contend\.c:[0-9]+\)|asan_thread_start .*)$" -- \
    "$ctrace" threads "$tmp/t.bin"
expect "threads: no leaks" 0 "blocked at the end of the trace: no thread" -- "$ctrace" threads "$tmp/t.bin"
expect_exact "threads -tsv: the header alone" 0 "# count	call	function	file:line" -- \
    "$ctrace" threads -tsv "$tmp/t.bin"
expect "tasks: damaged trace" 3 "file offset [0-9]+" -- "$ctrace" tasks "$tmp/cut.bin"
expect "threads: damaged trace" 3 "file offset [0-9]+" -- "$ctrace" threads "$tmp/cut.bin"
expect "profile -task: none such" 0 "no task of type 'nope' in the trace" -- \
    "$ctrace" -pprof=sync -top -task nope "$tmp/t.bin"
expect "profile -region: empty" 0 "^sync profile \(regions named r\): no samples$" -- \
    "$ctrace" -pprof=sync -top -region r "$tmp/t.bin"
expect "profile -latmin: a pprof file" 0 "" -- \
    "$ctrace" -pprof=sync -latmin 1.5s -o "$tmp/lat.pb.gz" "$tmp/t.bin"

finish
