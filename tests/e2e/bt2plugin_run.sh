# SPDX-License-Identifier: MIT
# bt2plugin_run.sh - sourced by the tests that run babeltrace2 with the
# plugin `ctrace` (tp/bt2plugin.c):
#   bt2 PLUGIN_DIR ARG...   babeltrace2 --plugin-path=PLUGIN_DIR ARG...
# babeltrace2 is not built with the sanitizers: the plugin of a sanitizer
# build needs their runtime preloaded (ASan refuses to be loaded later).

# shellcheck shell=bash

bt2() {
    local dir=$1 rt
    shift
    rt=$(ldd "$dir/babeltrace-plugin-ctrace.so" 2>/dev/null | awk '/libasan/ { print $3 }')
    if [ -n "$rt" ]; then
        LD_PRELOAD=$rt babeltrace2 --plugin-path="$dir" "$@"
    else
        babeltrace2 --plugin-path="$dir" "$@"
    fi
}
