#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cache_profile.sh - end to end: trace examples/cache (slow version), build its
# sync and blame profiles with `ctrace -pprof=...`, and check with
# `go tool pprof` that
#   - at least 90% of the delay is in pthread_mutex_lock called from
#     cache_get_slow,
#   - `-list cache_get_slow` puts that delay on the source line of the lock,
#   - the blame profile puts most of it on cache_get_slow's unlock;
#   - `ctrace why` says the slowest requests waited behind cache_get_slow's
#     lock, and follows it to the fetch its holders made under it (most of
#     their critical path is clock_nanosleep in remote_fetch, on other
#     threads); the fixed build (-fixed) fetches unlocked, so the paths of
#     its slowest requests do not go to other threads' fetches (under a
#     tenth of their time: a holder that took the lock uncontended, its
#     acquisition unrecorded, after fetching while the lock was free can
#     look as if it fetched under it).
# usage: cache_profile.sh CACHE_BINARY CTRACE_BINARY CACHE_SOURCE
set -euo pipefail
cache=$1 ctrace=$2 src=$3
command -v go >/dev/null || { echo "cache_profile: go (golang-go) is required" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$cache" trace "$tmp/trace.bin"
"$ctrace" stats "$tmp/trace.bin"
"$ctrace" -pprof=sync -o "$tmp/sync.pb.gz" "$tmp/trace.bin"

# -raw gives exact integers: sample lines "count delay: loc loc ...", then
# locations "id: addr [M=n] func file:line", inline callers on the next lines.
go tool pprof -raw "$tmp/sync.pb.gz" > "$tmp/raw.txt"
# Share of the delay in samples whose leaf is `leafname` called from `fn`.
share_awk='
  /^Samples:/   { mode = "s"; next }
  /^Locations/  { mode = "l"; next }
  /^Mappings/   { mode = "m"; next }
  mode == "s" && /:/ {
      split($0, parts, ":"); split(parts[1], v, " "); n = split(parts[2], ids, " ")
      ns++; delay[ns] = v[2]; leaf[ns] = ids[1]; caller[ns] = (n > 1 ? ids[2] : "")
      next
  }
  mode == "l" && /^ *[0-9]+: / {
      id = $1; sub(":", "", id); cur = id
      f = ($3 ~ /^M=/ ? $4 : $3); funcs[id] = " " f " "; next
  }
  mode == "l" && NF > 0 { funcs[cur] = funcs[cur] $1 " " }
  END {
      for (i = 1; i <= ns; i++) {
          total += delay[i]
          if (index(funcs[leaf[i]], " " leafname " ") && index(funcs[caller[i]], " " fn " "))
              hit += delay[i]
      }
      if (total == 0) { print "0"; exit }
      printf "%.4f\n", hit / total
  }'
share=$(awk -v leafname=pthread_mutex_lock -v fn=cache_get_slow "$share_awk" "$tmp/raw.txt")
echo "cache_profile: share of sync delay at pthread_mutex_lock in cache_get_slow: $share"
awk -v s="$share" 'BEGIN { exit !(s >= 0.90) }' || {
    echo "cache_profile: FAIL: want >= 0.90" >&2; cat "$tmp/raw.txt" >&2; exit 1; }

# The line of the lock call inside cache_get_slow, from the source itself.
line=$(awk '/cache_get_slow\(/ && /\{|^[a-z_ ]*\(/ { inside = 1 }
            inside && /pthread_mutex_lock\(/ { print NR; exit }' "$src")
[ -n "$line" ] || { echo "cache_profile: no lock call found in $src" >&2; exit 1; }
go tool pprof -list '^cache_get_slow$' "$tmp/sync.pb.gz" > "$tmp/list.txt"
# A listed line: "  flat  cum  LINE: source"; the lock line must carry time.
if awk -v want="$line" '$3 == want":" && $2 != "." { found = 1 } END { exit !found }' "$tmp/list.txt"; then
    echo "cache_profile: -list names line $line: $(grep -E " $line:" "$tmp/list.txt" | head -1)"
else
    echo "cache_profile: FAIL: -list cache_get_slow has no delay on line $line" >&2
    cat "$tmp/list.txt" >&2
    exit 1
fi

# The blame profile: the waiting is put on the critical section's end, the
# unlock in cache_get_slow (the fetch inside the lock is what they waited for).
"$ctrace" -pprof=blame -o "$tmp/blame.pb.gz" "$tmp/trace.bin"
go tool pprof -raw "$tmp/blame.pb.gz" > "$tmp/blame.txt"
blame=$(awk -v leafname=pthread_mutex_unlock -v fn=cache_get_slow "$share_awk" "$tmp/blame.txt")
echo "cache_profile: share of blame at pthread_mutex_unlock in cache_get_slow: $blame"
awk -v s="$blame" 'BEGIN { exit !(s > 0.5) }' || {
    echo "cache_profile: FAIL: blame: want most (> 0.5) at cache_get_slow's unlock" >&2
    cat "$tmp/blame.txt" >&2; exit 1; }

# why_fetch_share TRACE: the share of the 5 slowest requests' critical paths
# spent in clock_nanosleep (the fetch) on threads other than the request's.
why_fetch_share() {
    "$ctrace" why -n 5 -tsv "$1" | awk -F'\t' '
        !/^#/ { total += $6; if ($5 == 1 && $4 == "clock_nanosleep") fetch += $6 }
        END { if (total == 0) print "0"; else printf "%.4f\n", fetch / total }'
}
why=$("$ctrace" why -n 5 "$tmp/trace.bin")
echo "$why" | head -12
grep -qE "behind other threads .*: pthread_mutex_lock at cache_get_slow \(cache\.c:$line\)" <<<"$why" || {
    echo "cache_profile: FAIL: why: no wait behind cache_get_slow's lock (line $line)" >&2; exit 1; }
grep -qE 'blocked in clock_nanosleep at .* in remote_fetch \(cache\.c:[0-9]+\)' <<<"$why" || {
    echo "cache_profile: FAIL: why: no path reaches the fetch in remote_fetch" >&2; exit 1; }
slow_fetch=$(why_fetch_share "$tmp/trace.bin")
echo "cache_profile: why: share of the slowest paths in other threads' fetch: $slow_fetch"
awk -v s="$slow_fetch" 'BEGIN { exit !(s >= 0.5) }' || {
    echo "cache_profile: FAIL: why: want most (>= 0.5) of the path in the holders' fetch" >&2; exit 1; }

"$cache" -fixed trace "$tmp/fixed.bin"
fixed_fetch=$(why_fetch_share "$tmp/fixed.bin")
echo "cache_profile: why, fixed: share of the slowest paths in other threads' fetch: $fixed_fetch"
awk -v s="$fixed_fetch" 'BEGIN { exit !(s < 0.1) }' || {
    echo "cache_profile: FAIL: why, fixed: paths still lead to other threads' fetches" >&2
    "$ctrace" why -n 5 "$tmp/fixed.bin" >&2; exit 1; }
echo "4 passed, 0 failed"
