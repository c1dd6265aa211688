#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# deb.sh - the Debian package `cpack -G DEB` makes (packaging/CMakeLists.txt):
#   - named ctrace_VERSION_ARCH.deb, with its control fields and the
#     Depends that dpkg-shlibdeps found;
#   - holding, in Debian's places under /usr (the multiarch library
#     folder), the CLI, libctrace (shared with its links, static), the LTTng
#     provider, the babeltrace2 plugin, the headers, ctrace.pc, the CMake
#     package, both man pages (gzip'd) and the copyright file;
#   - as root, with no ctrace package installed already: installed with
#     dpkg, the installed `ctrace run` traces a program (it must find the
#     installed libctrace), pkg-config and man find theirs, and dpkg -P
#     removes every file and its record again.
# A build configured for another prefix than /usr is configured again for
# /usr in a temporary folder (without tests) to make the package.
# Exit 77 (skipped) in sanitizer builds, and where dpkg-deb is missing.
# usage: deb.sh BUILD_DIR CC
set -uo pipefail
build=$1 cc=$2
here=$(dirname "${BASH_SOURCE[0]}")
source "$here/checks.sh"
source "$here/installed.sh"
command -v dpkg-deb >/dev/null || { echo "skipped: no dpkg-deb (not Debian)"; exit 77; }
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)

pkgbuild=$build
if [ "$(cache CMAKE_INSTALL_PREFIX)" != /usr ]; then
    pkgbuild=$tmp/build-usr
    echo "(configuring $pkgbuild for /usr)"
    CC=$cc cmake -S "$(cache CMAKE_HOME_DIRECTORY)" -B "$pkgbuild" -DCMAKE_INSTALL_PREFIX=/usr \
        -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE="$(cache CMAKE_BUILD_TYPE)" >"$tmp/cpack.log" 2>&1 &&
        cmake --build "$pkgbuild" -j"$(nproc)" >>"$tmp/cpack.log" 2>&1
fi
(cd "$tmp" && cpack -G DEB -B "$tmp/pkg" --config "$pkgbuild/CPackConfig.cmake") \
    >>"$tmp/cpack.log" 2>&1
deb=$tmp/pkg/ctrace_${version}_$arch.deb
check "cpack -G DEB makes ctrace_${version}_$arch.deb" test -f "$deb"
if [ ! -f "$deb" ]; then
    tail -n 40 "$tmp/cpack.log"
    finish
    exit
fi

info=$(dpkg-deb --info "$deb")
check "control: Package ctrace" grep -qE '^ Package: ctrace$' <<<"$info"
check "control: Version $version" grep -qE "^ Version: $version\$" <<<"$info"
check "control: Architecture $arch" grep -qE "^ Architecture: $arch\$" <<<"$info"
check "control: Depends names libzstd1 and libc6 (dpkg-shlibdeps)" \
    bash -c 'grep -E "^ Depends:" <<<"$1" | grep -q libzstd1 && grep -E "^ Depends:" <<<"$1" | grep -q libc6' _ "$info"

contents=$(dpkg-deb --contents "$deb" | awk '{print $6}')
while IFS= read -r f; do
    check "contents: ./usr/$f" grep -qxF -- "./usr/$f" <<<"$contents"
done < <(installed_files "lib/$multiarch")
check "contents: nothing outside /usr" bash -c '! grep -vE "^\./(usr/.*)?$" <<<"$1"' _ "$contents"

if [ "$(id -u)" -ne 0 ]; then
    echo "(not root: the package's installation is not tried)"
elif [ "$(dpkg-query -W -f='${Status}' ctrace 2>/dev/null)" = "install ok installed" ]; then
    echo "(a ctrace package is installed already: left alone, installation not tried)"
else
    trap 'dpkg -P ctrace >/dev/null 2>&1; rm -rf "$tmp"' EXIT
    dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1
    check "dpkg -i installs it" test $? -eq 0
    "$cc" -O1 -g -o "$tmp/plain" "$here/../progs/prog-install.c" -lpthread
    check "installed: /usr/bin/ctrace run traces a program with the installed libctrace" \
        run_traced /usr/bin/ctrace "$tmp/plain" "$tmp/t.bin"
    check "installed: pkg-config finds ctrace $version" \
        bash -c "env -u PKG_CONFIG_PATH pkg-config --modversion ctrace | grep -qx '$version'"
    check "installed: a program builds and runs with pkg-config's flags" \
        bash -c "printf '#include <ctrace/trace.h>\nint main(void){return ctrace_version() != CTRACE_VERSION_NUMBER;}\n' >'$tmp/v.c' &&
                 '$cc' -o '$tmp/v' '$tmp/v.c' \$(env -u PKG_CONFIG_PATH pkg-config --cflags --libs ctrace) && '$tmp/v'"
    # (unless dpkg is told to leave manual pages out, as minimal images are)
    if command -v man >/dev/null &&
        ! grep -qs 'path-exclude.*/usr/share/man' /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d/*; then
        check "installed: man finds ctrace(1) and libctrace(3)" \
            bash -c "man -w ctrace >/dev/null && man -w 3 libctrace >/dev/null"
    fi
    dpkg -P ctrace >>"$tmp/dpkg.log" 2>&1
    check "dpkg -P removes it, files and record" bash -c 'test ! -e /usr/bin/ctrace &&
        test ! -e "/usr/lib/$1/libctrace.so.$2" &&
        test -z "$(dpkg-query -W -f="\${Status}" ctrace 2>/dev/null)"' _ "$multiarch" "$abi"
    [ "$fail" -eq 0 ] || tail -n 20 "$tmp/dpkg.log"
fi
[ "$fail" -eq 0 ] || tail -n 30 "$tmp/cpack.log"
finish
