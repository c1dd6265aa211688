#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pprof_go.sh - checks that Go's pprof reads a profile ctrace wrote.
#
# Usage: tests/e2e/pprof_go.sh PROFILE [SAMPLE_INDEX]
# Prints `go tool pprof -raw` (the whole profile as pprof parsed it) and
# `-top` for every sample type (or only SAMPLE_INDEX), and exits non-zero
# when go cannot read the profile. Needs `go` on PATH; exits 77 (the
# automake/ctest "skipped" code) without it.
# -symbolize=none: the profile is already symbolized, and its mappings name
# files of the traced machine that pprof must not go looking for.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: $0 PROFILE [SAMPLE_INDEX]" >&2
    exit 2
fi
profile=$1
if ! command -v go >/dev/null; then
    echo "$0: go not found; skipping" >&2
    exit 77
fi
if [[ ! -r $profile ]]; then
    echo "$0: cannot read $profile" >&2
    exit 1
fi

# go tool pprof exits 1 on a profile it cannot parse; its stderr message
# ("parsing profile: ...", "failed to fetch any source profiles") is checked
# too, in case a version reports the error but exits 0.
run() {
    local err
    err=$(mktemp)
    if ! go tool pprof -symbolize=none "$@" "$profile" 2>"$err"; then
        cat "$err" >&2
        rm -f "$err"
        echo "$0: go tool pprof $* failed on $profile" >&2
        exit 1
    fi
    if grep -qE 'parsing profile|failed to fetch' "$err"; then
        cat "$err" >&2
        rm -f "$err"
        echo "$0: go tool pprof $* could not read $profile" >&2
        exit 1
    fi
    rm -f "$err"
}

run -raw

if [[ $# -eq 2 ]]; then
    run -top -sample_index="$2"
else
    # One -top per sample type; -raw's first line lists them.
    n=$(go tool pprof -symbolize=none -raw "$profile" 2>/dev/null |
        awk '/^Samples:/ { getline; print NF; exit }')
    for ((i = 0; i < ${n:-1}; i++)); do
        run -top -sample_index="$i"
    done
fi
