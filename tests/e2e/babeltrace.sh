#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# babeltrace.sh - the babeltrace2 plugin `ctrace` (tp/bt2plugin.c) end to
# end, on the cache example's native trace:
#   - babeltrace2 picks source.ctrace.trace by itself (its answer to the
#     babeltrace.support-info query) and prints ctrace:block events with the
#     wait reason's name, as many as `ctrace stats` counts BLOCK events;
#     every record and event in time order, the events (but a few a thread
#     held back, moved up to the time before them) at the CLOCK_MONOTONIC
#     time their ticks give between the CLOCK records, and the first CLOCK
#     record at its own CLOCK_REALTIME from the Unix epoch;
#   - converted to CTF by sink.ctf.fs, the trace reads back in ctrace with
#     the same sync profile (the same top stack, every stack's share within
#     5 points) and the same count of events of each type;
#   - a trace cut in half: babeltrace2 prints what comes before the cut, then
#     exits 1 (no crash) naming the file and the frame's offset; a file that
#     is not a ctrace trace is not claimed, and refused when named.
# lttng.sh checks the event classes and the events against an LTTng session
# of the same run.
# usage: babeltrace.sh CTRACE CACHE PLUGIN_DIR
set -uo pipefail
ctrace=$1 cache=$2 plugins=$3
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/checks.sh"
source "$here/profile_compare.sh"

source "$here/bt2plugin_run.sh"
bt() { bt2 "$plugins" "$@"; }

# weight FILE: the class's babeltrace.support-info answer for FILE.
weight() {
    bt query src.ctrace.trace babeltrace.support-info -p "type=\"file\",input=\"$1\"" 2>&1
}

# timing TEXT: how many events of TEXT (babeltrace2 --clock-cycles: times
# in CLOCK_MONOTONIC ns) lie off the time their ticks give by linear
# interpolation between the ctrace:clock records around them (FORMAT.md
# §6), as "EVENTS OFF".
timing() {
    awk 'function val(name,   s) {
             if (!match($0, name " = [0-9]+")) return -1
             s = substr($0, RSTART, RLENGTH); sub(/.* = /, "", s); return s + 0
         }
         NR == FNR { if ($0 ~ / ctrace:clock: /) { n++; t[n] = val("ticks"); m[n] = val("mono_ns") }
                     next }
         / ctrace:(block|unblock|release|thread_[a-z]+|task_[a-z]+|region_[a-z]+|log): / {
             x = val("ticks"); lo = 1; hi = n
             while (hi - lo > 1) { mid = int((lo + hi) / 2); if (t[mid] <= x) lo = mid; else hi = mid }
             want = m[lo] + (x - t[lo]) * (m[hi] - m[lo]) / (t[hi] - t[lo])
             d = substr($1, 2, length($1) - 2) - want
             events++; off += d > 2 || d < -2
         }
         END { print events + 0, off + 0 }' "$1" "$1"
}

# ---- the cache example's trace, read by babeltrace2
"$cache" trace "$tmp/cache.bin" >/dev/null || bad "cache trace failed"
check "support-info claims the trace" grep -Eqx '0\.750*' <(weight "$tmp/cache.bin")
bt --clock-seconds "$tmp/cache.bin" >"$tmp/text" 2>"$tmp/text.err"
status=$?
check "babeltrace2 reads the trace by itself (exit $status)" test "$status" -eq 0
head -c 2000 "$tmp/text.err"
check "ctrace:block with the reason's name" grep -qE \
    ' ctrace:block: \{ thread = [0-9]+, ticks = [0-9]+, reason = \( "MUTEX_LOCK" : container = 1 \), object = 0x[0-9A-F]+, stack = [0-9]+ \}' \
    "$tmp/text"
blocks=$("$ctrace" stats "$tmp/cache.bin" | awk '$1 == "BLOCK" { print $2 }')
printed=$(grep -c ' ctrace:block: ' "$tmp/text")
check "as many ctrace:block as ctrace stats counts ($printed, ${blocks:-none})" \
    test "$printed" = "${blocks:-none}"
check "records and events in time order" \
    awk -F'[][]' '{ t = $2 ""; if (t < last) exit 1; last = t } END { exit NR < 1000 }' "$tmp/text"
bt --clock-cycles "$tmp/cache.bin" >"$tmp/cycles" 2>&1
read -r events off < <(timing "$tmp/cycles")
check "events at their ticks' time ($off of $events off it)" \
    test "$events" -gt 1000 -a "$off" -lt $((events / 10))
check "the first CLOCK at its CLOCK_REALTIME" \
    awk -F'[][]' '/ ctrace:clock: / { t = $2; gsub(/[.]/, "", t); exit !($0 ~ "real_ns = " t " ") }' \
    "$tmp/text"

# ---- to CTF (sink.ctf.fs) and back into ctrace
bt convert "$tmp/cache.bin" --component=sink.ctf.fs --params="path=\"$tmp/ctf\"" \
    >"$tmp/convert.out" 2>&1 || { bad "babeltrace2 convert failed"; head -40 "$tmp/convert.out"; }
check "sink.ctf.fs wrote a CTF trace" test -f "$tmp/ctf/cache.bin/metadata"
"$ctrace" -pprof=sync -top -n 8 "$tmp/cache.bin" >"$tmp/native.top" 2>&1
"$ctrace" -pprof=sync -top -n 8 "$tmp/ctf" >"$tmp/ctf.top" 2>&1
check "CTF: same top stack" test "$(shares "$tmp/native.top" | head -1 | cut -f2)" = \
    "$(shares "$tmp/ctf.top" | head -1 | cut -f2)"
check "CTF: the lock line at the top" \
    grep -qE "^ {20,}cache_get_slow \(.*cache\.c:$cache_lock_line\)" <(sed -n 5p "$tmp/ctf.top")
if same_shares "$tmp/native.top" "$tmp/ctf.top"; then ok "CTF: every stack's share within 5 points"
else bad "CTF: shares"; cat "$tmp/native.top" "$tmp/ctf.top"; fi
if diff <(counts "$tmp/cache.bin") <(counts "$tmp/ctf"); then ok "CTF: the same events of each type"
else bad "CTF: event counts differ"; fi
expect "CTF: a complete trace, nothing dropped" 0 "\(complete\)" -- "$ctrace" stats "$tmp/ctf"

# ---- damage, and what is not a trace
cp "$tmp/cache.bin" "$tmp/cut.bin"
truncate -s $(($(stat -c %s "$tmp/cache.bin") / 2)) "$tmp/cut.bin"
expect "cut in half: exit 1, the file and the frame named" 1 \
    "cut\.bin: the file ends inside the frame at byte [0-9]+" -- bt "$tmp/cut.bin"
check "cut in half: what comes before the cut is printed" \
    grep -q ' ctrace:block: ' <(bt "$tmp/cut.bin" 2>/dev/null)
check "support-info does not claim a program" grep -Eqx '0(\.0*)?' <(weight "$cache")
check "support-info does not claim a directory" grep -Eqx '0(\.0*)?' \
    <(bt query src.ctrace.trace babeltrace.support-info -p "type=\"directory\",input=\"$tmp\"" 2>&1)
expect "a program named as an input: refused" 1 "not a ctrace trace" -- \
    bt -c src.ctrace.trace -p "inputs=[\"$cache\"]"

finish
