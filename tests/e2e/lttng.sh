#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lttng.sh - end to end through LTTng: the `ctrace` tracepoints recorded by an
# LTTng session (libctrace loads the provider, tp/), read back by ctrace
# through babeltrace2, and by the babeltrace2 CLI.
#   - the cache example traced into a file and into LTTng in one run: the sync
#     profiles of the two agree (same top stack, down to the line; every
#     stack's share within 5 points), and so do the event counts of each type;
#   - the gateway example (tasks, regions, logs) with context switches: the
#     same events in both, and the same task table;
#   - LTTng alone (no file): a profile that names the cache's lock line;
#   - CPU samples from each source (tests/prog-cpu): the CTF trace's cpu
#     profile is the native one's;
#   - babeltrace2 prints the events with their field names; and through the
#     plugin `ctrace` (tp/bt2plugin.c) the gateway's native trace has the
#     session's event classes, member for member, and the same events;
#   - LTTng's own threads are not traced; a program not asking for LTTng does
#     not load lttng-ust; a provider that cannot load is said, and the program
#     runs untraced.
# Uses the session daemon that answers (tests/run.sh starts one), or starts
# its own.
# usage: lttng.sh CTRACE CACHE GATEWAY BT2_PLUGIN_DIR PROG_CPU
set -uo pipefail
ctrace=$1 cache=$2 gateway=$3 plugins=$4 prog_cpu=$5
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/checks.sh"
source "$here/../tools/lttng_daemon.sh"
source "$here/profile_compare.sh"
source "$here/bt2plugin_run.sh"
session=ctrace-test-$$
trap 'lttng destroy "$session" >/dev/null 2>&1; lttng_daemon_stop; rm -rf "$tmp"' EXIT
if ! lttng_daemon_start; then
    echo "FAIL no LTTng session daemon answers, and lttng-sessiond --daemonize --no-kernel failed"
    exit 1
fi

# record DIR CMD...: runs CMD while a session records every ctrace event
# (with the vpid context, unless $novpid is set) into DIR; its pid in $pid
# (`ctrace run` becomes the program). A session records every process of
# this user that sends ctrace events: readings pick the test's own (-pid).
record() {
    local dir=$1; shift
    lttng_session_start "$session" --output="$dir" 4M 8 "$([[ -n ${novpid:-} ]] || echo 1)" ||
        return 1
    "$@" &
    pid=$!
    wait $pid
    local rc=$?
    lttng_session_stop "$session" >/dev/null
    lttng destroy "$session" >/dev/null
    return $rc
}

# ---- the cache example, into a file and LTTng at once
record "$tmp/cache-lttng" "$ctrace" run -lttng -o "$tmp/cache.bin" -- "$cache" slow >/dev/null
cache_pid=$pid
check "cache: LTTng session written" test -f "$tmp/cache-lttng/ust/uid/$(id -u)/64-bit/metadata"
"$ctrace" -pprof=sync -top -n 8 "$tmp/cache.bin" >"$tmp/native.top" 2>&1
"$ctrace" -pprof=sync -top -n 8 -pid "$cache_pid" "$tmp/cache-lttng" >"$tmp/ctf.top" 2>&1
check "cache: CTF profile names cache_get_slow cache.c:$cache_lock_line at the top" \
    grep -qE "^ {20,}cache_get_slow \(.*cache\.c:$cache_lock_line\)" <(sed -n 5p "$tmp/ctf.top")
check "cache: same top stack" test "$(shares "$tmp/native.top" | head -1 | cut -f2)" = \
    "$(shares "$tmp/ctf.top" | head -1 | cut -f2)"
if same_shares "$tmp/native.top" "$tmp/ctf.top"; then ok "cache: every stack's share within 5 points"
else bad "cache: shares"; cat "$tmp/native.top" "$tmp/ctf.top"; fi
if diff <(counts "$tmp/cache.bin") <(counts "$tmp/cache-lttng" "$cache_pid"); then ok "cache: same events"
else bad "cache: event counts differ"; fi
check "cache: LTTng's threads not traced (64 workers and main)" \
    grep -qE '^threads: +65 ' <("$ctrace" stats "$tmp/cache.bin")
expect "cache: complete, nothing dropped" 0 "complete\).*" -- "$ctrace" stats -pid "$cache_pid" "$tmp/cache-lttng"

# ---- babeltrace2 reads the session
bt=$(babeltrace2 "$tmp/cache-lttng" 2>&1 | grep -m1 'ctrace:block:.*MUTEX_LOCK')
check "babeltrace2 prints ctrace:block with its fields" \
    grep -qE 'thread = [0-9]+, ticks = [0-9]+, reason = \( "MUTEX_LOCK" : container = 1 \), object = 0x[0-9A-F]+, stack = [0-9]+' <<<"$bt"

# ---- the gateway: tasks, regions, logs, context switches
# Its redact bug fixed: regcomp on every request is malloc-bound, 10 times
# slower under ASan (17 s a run, where these runs take 2 s), and no check
# here needs it; tasks, regions, logs and the upstream's threads stay.
gw_run=("$gateway" -fix=redact -seconds 1)
record "$tmp/gw-lttng" "$ctrace" run -lttng -sched -o "$tmp/gw.bin" -- "${gw_run[@]}" >/dev/null
gw_pid=$pid
if diff <(counts "$tmp/gw.bin") <(counts "$tmp/gw-lttng" "$gw_pid"); then ok "gateway: same events"
else bad "gateway: event counts differ"; fi
check "gateway: tasks, regions, logs and switches are there" \
    awk '/TASK_BEGIN|REGION_BEGIN|LOG|SWITCH_IN/ && $2 > 0 { n++ } END { exit n != 4 }' \
    <(counts "$tmp/gw-lttng" "$gw_pid")
if diff <("$ctrace" tasks -tsv "$tmp/gw.bin" | sort) <("$ctrace" tasks -tsv -pid "$gw_pid" "$tmp/gw-lttng" | sort) >/dev/null
then ok "gateway: same task table"; else bad "gateway: task tables differ"; fi
if diff <("$ctrace" threads -tsv "$tmp/gw.bin") <("$ctrace" threads -tsv -pid "$gw_pid" "$tmp/gw-lttng") >/dev/null
then ok "gateway: same threads report"; else bad "gateway: threads reports differ"; fi
"$ctrace" why -n 3 -tsv "$tmp/gw.bin" >"$tmp/gw.why" 2>&1
"$ctrace" why -n 3 -tsv -pid "$gw_pid" "$tmp/gw-lttng" >"$tmp/gw-ctf.why" 2>&1
check "gateway: ctrace why explains its slowest tasks" test "$(grep -vc '^#' "$tmp/gw.why")" -gt 0
if diff "$tmp/gw.why" "$tmp/gw-ctf.why" >/dev/null
then ok "gateway: same critical paths (ctrace why)"; else bad "gateway: critical paths differ"; fi
"$ctrace" -perfetto -o "$tmp/gw.pftrace" "$tmp/gw.bin" 2>"$tmp/pf-native.err"
"$ctrace" -perfetto -o "$tmp/gw-ctf.pftrace" -pid "$gw_pid" "$tmp/gw-lttng" 2>"$tmp/pf-ctf.err"
# The two readers number tracks, mappings and stacks each its own way, so
# the bytes differ (and so, when an id crosses a varint's width, does the
# size): what must agree is what the timeline holds, as the export counts it.
# pf_summary ERR: that count ("N events as N packets, ...: N slices, ...").
pf_summary() { sed -nE 's/^ctrace: .*\.pftrace: ([0-9]+ events as [0-9]+ packets), .*\): /\1: /p' "$1"; }
check "gateway: a Perfetto timeline of the LTTng trace" test -s "$tmp/gw-ctf.pftrace"
if [[ -n $(pf_summary "$tmp/pf-native.err") &&
    $(pf_summary "$tmp/pf-native.err") == "$(pf_summary "$tmp/pf-ctf.err")" ]]; then
    ok "gateway: the same packets, slices, instants, counters and flows as the native one's"
else
    bad "gateway: the Perfetto timelines differ"; cat "$tmp/pf-native.err" "$tmp/pf-ctf.err"
fi

# ---- the native trace through babeltrace2's plugin `ctrace`, against the session
# classes TEXT: the event classes of a sink.text.details listing.
classes() { sed -n '/^    Event class/,$p' "$1"; }
# events TEXT: the events' tracepoints and payloads of a sink.text.pretty
# listing (no time, no context), sorted. Records are not compared: the
# session has each table entry once, the file each generation's.
events() {
    sed -nE 's/^\[[^]]*\] \([^)]*\) ([^ ]+ )?(ctrace:[a-z_]+): (\{ [a-z_]+ = [0-9]+ \}, )*/\2 /p' "$1" |
        grep -E '^ctrace:(thread_[a-z]+|block|unblock|lost|release|switch_[a-z]+|sched_lost|task_[a-z]+|region_[a-z]+|log|cpu_sample|sched_cpu_sample) ' |
        sort
}
babeltrace2 -c sink.text.details -p 'with-data=no' "$tmp/gw-lttng" >"$tmp/lttng.classes" 2>&1
bt2 "$plugins" -c sink.text.details -p 'with-data=no' "$tmp/gw.bin" >"$tmp/native.classes" 2>&1
check "plugin: the session's event classes" grep -q 'Event class .ctrace:block.' "$tmp/lttng.classes"
if diff <(classes "$tmp/lttng.classes") <(classes "$tmp/native.classes"); then
    ok "plugin: the same event classes, member for member"
else bad "plugin: event classes differ"; fi
babeltrace2 "$tmp/gw-lttng" 2>&1 | events /dev/stdin >"$tmp/lttng.events"
bt2 "$plugins" "$tmp/gw.bin" 2>&1 | events /dev/stdin >"$tmp/native.events"
if test -s "$tmp/native.events" && cmp -s "$tmp/lttng.events" "$tmp/native.events"; then
    ok "plugin: the same events ($(wc -l <"$tmp/native.events")), field for field"
else
    bad "plugin: events differ"; diff "$tmp/lttng.events" "$tmp/native.events" | head
fi

# ---- LTTng alone (and no vpid context: one process, whose pid nothing names)
(cd "$tmp" && novpid=1 record "$tmp/only" "$ctrace" run -lttng -- "$cache" slow >/dev/null)
check "LTTng only: no trace file written" test ! -e "$tmp/trace.bin"
check "LTTng only: the lock line at the top" \
    grep -qE "^ {20,}cache_get_slow \(.*cache\.c:$cache_lock_line\)" <("$ctrace" -pprof=sync -top "$tmp/only" | sed -n 5p)

# ---- CPU samples through LTTng, from each source: perf_event's come in
# SWITCHES records (ctrace:sched_cpu_sample), the timer's from the thread
# (ctrace:cpu_sample); the CTF trace's cpu profile is the native one's
for src in perf timer; do
    extra=()
    [[ $src == timer ]] && extra=(-cpu-timer)
    record "$tmp/cpu-$src" "$ctrace" run -lttng -cpu 250 "${extra[@]}" -o "$tmp/cpu-$src.bin" -- \
        "$prog_cpu" 100 100 >/dev/null
    tp=$([[ $src == perf ]] && echo sched_cpu_sample || echo cpu_sample)
    check "cpu samples ($src): ctrace:$tp in the session" \
        grep -q "ctrace:$tp:" <(babeltrace2 "$tmp/cpu-$src" 2>/dev/null)
    native=$("$ctrace" -pprof=cpu -top -n 100 "$tmp/cpu-$src.bin" 2>/dev/null | sed 1d)
    ctf=$("$ctrace" -pprof=cpu -top -n 100 -pid "$pid" "$tmp/cpu-$src" 2>/dev/null | sed 1d)
    check "cpu samples ($src): the CTF trace's cpu profile is the native one's" \
        test -n "$native" -a "$native" = "$ctf"
    check "cpu samples ($src): burn_a and burn_b in it" \
        bash -c 'grep -q "burn_a (" <<<"$1" && grep -q "burn_b (" <<<"$1"' _ "$ctf"
done

# ---- threads that come and go, LTTng only: LTTng-UST's thread-exit destructor
# must not end up in a ctrace tracepoint under its own registry lock (it hung
# one run in three before the fix); each run gets a minute
lttng_session_start "$session" --output="$tmp/churn" 4M 8 0
hung=0
for run in 1 2 3 4; do
    timeout 60 "$ctrace" run -lttng -- "${gw_run[@]}" >/dev/null || hung=$((hung + 1))
done
lttng_session_stop "$session" >/dev/null
lttng destroy "$session" >/dev/null
check "thread churn: 4 runs of the gateway into LTTng, none hung or failed ($hung did)" test "$hung" -eq 0

# ---- LTTng's discards: sub-buffers far too small for the gateway's events
lttng_session_start "$session" --output="$tmp/small" 4096 2 1
"$ctrace" run -lttng -sched -- "${gw_run[@]}" >/dev/null &
small_pid=$!
wait $small_pid
listed=$(lttng_session_stop "$session")
lttng destroy "$session" >/dev/null
# The reference count is what babeltrace2, LTTng's own reader, finds in the
# packet headers. `lttng list` counts the same thing, but on one fresh machine
# it printed a figure near 2^63 for this session (its per-UID statistics are
# not to be trusted after the application exits), so it is only shown.
# babeltrace2 says "1 event" for a packet that discarded one.
discarded=$(babeltrace2 "$tmp/small" 2>&1 >/dev/null |
    sed -nE 's/^WARNING: Tracer discarded ([0-9]+) events? .*/\1/p' |
    { n=0; while read -r k; do n=$((n + k)); done; echo "$n"; })
check "discards: LTTng discarded some ($discarded by babeltrace2, $listed by lttng list)" \
    test "$discarded" -gt 0
out=$("$ctrace" stats -pid "$small_pid" "$tmp/small" 2>&1)
check "discards: said" grep -q "warning: LTTng discarded $discarded events" <<<"$out"
# (the tracer's own drops, if any on a loaded machine, add to LTTng's)
dropped=$(sed -nE 's/^dropped: +([0-9]+) events.*/\1/p' <<<"$out")
check "discards: counted as dropped ($dropped)" test "${dropped:-0}" -ge "$discarded"
check "discards: counted as LTTng's" grep -q "$discarded of them discarded by LTTng" <<<"$out"
grep -q "warning: LTTng discarded $discarded events" <<<"$out" || printf '%s\n' "$out" | head -20

# ---- damaged LTTng traces: a clear message, a non-zero exit
cp -r "$tmp/cache-lttng" "$tmp/bad-meta"
echo garbage >"$tmp/bad-meta/ust/uid/$(id -u)/64-bit/metadata"
expect "damaged metadata: said" 1 "ctrace: .*bad-meta: babeltrace2 cannot read it as CTF" -- \
    "$ctrace" stats "$tmp/bad-meta"
cp -r "$tmp/cache-lttng" "$tmp/cut"
for f in "$tmp"/cut/ust/uid/*/64-bit/ch_*; do truncate -s 3000 "$f"; done
expect "truncated stream: said" 1 "ctrace: .*cut: babeltrace2" -- "$ctrace" -pprof=sync -o /dev/null "$tmp/cut"
mkdir "$tmp/empty"
expect "no trace in the directory: said" 1 "no CTF trace in it" -- "$ctrace" stats "$tmp/empty"

# ---- who loads what
check "without -lttng, lttng-ust is not loaded" \
    bash -c "! '$ctrace' run -o '$tmp/plain.bin' -- cat /proc/self/maps | grep -q lttng"
expect "a provider that cannot load is said; the program runs" 0 \
    "ctrace: not tracing: the LTTng provider .* could not be loaded" -- \
    env CTRACE_LTTNG_PROVIDER=/nonexistent/libctrace-lttng.so.1 "$ctrace" run -lttng -- true

finish
