#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install.sh - ctrace as a user gets it from `cmake --install`: the build
# tree installed into a staging folder (DESTDIR), then used from there only:
#   - every file in its GNU place: CLI, libctrace.so.ABI with its links,
#     libctrace.a, the LTTng provider, the babeltrace2 plugin, the headers,
#     ctrace.pc, the CMake package, the man pages, the licence;
#   - a program built with pkg-config against the shared library, and with
#     `pkg-config --static` against libctrace.a alone (Libs.private must be
#     enough), each tracing a contended lock into a file the installed
#     `ctrace` reads;
#   - a CMake project using find_package(ctrace) with ctrace::ctrace and
#     ctrace::ctrace_static, and the version file refusing a newer major;
#   - the installed `ctrace run` on an untraced program finds the installed
#     libctrace beside itself, also after the tree is moved elsewhere.
# Exit 77 (skipped) in sanitizer builds: their libraries need the
# sanitizer's runtime in every program that links them.
# usage: install.sh BUILD_DIR CC
set -uo pipefail
build=$1 cc=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

for v in CTRACE_SANITIZE CTRACE_TSAN; do
    if grep -qE "^$v:BOOL=(ON|1|TRUE)" "$build/CMakeCache.txt"; then
        echo "skipped: sanitizer build"; exit 77
    fi
done
cache() { sed -nE "s|^$1:[A-Z]+=(.*)|\1|p" "$build/CMakeCache.txt"; }
prefix=$(cache CMAKE_INSTALL_PREFIX)
libdir=$(cache CMAKE_INSTALL_LIBDIR)
version=$(sed -nE 's/^#define CTRACE_VERSION_(MAJOR|MINOR|PATCH) +([0-9]+)$/\2/p' \
    "$(dirname "${BASH_SOURCE[0]}")/../tracer/include/ctrace/version.h" | paste -sd.)
abi=$(sed -nE 's/^#define CTRACE_ABI_VERSION +([0-9]+)$/\1/p' \
    "$(dirname "${BASH_SOURCE[0]}")/../tracer/include/ctrace/version.h")

stage=$tmp/stage
DESTDIR=$stage cmake --install "$build" >"$tmp/install.log" 2>&1
check "cmake --install into a staging folder" test $? -eq 0 -a -d "$stage$prefix"
root=$stage$prefix
for f in bin/ctrace "$libdir/libctrace.so.$abi" "$libdir/libctrace.so" "$libdir/libctrace.a" \
    "$libdir/libctrace-lttng.so.1" "$libdir/babeltrace2/plugins/babeltrace-plugin-ctrace.so" \
    include/ctrace/trace.h include/ctrace/flightrec.h include/ctrace/version.h \
    "$libdir/pkgconfig/ctrace.pc" "$libdir/cmake/ctrace/ctraceConfig.cmake" \
    "$libdir/cmake/ctrace/ctraceConfigVersion.cmake" "$libdir/cmake/ctrace/ctraceTargets.cmake" \
    share/man/man1/ctrace.1.gz share/man/man3/libctrace.3.gz share/doc/ctrace/copyright \
    share/doc/ctrace/CHANGELOG.md; do
    check "installed: $f" test -e "$root/$f"
done
check "installed: libctrace.so.$abi is the SONAME" \
    bash -c "readelf -d '$root/$libdir/libctrace.so.$abi' | grep -q 'SONAME.*\[libctrace.so.$abi\]'"
check "installed: no libctrace-lttng.so link (it is dlopen'd)" \
    test ! -e "$root/$libdir/libctrace-lttng.so"

# The user's program (prog-install.c), tracing itself with the API.
prog=$(dirname "${BASH_SOURCE[0]}")/prog-install.c
# runs PROG into TRACE and has the installed ctrace read it: threads and
# the lock's waits must be there.
traced() {
    local exe=$1 trace=$2
    LD_LIBRARY_PATH=$root/$libdir "$exe" "$trace" | grep -qx "libctrace $version" &&
        "$root/bin/ctrace" -pprof=sync -top "$trace" 2>/dev/null | grep -q 'worker'
}

export PKG_CONFIG_PATH=$root/$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage
check "pkg-config: version $version" test "$(pkg-config --modversion ctrace)" = "$version"
# shellcheck disable=SC2046
"$cc" -DWITH_CTRACE -o "$tmp/shared" "$prog" $(pkg-config --cflags --libs ctrace) >"$tmp/cc.log" 2>&1
check "pkg-config, shared: builds" test -x "$tmp/shared"
check "pkg-config, shared: needs libctrace.so.$abi" \
    bash -c "readelf -d '$tmp/shared' | grep -q 'NEEDED.*\[libctrace.so.$abi\]'"
check "pkg-config, shared: traces, and the installed ctrace reads it" traced "$tmp/shared" "$tmp/shared.bin"

# libctrace.a alone (as a static-only install has it): --static must bring
# everything it needs.
cp -a "$stage" "$tmp/stage-static"
rm -f "$tmp/stage-static$prefix/$libdir"/libctrace.so*
# shellcheck disable=SC2046
PKG_CONFIG_PATH=$tmp/stage-static$prefix/$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$tmp/stage-static \
    "$cc" -DWITH_CTRACE -o "$tmp/static" "$prog" \
    $(PKG_CONFIG_PATH=$tmp/stage-static$prefix/$libdir/pkgconfig \
      PKG_CONFIG_SYSROOT_DIR=$tmp/stage-static pkg-config --cflags --libs --static ctrace) \
    >>"$tmp/cc.log" 2>&1
check "pkg-config --static: builds with libctrace.a alone" test -x "$tmp/static"
check "pkg-config --static: no libctrace.so needed" \
    bash -c "! readelf -d '$tmp/static' | grep -q 'NEEDED.*libctrace'"
check "pkg-config --static: traces, and the installed ctrace reads it" traced "$tmp/static" "$tmp/static.bin"

# find_package(ctrace)
mkdir -p "$tmp/cm"
cp "$prog" "$tmp/cm/prog.c"
cat >"$tmp/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(ctrace ${version%.*} REQUIRED)
add_compile_definitions(WITH_CTRACE)
add_executable(with_shared prog.c)
target_link_libraries(with_shared PRIVATE ctrace::ctrace)
add_executable(with_static prog.c)
target_link_libraries(with_static PRIVATE ctrace::ctrace_static)
file(WRITE \${CMAKE_BINARY_DIR}/found.txt "\${ctrace_VERSION}")
CM
CC=$cc cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$root" >"$tmp/cm.log" 2>&1 &&
    cmake --build "$tmp/cm/build" >>"$tmp/cm.log" 2>&1
check "find_package(ctrace): configures and builds" test -x "$tmp/cm/build/with_static"
check "find_package(ctrace): ctrace_VERSION is $version" \
    grep -qx "$version" "$tmp/cm/build/found.txt"
check "find_package(ctrace): ctrace::ctrace traces" traced "$tmp/cm/build/with_shared" "$tmp/cm1.bin"
check "find_package(ctrace): ctrace::ctrace_static traces" traced "$tmp/cm/build/with_static" "$tmp/cm2.bin"
check "find_package(ctrace): ctrace::ctrace_static needs no libctrace.so" \
    bash -c "! readelf -d '$tmp/cm/build/with_static' | grep -q 'NEEDED.*libctrace'"
sed -i "s/find_package(ctrace ${version%.*} REQUIRED)/find_package(ctrace $((${version%%.*} + 1)).0 REQUIRED)/" \
    "$tmp/cm/CMakeLists.txt"
check "find_package(ctrace $((${version%%.*} + 1)).0): refused by the version file" \
    bash -c "! cmake -S '$tmp/cm' -B '$tmp/cm/build2' -DCMAKE_PREFIX_PATH='$root' >/dev/null 2>&1"

# The installed `ctrace run`, on a program that knows nothing of ctrace.
"$cc" -O1 -g -o "$tmp/plain" "$prog" -lpthread
check "installed ctrace -version: $version, ABI $abi" \
    bash -c "'$root/bin/ctrace' -version | grep -qx 'ctrace $version' &&
             '$root/bin/ctrace' -version | grep -q 'ABI $abi'"
# (CTRACE_LIB unset: the installed binary must find its own library.)
run_plain() {
    env -u CTRACE_LIB "$1/bin/ctrace" run -o "$2" -- "$tmp/plain" &&
        "$1/bin/ctrace" -pprof=sync -top "$2" 2>/dev/null | grep -q 'worker'
}
check "installed ctrace run: finds libctrace.so.$abi beside itself and traces" \
    run_plain "$root" "$tmp/run.bin"
mkdir -p "$tmp/moved"
mv "$stage" "$tmp/moved/"
check "installed ctrace run: the same after the tree was moved" \
    run_plain "$tmp/moved/stage$prefix" "$tmp/run2.bin"

[ "$fail" -eq 0 ] || tail -n 30 "$tmp/install.log" "$tmp/cc.log" "$tmp/cm.log"
finish
