# SPDX-License-Identifier: MIT
# tests/tools/lttng_daemon.sh - an LTTng session daemon for the tests: started when
# none answers, stopped by whoever started it. Sourced (not run) by
# tests/run.sh, which starts one for the whole run, and by the LTTng tests,
# which start their own when run alone (ctest by hand).
#   lttng_daemon_start   starts `lttng-sessiond --daemonize --no-kernel` unless
#                        one answers `lttng list`; sets LTTNG_DAEMON_PID to the
#                        pid of the one it started (empty: none started).
#                        Returns non-zero if none answers afterwards.
#   lttng_daemon_stop    stops the daemon lttng_daemon_start started.
# and the sessions they record:
#   lttng_session_start SESSION WHERE SUBBUF NSUBBUF VPID
#                        creates SESSION (WHERE: --output=DIR or --set-url=URL)
#                        with one user-space channel `ch` of NSUBBUF
#                        sub-buffers of SUBBUF bytes recording ctrace:*, with
#                        the vpid context when VPID is 1, and starts it;
#                        non-zero (and a line) if a step fails.
#   lttng_session_stop SESSION
#                        stops it; prints how many events `lttng list` says it
#                        discarded (per channel, joined by +).

# shellcheck shell=bash
LTTNG_DAEMON_PID=

lttng_daemon_start() {
    if lttng list >/dev/null 2>&1; then
        return 0
    fi
    local before
    before=$(pgrep -u "$(id -u)" -x lttng-sessiond | tr '\n' ' ')
    lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 || return 1
    local p
    for p in $(pgrep -u "$(id -u)" -x lttng-sessiond); do
        [[ " $before " == *" $p "* ]] || { LTTNG_DAEMON_PID=$p; break; }
    done
    local i
    for i in $(seq 50); do
        lttng list >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}

lttng_daemon_stop() {
    [[ -n $LTTNG_DAEMON_PID ]] || return 0
    kill "$LTTNG_DAEMON_PID" 2>/dev/null || true
    local i
    for i in $(seq 50); do
        kill -0 "$LTTNG_DAEMON_PID" 2>/dev/null || break
        sleep 0.1
    done
    LTTNG_DAEMON_PID=
}

lttng_session_start() {
    local session=$1 where=$2 subbuf=$3 nsubbuf=$4 vpid=$5
    lttng create "$session" "$where" >/dev/null &&
        lttng enable-channel -s "$session" -u ch --subbuf-size="$subbuf" \
            --num-subbuf="$nsubbuf" >/dev/null &&
        lttng enable-event -s "$session" -u -c ch 'ctrace:*' >/dev/null &&
        { [[ $vpid != 1 ]] || lttng add-context -s "$session" -u -c ch -t vpid >/dev/null; } &&
        lttng start "$session" >/dev/null || { echo "lttng session set-up failed"; return 1; }
}

lttng_session_stop() {
    local session=$1
    lttng stop "$session" >/dev/null
    # As printed, per channel: awk would round a huge figure to a float.
    lttng list "$session" | sed -nE 's/.*[Dd]iscarded events: ([0-9]+).*/\1/p' |
        paste -sd+
}
