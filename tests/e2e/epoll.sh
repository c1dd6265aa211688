#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# epoll.sh - an event-loop server's non-blocking calls are not waits: under
# `ctrace run`, with every call long enough to record (-io-min-ns 1), the net
# profile of prog-epoll (non-blocking sockets, epoll, sendmsg) holds its
# readiness waits (epoll_wait in serve_loop) and its clients' blocking calls,
# and nothing of the server's recv, sendmsg or accept4, which return at once
# (docs/internals.md, "What counts as a wait").
# usage: epoll.sh CTRACE_BINARY PROG_EPOLL
set -uo pipefail
ctrace=$1
prog=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

trace=$tmp/epoll.bin
if out=$(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
         "$ctrace" run -o "$trace" -io-min-ns 1 -- "$prog" both 2 4 300 2>&1) &&
   [[ $out == ok ]]; then
    ok "the server answered every request under ctrace run"
else
    bad "prog-epoll failed under ctrace run: $out"
fi
top=$("$ctrace" -pprof=net -top -n 1000 "$trace" 2>&1)
for want in serve_loop client_loop; do
    if grep -q "$want" <<<"$top"; then
        ok "the net profile has $want's waits"
    else
        bad "the net profile has no $want:"; head -40 <<<"$top"
    fi
done
for never in echo accept4; do
    if grep -qw "$never" <<<"$top"; then
        bad "the net profile counts the server's non-blocking $never as a wait:"
        grep -w -B2 -A3 "$never" <<<"$top" | head -20
    else
        ok "no wait under $never (non-blocking calls)"
    fi
done
finish
