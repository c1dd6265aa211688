#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_debian.sh - `ctrace run` on real threaded programs from Debian's packages,
# which this project did not write and which know nothing of ctrace: their
# output and exit status must be the same as without ctrace, and the trace's
# sync profile must name their own functions, not only libc's.
#
# The programs, and why these:
#   - Debian ships binaries stripped, and no -dbgsym package can be installed
#     from the default apt sources (the debian-debug archive is not among them,
#     nor reachable from the test machines). So the functions must be names
#     the binaries export in .dynsym. Most threaded tools export none (pigz,
#     pbzip2 and lbzip2 export 3 or 4 symbols, all libc's), so their profiles
#     would be all "[pigz]".
#   - python3 (python3.11-minimal): the interpreter exports its whole C API
#     from the executable (extension modules link against it), so its own
#     functions have names: PyThread_acquire_lock_timed, under which a
#     threading.Lock waits, and _PyEval_EvalFrameDefault, the interpreter loop
#     above it. Contention is certain, not timing-dependent: each worker holds
#     the lock across a sleep, so the others wait. Its frames have no frame
#     pointers: only eh_frame unwinding (libunwind) reaches past the first one.
#   - xz -T2 (xz-utils): an unmodified tool at real work. Multithreaded
#     compression hands blocks to worker threads that wait on liblzma's
#     mutexes and condition variables, and liblzma exports its API, so the
#     waits of the main thread are under lzma_code. The compressed bytes and
#     the status of a failing run are compared with a run without ctrace.
# Both are in tests/tools/deps.sh; both take well under a second on a 2-core VM.
#
# In an AddressSanitizer build `ctrace run` also preloads ASan's runtime; the
# traced programs' own leaks are not ours to report (detect_leaks=0 for them).
#
# usage: run_debian.sh CTRACE_BINARY
set -uo pipefail
ctrace=$1
python=/usr/bin/python3
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"


for prog in "$python" xz go; do
    if ! command -v "$prog" >/dev/null 2>&1; then
        echo "FAIL $prog not found: install tests/tools/deps.sh's packages (python3, xz-utils, golang-go)"
        exit 1
    fi
done

# traced TRACE -- command...: runs the command under `ctrace run`.
traced() {
    local trace=$1; shift 2
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$ctrace" run -o "$trace" -- "$@"
}

# same NAME: compares the files NAME.{ref,run}.{out,err,status}.
same() {
    local name=$1 what
    for what in out err status; do
        if cmp -s "$tmp/$name.ref.$what" "$tmp/$name.run.$what"; then
            ok "$name: $what unchanged under ctrace run"
        else
            bad "$name: $what differs under ctrace run:"
            diff <(head -c 2000 "$tmp/$name.ref.$what" | cat -v) \
                 <(head -c 2000 "$tmp/$name.run.$what" | cat -v) | head -20
        fi
    done
}

# profile_has NAME TRACE FUNCTION...: the trace is complete, and its sync
# profile names each FUNCTION.
profile_has() {
    local name=$1 trace=$2 f top=""; shift 2
    if "$ctrace" stats "$trace" > "$tmp/$name.stats" 2>&1 && grep -q '(complete)' "$tmp/$name.stats"; then
        ok "$name: the trace is complete"
    else
        bad "$name: the trace is not complete:"; head -20 "$tmp/$name.stats"
    fi
    if grep -q 'stacks taken: .*eh_frame unwinding' "$tmp/$name.stats"; then
        ok "$name: eh_frame unwinding was on"
    else
        bad "$name: eh_frame unwinding was off:"; grep 'stacks taken' "$tmp/$name.stats"
    fi
    if ! "$ctrace" -pprof=sync -o "$tmp/$name.pb.gz" "$trace" 2> "$tmp/$name.pprof.err" ||
       ! top=$(go tool pprof -top -nodecount=200 "$tmp/$name.pb.gz" 2>&1); then
        bad "$name: no sync profile:"; cat "$tmp/$name.pprof.err"; echo "$top" | head -20
        return
    fi
    for f in "$@"; do
        if grep -qE " $f( |$)" <<<"$top"; then
            ok "$name: the sync profile names $f"
        else
            bad "$name: the sync profile does not name $f:"; echo "$top" | head -40
        fi
    done
}

# ------------------------------------------------------------------ python3
cat > "$tmp/contend.py" <<'EOF'
# Four threads take one lock 25 times each and hold it across a 0.5 ms sleep
# (which releases the GIL): whoever does not hold it waits for it.
import sys, threading, time
lock = threading.Lock()
done = []
def work(n):
    for _ in range(25):
        with lock:
            time.sleep(0.0005)
            done.append(n)
threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print("rounds:", len(done), "per thread:", sorted(done.count(n) for n in range(4)))
print("exiting with status 3", file=sys.stderr)
sys.exit(3)
EOF
"$python" "$tmp/contend.py" > "$tmp/py.ref.out" 2> "$tmp/py.ref.err"; echo $? > "$tmp/py.ref.status"
traced "$tmp/py.bin" -- "$python" "$tmp/contend.py" > "$tmp/py.run.out" 2> "$tmp/py.run.err"
echo $? > "$tmp/py.run.status"
same py
profile_has py "$tmp/py.bin" PyThread_acquire_lock_timed _PyEval_EvalFrameDefault start_thread

# ------------------------------------------------------------------ xz -T2
# 128 KiB blocks: about 20 of them for two workers, so the main thread waits.
seq 1 400000 > "$tmp/input"
xz_args=(-T2 -1 --block-size=128KiB -c "$tmp/input")
xz "${xz_args[@]}" > "$tmp/xz.ref.out" 2> "$tmp/xz.ref.err"; echo $? > "$tmp/xz.ref.status"
traced "$tmp/xz.bin" -- xz "${xz_args[@]}" > "$tmp/xz.run.out" 2> "$tmp/xz.run.err"
echo $? > "$tmp/xz.run.status"
same xz
profile_has xz "$tmp/xz.bin" lzma_code

# A failing run: a truncated stream, decompressed by two threads.
head -c 20000 "$tmp/xz.ref.out" > "$tmp/cut.xz"
xz -T2 -dc "$tmp/cut.xz" > "$tmp/xzfail.ref.out" 2> "$tmp/xzfail.ref.err"
echo $? > "$tmp/xzfail.ref.status"
traced "$tmp/xzfail.bin" -- xz -T2 -dc "$tmp/cut.xz" > "$tmp/xzfail.run.out" 2> "$tmp/xzfail.run.err"
echo $? > "$tmp/xzfail.run.status"
same xzfail
if [ "$(cat "$tmp/xzfail.run.status")" -ne 0 ]; then
    ok "xzfail: xz failed, as it should"
else
    bad "xzfail: xz succeeded on a truncated file"
fi

finish
