# tests/lttng_daemon.sh - an LTTng session daemon for the tests: started when
# none answers, stopped by whoever started it. Sourced (not run) by
# tests/run.sh, which starts one for the whole run, and by the LTTng tests,
# which start their own when run alone (ctest by hand).
#   lttng_daemon_start   starts `lttng-sessiond --daemonize --no-kernel` unless
#                        one answers `lttng list`; sets LTTNG_DAEMON_PID to the
#                        pid of the one it started (empty: none started).
#                        Returns non-zero if none answers afterwards.
#   lttng_daemon_stop    stops the daemon lttng_daemon_start started.

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
