#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# streaming.sh - the analyzer's input, as the streaming reader takes it: a
# damaged generation in the middle of a trace is named and skipped, and the
# generations after it are still analysed, with the missing span of time
# said (exit 3), and a damaged first one is said with no length, never
# from time 0; bytes between frames that are no frame are skipped to the
# next one; a FIFO is refused at once, not waited on; "-" reads standard
# input, for one reading or two (a filter, the tasks' breakdowns); the
# header is checked before anything else is read; progress shows on a
# terminal only.
# usage: streaming.sh CTRACE GOLDEN_DIR
set -uo pipefail
ctrace=$1 golden=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

# events FILE: the event count `ctrace stats` gives.
events() {
    "$ctrace" stats "$1" 2>/dev/null | sed -n 's/^events: *//p'
}

gens=$golden/waits-sched.bin  # 11 generations, one frame each, events in all
gw=$golden/gateway.bin        # tasks, regions, logs
intact=$(events "$gens")
# The file offsets of its frames (each begins with the zstd magic).
mapfile -t frames < <(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$gens" | cut -d: -f1)
check "the trace has many frames" test "${#frames[@]}" -gt 8
mid=${frames[$(( ${#frames[@]} / 2 ))]}
next=${frames[$(( ${#frames[@]} / 2 + 1 ))]}

# Damage inside the middle frame's compressed data.
cp "$gens" "$tmp/hurt.bin"
printf '\xff\xff\xff\xff\xff\xff\xff\xff' |
    dd of="$tmp/hurt.bin" bs=1 seek=$(( (mid + next) / 2 )) conv=notrunc 2>/dev/null
expect "damaged middle: exit 3, the frame named" 3 "damaged in the frame at file offset $mid" -- \
    "$ctrace" stats "$tmp/hurt.bin"
expect "damaged middle: the missing span said" 3 "missing: \+[0-9.]+ s to \+[0-9.]+ s" -- \
    "$ctrace" -pprof=sync -top "$tmp/hurt.bin"
head -c "$mid" "$gens" >"$tmp/before.bin"
# The generations after the damaged one, as a trace of their own (a 1.2
# trace may start at any generation: FORMAT.md §3.1).
{ head -c 16 "$gens"; tail -c +$((next + 1)) "$gens"; } >"$tmp/after.bin"
hurt=$(events "$tmp/hurt.bin") before=$(events "$tmp/before.bin") after=$(events "$tmp/after.bin")
# What came after the damage is read: at least the generations before it
# and those after it, and no more than the whole.
check "damaged middle: later generations analysed ($before + $after <= $hurt <= $intact)" \
    test "$before" -gt 0 -a "$after" -gt 0 -a "$hurt" -ge $((before + after)) -a "$hurt" -le "$intact"
expect "damaged middle: stats says what is missing" 3 "^missing: +1 span of" -- \
    "$ctrace" stats "$tmp/hurt.bin"
expect "damaged middle: threads still reads" 3 "threads by start function" -- \
    "$ctrace" threads "$tmp/hurt.bin"

# Damage in the first frame: what it held is missing for a time not known,
# said so, and never counted from time 0 (the machine's uptime: hours).
first=${frames[0]} second=${frames[1]}
cp "$gens" "$tmp/hurt-first.bin"
printf '\xff\xff\xff\xff\xff\xff\xff\xff' |
    dd of="$tmp/hurt-first.bin" bs=1 seek=$(( (first + second) / 2 )) conv=notrunc 2>/dev/null
expect "damaged first frame: the gap has no length it cannot know" 3 \
    "missing: what came before \+[0-9.]+ s, for a time not known" -- \
    "$ctrace" -pprof=sync -top "$tmp/hurt-first.bin"
duration() { "$ctrace" stats "$1" 2>/dev/null | awk '$1 == "duration:" { print $2 }'; }
check "damaged first frame: the duration is no longer than the intact trace's" \
    awk -v a="$(duration "$tmp/hurt-first.bin")" -v b="$(duration "$gens")" 'BEGIN { exit !(a > 0 && a <= b) }'
expect "damaged first frame: stats says what is missing" 3 \
    "^missing: +1 span of 0\.000000 s in all \(and, the first, what came before the trace's start" -- \
    "$ctrace" stats "$tmp/hurt-first.bin"

# Bytes that are no frame where a frame should begin: skipped to the next.
cp "$gens" "$tmp/garbled.bin"
printf 'garbage!' | dd of="$tmp/garbled.bin" bs=1 seek="$mid" conv=notrunc 2>/dev/null
expect "garbled frame start: skipped to the next frame" 3 "file offset $mid: not a zstd frame" -- \
    "$ctrace" stats "$tmp/garbled.bin"
garbled=$(events "$tmp/garbled.bin")
check "garbled frame start: later generations analysed ($before + $after <= $garbled <= $intact)" \
    test "$garbled" -ge $((before + after)) -a "$garbled" -le "$intact"

# A FIFO with no writer: refused at once (a reader that opened it would
# wait forever; the timeout makes that a failure, not a hang).
mkfifo "$tmp/fifo"
for verb in "stats" "threads" "tasks" "-pprof=sync -top"; do
    # shellcheck disable=SC2086
    expect "FIFO: $verb refuses it" 1 "not a regular file \(a FIFO\).*give -" -- \
        timeout 20 "$ctrace" $verb "$tmp/fifo"
done

# Standard input: the same answers as the file.
"$ctrace" stats "$gw" | tail -n +2 >"$tmp/file.stats"
"$ctrace" stats - <"$gw" | tail -n +2 >"$tmp/stdin.stats"
check "stdin: stats as from the file" cmp -s "$tmp/file.stats" "$tmp/stdin.stats"
"$ctrace" tasks "$gw" >"$tmp/file.tasks" 2>&1
cat "$gw" | "$ctrace" tasks - >"$tmp/pipe.tasks" 2>&1
check "pipe: tasks (two readings, spooled) as from the file" \
    cmp -s "$tmp/file.tasks" "$tmp/pipe.tasks"
"$ctrace" -pprof=sync -task request -latmin 100ms -top "$gw" >"$tmp/file.top" 2>&1
cat "$gw" | "$ctrace" -pprof=sync -task request -latmin 100ms -top - >"$tmp/pipe.top" 2>&1
check "pipe: a filtered profile (two readings) as from the file" \
    cmp -s "$tmp/file.top" "$tmp/pipe.top"
expect "pipe: not a trace" 1 "^ctrace: -: not a ctrace trace" -- \
    bash -c "echo hello | '$ctrace' stats -"

# The header first: a large file that is no trace is refused on its first
# bytes (a sparse file: it takes no disk).
truncate -s 1G "$tmp/zeros.bin"
expect "1 GiB of zeros: refused on its header" 1 "bad magic" -- "$ctrace" stats "$tmp/zeros.bin"
# A header, then no frame: damage, read through in bounded memory.
{ head -c 16 "$gens"; head -c $((64 << 20)) /dev/zero; } >"$tmp/headed.bin"
expect "a header, then 64 MiB of zeros: damage" 3 "not a zstd frame" -- \
    "$ctrace" stats "$tmp/headed.bin"

# Progress: on a terminal's stderr, for an analysis over 2 s (here a pipe
# that pauses), as "N MB read, M events/s"; never when stderr is no
# terminal. script(1) (util-linux, essential in Debian) gives the terminal.
slow="(head -c 2000 '$gens'; sleep 2.5; tail -c +2001 '$gens') | '$ctrace' stats - >/dev/null"
script -qc "$slow" "$tmp/tty.log" >/dev/null 2>&1
check "progress on a terminal" grep -q "MB read, [0-9.]* M events/s" "$tmp/tty.log"
bash -c "$slow" 2>"$tmp/notty.err"
check "no progress when stderr is no terminal" test ! -s "$tmp/notty.err"

# -j: a bad value is a usage error.
expect "-j 0 refused" 2 "-j wants a number of threads" -- "$ctrace" stats -j 0 "$gens"
expect "-j x refused" 2 "-j wants a number of threads" -- "$ctrace" -pprof=sync -j x -top "$gens"

# The memory decompression takes stays within -mem whatever -j. Frames of
# zeros, 9 KB each on disk, that decompress to 255 MiB each: each is damage
# (more than a quarter of the budget), found holding no more than the
# budget (before: 529 MB at -j 1, 1.94 GB at -j 8). Frames decoded ahead
# that do not fit the share of those ahead are decoded in their turn.
# peak_kb CMD...: CMD's peak resident memory in KiB (its output dropped);
# ASan's quarantine, which keeps freed memory, kept small.
peak_kb() {
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=1" python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}
head -c 268000000 /dev/zero | zstd -q -1 --no-content-size -c >"$tmp/zeros.zst"
{ head -c 16 "$gens"; for _ in 1 2 3 4 5 6 7 8; do cat "$tmp/zeros.zst"; done; } >"$tmp/bomb.bin"
base=$(peak_kb "$ctrace" stats -j 8 "$gens")
# The default budget's run decompresses 1 GB of zeros: not under the
# sanitizers (half a minute there; their allocator's figures are not the
# release build's anyway).
mems=(32 512)
[[ ${CTRACE_SANITIZE:-OFF} == ON ]] && mems=(32)
for mem in "${mems[@]}"; do
    flag=(-mem ${mem}M)
    [ $mem = 512 ] && flag=() # the default
    peak=$(peak_kb "$ctrace" stats -j 8 "${flag[@]}" "$tmp/bomb.bin")
    check "8 frames of 255 MiB of zeros at -j 8: within ${mem} MiB (${peak} KiB, ${base} for a small trace)" \
        test $((peak - base)) -le $((mem << 10))
done
expect "zero frames: damage, a frame's most named" 3 \
    "decompresses to more than 8 MiB, the most a frame may take \(-mem\)" -- \
    "$ctrace" stats -j 8 -mem 32M "$tmp/bomb.bin"
"$ctrace" stats -j 1 -mem 32M "$tmp/bomb.bin" >"$tmp/bomb.j1" 2>&1
"$ctrace" stats -j 4 -mem 32M "$tmp/bomb.bin" >"$tmp/bomb.j4" 2>&1
check "zero frames: the same report at -j 1 and -j 4 (frames decoded in their turn)" \
    cmp -s "$tmp/bomb.j1" "$tmp/bomb.j4"
# A frame whose window alone is over the budget is refused before any of it
# is taken (zstd --long=28: a 256 MiB window).
head -c $((64 << 20)) /dev/zero | zstd -q -1 --long=28 -c >"$tmp/long.zst"
{ head -c 16 "$gens"; cat "$tmp/long.zst" "$tmp/long.zst"; } >"$tmp/long.bin"
expect "a 256 MiB window: refused up front" 3 "needs 256 MiB to decompress, more than the 128 MiB" -- \
    "$ctrace" stats -j 2 "$tmp/long.bin"
peak=$(peak_kb "$ctrace" stats -j 2 "$tmp/long.bin")
check "a 256 MiB window: not taken (${peak} KiB, ${base} for a small trace)" \
    test $((peak - base)) -le $((16 << 10))
"$ctrace" -pprof=sync -top -j 1 "$gens" >"$tmp/gens.j1" 2>&1
"$ctrace" -pprof=sync -top -j 4 -mem 32M "$gens" >"$tmp/gens.j4" 2>&1
check "a trace read within the least budget: as at -j 1" cmp -s "$tmp/gens.j1" "$tmp/gens.j4"
expect "-mem 1M refused" 2 "-mem wants a size from 32M" -- "$ctrace" stats -mem 1M "$gens"
expect "-mem x refused" 2 "-mem wants a size from 32M" -- "$ctrace" -pprof=sync -mem x -top "$gens"
finish
