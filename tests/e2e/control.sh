#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# control.sh - the control channel (format/CONTROL.md) end to end, on
# an unmodified program (prog-phases: contention on lock_a, then on lock_b):
#   - under `ctrace run -flight 2s,8M -control`, `ctrace ctl PID dump`
#     during the slow phase gives a readable window whose sync profile names
#     that phase's lock (phase_b_work); the process runs on, its output and
#     status as untraced; `ctrace ctl -list` shows it;
#   - under `ctrace run -dormant`, `ctrace ctl PID trace -for 1s` gives a
#     trace of that second only (phase B's lock, none of phase A's), and the
#     process is dormant again afterwards;
#   - a peer of another user is refused: by the directory (nobody), and by
#     SO_PEERCRED (nobody keeping CAP_DAC_OVERRIDE), where the test runs as
#     root;
#   - clients that send garbage, too much, too many descriptors, nothing, or
#     hang up mid-trace change nothing in the process: its descriptors, its
#     output and status are its own, and the channel still answers;
#   - the dump signal writes the window into its directory, and is off by
#     default (SIGUSR2 then kills the program as untraced);
#   - children that fork and exec have channels of their own; a killed
#     process is not listed; a process that exits removes its socket, and
#     one that cannot (killed, or ended by _exit) has it swept by the next.
# usage: control.sh CTRACE_BINARY PROG_PHASES
set -uo pipefail
ctrace=$1
prog=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
pids=()
trap 'kill ${pids[@]+"${pids[@]}"} 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

# A directory of the test's own for the sockets (CONTROL.md §1).
export XDG_RUNTIME_DIR=$tmp/xdg
mkdir -m 0700 "$XDG_RUNTIME_DIR"
sockets=$XDG_RUNTIME_DIR/ctrace
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

# The sync profile's heaviest stacks of a trace, as text.
sync_top() { "$ctrace" -pprof=sync -top -n 5 "$1" 2>&1; }

# Untraced: the output and status every traced run must match.
"$prog" 200 200 >"$tmp/ref.out" 2>&1
echo $? >"$tmp/ref.status"
check "untraced: the program ran" grep -q '^done$' "$tmp/ref.out"

# --- The flight recorder, dumped from outside during the slow phase --------
"$ctrace" run -flight 2s,8M -control -- "$prog" 600 4000 >"$tmp/f.out" 2>"$tmp/f.err" &
fpid=$!
pids+=("$fpid")
check "flight: the channel answers" channel "$fpid"
check "flight: the slow phase began" wait_match '^phase B$' "$tmp/f.out" 600
sleep 0.8 # contention on lock_b to record
"$ctrace" ctl "$fpid" status >"$tmp/f.status" 2>&1
check "flight: status says the recorder runs" grep -qx 'state=recorder' "$tmp/f.status"
check "flight: status counts events" grep -Eq '^events=[1-9]' "$tmp/f.status"
check "flight: status gives the window's bytes" grep -Eq '^recorder.window_bytes=[1-9]' "$tmp/f.status"
check "flight: status gives the bounds" grep -qx 'recorder.max_bytes=8388608' "$tmp/f.status"
"$ctrace" ctl -list >"$tmp/list" 2>&1
check "ctl -list shows the process" grep -Eq "^$fpid	" "$tmp/list"
expect "flight: ctl dump" 0 "wrote .*d.bin: [0-9]+ bytes" -- "$ctrace" ctl "$fpid" dump "$tmp/d.bin"
check "flight: the process runs on after the dump" kill -0 "$fpid"
check "flight: the dump is a complete trace" sh -c "'$ctrace' stats '$tmp/d.bin' | head -1 | grep -q '(complete)'"
check "flight: the dump's sync profile names the slow phase's lock" \
    sh -c "'$ctrace' -pprof=sync -top -n 1 '$tmp/d.bin' 2>&1 | grep -q phase_b_work"
check "flight: no temporary left beside the dump" test -z "$(ls "$tmp"/d.bin.* 2>/dev/null)"
wait "$fpid"
echo $? >"$tmp/f.status.code"
check "flight: status as untraced" cmp -s "$tmp/ref.status" "$tmp/f.status.code"
check "flight: output as untraced" cmp -s "$tmp/ref.out" "$tmp/f.out"
check "flight: nothing on stderr" test ! -s "$tmp/f.err"
check "flight: the socket went with the process" test ! -e "$sockets/ctrace-$fpid.sock"
expect "ctl of a process gone" 1 "no such process" -- "$ctrace" ctl "$fpid" status

# --- A dormant process, traced for one second from outside ------------------
"$ctrace" run -dormant -- "$prog" 1500 8000 >"$tmp/dm.out" 2>"$tmp/dm.err" &
dpid=$!
pids+=("$dpid")
check "dormant: the channel answers" channel "$dpid"
expect "dormant: status says dormant" 0 "state=dormant" -- "$ctrace" ctl "$dpid" status
expect "dormant: nothing recorded" 0 "events=0" -- "$ctrace" ctl "$dpid" status
expect "dormant: no window to dump" 1 "no flight recorder" -- "$ctrace" ctl "$dpid" dump "$tmp/none.bin"
check "dormant: a refused dump leaves no file" test ! -e "$tmp/none.bin"
check "dormant: phase B began" wait_match '^phase B$' "$tmp/dm.out" 600
t0=$(date +%s%N)
expect "dormant: ctl trace -for 1s" 0 "wrote .*t.bin: [0-9]+ bytes, [1-9][0-9]* events" -- \
    "$ctrace" ctl "$dpid" trace -for 1s "$tmp/t.bin"
t1=$(date +%s%N)
check "dormant: the trace is complete" sh -c "'$ctrace' stats '$tmp/t.bin' | head -1 | grep -q '(complete)'"
span=$("$ctrace" stats "$tmp/t.bin" | sed -n 's/^duration: *\([0-9.]*\) s.*/\1/p')
check "dormant: the trace lasts the second asked ($span s)" \
    awk -v s="$span" -v e="$(((t1 - t0) / 1000))" 'BEGIN { exit !(s >= 0.95 && s * 1e6 <= e) }'
sync_top "$tmp/t.bin" >"$tmp/t.top"
check "dormant: the trace has the second's lock" grep -q phase_b_work "$tmp/t.top"
check "dormant: and nothing from before it" sh -c "! grep -q phase_a_work '$tmp/t.top'"
"$ctrace" ctl "$dpid" status >"$tmp/dm.status" 2>&1
check "dormant: dormant again afterwards" grep -qx 'state=dormant' "$tmp/dm.status"
check "dormant: recording nothing again" grep -qx 'events=0' "$tmp/dm.status"

# --- Peers of another user ----------------------------------------------------
if [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    expect "another user: refused" 1 "permission denied" -- \
        setpriv --reuid=65534 --regid=65534 --clear-groups "$ctrace" ctl "$dpid" status
    # Past the directory (CAP_DAC_OVERRIDE kept): the process refuses it.
    if setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+dac_override \
        --ambient-caps=+dac_override true 2>/dev/null; then
        expect "another user past the directory: refused by the process" 1 \
            "not the process's user" -- setpriv --reuid=65534 --regid=65534 --clear-groups \
            --inh-caps=+dac_override --ambient-caps=+dac_override "$ctrace" ctl "$dpid" \
            trace -for 1s "$tmp/nobody.bin"
        check "another user: nothing traced for it" test ! -s "$tmp/nobody.bin"
    else
        echo "skip another user past the directory: no ambient capabilities here"
    fi
else
    echo "skip another user: not root, or no setpriv"
fi
wait "$dpid"
echo $? >"$tmp/dm.status.code"
check "dormant: status as untraced" cmp -s "$tmp/ref.status" "$tmp/dm.status.code"
check "dormant: output as untraced" cmp -s "$tmp/ref.out" "$tmp/dm.out"
check "dormant: nothing on stderr" test ! -s "$tmp/dm.err"

# --- Bad clients ------------------------------------------------------------
"$ctrace" run -flight 1s,4M -control -- "$prog" 10000 500 >"$tmp/g.out" 2>"$tmp/g.err" &
gpid=$!
pids+=("$gpid")
check "bad clients: the channel answers" channel "$gpid"
# The program's own descriptors (the tracer's sit at the top: fdguard.c).
own_fds() { ls /proc/"$1"/fd | sort -n | awk '$1 < 1000' | tr '\n' ' '; }
before=$(own_fds "$gpid")
sock=$sockets/ctrace-$gpid.sock
python3 - "$sock" "$tmp" >"$tmp/garbage.out" 2>&1 <<'EOF'
import array, os, socket, sys, time
path, tmp = sys.argv[1], sys.argv[2]
fails = 0

def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)  # blocking: a full backlog (20 at once, below) waits its turn
    s.settimeout(30)  # a loaded machine (a sanitizer's build): slow, not wrong
    return s

def ask(name, msg, fds=(), want=None):
    """Sends msg (with fds), checks the reply starts with want."""
    global fails
    s = conn()
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    s.sendmsg([msg], anc)
    try:
        r = s.recv(8192).decode(errors="replace")
    except Exception as e:
        r = "no reply: %s" % e
    s.close()
    ok = r.startswith(want)
    fails += not ok
    print("%s %s: %r" % ("ok  " if ok else "FAIL", name, r[:60]))

wr = os.open(tmp + "/g1.bin", os.O_WRONLY | os.O_CREAT, 0o600)
ro = os.open("/dev/null", os.O_RDONLY)
pr, pw = os.pipe()
ask("random bytes", os.urandom(200).replace(b"s", b"x"), want="error 22")
ask("an empty message", b"", want="")  # a 0-byte message reads as a hang-up
ask("a message too long", b"status" + b" " * 9000, want="error 22")
ask("status with stray descriptors", b"status", fds=(wr, ro, pw), want="ok\n")
ask("dump without its file", b"dump", want="error 9")
ask("dump into a read-only file", b"dump", fds=(ro,), want="error 9")
ask("dump into a pipe", b"dump", fds=(pw,), want="error 9")
ask("trace too short", b"trace 5", fds=(wr,), want="error 22")
ask("trace beyond 64 bits", b"trace 99999999999999999999", fds=(wr,), want="error 22")
ask("trace with no number", b"trace x1", fds=(wr,), want="error 22")
ask("status with an argument", b"status 1", want="error 22")
ask("a NUL in the command", b"stat\0us", want="error 22")
# Connect and go away; connect and say nothing (dropped after 2 s).
conn().close()
s = conn()
r = s.recv(100).decode()
fails += not r.startswith("error 110")
print("%s silent client: %r" % ("ok  " if r.startswith("error 110") else "FAIL", r))
s.close()
# More connections than it keeps: the extra ones are closed at once.
many = [conn() for _ in range(20)]
time.sleep(0.5)
for c in many:
    c.close()
# The channel serves again once the flood is gone (a loaded machine may
# still hold some of it in the backlog: those are closed at once, so retry).
for _ in range(100):
    s = conn()
    try:
        s.sendmsg([b"status"])
        r = s.recv(8192).decode(errors="replace")
    except OSError:
        r = ""
    s.close()
    if r.startswith("ok\n"):
        break
    time.sleep(0.1)
fails += not r.startswith("ok\n")
print("%s status after the flood: %r" % ("ok  " if r.startswith("ok\n") else "FAIL", r[:60]))
# A trace whose client hangs up at once: it ends early, nothing is left on.
s = conn()
s.sendmsg([b"trace 30000000000"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [wr]))])
time.sleep(0.3)
s.close()
print("done %d" % fails)
sys.exit(1 if fails else 0)
EOF
status=$?
check "bad clients: each got its answer" test "$status" = 0
sed 's/^/    /' "$tmp/garbage.out" # every answer, and a traceback if the client failed
check "bad clients: the process runs on" kill -0 "$gpid"
# The hung-up trace ends at the next wake-up.
for _ in $(seq 50); do
    "$ctrace" ctl "$gpid" status >"$tmp/g.status" 2>&1
    grep -qx 'state=recorder' "$tmp/g.status" && break
    sleep 0.1
done
check "bad clients: a trace whose client left is over" grep -qx 'state=recorder' "$tmp/g.status"
after=$(own_fds "$gpid")
check "bad clients: the program's descriptors are its own ($after)" test "$before" = "$after"
expect "bad clients: the channel still serves" 0 "wrote .*g2.bin" -- "$ctrace" ctl "$gpid" dump "$tmp/g2.bin"
wait "$gpid"
echo $? >"$tmp/g.status.code"
check "bad clients: status as untraced" cmp -s "$tmp/ref.status" "$tmp/g.status.code"
check "bad clients: output as untraced" cmp -s "$tmp/ref.out" "$tmp/g.out"

# --- The dump signal ----------------------------------------------------------
mkdir "$tmp/dumps"
"$ctrace" run -flight 1s,4M -dump-signal USR2 -dump-dir "$tmp/dumps" -- "$prog" 400 3000 \
    >"$tmp/s.out" 2>"$tmp/s.err" &
spid=$!
pids+=("$spid")
check "signal: phase B began" wait_match '^phase B$' "$tmp/s.out" 600
sleep 0.3
kill -USR2 "$spid"
for _ in $(seq 100); do
    ls "$tmp/dumps"/ctrace-"$spid"-*.bin >/dev/null 2>&1 && break
    sleep 0.1
done
dump=$(ls "$tmp/dumps"/ctrace-"$spid"-*.bin 2>/dev/null | head -1)
check "signal: a dump in the directory" test -n "$dump"
check "signal: the dump is a complete trace" sh -c "'$ctrace' stats '$dump' | head -1 | grep -q '(complete)'"
wait "$spid"
echo $? >"$tmp/s.status.code"
check "signal: status as untraced" cmp -s "$tmp/ref.status" "$tmp/s.status.code"
check "signal: output as untraced" cmp -s "$tmp/ref.out" "$tmp/s.out"
# Off by default: the program's own disposition, which ends it.
"$prog" 5000 0 >/dev/null 2>&1 &
upid=$!
sleep 0.3
kill -USR2 "$upid"
wait "$upid"
untraced=$?
"$ctrace" run -flight 1s,4M -control -- "$prog" 5000 0 >/dev/null 2>&1 &
opid=$!
pids+=("$opid")
channel "$opid"
kill -USR2 "$opid"
wait "$opid"
check "signal: off by default, SIGUSR2 ends the program as untraced ($untraced)" \
    test "$?" = "$untraced"
check "signal: and no dump was written" test -z "$(ls "$tmp"/ctrace-"$opid"-* 2>/dev/null)"
expect "signal: -dump-signal needs -flight" 2 "need -flight" -- \
    "$ctrace" run -dump-signal USR2 -- true
expect "signal: a signal that kills is refused" 2 "dump-signal wants" -- \
    "$ctrace" run -flight -dump-signal KILL -- true

# --- Children, killed processes ---------------------------------------------------
"$ctrace" run -dormant -- sh -c 'sleep 3 & sleep 3 & wait' >/dev/null 2>&1 &
cpid=$!
pids+=("$cpid")
channel "$cpid"
n=0
for _ in $(seq 100); do
    n=$("$ctrace" ctl -list | grep -c 'sleep 3')
    [ "$n" -ge 2 ] && break
    sleep 0.1
done
check "children that fork and exec have channels of their own ($n)" test "$n" -ge 2
"$ctrace" run -dormant -- "$prog" 30000 0 >/dev/null 2>&1 &
kpid=$!
channel "$kpid"
kill -KILL "$kpid"
wait "$kpid" 2>/dev/null
check "a killed process is not listed" sh -c "! '$ctrace' ctl -list | grep -q '^$kpid	'"
expect "a killed process: no such process" 1 "no such process" -- "$ctrace" ctl "$kpid" status
wait "$cpid"
check "a killed process leaves its socket file" test -e "$sockets/ctrace-$kpid.sock"
"$ctrace" run -dormant -- "$prog" 0 0 >/dev/null 2>&1
check "the next process sweeps the files of processes gone" \
    test ! -e "$sockets/ctrace-$kpid.sock" -a ! -e "$sockets/ctrace-$opid.sock"
left=$(ls "$sockets")
check "every socket file is gone with its process ($left)" test -z "$left"

# --- Usage --------------------------------------------------------------------
expect "-dormant with -o is refused" 2 "dormant" -- "$ctrace" run -dormant -o x.bin -- true
expect "a bad -flight spec is refused" 2 "flight wants" -- "$ctrace" run -flight 2parsecs -- true
expect "a -flight window below its least is refused" 2 "out of range" -- \
    "$ctrace" run -flight 2s,1k -- true

finish
