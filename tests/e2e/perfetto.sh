#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# perfetto.sh - `ctrace -perfetto` end to end. Every output is decoded with
# protoc against the project's schema and checked by perfetto_check.py
# (tracks declared before use, slices nested and closed per track, time
# never going back on a track, every interned reference defined, every
# flow with both ends). Then what it shows:
#   - the cache example: one slice per wait (each Block), a flow from the
#     release that ended each released wait (as many as the blame profile
#     has samples), a track per thread with its name;
#   - prog-busy: the thread that burns CPU ranks first, sleepers after;
#   - a damaged trace: exit 3 and the missing span on the "ctrace" track;
#     a flight recorder's dump: where its window starts;
#   - -from/-to keep that span only; -task/-latmin keep those tasks;
#   - a time-order buffer too small (-buffer): still valid, and said;
#   - the same bytes for any -j and from standard input;
#   - bad input: a clear message and the exit status of its kind;
#   - -http serves the same bytes to the Perfetto UI's origin, until SIGINT;
#   - Perfetto's own trace_processor loads the outputs without an import
#     error (perfetto_tp.sh; skipped where the binary is absent).
# usage: perfetto.sh CTRACE CACHE_BINARY PROG_BUSY GOLDEN_DIR
set -uo pipefail
ctrace=$1 cache=$2 busy=$3 golden=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/checks.sh"
checker=$here/perfetto_check.py

# export NAME ARGS...: ctrace -perfetto ARGS -o $tmp/NAME.pftrace, then the
# checker's summary into $tmp/NAME.sum; its exit status is ctrace's.
export_check() {
    local name=$1
    shift
    "$ctrace" -perfetto -o "$tmp/$name.pftrace" "$@" 2>"$tmp/$name.err"
    local status=$?
    if [ -s "$tmp/$name.pftrace" ]; then
        python3 "$checker" "$tmp/$name.pftrace" >"$tmp/$name.sum" 2>"$tmp/$name.chk" ||
            { bad "$name: the checker rejects the output:"; head -20 "$tmp/$name.chk"; }
    fi
    return $status
}

# fact NAME KEY...: the value of a summary line "KEY... VALUE" (0 if none).
fact() {
    local name=$1
    shift
    awk -v key="$*" 'index($0, key " ") == 1 { v = $NF } END { print (v == "" ? 0 : v) }' \
        "$tmp/$name.sum"
}

# sum_facts NAME PREFIX NAME1 NAME2...: the sum of "PREFIX NAMEi N" lines.
sum_facts() {
    local name=$1 prefix=$2 total=0 v
    shift 2
    for k in "$@"; do
        v=$(fact "$name" "$prefix $k")
        total=$((total + v))
    done
    echo "$total"
}

# ---- every golden trace converts to a valid timeline
for f in "$golden"/*.bin; do
    n=$(basename "$f" .bin)
    export_check "g-$n" "$f"
    status=$?
    want=0
    [ "$n" = gateway-cut ] && want=3
    check "$n: exit $want (got $status), valid" test "$status" -eq "$want" -a -s "$tmp/g-$n.sum"
done

# ---- the cache example
"$cache" trace "$tmp/cache.bin" >/dev/null
"$ctrace" stats "$tmp/cache.bin" >"$tmp/cache.stats"
export_check cache "$tmp/cache.bin"
check "cache: exit 0" test $? -eq 0
blocks=$(awk '$1 == "BLOCK" { print $2 }' "$tmp/cache.stats")
waits=$(sum_facts cache slice_category sync net syscall sleep)
check "cache: one slice per wait ($waits slices, $blocks Blocks)" test "$waits" -eq "$blocks" -a "$blocks" -gt 0
released=$("$ctrace" -pprof=blame -top "$tmp/cache.bin" 2>/dev/null |
    sed -n 's/^blame profile: .* in \([0-9]*\) samples.*/\1/p')
flows=$(fact cache flows)
check "cache: a flow from each release to its wait ($flows flows, $released released waits)" \
    test "$flows" -eq "$released" -a "$flows" -gt 0
into=$(fact cache flows_into pthread_mutex_lock)
check "cache: the flows end on the lock waits ($into)" test "$into" -gt 0
threads=$(awk '$1 == "threads:" { print $2 }' "$tmp/cache.stats")
check "cache: a track per thread ($threads)" test "$(grep -c '^thread ' "$tmp/cache.sum")" -eq "$threads"
check "cache: threads named as in the trace" grep -qE '^thread [0-9]+ cache-[0-9]+ ' "$tmp/cache.sum"
ranks=$(awk '$1 == "thread" { print $NF }' "$tmp/cache.sum" | sort -n | tr '\n' ' ')
check "cache: ranks 0..n-1, one each" test "$ranks" = "$(seq 0 $((threads - 1)) | tr '\n' ' ')"
check "cache: threads blocked counted" test "$(fact cache counter_max threads blocked)" -gt 1

# ---- a time-order buffer too small for the cache example: still valid, and said
export_check small -buffer 4K "$tmp/cache.bin"
check "-buffer 4K: exit 0" test $? -eq 0
check "-buffer 4K: says what went out of place" grep -qE "time-order buffer was full: [0-9]+ items placed late" "$tmp/small.err"
check "-buffer 4K: the same slices, fewer flows ($(fact small flows) of $flows)" \
    test "$(fact small slices)" -eq "$(fact cache slices)" -a "$(fact small flows)" -lt "$flows"
expect "-buffer: a size wanted" 2 "-buffer wants a size" -- \
    "$ctrace" -perfetto -buffer lots -o "$tmp/x" "$tmp/cache.bin"

# ---- the busiest thread first
"$busy" "$tmp/busy.bin"
export_check busy "$tmp/busy.bin"
check "prog-busy: the spinner ranks first" grep -qE '^thread [0-9]+ spinner 0$' "$tmp/busy.sum"
check "prog-busy: its nappers after it" \
    test "$(grep -cE '^thread [0-9]+ napper-[0-9] [1-9]$' "$tmp/busy.sum")" -eq 3

# ---- a damaged generation in the middle: exit 3, the missing span shown
gens=$golden/waits-sched.bin
mapfile -t frames < <(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$gens" | cut -d: -f1)
mid=${frames[$(( ${#frames[@]} / 2 ))]} next=${frames[$(( ${#frames[@]} / 2 + 1 ))]}
cp "$gens" "$tmp/hurt.bin"
printf '\xff\xff\xff\xff\xff\xff\xff\xff' |
    dd of="$tmp/hurt.bin" bs=1 seek=$(( (mid + next) / 2 )) conv=notrunc 2>/dev/null
export_check hurt "$tmp/hurt.bin"
check "damaged: exit 3" test $? -eq 3
check "damaged: the damage said" grep -q "damaged in the frame at file offset $mid" "$tmp/hurt.err"
check "damaged: the missing span on the ctrace track" \
    test "$(fact hurt slice_name 'missing (damaged trace)')" -eq 1

# ---- damaged copies (bits flipped, cuts; deterministic): never a crash, a
# valid timeline of what could be read (two gaps at the trace's very start
# once left a slice open)
mutants=0 mut_bad=0
for f in "$golden/killed.bin" "$golden/flight.bin" "$golden/flight-example.bin"; do
    for i in $(seq 1 8); do
        python3 - "$f" "$tmp/mut.bin" "$i" <<'EOF2'
import random, sys
data = bytearray(open(sys.argv[1], "rb").read())
r = random.Random(int(sys.argv[3]) * 7919 + len(data))
for _ in range(r.randint(1, 8)):
    at = r.randrange(16, len(data))
    data[at] ^= 1 << r.randrange(8)
if r.random() < 0.2:
    data = data[:r.randrange(16, len(data))]
open(sys.argv[2], "wb").write(data)
EOF2
        "$ctrace" -perfetto -o "$tmp/mut.pftrace" "$tmp/mut.bin" >/dev/null 2>&1
        status=$?
        mutants=$((mutants + 1))
        if [ $status -ne 0 ] && [ $status -ne 1 ] && [ $status -ne 3 ]; then
            mut_bad=$((mut_bad + 1)); echo "damaged copy $i of $f: exit $status"
        elif [ $status -ne 1 ] && ! python3 "$checker" "$tmp/mut.pftrace" >/dev/null 2>"$tmp/mut.chk"; then
            mut_bad=$((mut_bad + 1)); echo "damaged copy $i of $f: invalid output"; head -3 "$tmp/mut.chk"
        fi
    done
done
check "damaged copies: $mutants converted, none crashed, every output valid" test "$mut_bad" -eq 0

# ---- a flight recorder's dump: its window marked where it starts
# flight.bin starts at generation 34: the recorder had let the earlier go.
check "flight recorder dump: its window's start marked" \
    test "$(fact g-flight slice_name 'flight recorder window')" -eq 1
check "whole trace: no window mark" test "$(fact g-gateway slice_name 'flight recorder window')" -eq 0

# ---- -from/-to: that span only
export_check whole "$golden/gateway.bin"
export_check cut -from 100ms -to 300ms "$golden/gateway.bin"
check "-from/-to: exit 0" test $? -eq 0
first=$(fact cut first_ts) last=$(fact cut last_ts)
wfirst=$(fact whole first_ts)
check "-from/-to: 200 ms or less kept ($((last - first)) ns)" test $((last - first)) -le 200000000 -a $((last - first)) -gt 0
check "-from/-to: from 100 ms after the start" test $((first - wfirst)) -ge 100000000
check "-from/-to: fewer slices ($(fact cut slices) of $(fact whole slices))" \
    test "$(fact cut slices)" -lt "$(fact whole slices)" -a "$(fact cut slices)" -gt 0

# ---- -task/-latmin: those tasks only
export_check slow -task request -latmin 100ms "$golden/gateway.bin"
check "-task -latmin: exit 0" test $? -eq 0
all_tasks=$(fact whole slice_category task) slow_tasks=$(fact slow slice_category task)
want_slow=$("$ctrace" tasks -type request -latmin 100ms -n 1 "$golden/gateway.bin" 2>/dev/null |
    sed -n 's/^slowest 1 of \([0-9]*\) tasks .*/\1/p')
check "-task -latmin: the slow requests only ($slow_tasks of $all_tasks; ctrace tasks: $want_slow)" \
    test "$slow_tasks" -eq "$want_slow" -a "$slow_tasks" -lt "$all_tasks"
check "-task -latmin: less of the threads' time" \
    test "$(fact slow slices)" -lt "$(fact whole slices)"
expect "-task that matches nothing: said" 0 "no task of type .nosuch. in the trace: the timeline is empty" -- \
    "$ctrace" -perfetto -task nosuch -o "$tmp/none.pftrace" "$golden/gateway.bin"

# ---- the same bytes for any -j, and from standard input
"$ctrace" -perfetto -j 1 -o "$tmp/j1.pftrace" "$golden/waits-sched.bin" 2>/dev/null
"$ctrace" -perfetto -j 4 -o "$tmp/j4.pftrace" "$golden/waits-sched.bin" 2>/dev/null
check "-j 1 and -j 4: the same bytes" cmp -s "$tmp/j1.pftrace" "$tmp/j4.pftrace"
"$ctrace" -perfetto - <"$golden/waits-sched.bin" >"$tmp/stdin.pftrace" 2>/dev/null
check "standard input to standard output: the same bytes" cmp -s "$tmp/j1.pftrace" "$tmp/stdin.pftrace"

# ---- bad input
expect "missing trace: exit 1" 1 "nosuch.bin" -- "$ctrace" -perfetto -o "$tmp/x" "$tmp/nosuch.bin"
mkfifo "$tmp/fifo"
expect "FIFO: refused" 1 "not a regular file" -- timeout 20 "$ctrace" -perfetto -o "$tmp/x" "$tmp/fifo"
expect "-to before -from: usage" 2 "-to must be after -from" -- \
    "$ctrace" -perfetto -from 2s -to 1s -o "$tmp/x" "$golden/gateway.bin"
expect "bad duration: usage" 2 "wants a duration" -- "$ctrace" -perfetto -from soon -o "$tmp/x" "$golden/gateway.bin"
expect "unknown flag: usage" 2 "unknown flag -bogus" -- "$ctrace" -perfetto -bogus "$golden/gateway.bin"
expect "-port without -http: usage" 2 "-port goes with -http" -- \
    "$ctrace" -perfetto -port 9100 -o "$tmp/x" "$golden/gateway.bin"
expect "full disk: exit 1, said" 1 "No space left on device" -- \
    "$ctrace" -perfetto -o /dev/full "$golden/gateway.bin"
check "a failed output is not left behind" test ! -e "$tmp/x"

# ---- -http: the Perfetto UI fetches the file from 127.0.0.1
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TMPDIR=$tmp "$ctrace" -perfetto -http -port "$port" "$golden/waits-sched.bin" >"$tmp/http.out" 2>&1 &
server=$!
# (up to a minute: it converts first, on a machine that may be busy)
for _ in $(seq 600); do grep -q "ui.perfetto.dev" "$tmp/http.out" && break; sleep 0.1; done
url=$(sed -n 's/^Open in the Perfetto UI: .*url=\(http[^ ]*\).*/\1/p' "$tmp/http.out")
check "-http: the UI's link printed" test -n "$url"
python3 - "$url" "$tmp/got.pftrace" >"$tmp/headers" 2>&1 <<'EOF'
import sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Origin": "https://ui.perfetto.dev"})
with urllib.request.urlopen(req, timeout=20) as r:
    print(r.headers.get("Access-Control-Allow-Origin"))
    open(sys.argv[2], "wb").write(r.read())
EOF
check "-http: served with the UI's origin allowed" grep -qx "https://ui.perfetto.dev" "$tmp/headers"
check "-http: the same bytes as -o" cmp -s "$tmp/j1.pftrace" "$tmp/got.pftrace"
# Clients that hold connections (five idle, one sending a byte every 0.4
# s) delay only themselves: the UI's GET is answered while they wait,
# long before the server's 5 s head deadline lets them go (one at a time,
# it waited 10 s behind each). A page of another origin that rebinds its
# own name to 127.0.0.1 sends its own Host: refused. The path needs the
# link's random part.
python3 - "$url" >"$tmp/hold.out" 2>&1 <<'EOF'
import socket, sys, threading, time, urllib.parse
url = urllib.parse.urlsplit(sys.argv[1])
port, path = url.port, url.path
def conn():
    return socket.create_connection(("127.0.0.1", port), timeout=20)
def get(path, host):
    s = conn()
    s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path.encode(), host.encode()))
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
    s.close()
    return out
idle = [conn() for _ in range(5)]
loris = conn()
loris.sendall(b"GET /")
stop = False
def drip():
    while not stop:
        time.sleep(0.4)
        try:
            loris.send(b"a")
        except OSError:
            return
t = threading.Thread(target=drip)
t.start()
time.sleep(0.5)
t0 = time.time()
r = get(path, "127.0.0.1:%d" % port)
took = time.time() - t0
print("held: %s in %.2f s, %d bytes" % (r.split(b"\r\n")[0].decode(), took, len(r)))
print("held-fast" if r.startswith(b"HTTP/1.1 200") and took < 3 else "held-slow")
stop = True
t.join()
r = get(path, "evil.example:%d" % port)
print("foreign: " + r.split(b"\r\n")[0].decode())
print("foreign-bytes %d" % len(r))
r = get("/" + path.rsplit("/", 1)[1], "127.0.0.1:%d" % port)
print("untokened: " + r.split(b"\r\n")[0].decode())
r = get(path, "localhost:%d" % port)
print("localhost: " + r.split(b"\r\n")[0].decode())
EOF
check "-http: answered at once beside held connections ($(sed -n 's/^held: //p' "$tmp/hold.out"))" \
    grep -qx "held-fast" "$tmp/hold.out"
check "-http: a foreign Host refused, no trace bytes" \
    sh -c "grep -qx 'foreign: HTTP/1.1 403 Forbidden' '$tmp/hold.out' &&
           test \$(sed -n 's/^foreign-bytes //p' '$tmp/hold.out') -lt 1000"
check "-http: the file's name without the link's random part: 404" \
    grep -qx "untokened: HTTP/1.1 404 Not Found" "$tmp/hold.out"
check "-http: Host localhost with the port served" grep -qx "localhost: HTTP/1.1 200 OK" "$tmp/hold.out"
kill -INT "$server"
wait "$server"
check "-http: SIGINT stops it, exit 0" test $? -eq 0
check "-http: its temporary file removed" test -z "$(ls -d "$tmp"/ctrace-perfetto-* 2>/dev/null)"

# ---- Perfetto's own importer
for n in cache g-waits-sched g-gateway hurt slow; do
    expectations=()
    [ "$n" = cache ] && expectations=("threads=$threads" thread=cache-00 thread=cache-63)
    "$here/perfetto_tp.sh" "$tmp/$n.pftrace" "${expectations[@]}" >"$tmp/$n.tp" 2>&1
    status=$?
    if [ $status -eq 77 ]; then
        echo "skip trace_processor: $(head -1 "$tmp/$n.tp")"
        break
    fi
    check "trace_processor loads $n without an import error" test $status -eq 0
    tp_slices=$(sed -n 's/^slices *//p' "$tmp/$n.tp")
    want=$(( $(fact "$n" slices) + $(fact "$n" instants) ))
    check "trace_processor: $n has $want slices ($tp_slices)" test "$tp_slices" = "$want"
    tp_flows=$(sed -n 's/^flows *//p' "$tmp/$n.tp")
    check "trace_processor: $n has $(fact "$n" flows) flows ($tp_flows)" test "$tp_flows" = "$(fact "$n" flows)"
done
finish
