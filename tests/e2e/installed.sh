# SPDX-License-Identifier: MIT
# installed.sh - what install.sh and deb.sh share, sourced after checks.sh
# with $build set to the build folder:
#   - sanitizer builds are skipped (exit 77): their libraries need the
#     sanitizer's runtime in every program that links them;
#   cache KEY             prints KEY's value in the build's CMakeCache.txt
#   version, abi          ctrace/version.h's release and ABI numbers
#   installed_files LIBDIR
#                         prints every file an installation holds, relative
#                         to its prefix, LIBDIR being its library folder
#   run_traced CTRACE PROG TRACE
#                         runs the untraced PROG (prog-install.c built
#                         without WITH_CTRACE) under `CTRACE run` into TRACE,
#                         finding libctrace as CTRACE would on its own
#                         (CTRACE_LIB unset), and CTRACE's sync profile of
#                         it must name the program's lock-taking worker
# shellcheck shell=bash
for v in CTRACE_SANITIZE CTRACE_TSAN; do
    if grep -qE "^$v:BOOL=(ON|1|TRUE)" "$build/CMakeCache.txt"; then
        echo "skipped: sanitizer build"; exit 77
    fi
done

cache() { sed -nE "s|^$1:[A-Z]+=(.*)|\1|p" "$build/CMakeCache.txt"; }

version_h=$(dirname "${BASH_SOURCE[0]}")/../../tracer/include/ctrace/version.h
version=$(sed -nE 's/^#define CTRACE_VERSION_(MAJOR|MINOR|PATCH) +([0-9]+)$/\2/p' "$version_h" |
    paste -sd.)
abi=$(sed -nE 's/^#define CTRACE_ABI_VERSION +([0-9]+)$/\1/p' "$version_h")

installed_files() {
    local lib=$1
    printf '%s\n' bin/ctrace "$lib/libctrace.so.$abi" "$lib/libctrace.so" "$lib/libctrace.a" \
        "$lib/libctrace-lttng.so.1" "$lib/babeltrace2/plugins/babeltrace-plugin-ctrace.so" \
        include/ctrace/trace.h include/ctrace/flightrec.h include/ctrace/version.h \
        "$lib/pkgconfig/ctrace.pc" "$lib/cmake/ctrace/ctraceConfig.cmake" \
        "$lib/cmake/ctrace/ctraceConfigVersion.cmake" "$lib/cmake/ctrace/ctraceTargets.cmake" \
        share/man/man1/ctrace.1.gz share/man/man3/libctrace.3.gz share/doc/ctrace/copyright \
        share/doc/ctrace/CHANGELOG.md share/doc/ctrace/README.md \
        share/doc/ctrace/docs/overhead.md share/doc/ctrace/docs/internals.md
}

run_traced() {
    local ctrace=$1 prog=$2 trace=$3
    env -u CTRACE_LIB "$ctrace" run -o "$trace" -- "$prog" &&
        "$ctrace" -pprof=sync -top "$trace" 2>/dev/null | grep -q worker
}
