#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dns.sh - a name lookup that waits on the network is one net wait of its
# own: prog-dns looks up late.ctrace.test with getaddrinfo through a local
# DNS server (prog-dns stub) that answers 150 ms late, and the trace must
# hold exactly one wait, getaddrinfo, class net (the net profile, the
# threads' net column), at the call's line in lookup(), lasting what the
# program measured around the call (5%) and no less than the server's
# delay; none of the calls inside (the resolver's send, poll, receive) a
# wait of its own; and no off-cpu time in `ctrace threads` beyond 2 ms or 5% of
# the lookup.
# Runs in a user, mount and network namespace of its own (unshare -rmn):
# loopback alone, a resolv.conf naming 127.0.0.1 and an nsswitch.conf with
# `hosts: files dns` bound over /etc's, nscd's socket hidden; nothing
# leaves the machine and nothing is changed outside. Exits 77 (skipped)
# where unprivileged user namespaces are not allowed.
# usage: dns.sh CTRACE_BINARY PROG_DNS PROG_DNS_SOURCE
set -uo pipefail
ctrace=$1
prog=$2
src=$3
delay_ms=150
name=late.ctrace.test

# --------------------------------------------------------- the namespaces
if [ "${DNS_SH_INSIDE:-}" != 1 ]; then
    if ! command -v unshare >/dev/null 2>&1; then
        echo "dns.sh: skipped: no unshare(1) (util-linux) to make a network namespace"
        exit 77
    fi
    if ! err=$(unshare -rmn true 2>&1); then
        echo "dns.sh: skipped: \`unshare -rmn\` is not permitted here ($err);" \
            "unprivileged user namespaces are off (sysctl kernel.unprivileged_userns_clone," \
            "user.max_user_namespaces, or an AppArmor or seccomp policy)"
        exit 77
    fi
    DNS_SH_INSIDE=1 exec unshare -rmn bash "${BASH_SOURCE[0]}" "$@"
fi

source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
stub_pid=
trap '[ -n "$stub_pid" ] && kill "$stub_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# What would send the resolver elsewhere than resolv.conf says.
unset LOCALDOMAIN RES_OPTIONS HOSTALIASES
printf 'nameserver 127.0.0.1\noptions timeout:2 attempts:1\n' >"$tmp/resolv.conf"
printf 'hosts: files dns\n' >"$tmp/nsswitch.conf"
if ! mount --bind "$tmp/resolv.conf" /etc/resolv.conf ||
    ! mount --bind "$tmp/nsswitch.conf" /etc/nsswitch.conf; then
    echo "dns.sh: skipped: cannot bind-mount over /etc/resolv.conf and /etc/nsswitch.conf" \
        "in the mount namespace"
    exit 77
fi
# A running nscd would answer from outside the namespace: hide its socket.
for d in $(realpath -e /run/nscd /var/run/nscd 2>/dev/null | sort -u); do
    mount -t tmpfs nscd-hidden "$d" || echo "dns.sh: warning: could not hide $d"
done

# --------------------------------------------------------- helpers
# column NAME FILE: column NAME of `ctrace threads`, summed over its rows, in ns.
column() {
    local k v sum=0
    k=$(awk -v c="$1" '$1 == "threads" { for (i = 1; i <= NF; i++) if ($i == c) print i; exit }' "$2")
    [ -n "$k" ] || { echo -1; return; }
    for v in $(awk -v k="$k" '$1 == "threads" { h = 1; next }
        h && $1 ~ /^[0-9]+$/ { print $k } h && NF == 0 { exit }' "$2"); do
        sum=$((sum + $(to_ns "$v")))
    done
    echo "$sum"
}
# near GOT WANT: GOT within 5% of WANT.
near() {
    local d=$(($1 > $2 ? $1 - $2 : $2 - $1))
    [ $((d * 20)) -le "$2" ]
}

# The line of lookup()'s getaddrinfo call, read from the source.
call_line=$(awk '/ lookup\(const char/ { f = 1 } f && /getaddrinfo\(/ { print NR; exit }' "$src")
check "the call's line in $src ($call_line)" test -n "$call_line"

# --------------------------------------------------------- the server
"$prog" stub 53 "$delay_ms" >"$tmp/stub.out" 2>"$tmp/stub.err" &
stub_pid=$!
check "the DNS stub is ready on 127.0.0.1:53" wait_match '^ready$' "$tmp/stub.out" 100

# Untraced first: the lookup goes to the stub and waits for it.
"$prog" lookup "$name" >"$tmp/plain.out" 2>&1
check "untraced: the lookup succeeded" test $? -eq 0
read -r _ plain_ns plain_rc plain_addr < <(grep '^lookup ' "$tmp/plain.out")
echo "# untraced: lookup ${plain_ns:-?} ns, rc ${plain_rc:-?}, ${plain_addr:-?}"
check "untraced: the stub's answer (127.0.0.2)" test "${plain_addr:-}" = 127.0.0.2
check "untraced: it waited for the stub (${plain_ns:-?} ns >= $delay_ms ms)" \
    test "${plain_ns:-0}" -ge $((delay_ms * 1000000))

# --------------------------------------------------------- traced
"$ctrace" run -o "$tmp/T.bin" -- "$prog" lookup "$name" >"$tmp/run.out" 2>&1
check "traced: the lookup succeeded" test $? -eq 0
cat "$tmp/run.out"
read -r _ ns rc addr < <(grep '^lookup ' "$tmp/run.out")
ns=${ns:-0}
echo "# traced: the program measured $ns ns (rc ${rc:-?}, ${addr:-?})"
check "traced: the stub's answer (127.0.0.2)" test "${addr:-}" = 127.0.0.2
check "traced: the program waited for the stub ($ns ns >= $delay_ms ms, < 2 s)" \
    test "$ns" -ge $((delay_ms * 1000000)) -a "$ns" -lt 2000000000

"$ctrace" -pprof=net -top "$tmp/T.bin" >"$tmp/net.txt" 2>&1
check "net profile: exit 0" test $? -eq 0
cat "$tmp/net.txt"
# The -top entries whose leaf is getaddrinfo: "DELAY COUNT FRAME" per entry,
# FRAME the one below the leaf (the caller).
awk '$3 ~ /%$/ { if (d != "") print d, c, f; d = ""; f = "-"
        if ($4 == "getaddrinfo") { d = $1; c = $2; want = 1 }; next }
    want { f = $1 " " $2; want = 0 }
    END { if (d != "") print d, c, f }' "$tmp/net.txt" >"$tmp/entries"
check "net profile: one getaddrinfo stack" test "$(wc -l <"$tmp/entries")" -eq 1
read -r delay count caller <"$tmp/entries"
got=$(to_ns "${delay:-x}")
check "net profile: one getaddrinfo wait (count ${count:-?})" test "${count:-0}" -eq 1
check "net profile: no other wait" grep -q '^net profile: .* in 1 samples, 1 distinct stacks' \
    "$tmp/net.txt"
check "net profile: called at lookup, prog-dns.c:$call_line (${caller:-?})" \
    grep -qE "^lookup \(.*/prog-dns\.c:$call_line\)$" <<<"${caller:-}"
check "net profile: lasting what the program measured ($got ns, measured $ns)" near "$got" "$ns"
check "net profile: no shorter than the stub's delay ($got ns >= $delay_ms ms)" \
    test "$got" -ge $((delay_ms * 1000000))

# In no other class: not in the sync or syscall profile; and the trace's
# only wait (one BLOCK, one UNBLOCK): the resolver's own socket, send, poll
# and receive are part of it, not waits of their own.
for p in sync syscall; do
    "$ctrace" -pprof=$p -top "$tmp/T.bin" >"$tmp/$p.txt" 2>&1
    check "$p profile: exit 0, no getaddrinfo" \
        test $? -eq 0 -a -z "$(grep getaddrinfo "$tmp/$p.txt")"
done
"$ctrace" stats "$tmp/T.bin" >"$tmp/stats.txt" 2>&1
check "stats: exit 0" test $? -eq 0
check "stats: one wait in the trace (BLOCK 1, UNBLOCK 1)" \
    test "$(awk '$1 == "BLOCK" || $1 == "UNBLOCK" { printf "%s ", $2 }' "$tmp/stats.txt")" = "1 1 "

"$ctrace" threads "$tmp/T.bin" >"$tmp/threads.txt" 2>&1
check "threads: exit 0" test $? -eq 0
cat "$tmp/threads.txt"
rows=$(awk '$1 == "threads" { h = 1; next } h && $1 ~ /^[0-9]+$/ { n++ } END { print n + 0 }' \
    "$tmp/threads.txt")
check "threads: the lookup's thread is shown ($rows rows)" test "$rows" -ge 1
total=0
for c in running runnable sync net syscall sleep off-cpu; do
    total=$((total + $(column $c "$tmp/threads.txt")))
done
net=$(column net "$tmp/threads.txt")
off=$(column off-cpu "$tmp/threads.txt")
check "threads: its time covers the lookup ($total ns, measured $ns)" \
    test $((total * 20)) -ge $((ns * 19))
check "threads: the lookup is net time ($net ns, measured $ns)" near "$net" "$ns"
# Off-cpu here is outside the lookup (the program's start, on a loaded
# machine): it must not have taken the lookup's time.
check "threads: no off-cpu beyond 2 ms or 5% ($off ns)" \
    test "$off" -ge 0 -a \( "$off" -le 2000000 -o $((off * 20)) -le "$ns" \)

# --------------------------------------------------------- the server's end
kill -TERM "$stub_pid"
wait "$stub_pid"
check "the stub stopped on SIGTERM, exit 0" test $? -eq 0
stub_pid=
cat "$tmp/stub.err"
check "the stub answered both lookups, dropped nothing" awk '$1 == "prog-dns:" && $2 == "stub:" {
    ok = $3 >= 2 && $5 == 0 } END { exit !ok }' "$tmp/stub.err"
finish
