#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# frozen.sh - a file that does not take writes (a frozen filesystem, like a
# hung NFS or FUSE mount) never holds the collector or the program's exit
# (CONTROL.md §3, ctrace(1), "Files that stall"):
#   - `ctrace ctl PID dump` into a file there gets an error within the
#     stall bound, `ctl status` is answered meanwhile, and the program runs
#     on and exits on time, while the filesystem is still frozen;
#   - so does `ctrace ctl PID trace`;
#   - a program traced by `ctrace run -o` into a file there exits at most
#     the bound later than its own run (the trace is abandoned, not waited
#     for);
#   - after the thaw, each abandoned file reads as cut short, never as
#     a whole trace.
# In a loop mount of the test's own, frozen with fsfreeze: root only
# (skipped with a message otherwise).
# usage: frozen.sh CTRACE_BINARY PROG_PHASES
set -uo pipefail
ctrace=$1
prog=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

if [ "$(id -u)" != 0 ] || ! command -v fsfreeze >/dev/null || ! command -v mkfs.ext4 >/dev/null; then
    echo "SKIP frozen: needs root, fsfreeze and mkfs.ext4 (a loop mount frozen by the test)"
    exit 0
fi
mnt=$tmp/mnt
pids=()
cleanup() {
    fsfreeze -u "$mnt" 2>/dev/null
    kill ${pids[@]+"${pids[@]}"} 2>/dev/null
    wait 2>/dev/null
    umount "$mnt" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$mnt"
truncate -s 64M "$tmp/fs.img" && mkfs.ext4 -q -F "$tmp/fs.img" || { echo "FAIL mkfs"; exit 1; }
if ! mount -o loop "$tmp/fs.img" "$mnt" 2>"$tmp/mount.err"; then
    echo "SKIP frozen: no loop mount here ($(head -1 "$tmp/mount.err"))"
    exit 0
fi
export XDG_RUNTIME_DIR=$tmp/xdg
mkdir -m 0700 "$XDG_RUNTIME_DIR"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

now() { date +%s.%N; }
# secs_since T: seconds from T to now.
secs_since() { echo "$(now) - $1" | bc; }
# le A B: whether A <= B (decimals).
le() { [ "$(echo "$1 <= $2" | bc)" = 1 ]; }
# wait_gone PID TENTHS: until PID has exited (and been reaped by wait).
wait_gone() {
    for _ in $(seq "$2"); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    return 1
}

# The bound a stalled write is given (CONTROL.md §3), and slack for a
# loaded machine.
bound=2
slack=8

# The program's own time, untraced: the traced runs are measured against it.
t=$(now)
"$prog" 300 3000 >"$tmp/ref.out" 2>&1
ref_secs=$(secs_since "$t")
check "untraced: the program ran" grep -q '^done$' "$tmp/ref.out"

# Files opened before the freeze (opening one for writing, or creating one,
# would itself wait for the thaw: that is the client's, not the program's).
touch "$mnt/dump.bin" "$mnt/ctl-trace.bin" "$mnt/run.bin"
exec 7>"$mnt/dump.bin" 8>"$mnt/ctl-trace.bin"

# --- ctl dump and ctl trace into the frozen filesystem ----------------------
t=$(now)
# 5 s longer than the reference: it outlives the stalled requests.
"$ctrace" run -flight 2s,8M -control -- "$prog" 300 8000 >"$tmp/f.out" 2>"$tmp/f.err" &
fpid=$!
pids+=("$fpid")
check "flight: the channel answers" channel "$fpid"
check "flight: the slow phase began" wait_match '^phase B$' "$tmp/f.out" 300
fsfreeze -f "$mnt"
d0=$(now)
timeout 60 "$ctrace" ctl "$fpid" dump - >&7 2>"$tmp/dump.err" &
dpid=$!
timeout 60 "$ctrace" ctl "$fpid" trace -for 1s - >&8 2>"$tmp/trace.err" &
tpid=$!
sleep 0.5
expect "status is answered while the dump is stalled" 0 'events=' -- timeout 20 "$ctrace" ctl "$fpid" status
wait "$dpid"
drc=$?
dsecs=$(secs_since "$d0")
check "dump into a frozen file: an error, not a hang (rc $drc, $dsecs s)" \
    test "$drc" -ne 0 -a "$(echo "$dsecs < $bound + $slack" | bc)" = 1
check "dump: the error says the file stalled" grep -qi 'took no writes' "$tmp/dump.err"
expect "status counts the stalled file" 0 'files_stalled=[1-9]' -- timeout 20 "$ctrace" ctl "$fpid" status
wait "$tpid"
trc=$?
check "ctl trace into a frozen file: an error (rc $trc)" test "$trc" -ne 0
check "ctl trace: the error says the file stalled" grep -qi 'took no writes' "$tmp/trace.err"
sed 's/^/  said: /' "$tmp/trace.err"
# The program ends on its own time while the filesystem is still frozen.
check "flight: the program exits while the filesystem is frozen" \
    wait_gone "$fpid" "$(echo "($ref_secs + 5 + $bound + $slack) * 10 / 1" | bc)"
wait "$fpid"
check "flight: the program's status is its own" test $? -eq 0
check "flight: its output is its own" cmp -s "$tmp/ref.out" "$tmp/f.out"

fsfreeze -u "$mnt"

# --- the program's own trace file on the frozen filesystem ------------------
t=$(now)
"$ctrace" run -o "$mnt/run.bin" -- "$prog" 300 3000 >"$tmp/r.out" 2>"$tmp/r.err" &
rpid=$!
pids+=("$rpid")
# Frozen after the trace's first writes (phase B: 0.3 s in).
wait_match '^phase B$' "$tmp/r.out" 300
fsfreeze -f "$mnt"
limit=$(echo "($ref_secs + $bound + $slack) * 10 / 1" | bc)
check "run -o: the program exits while the filesystem is frozen" wait_gone "$rpid" "$limit"
wait "$rpid"
check "run -o: the program's status is its own" test $? -eq 0
check "run -o: its output is its own" cmp -s "$tmp/ref.out" "$tmp/r.out"
check "run -o: the stall is said" grep -qi 'took no writes' "$tmp/r.err"
rsecs=$(secs_since "$t")
echo "untraced ${ref_secs}s; traced into a frozen file ${rsecs}s (bound ${bound}s)"

# --- after the thaw: the abandoned files read as cut short ------------------
fsfreeze -u "$mnt"
sleep 0.5
exec 7>&- 8>&-
for f in dump ctl-trace run; do
    "$ctrace" stats "$mnt/$f.bin" >"$tmp/$f.read" 2>&1
    check "$f: after the thaw, the file reads as cut short" \
        grep -qE 'incomplete: no end record|damaged|no end record' "$tmp/$f.read"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
