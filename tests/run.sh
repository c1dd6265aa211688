#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/run.sh - installs what ctrace needs (Debian 12), builds it and runs the
# test suites. Four passes, each adding what the others cannot see:
#   build/        gcc, RelWithDebInfo: every test.
#   build-asan/   AddressSanitizer + UndefinedBehaviorSanitizer: every test
#                 but the ONCE ones below.
#   build-clang/  clang (other inlining and tail calls than gcc's, and its
#                 warnings): every test but the ONCE and the slow ones; the
#                 slow ones (golden outputs, Perfetto, LTTng, the control
#                 channel) run in build/ and under ASan.
#   build-tsan/   ThreadSanitizer: the unit tests only (the shell tests
#                 preload libctrace into programs built without TSan), and
#                 only their targets are built.
# ONCE: the tests whose subject does not change with the compiler or the
# sanitizer, run in build/ alone: the source checks (atomics, rawcalls, layers, spdx),
# the checker of Perfetto traces (perfetto-check: Python on hand-made
# files), the benchmarks' smoke run (bench-run-smoke), the package (label
# package: install, deb, static-link, man-pages); the CPU sampler's accuracy
# against known CPU time (cpu-sampling: a measurement, which a sanitizer
# only distorts; the sampler's code, both sources, runs under ASan and
# TSan in test-flightrec, the samples' reading in cpu); and the
# LTTng relay daemon's fleet (lttng-relay: libctrace's LTTng path runs
# under ASan in lttng, the merge of processes in test-ctf-rebuild).
# First of all it checks the sources' format (tests/tools/format.sh).
#
# --quick is the inner loop of a change: the format check, build/ alone and
# the tests not labelled slow or package (`ctest -LE 'slow|package'`), in
# under two minutes from a warm build.
#
# Usage: tests/run.sh [--quick] [--no-install] [--no-format] [--no-asan]
#                     [--no-clang] [--no-tsan]
#   --quick       the format check, build/ and its fast tests only
#   --no-install  do not check for or install packages (tests/tools/deps.sh)
#   --no-format   skip the format check (tests/tools/format.sh)
#   --no-asan     skip the sanitizer build and its test run
#   --no-clang    skip the clang build and its test run
#   --no-tsan     skip the ThreadSanitizer build and its test run
# Works from any directory. Exit status: 0 when every step passed, 1 when a
# build, the format check or a test suite failed, 2 on a usage error. The
# builds and test suites run even if the format check or a suite fails; the
# last line says what happened, with each pass's time.
set -euo pipefail

prog=tests/run.sh
usage() {
    cat <<'USAGE'
usage: tests/run.sh [--quick] [--no-install] [--no-format] [--no-asan] [--no-clang] [--no-tsan]
  --quick       the format check, build/ and its fast tests only
  --no-install  do not check for or install packages (tests/tools/deps.sh)
  --no-format   skip the format check (tests/tools/format.sh)
  --no-asan     skip the sanitizer build and its test run
  --no-clang    skip the clang build and its test run
  --no-tsan     skip the ThreadSanitizer build and its test run
USAGE
}

quick=0
install=1
format=1
asan=1
clang=1
tsan=1
for arg in "$@"; do
    case $arg in
    --quick) quick=1 asan=0 clang=0 tsan=0 ;;
    --no-install) install=0 ;;
    --no-format) format=0 ;;
    --no-asan) asan=0 ;;
    --no-clang) clang=0 ;;
    --no-tsan) tsan=0 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "$prog: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
    esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=tests/tools/deps.sh
source tests/tools/deps.sh

# Two cores (the machines this runs on). Tests run three at a time: most
# end-to-end tests spend their time waiting (for a program's phases, an
# LTTng session, a timeout), and those that measure run alone (RUN_SERIAL).
jobs=2
test_jobs=3

# ------------------------------------------------------------------ daemons
# Daemons the tests need are started here and stopped by cleanup() on any exit:
# an LTTng session daemon (tests/tools/lttng_daemon.sh), unless one already runs.
# shellcheck source=tests/tools/lttng_daemon.sh
source tests/tools/lttng_daemon.sh
tmp_dirs=()

cleanup() {
    lttng_daemon_stop
    if [[ ${#tmp_dirs[@]} -gt 0 ]]; then
        rm -rf "${tmp_dirs[@]}"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_daemons() {
    lttng_daemon_start || fail "starting lttng-sessiond --daemonize --no-kernel"
    if [[ -n $LTTNG_DAEMON_PID ]]; then
        echo "== started lttng-sessiond (pid $LTTNG_DAEMON_PID); stopped at the end =="
    fi
}

# ------------------------------------------------------------------ steps
failed=()

fail() {
    echo "$prog: FAILED: $*"
    exit 1
}

# configure DIR [CMAKE ARGS...]; build DIR [TARGET...]: a failure stops
# everything; so does a warning (CTRACE_WERROR). Configured for /usr,
# Debian's prefix, so that the package test (deb.sh) packages the build it
# tests; nothing is installed by the build itself.
configure() {
    local dir=$1
    shift
    echo "== configure $dir =="
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON \
        -DCMAKE_INSTALL_PREFIX=/usr -DCTRACE_WERROR=ON "$@" ||
        fail "configure $dir"
}
build() {
    local dir=$1
    shift
    local targets=()
    [[ $# -gt 0 ]] && targets=(--target "$@")
    echo "== build $dir${*:+ (targets: $*)} =="
    cmake --build "$dir" -j"$jobs" "${targets[@]}" || fail "build $dir"
}

# run_tests DIR LABEL [CTEST ARGS...]: a failing suite is recorded; the next
# one still runs.
run_tests() {
    local dir=$1 label=$2
    shift 2
    echo "== $label =="
    if ! ctest --test-dir "$dir" --output-on-failure -j"$test_jobs" "$@"; then
        failed+=("$label ($dir)")
    fi
}

# The tests of the ONCE list (see the top): by name and by label.
once_names='^(atomics|rawcalls|layers|layers-self-test|spdx|perfetto-check|bench-run-smoke|cpu-sampling|lttng-relay)$'
once_label='package'

# Each pass's time, for the last line.
times=()
pass_start=$SECONDS
pass_done() {
    times+=("$1 $((SECONDS - pass_start)) s")
    pass_start=$SECONDS
}

if [[ $install -eq 1 ]]; then
    ctrace_install_deps || fail "installing packages"
fi
pass_start=$SECONDS

# The format check: a failure is recorded; the builds and tests still run.
if [[ $format -eq 1 ]]; then
    echo "== format (tests/tools/format.sh) =="
    if ! tests/tools/format.sh "$root"; then
        failed+=("format (tests/tools/format.sh)")
    fi
    pass_done format
fi

start_daemons

configure build
build build
if [[ $quick -eq 1 ]]; then
    run_tests build "fast tests (--quick: not slow, not package)" -LE 'slow|package'
else
    run_tests build "tests"
fi
pass_done build/

if [[ $asan -eq 1 ]]; then
    configure build-asan -DCTRACE_SANITIZE=ON
    build build-asan
    # Defaults the caller can override: report leaks, and stop at the first
    # UB report with its stack (ASan always stops at its first report).
    # intercept_tls_get_addr=0: up to GCC 13 the sanitizers' __tls_get_addr
    # interceptor may take a dynamic TLS block (libunwind's, dlopen'd, in
    # each thread that unwinds) for a pre-2.25 glibc header and hand LSan a
    # bogus range, and LSan's tracer dies at exit ("Tracer caught signal 11",
    # google/sanitizers#1322): one gateway run in two did. Leaks held only
    # from dynamic TLS are not ours to find here.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:intercept_tls_get_addr=0}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    run_tests build-asan "tests under ASan+UBSan (all but the ONCE ones)" \
        -E "$once_names" -LE "$once_label"
    pass_done build-asan/
fi

if [[ $clang -eq 1 ]]; then
    CC=clang configure build-clang
    build build-clang
    run_tests build-clang "tests built with clang (all but the ONCE and the slow ones)" \
        -E "$once_names" -LE "$once_label|slow"
    pass_done build-clang/
fi

if [[ $tsan -eq 1 ]]; then
    configure build-tsan -DCTRACE_TSAN=ON
    # The unit tests only: the shell tests preload libctrace into programs
    # built without TSan. So only what they run is built (the target
    # unit-tests, tests/unit/CMakeLists.txt). Any report fails its test
    # (halt_on_error, exit code 66); there are no suppressions.
    build build-tsan unit-tests
    # Stacks by frame pointers: libunwind is not built with TSan, and its
    # per-thread cache's destructor calls into TSan's interceptors after TSan
    # has finalized the thread (a crash inside TSan).
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    CTRACE_UNWIND=fp run_tests build-tsan "unit tests under ThreadSanitizer" -R '^test-'
    pass_done build-tsan/
fi

echo "== times: ${times[*]/%/;} total $SECONDS s =="
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "$prog: FAILED: ${failed[*]}"
    exit 1
fi
passes="build/"
[[ $quick -eq 1 ]] && passes="build/ (--quick: not slow, not package)"
[[ $format -eq 1 ]] && passes="format, $passes"
[[ $asan -eq 1 ]] && passes+=", build-asan/ under ASan+UBSan"
[[ $clang -eq 1 ]] && passes+=", build-clang/"
[[ $tsan -eq 1 ]] && passes+=", build-tsan/ under TSan"
echo "$prog: all test suites passed ($passes)"
