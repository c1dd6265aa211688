#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/tools/format.sh - checks that every C/C++ source of the tree is formatted as
# .clang-format (at the repository root) says: runs `clang-format --dry-run
# --Werror` on each, lists the files that differ and how to fix them.
#
# Usage: tests/tools/format.sh [ROOT]
#   ROOT  the repository's top directory (default: this script's parent's)
# The files are those git tracks (*.c, *.h, *.cpp); outside a git checkout,
# those find sees, less build*/ directories. The formatter is $CLANG_FORMAT,
# or clang-format on PATH; CI and .clang-format assume version 14 (another
# version may format some constructs differently).
# Exit status: 0 when every file is formatted, 1 when some are not or
# clang-format is missing, 2 on a usage error.
set -euo pipefail

prog=tests/tools/format.sh
if [[ $# -gt 1 || ${1:-} == -h || ${1:-} == --help ]]; then
    echo "usage: $prog [ROOT]" >&2
    exit 2
fi
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root" || { echo "$prog: cannot enter $root" >&2; exit 2; }

cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
    echo "$prog: FAILED: $cf not found; install it (Debian: apt-get install clang-format," \
         "listed in tests/tools/deps.sh)"
    exit 1
fi
if [[ ! -f .clang-format ]]; then
    echo "$prog: FAILED: no .clang-format in $root"
    exit 1
fi
version=$("$cf" --version)
if [[ ! $version =~ version\ 14\. ]]; then
    echo "$prog: note: $version; .clang-format is checked with clang-format 14"
fi

files=()
if [[ $(git rev-parse --show-toplevel 2>/dev/null) == "$(pwd -P)" ]]; then
    mapfile -d '' -t files < <(git ls-files -z -- '*.c' '*.h' '*.cpp')
else
    mapfile -d '' -t files < <(find . -type d \( -name .git -o -name 'build*' \) -prune -o \
        -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) -print0 | sort -z)
fi
if [[ ${#files[@]} -eq 0 ]]; then
    echo "$prog: FAILED: no C/C++ sources found in $root"
    exit 1
fi

# A broken .clang-format fails every file the same way: say so once.
if ! err=$("$cf" --style=file --dump-config "${files[0]}" 2>&1 >/dev/null) || [[ -n $err ]]; then
    echo "$prog: FAILED: $cf cannot use $root/.clang-format:"
    echo "$err"
    exit 1
fi

# Forty files a process, two processes at a time (one per file took 20 s
# of the full run): each finding is "FILE:LINE:COL: error: ...".
report=$(mktemp)
trap 'rm -f "$report"' EXIT
status=0
printf '%s\0' "${files[@]#./}" |
    xargs -0 -n 40 -P 2 "$cf" --style=file --dry-run --Werror >/dev/null 2>"$report" || status=$?
mapfile -t differ < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*/\1/p' "$report" | sort -u)
if [[ $status -ne 0 && ${#differ[@]} -eq 0 ]]; then
    echo "$prog: FAILED: $cf failed without naming a file:"
    cat "$report"
    exit 1
fi

if [[ ${#differ[@]} -gt 0 ]]; then
    echo "$prog: ${#differ[@]} of ${#files[@]} files are not formatted as .clang-format says:"
    printf '  %s\n' "${differ[@]}"
    echo "hint: clang-format -i FILE (from $root) rewrites FILE in place; git diff shows what changed"
    exit 1
fi
echo "$prog: all ${#files[@]} files formatted"
