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
#     libctrace beside itself, also after the tree is moved elsewhere;
#   - `cmake --install --prefix DIR` into a fresh folder, although the build
#     was configured for another prefix: DIR's ctrace.pc names DIR, and a
#     program built with its flags traces.
# Exit 77 (skipped) in sanitizer builds (installed.sh).
# usage: install.sh BUILD_DIR CC
set -uo pipefail
build=$1 cc=$2
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
source "$(dirname "${BASH_SOURCE[0]}")/installed.sh"
prefix=$(cache CMAKE_INSTALL_PREFIX)
libdir=$(cache CMAKE_INSTALL_LIBDIR)

stage=$tmp/stage
DESTDIR=$stage cmake --install "$build" >"$tmp/install.log" 2>&1
check "cmake --install into a staging folder" test $? -eq 0 -a -d "$stage$prefix"
root=$stage$prefix
while IFS= read -r f; do
    check "installed: $f" test -e "$root/$f"
done < <(installed_files "$libdir")
check "installed: libctrace.so.$abi is the SONAME" \
    bash -c "readelf -d '$root/$libdir/libctrace.so.$abi' | grep -q 'SONAME.*\[libctrace.so.$abi\]'"
check "installed: no libctrace-lttng.so link (it is dlopen'd)" \
    test ! -e "$root/$libdir/libctrace-lttng.so"

# The user's program (prog-install.c), tracing itself with the API.
prog=$(dirname "${BASH_SOURCE[0]}")/../progs/prog-install.c
# traced EXE TRACE [ROOT]: runs EXE into TRACE with the libctrace installed
# under ROOT (default: the staged one) and has ROOT's ctrace read it:
# threads and the lock's waits must be there.
traced() {
    local exe=$1 trace=$2 at=${3:-$root}
    LD_LIBRARY_PATH=$at/$libdir "$exe" "$trace" | grep -qx "libctrace $version" &&
        "$at/bin/ctrace" -pprof=sync -top "$trace" 2>/dev/null | grep -q 'worker'
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
check "installed ctrace run: finds libctrace.so.$abi beside itself and traces" \
    run_traced "$root/bin/ctrace" "$tmp/plain" "$tmp/run.bin"
mkdir -p "$tmp/moved"
mv "$stage" "$tmp/moved/"
check "installed ctrace run: the same after the tree was moved" \
    run_traced "$tmp/moved/stage$prefix/bin/ctrace" "$tmp/plain" "$tmp/run2.bin"

# `cmake --install --prefix DIR`: the build was configured for $prefix, and
# ctrace.pc must still name DIR (it finds its prefix from its own place).
fresh=$tmp/fresh
cmake --install "$build" --prefix "$fresh" >>"$tmp/install.log" 2>&1
check "cmake --install --prefix into a fresh folder" test $? -eq 0 -a -x "$fresh/bin/ctrace"
fresh_flags=$(env -u PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH=$fresh/$libdir/pkgconfig pkg-config --cflags --libs ctrace)
check "--prefix: ctrace.pc's flags name the fresh folder (got: $fresh_flags)" \
    bash -c "[[ '$fresh_flags' == -I$fresh/* && '$fresh_flags' == *' -L$fresh/'* ]]"
# shellcheck disable=SC2086
"$cc" -DWITH_CTRACE -o "$tmp/fresh-prog" "$prog" $fresh_flags >>"$tmp/cc.log" 2>&1
check "--prefix: a program builds with its pkg-config file and traces" \
    traced "$tmp/fresh-prog" "$tmp/fresh.bin" "$fresh"

[ "$fail" -eq 0 ] || tail -n 30 "$tmp/install.log" "$tmp/cc.log" "$tmp/cm.log"
finish
