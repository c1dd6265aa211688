#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ctl_cli.sh - `ctrace ctl`, the control channel's client, before any traced
# process serves it: usage errors exit 2 with one line; a process that does
# not exist or accepts no commands exits 1 saying which; a socket named after
# a pid but held by another process is never talked to. Then against a fake
# process in Python (as much of CONTROL.md's server as the client needs):
# each request is the table's, with FILE's descriptor; FILE is written whole
# or not at all (an error reply, a garbled one, a closed connection or
# SIGTERM leaves no file and an existing FILE untouched); a symbolic link at
# FILE is replaced, not followed; - is standard output.
# usage: ctl_cli.sh CTRACE_BINARY
# Needs python3 (3.9 or later: socket.recv_fds).
set -uo pipefail
ctrace=$1
# shellcheck source=checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

# Every background process (sleep, the fake processes, a ctl) goes away with
# the test, whatever ends it.
pids=()
trap 'kill ${pids[@]+"${pids[@]}"} 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

# fake.py DIR NAME_PID LOG MODE_FILE: listens on DIR/ctrace-NAME_PID.sock
# (NAME_PID 0: its own pid, as a traced process does; another pid: an
# impostor), logs "ready PID", then for each connection one line "request
# 'TEXT' fds=N" and answers as MODE_FILE says at that moment:
#   auto     the right reply to a right request (status, dump, trace <ns>,
#            with a descriptor for the last two), error 22 to anything else
#   error    writes into the descriptor, then "error 2 ..." (the client
#            must discard what was written)
#   garbled  a reply that is none;  close  no reply at all
#   hang     no reply: waits for the client to go, logs "client closed"
cat >"$tmp/fake.py" <<'EOF'
import os, socket, sys
sockdir, name_pid, log, modefile = sys.argv[1:5]
path = os.path.join(sockdir, "ctrace-%d.sock" % (int(name_pid) or os.getpid()))
srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
srv.bind(path)
srv.listen(8)

def say(line):
    with open(log, "a") as f:
        f.write(line + "\n")

say("ready %d" % os.getpid())
while True:
    conn, _ = srv.accept()
    mode = open(modefile).read().strip()
    msg, fds, _, _ = socket.recv_fds(conn, 4096, 4)
    req = msg.decode(errors="replace")
    say("request %r fds=%d" % (req, len(fds)))
    if not msg and not fds:  # the client went away without a word
        conn.close()
        continue
    reply = b"error 22 bad request\n"
    if mode == "auto":
        if req == "status" and not fds:
            reply = b"ok\nfoo=1\nstate=dormant\n"
        elif req == "dump" and len(fds) == 1:
            os.write(fds[0], b"hello")
            reply = b"ok\nbytes=5\n"
        elif req.startswith("trace ") and req[6:].isdigit() and len(fds) == 1:
            os.write(fds[0], b"tracedata")
            reply = b"ok\nbytes=9\nevents=7\ndropped=1\nspan_ns=50000000\nnew_key=x\n"
    elif mode == "error":
        for fd in fds:
            os.write(fd, b"partial")
        reply = b"error 2 no flight recorder is running\n"
    elif mode == "garbled":
        reply = b"hello\n"
    for fd in fds:
        os.close(fd)
    if mode == "hang":
        conn.recv(1)
        say("client closed")
    elif mode != "close":
        conn.send(reply)
    conn.close()
EOF

# usage_error NAME PATTERN -- ARGS...: `ctrace ctl ARGS` exits 2 with one
# line on stderr, "ctrace: ctl: ..." matching PATTERN, and nothing on stdout.
usage_error() {
    local name=$1 pattern=$2; shift 3
    local out err status
    out=$("$ctrace" ctl "$@" 2>"$tmp/err"); status=$?
    err=$(cat "$tmp/err")
    if [ "$status" -eq 2 ] && [ -z "$out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
        grep -qE -- "^ctrace: ctl: .*$pattern" <<<"$err"; then
        ok "usage: $name"
    else
        bad "usage: $name: exit $status (want 2), stdout '$out', stderr:"; echo "$err"
    fi
}

# same NAME FILE TEXT: FILE holds exactly TEXT.
same() {
    if [ -f "$2" ] && [ "$(cat "$2")" = "$3" ]; then ok "$1"; else bad "$1: $2 is not '$3'"; fi
}

# no_file NAME FILE: neither FILE nor a temporary beside it (FILE.XXXXXX).
no_file() {
    local left
    left=$(ls -d "$1" "$1".?????? 2>/dev/null)
    if [ -z "$left" ]; then ok "$2"; else bad "$2: left $left"; fi
}

# no_temporary NAME FILE: no FILE.XXXXXX beside FILE.
no_temporary() {
    local left
    left=$(ls -d "$1".?????? 2>/dev/null)
    if [ -z "$left" ]; then ok "$2"; else bad "$2: left $left"; fi
}

# ------------------------------------------------------------- usage errors

expect "help" 0 "^usage: ctrace ctl PID COMMAND" -- "$ctrace" ctl -h
expect "help: the table's commands" 0 "trace the next DURATION into FILE" -- "$ctrace" ctl -h
expect "help after a command" 0 "^usage: ctrace ctl" -- "$ctrace" ctl 1 trace -h
expect "ctrace -h names ctl" 0 "ctrace ctl PID COMMAND" -- "$ctrace" -h
usage_error "no pid" "no process id given" --
usage_error "pid not a number" "'abc' is not a process id" -- abc status
usage_error "pid 0" "'0' is not a process id" -- 0 status
usage_error "negative pid" "'-5' is not a process id" -- -5 status
usage_error "pid beyond 31 bits" "'4294967296' is not a process id" -- 4294967296 status
usage_error "unknown flag" "unknown flag -bogus" -- -bogus
usage_error "no command" "no command given after 1: status, dump or trace" -- 1
usage_error "unknown command" "unknown command 'stop': status, dump or trace" -- 1 stop
usage_error "dump without FILE" "dump needs a FILE to write" -- 1 dump
usage_error "trace without FILE" "trace needs a FILE to write" -- 1 trace -for 1s
usage_error "status with a FILE" "unexpected argument x: the command takes no FILE" -- 1 status x
usage_error "two FILEs" "unexpected argument y" -- 1 dump x y
usage_error "-for after FILE" "unexpected argument -for: flags go before FILE" -- 1 trace x -for 1s
usage_error "-for on dump" "-for goes with trace, not dump" -- 1 dump -for 1s x
usage_error "-for on status" "-for goes with trace, not status" -- 1 status -for=1s
usage_error "-for without a value" "flag -for needs a value" -- 1 trace -for
usage_error "-for not a duration" "-for wants a duration such as .*'5'" -- 1 trace -for 5 x
usage_error "-for too short" "-for wants a duration from 1ms to 24h, not '500us'" -- 1 trace -for=500us x
usage_error "-for too long" "-for wants a duration from 1ms to 24h, not '25h'" -- 1 trace -for 25h x
usage_error "unknown flag of a command" "unknown flag -x" -- 1 dump -x f
usage_error "argument after -list" "unexpected argument x after -list" -- -list x

# ------------------------------------------------- processes without a server

expect "no such process" 1 "^ctrace: ctl: 999999999: no such process$" -- \
    "$ctrace" ctl 999999999 status
expect "a process without a socket" 1 \
    "^ctrace: ctl: $$: accepts no commands \(start it under ctrace run -control" -- \
    "$ctrace" ctl $$ status
expect "-list exits 0" 0 "" -- "$ctrace" ctl -list
# /proc/net/unix is per network namespace: in a new one nothing listens, so
# -list must print nothing and exit 0 (an empty list once reached qsort with
# a NULL array, which UBSan stops on).
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
    out=$(unshare -n "$ctrace" ctl -list 2>&1); status=$?
    if [ "$status" -eq 0 ] && [ -z "$out" ]; then ok "-list with nothing listening: empty"
    else bad "-list with nothing listening: exit $status (want 0), output:"; echo "$out"; fi
else
    echo "note: not root or no unshare: the empty -list is only checked as it comes"
fi

# ------------------------------------------------------------- an impostor

# A socket named after sleep's pid, held by a Python process: ctl must see
# that its peer is not sleep, and send nothing.
echo auto >"$tmp/mode"
sleep 30 &
sleeper=$!
pids+=("$sleeper")
mkdir "$tmp/imp"
python3 "$tmp/fake.py" "$tmp/imp" "$sleeper" "$tmp/imp.log" "$tmp/mode" &
pids+=($!)
if wait_match "^ready" "$tmp/imp.log"; then
    impostor=$(sed -n 's/^ready //p' "$tmp/imp.log")
    expect "impostor: refused" 1 \
        "^ctrace: ctl: $sleeper: the socket at $tmp/imp/ctrace-$sleeper.sock belongs to process $impostor, not $sleeper; not talking to it$" -- \
        "$ctrace" ctl "$sleeper" dump "$tmp/imp.bin"
    no_file "$tmp/imp.bin" "impostor: no file written"
    if wait_match "^request" "$tmp/imp.log" && grep -qx "request '' fds=0" "$tmp/imp.log"; then
        ok "impostor: received nothing"
    else
        bad "impostor: received something:"; cat "$tmp/imp.log"
    fi
else
    bad "the impostor did not start"
fi

# -------------------------------------------------------- a fake process

mkdir "$tmp/srv"
python3 "$tmp/fake.py" "$tmp/srv" 0 "$tmp/srv.log" "$tmp/mode" &
pids+=($!)
wait_match "^ready" "$tmp/srv.log" || bad "the fake process did not start"
fake=$(sed -n 's/^ready //p' "$tmp/srv.log")
fake=${fake:-0}
# last_request: the fake process's last request line.
last_request() { grep '^request' "$tmp/srv.log" | tail -1; }

"$ctrace" ctl -list >"$tmp/list" 2>&1
check "-list: the fake process" grep -qE "^$fake	$(id -un)	.*fake\.py" "$tmp/list"
check "-list: the impostor, under the pid of its name" grep -qE "^$sleeper	$(id -un)	sleep 30$" "$tmp/list"
check "-list: by pid" sort -c -n "$tmp/list"
expect "status: the reply's lines, as sent" 0 "^foo=1
state=dormant$" -- "$ctrace" ctl "$fake" status
check "status: the request" test "$(last_request)" = "request 'status' fds=0"

expect "dump: what it says" 0 "^wrote $tmp/out.bin: 5 bytes$" -- "$ctrace" ctl "$fake" dump "$tmp/out.bin"
check "dump: the request" test "$(last_request)" = "request 'dump' fds=1"
same "dump: the file" "$tmp/out.bin" hello
no_temporary "$tmp/out.bin" "dump: no temporary left"

echo old >"$tmp/target"
ln -s "$tmp/target" "$tmp/link"
expect "dump over a symbolic link" 0 "^wrote" -- "$ctrace" ctl "$fake" dump "$tmp/link"
check "dump: the link replaced" test -f "$tmp/link" -a ! -L "$tmp/link"
same "dump: the link's target untouched" "$tmp/target" old
same "dump: the link is the dump" "$tmp/link" hello

"$ctrace" ctl "$fake" dump - >"$tmp/stdout.bin" 2>"$tmp/err"
same "dump -: the data on stdout" "$tmp/stdout.bin" hello
same "dump -: what it says, on stderr" "$tmp/err" "wrote standard output: 5 bytes"
before=$(grep -c '^request' "$tmp/srv.log")
expect "dump into a directory" 1 "^ctrace: ctl: $tmp is a directory" -- "$ctrace" ctl "$fake" dump "$tmp"
check "dump into a directory: nothing sent" test "$(grep -c '^request' "$tmp/srv.log")" = "$before"

expect "trace: what it says" 0 \
    "^wrote $tmp/t.bin: 9 bytes, 7 events, 1 dropped, over 50\.0ms$" -- \
    "$ctrace" ctl "$fake" trace -for 50ms "$tmp/t.bin"
check "trace: the request" test "$(last_request)" = "request 'trace 50000000' fds=1"
same "trace: the file" "$tmp/t.bin" tracedata
expect "trace -for=D" 0 "^wrote" -- "$ctrace" ctl "$fake" trace --for=1m30s "$tmp/t.bin"
check "trace -for=D: the request" test "$(last_request)" = "request 'trace 90000000000' fds=1"
expect "trace: 5 s by default" 0 "^wrote" -- "$ctrace" ctl "$fake" trace "$tmp/t.bin"
check "trace: the default's request" test "$(last_request)" = "request 'trace 5000000000' fds=1"

# Failures: the process's text and exit 1, no file, an existing one kept.
echo error >"$tmp/mode"
expect "error reply" 1 "^ctrace: ctl: $fake: no flight recorder is running$" -- \
    "$ctrace" ctl "$fake" dump "$tmp/new.bin"
no_file "$tmp/new.bin" "error reply: no file"
echo keep >"$tmp/keep.bin"
expect "error reply, FILE existing" 1 "no flight recorder is running" -- \
    "$ctrace" ctl "$fake" dump "$tmp/keep.bin"
same "error reply: FILE untouched" "$tmp/keep.bin" keep
no_temporary "$tmp/keep.bin" "error reply: no temporary left"
expect "error reply to status" 1 "^ctrace: ctl: $fake: no flight recorder is running$" -- \
    "$ctrace" ctl "$fake" status

echo garbled >"$tmp/mode"
expect "garbled reply" 1 "^ctrace: ctl: $fake: garbled reply" -- "$ctrace" ctl "$fake" dump "$tmp/keep.bin"
same "garbled reply: FILE untouched" "$tmp/keep.bin" keep
no_temporary "$tmp/keep.bin" "garbled reply: no temporary left"

echo close >"$tmp/mode"
expect "no reply" 1 "^ctrace: ctl: $fake: the process closed the connection without answering" -- \
    "$ctrace" ctl "$fake" trace -for 1s "$tmp/keep.bin"
same "no reply: FILE untouched" "$tmp/keep.bin" keep
no_temporary "$tmp/keep.bin" "no reply: no temporary left"

# SIGTERM while a trace runs: ctl closes the connection (the process ends
# the trace), removes the temporary and exits 143.
echo hang >"$tmp/mode"
"$ctrace" ctl "$fake" trace -for 1m "$tmp/int.bin" >"$tmp/int.out" 2>"$tmp/int.err" &
client=$!
pids+=("$client")
if wait_match "^request 'trace 60000000000' fds=1" "$tmp/srv.log"; then
    kill -TERM "$client"
    # At once: not when the reply's wait (the minute, and 30 s) runs out.
    for _ in $(seq 50); do
        kill -0 "$client" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$client" 2>/dev/null; then
        bad "SIGTERM: ctl still runs 5 s later"
        kill -KILL "$client"
    fi
    wait "$client"
    status=$?
    if [ "$status" -eq 143 ] && grep -qx "ctrace: ctl: $fake: interrupted by SIGTERM" "$tmp/int.err"; then
        ok "SIGTERM: exit 143, said"
    else
        bad "SIGTERM: exit $status (want 143), stderr:"; cat "$tmp/int.err"
    fi
    no_file "$tmp/int.bin" "SIGTERM: no file"
    if wait_match "^client closed" "$tmp/srv.log"; then
        ok "SIGTERM: the connection closed"
    else
        bad "SIGTERM: the process never saw the connection close"
    fi
else
    bad "SIGTERM: the request never came"
fi

finish
