#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gateway.sh - end to end: examples/gateway's three bugs, found in its trace.
# The slow build, traced (-trace), must show
#   - in the leak finder (ctrace threads -tsv), helpers blocked in write()
#     in upstream_helper, as many as the example counted upstream timeouts;
#   - at the top of the requests' sync profile (ctrace -pprof=sync -task
#     request -top -n 1), the quota lock, in quota_charge (the whole
#     program's profile can be topped by the clients' start barrier, on a
#     machine busy enough to make starting 256 threads slow);
#   - in the task table (ctrace tasks -tsv), the "request" tasks: as many as
#     the example made, p50 and p99 within 5% (or 20 us) of its own figures.
# The fixed build (-fixed -trace) must end with as many threads as it began
# with, no helper in the leak finder, and fewer than a tenth of the waits on
# the quota lock (the count of stacks through quota_charge in the whole
# program's sync profile) that a build with every fix but the quota lock's
# (-fix=redact,upstream, run just before) has: hundreds there (most requests
# wait), a few dozen at most fixed. Waits are counted, not summed: with 256
# request threads on 2 vCPUs a holder preempted inside even the fixed, short
# critical section waits a whole round of the run queue (0.4 s and more under
# ASan), so a single such convoy can make the fixed build's summed delay a
# quarter of the unfixed one's, while it adds only the few waits that came in
# meanwhile. Nor does any check ask that the lock be absent, or not at the top.
# `ctrace why` over every request (their critical paths, cut at regions)
# must find, in the slow build, many requests (a tenth at least) behind
# other threads' time in region "quota" (the holders' digest under the
# lock) and most (a quarter at least) over 200 us in region "redact" (the
# regex compilation, on their own thread); with the quota lock alone
# unfixed, requests behind "quota" but under a tenth of the slow build's
# share over 200 us in "redact"; fixed, under a tenth of the slow build's
# share of either, and of the quota-unfixed build's behind "quota".
# 200 us: compiling the three patterns costs about 300 us of CPU, matching
# with them compiled about 10 us.
# Shares of the requests, counted, not summed, for the reason above: under
# ASan the slow build makes a fifth of the fixed one's requests.
# usage: gateway.sh GATEWAY_BINARY CTRACE_BINARY
set -uo pipefail
gateway=$1 ctrace=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"


# quota_waits TRACE: "WAITS DELAY_NS", the count and the delay of every stack
# through quota_charge in TRACE's sync profile.
quota_waits() {
    "$ctrace" -pprof=sync -top -n 1000 "$1" | awk '
        function ns(v) {
            if (v ~ /ns$/) return v + 0
            if (v ~ /us$/) return v * 1e3
            if (v ~ /ms$/) return v * 1e6
            if (v ~ /s$/) return v * 1e9
            return 0
        }
        /^ +[0-9.]+(ns|us|ms|s) +[0-9]+ +[0-9.]+%/ { d = ns($1); n = $2; counted = 0; next }
        /quota_charge/ && !counted { total += d; waits += n; counted = 1 }
        END { printf "%d %.0f\n", waits, total }'
}

# why_counts TRACE: "TASKS QUOTA REDACT": how many requests TRACE has, how
# many of their critical paths go to another thread while it is in region
# "quota", and how many spend over 200 us in region "redact".
why_counts() {
    "$ctrace" why -task request -n 1000000 -tsv "$1" | awk -F'\t' '
        !/^#/ { task[$1] = 1; if ($5 == 1 && $9 == "quota") quota[$1] = 1
                if ($9 == "redact") redact[$1] += $6 }
        END { r = 0; for (k in redact) if (redact[k] > 200000) r++
              printf "%d %d %d\n", length(task), length(quota), r }'
}

# share_below COUNT TOTAL COUNT2 TOTAL2: COUNT/TOTAL under a tenth of
# COUNT2/TOTAL2.
share_below() {
    test -n "$1" -a -n "$2" -a -n "$3" -a -n "$4" && test "$2" -gt 0 -a "$4" -gt 0 &&
        test "$(($1 * $4 * 10))" -lt "$(($3 * $2))"
}

# field NAME LINE: the value of NAME=VALUE in the example's result line.
field() { sed -nE "s/.*[ :]$1=([0-9.]+).*/\1/p" <<<"$2"; }

# near GOT_NS WANT_US: GOT within 5% of WANT, or within 20 us of it.
near() {
    awk -v got="$1" -v want="$2" 'BEGIN {
        want *= 1000; d = got - want; if (d < 0) d = -d
        slack = want * 0.05; if (slack < 20000) slack = 20000
        exit !(got != "" && d <= slack) }'
}

# run_traced NAME ARGS...: runs the example into $tmp/NAME.bin; sets out,
# status and the fields of its result line.
run_traced() {
    local name=$1; shift
    trace=$tmp/$name.bin
    out=$(timeout 60 "$gateway" "$@" -trace "$trace" 2>&1); status=$?
    echo "$out"
    line=$(grep -E '^gateway: requests=' <<<"$out" | head -1)
    requests=$(field requests "$line") errors=$(field errors "$line")
    p50=$(field p50_us "$line") p99=$(field p99_us "$line")
    timeouts=$(field timeouts "$line")
    before=$(field threads_alive_before "$line") after=$(field threads_alive_after "$line")
    "$ctrace" stats "$trace" | grep -E '^(threads|dropped):'
}

# tasks_check NAME: the "request" row of ctrace tasks -tsv against the
# example's own count and percentiles.
tasks_check() {
    local tsv row
    tsv=$("$ctrace" tasks -tsv "$trace"); echo "$tsv"
    row=$(awk -F'\t' '!/^#/ && $1 == "request"' <<<"$tsv")
    IFS=$'\t' read -r _ t_count t_p50 _ t_p99 _ <<<"$row"
    echo "$1: tasks: count=${t_count:-none} p50_ns=${t_p50:-none} p99_ns=${t_p99:-none};" \
         "example: requests=$requests p50_us=$p50 p99_us=$p99"
    check "$1: tasks: one request per request the example made" test "${t_count:-x}" = "$requests"
    check "$1: tasks: request p50 within 5% of the example's" near "${t_p50:-}" "$p50"
    check "$1: tasks: request p99 within 5% of the example's" near "${t_p99:-}" "$p99"
}

# ------------------------------------------------------------ no request at all
# A load too short for any client to send one: every client's latency array
# is empty (NULL), which the gathering must not hand to memcpy (UBSan stops
# the sanitizer build's run there; it once hung an LTTng session behind it).
expect "a load too short for any request: exits 0, requests=0" 0 "^gateway: requests=0 errors=0 " -- \
    "$gateway" -seconds 0.000001

# ------------------------------------------------------------ the slow build
echo "== slow build =="
run_traced slow
check "slow: exits 0" test "$status" -eq 0
check "slow: prints its result line" test -n "$requests" -a -n "$timeouts" -a -n "$after"
check "slow: no request failed" test "${errors:-x}" = 0
check "slow: some upstream calls timed out" test "${timeouts:-0}" -gt 0
check "slow: one thread leaked per timeout" \
    test "$((${after:-0} - ${before:-0}))" -eq "${timeouts:--1}"

leaks=$("$ctrace" threads -tsv "$trace"); echo "$leaks"
# Groups of threads blocked in write() with upstream_helper innermost.
helper_writes=$(awk -F'\t' '!/^#/ && $2 == "write" && $3 == "upstream_helper" { n += $1 }
                            END { print n + 0 }' <<<"$leaks")
echo "slow: leak finder: $helper_writes threads blocked in write in upstream_helper;" \
     "the example timed out $timeouts upstream calls"
check "slow: leak finder: helpers blocked in write = the example's timeouts" \
    test "$helper_writes" -eq "${timeouts:--1}"

top=$("$ctrace" -pprof=sync -task request -top -n 1 "$trace"); echo "$top"
check "slow: sync top names pthread_mutex_lock" \
    grep -qE '^ +[0-9.]+(ns|us|ms|s) +[0-9]+ +[0-9.]+%  pthread_mutex_lock$' <<<"$top"
check "... in quota_charge, with its line" \
    grep -qE '^ +quota_charge \(.*gateway\.c:[0-9]+\)$' <<<"$top"

tasks_check slow

# Among the 20 slowest: under a sanitizer's load the very slowest may be
# compiling regexes the whole time, with no wait at all.
why=$("$ctrace" why -task request -n 20 "$trace"); echo "$why" | head -60
check "slow: why: the slowest wait behind the quota lock, in quota_charge" \
    grep -qE "behind other threads .*: pthread_mutex_lock at quota_charge \(gateway\.c:[0-9]+\)" <<<"$why"
check "slow: why: names the redact region" grep -q 'in region "redact"' <<<"$why"
read -r why_tasks slow_quota slow_redact <<<"$(why_counts "$trace")"
echo "slow: why: of $why_tasks requests, $slow_quota behind the quota lock's holders," \
     "$slow_redact over 200 us in redact"
check "slow: why: a tenth of the requests or more behind the quota lock's holders" \
    test "${slow_quota:-0}" -gt "$((${why_tasks:-0} / 10))"
check "slow: why: most requests over 200 us in redact (regcomp)" \
    test "${slow_redact:-0}" -gt "$((${why_tasks:-0} / 4))"

# ------------------------------------------------------------ all fixed but the quota lock
echo "== every fix but the quota lock's =="
run_traced quota -fix=redact,upstream
check "quota lock unfixed: exits 0" test "$status" -eq 0
read -r quota_unfixed quota_unfixed_ns <<<"$(quota_waits "$trace")"
read -r q_tasks q_quota q_redact <<<"$(why_counts "$trace")"
echo "quota lock unfixed: why: of $q_tasks requests, $q_quota behind the quota lock's" \
     "holders, $q_redact over 200 us in redact"
check "quota lock unfixed: why: requests behind the quota lock's holders" \
    test "${q_quota:-0}" -gt 0
check "quota lock unfixed: why: under a tenth of the slow build's share over 200 us in redact" \
    share_below "$q_redact" "$q_tasks" "$slow_redact" "$why_tasks"

# ------------------------------------------------------------ the fixed build
echo "== fixed build =="
run_traced fixed -fixed
check "fixed: exits 0" test "$status" -eq 0
check "fixed: prints its result line" test -n "$requests" -a -n "$after"
check "fixed: no request failed" test "${errors:-x}" = 0
check "fixed: as many threads alive after the load as before" \
    test -n "$after" -a "$after" = "$before"

leaks=$("$ctrace" threads -tsv "$trace"); echo "$leaks"
check "fixed: leak finder: no thread blocked in upstream_helper" \
    awk -F'\t' '!/^#/ && $3 == "upstream_helper" { found = 1 } END { exit found }' <<<"$leaks"

read -r fixed_quota fixed_quota_ns <<<"$(quota_waits "$trace")"
echo "quota lock: ${quota_unfixed:-?} waits (${quota_unfixed_ns:-?} ns) unfixed," \
     "${fixed_quota:-?} waits (${fixed_quota_ns:-?} ns) fixed"
check "fixed: under a tenth of the unfixed quota lock's waits" \
    test "${quota_unfixed:-0}" -gt 0 -a "${fixed_quota:-x}" -lt "$((${quota_unfixed:-0} / 10))"

read -r fixed_tasks fixed_quota_why fixed_redact <<<"$(why_counts "$trace")"
echo "fixed: why: of $fixed_tasks requests, $fixed_quota_why behind the quota lock's" \
     "holders, $fixed_redact over 200 us in redact"
check "fixed: why: under a tenth of the slow build's share behind the quota lock" \
    share_below "$fixed_quota_why" "$fixed_tasks" "$slow_quota" "$why_tasks"
check "fixed: why: under a tenth of the quota-unfixed build's share behind it" \
    share_below "$fixed_quota_why" "$fixed_tasks" "$q_quota" "$q_tasks"
check "fixed: why: under a tenth of the slow build's share over 200 us in redact" \
    share_below "$fixed_redact" "$fixed_tasks" "$slow_redact" "$why_tasks"

tasks_check fixed

finish
