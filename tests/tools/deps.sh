# SPDX-License-Identifier: MIT
# tests/tools/deps.sh - the Debian 12 packages that ctrace's build, tests and demo need,
# and a function that installs whichever of them are missing.
#
# Sourced (not run) by tests/run.sh and examples/demo.sh, so the list lives here
# only. Defines:
#   CTRACE_DEPS            the package names
#   ctrace_missing_deps    prints the packages of CTRACE_DEPS not installed
#   ctrace_install_deps    installs them with apt-get (as root, or through sudo);
#                          runs `apt-get update` only when something is missing,
#                          and needs neither root nor sudo when nothing is.
#                          Returns non-zero if it cannot.

# shellcheck shell=bash
CTRACE_DEPS=(
    build-essential cmake pkg-config        # toolchain; g++ builds tests/progs/prog-cxx.cpp, and
                                            # libstdc++ demangles C++ names in the analyzer
    libzstd-dev zstd zlib1g-dev             # trace compression, gzip'd profiles
    libdw-dev libelf-dev                    # symbolization in the analyzer
    libunwind-dev                           # stacks through code without frame pointers
    libcmocka-dev                           # unit tests
    golang-go protobuf-compiler             # go tool pprof; protoc for profile and Perfetto checks
    liblttng-ust-dev lttng-tools            # LTTng-UST provider (tp/)
    libbabeltrace2-dev babeltrace2          # CTF reader in the analyzer
    clang                                   # second compiler
    dpkg-dev                                # cpack's Debian package: dpkg-shlibdeps
    clang-format                            # tests/tools/format.sh (Debian 12: version 14)
    python3 xz-utils                        # real programs traced by tests/e2e/run_debian.sh, and
                                            # the fake and bad clients of ctl_cli.sh and
                                            # control.sh; xz makes MiniDebugInfo in
                                            # symbol_sources.sh
    man-db groff-base                       # tests/e2e/man.sh renders the manual pages
    bc e2fsprogs                            # tests/e2e/frozen.sh: its time bounds, and the
                                            # ext4 loop mount it freezes
)

ctrace_missing_deps() {
    local p
    for p in "${CTRACE_DEPS[@]}"; do
        # "install ok installed" is the only status of a usable package;
        # "deinstall ok config-files" and unknown names count as missing.
        if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) != "install ok installed" ]]; then
            echo "$p"
        fi
    done
}

ctrace_install_deps() {
    if ! command -v dpkg-query >/dev/null 2>&1; then
        echo "ctrace: dpkg-query not found: this helper knows Debian 12 only;" \
             "install these by hand: ${CTRACE_DEPS[*]}" >&2
        return 1
    fi
    local missing
    mapfile -t missing < <(ctrace_missing_deps)
    if [[ ${#missing[@]} -eq 0 ]]; then
        echo "== the ${#CTRACE_DEPS[@]} packages ctrace needs are installed: nothing to install =="
        return 0
    fi
    local -a sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "ctrace: missing packages (${missing[*]}) and not root, no sudo;" \
                 "install them as root" >&2
            return 1
        fi
        sudo=(sudo)
    fi
    echo "== installing: ${missing[*]} =="
    "${sudo[@]}" apt-get update
    # env: sudo's env_reset would drop a plain exported DEBIAN_FRONTEND.
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
}
