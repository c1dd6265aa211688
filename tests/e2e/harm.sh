#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# harm.sh - `ctrace run` must leave a program's signals, descriptors and files
# exactly as they are untraced: each case runs without and with ctrace, and
# what the program prints, writes and returns must be the same, byte for
# byte, with a whole trace beside it.
#   - a sigwait()-based shutdown (SIGTERM blocked, taken by a dedicated
#     thread), five times: the collector thread must not take the signal;
#   - a shell's `exec 3>file`: no trace bytes in the program's fd 3;
#   - programs that close every descriptor >= 3 (a loop, close_range,
#     closefrom) and then write a data file: the data file is theirs alone,
#     and the trace survives;
#   - closed descriptors reused for sockets while libunwind unwinds: the
#     program gets the same numbers and nobody reads or writes its sockets;
#   - dup2 onto the tracer's own descriptor: the program gets the number, the
#     trace moves elsewhere and stays whole;
#   - descriptors closed by raw syscalls, which no wrapper sees (a loop of
#     close, close_range): the tracer opens its file again by its path, and
#     the trace is whole, with the waits that came before and after;
#   - under a descriptor limit (ulimit -n 32, 64, 256), the tracer takes
#     one descriptor (no libunwind, whose pipe takes two); under 16, none,
#     and no file is left, nor an existing one truncated;
#   - a trace lost anyway (closed by raw syscalls, and its file unlinked):
#     the program's status is its own, and ctrace run says on stderr that
#     the trace is not whole.
#   - under an address-space limit (ulimit -v) with 256 MiB to spare, the
#     program still makes its threads and gets all but the tracer's share;
#   - a storm of signals (SIGALRM every 20 us) whose handler does I/O the
#     tracer records: the program ends within twice its untraced time, and
#     the handler's stacks go through the signal frame to the code it
#     interrupted.
# usage: harm.sh CTRACE_BINARY PROG_HARM PROG_SIGSTORM
set -uo pipefail
ctrace=$1
prog=$2
storm=$3
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

traced() {
    local trace=$1
    shift
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$ctrace" run -o "$trace" -- "$@"
}

# whole TRACE: ctrace reads it to its END record.
whole() {
    "$ctrace" stats "$1" 2>&1 | head -1 | grep -q '(complete)'
}

# compare NAME MODE: the mode's output, status and data file, untraced and
# traced, must be identical; the trace whole.
compare() {
    local name=$1 mode=$2
    (cd "$tmp" && "$prog" "$mode" "$tmp/$name.ref.data" >"$tmp/$name.ref.out" 2>&1
     echo $? >"$tmp/$name.ref.status")
    (cd "$tmp" && traced "$tmp/$name.bin" "$prog" "$mode" "$tmp/$name.run.data" \
         >"$tmp/$name.run.out" 2>&1
     echo $? >"$tmp/$name.run.status")
    check "$name: status 0" grep -qx 0 "$tmp/$name.ref.status"
    check "$name: output the same under ctrace run" cmp -s "$tmp/$name.ref.out" "$tmp/$name.run.out"
    check "$name: status the same" cmp -s "$tmp/$name.ref.status" "$tmp/$name.run.status"
    if [ -e "$tmp/$name.ref.data" ]; then
        check "$name: data file byte-identical" cmp -s "$tmp/$name.ref.data" "$tmp/$name.run.data"
    fi
    check "$name: the trace is whole" whole "$tmp/$name.bin"
    if ! cmp -s "$tmp/$name.ref.out" "$tmp/$name.run.out"; then
        diff "$tmp/$name.ref.out" "$tmp/$name.run.out" | head -10
    fi
}

# Signals: five runs, since delivery picks any thread that accepts it.
for i in 1 2 3 4 5; do
    compare "sigwait-$i" sigwait
done

# Descriptors.
compare closeall closeall
compare closerange closerange
compare closefrom closefrom
compare fdreuse fdreuse
compare dup2top dup2top
check "dup2top: the trace still has the program's waits" \
    sh -c "'$ctrace' stats '$tmp/dup2top.bin' | grep -Eq 'BLOCK +[1-9]'"

# Closed behind the tracer's back: its file found again, nothing lost (the
# waits before the close and after it).
for mode in rawclose rawrange; do
    compare $mode $mode
    # Two threads contend before the close, two after: with main, five.
    threads=$("$ctrace" stats "$tmp/$mode.bin" | sed -n 's/^threads: *\([0-9]*\).*/\1/p')
    check "$mode: the threads before and after the close ($threads)" test "${threads:-0}" -ge 5
done
# A trace lost behind the tracer's back is said, not silent.
(cd "$tmp" && traced "$tmp/raw.bin" "$prog" rawlost "$tmp/raw.bin" >"$tmp/raw.out" 2>&1
 echo $? >"$tmp/raw.status")
check "rawlost: status 0" grep -qx 0 "$tmp/raw.status"
grep -qx 0 "$tmp/raw.status" || sed 's/^/  rawlost: /' "$tmp/raw.status" "$tmp/raw.out"
check "rawlost: ctrace run says the trace is not whole" \
    grep -q "the trace could not be written whole" "$tmp/raw.out"

# Descriptor limits: the program opens /dev/null until it fails (where
# LeakSanitizer cannot work: it needs descriptors of its own at exit).
# limited N CMD...: CMD under ulimit -n N, in $tmp.
limited() {
    local n=$1
    shift
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
        bash -c 'ulimit -n "$0" && cd "$1" && shift && exec "$@"' "$n" "$tmp" "$@"
}
for n in 32 64 256; do
    ref=$(limited $n "$prog" fdcount | sed -n 's/^opened //p')
    run=$(limited $n "$ctrace" run -o fd$n.bin -- "$prog" fdcount | sed -n 's/^opened //p')
    check "ulimit -n $n: the tracer takes one descriptor ($run of $ref)" \
        test "${run:-0}" -ge $((ref - 1))
    check "ulimit -n $n: the trace is whole" whole "$tmp/fd$n.bin"
done
echo "an earlier file" >"$tmp/fd12.bin"
limited 12 "$ctrace" run -o fd12.bin -- "$prog" fdcount >"$tmp/fd12.out" 2>&1
limited 12 "$prog" fdcount >"$tmp/fd12.ref" 2>&1
check "ulimit -n 12: not traced, said" grep -q "not tracing: .*descriptor limit (ulimit -n 12)" \
    "$tmp/fd12.out"
check "ulimit -n 12: the program's descriptors all its own" \
    sh -c "grep -v '^ctrace: ' '$tmp/fd12.out' | cmp -s - '$tmp/fd12.ref'"
check "ulimit -n 12: an earlier file left as it was" grep -qx "an earlier file" "$tmp/fd12.bin"
rm -f "$tmp/fd12.bin"
limited 12 "$ctrace" run -o fd12.bin -- "$prog" fdcount >/dev/null 2>&1
check "ulimit -n 12: no file left behind" test ! -e "$tmp/fd12.bin"

# Address space (ulimit -v): the tracer maps its buffers and tables as the
# trace fills them, so a program near its RLIMIT_AS keeps its threads and
# nearly all its memory. The limit is the program's own size untraced plus
# 256 MiB; traced, it must still make its threads and get 256 MiB less the
# tracer's share: its libraries, the collector thread's malloc arena (64
# MiB of address space) and what the trace used. (It got 5 MiB, and a
# thread failed, when the tracer reserved 650 MB up front.) Not under the
# sanitizers, whose shadow memory needs terabytes of address space.
if [[ ${CTRACE_SANITIZE:-OFF} == ON ]]; then
    echo "skip: ulimit -v under the sanitizers (their shadow memory needs terabytes)"
else
    vm=$("$prog" memhog 0 | sed -n 's/^vmsize //p')
    limit=$((vm + 262144))
    vlimited() { bash -c 'ulimit -v "$0" && cd "$1" && shift && exec "$@"' "$limit" "$tmp" "$@"; }
    vlimited "$prog" memhog 512 >"$tmp/as.ref" 2>&1
    # Frame pointers: libunwind, dlopen'd, gives each thread that unwinds a
    # dynamic TLS block, which glibc allocates, and a thread's first
    # allocation makes it a malloc arena: as the program's own first malloc
    # in that thread would (most threads make one anyway).
    CTRACE_UNWIND=fp vlimited "$ctrace" run -o "$tmp/as.bin" -- "$prog" memhog 512 \
        >"$tmp/as.run" 2>&1
    ref=$(sed -n 's/^got //p' "$tmp/as.ref") run=$(sed -n 's/^got //p' "$tmp/as.run")
    check "ulimit -v $limit: untraced, the threads are made" grep -qx "threads made" "$tmp/as.ref"
    check "ulimit -v $limit: traced, the threads are made" grep -qx "threads made" "$tmp/as.run"
    check "ulimit -v $limit: traced, the program gets nearly its memory ($run of $ref MiB)" \
        test "${run:-0}" -ge $((${ref:-0} - 96)) -a "${ref:-0}" -ge 200
    check "ulimit -v $limit: the trace is whole" whole "$tmp/as.bin"
    grep -q "threads made" "$tmp/as.run" || sed 's/^/  as.run: /' "$tmp/as.run"
fi

# A storm of signals: each handler's stacks must cost microseconds (no
# libunwind, no system call), or the handlers take all the time.
secs() { date +%s.%N; }
t0=$(secs)
"$storm" 1 20 >"$tmp/storm.ref" 2>&1
t1=$(secs)
CTRACE_IO_MIN_NS=1 timeout 60 "$ctrace" run -o "$tmp/storm.bin" -- "$storm" 1 20 \
    >"$tmp/storm.out" 2>&1
t2=$(secs)
untraced=$(awk "BEGIN { print $t1 - $t0 }") traced=$(awk "BEGIN { print $t2 - $t1 }")
check "signal storm: the program ends within twice its untraced time ($traced s, $untraced s)" \
    awk "BEGIN { exit !($traced <= 2 * $untraced) }"
check "signal storm: its handlers ran" grep -Eq "storm: [1-9][0-9]* signals handled" \
    "$tmp/storm.out"
"$ctrace" -pprof=syscall -top "$tmp/storm.bin" >"$tmp/storm.top" 2>&1
check "signal storm: the handler's I/O, through the signal frame to the code it interrupted" \
    sh -c "grep -A4 '^ *[0-9.]*[mun]*s  *[0-9]* .*  write$' '$tmp/storm.top' |
           grep -A3 'on_alarm' | grep -Eq 'spin|now'"

# A shell's own descriptor 3.
(cd "$tmp" && bash -c 'exec 3>ref3.txt; echo hi >&3; sleep 0.2; echo bye >&3')
(cd "$tmp" && traced "$tmp/b3.bin" bash -c 'exec 3>run3.txt; echo hi >&3; sleep 0.2; echo bye >&3')
check "exec 3>: the file holds the shell's bytes only" cmp -s "$tmp/ref3.txt" "$tmp/run3.txt"
check "exec 3>: the trace is whole" whole "$tmp/b3.bin"

finish
