#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# spdx.sh - every source file of ctrace names its licence (LICENSE: MIT) in
# an SPDX line within its first three lines, in its own comment syntax:
# C, C++ and linker scripts `/* SPDX-License-Identifier: MIT */`, shell,
# Python and CMake `# ...` (after a #! line), protobuf `// ...`, man pages
# `.\" ...`. Data files (traces, expected outputs, corpora) carry none.
# usage: spdx.sh [SOURCE_DIR]   (default: this script's repository)
set -uo pipefail
src=${1:-$(dirname "${BASH_SOURCE[0]}")/../..}
cd "$src" || exit 1

# The files that must carry the line.
sources() {
    local pattern='\.(c|h|cpp|sh|py|map|proto|in|cmake|[13])$|(^|/)CMakeLists\.txt$|^\.ci/run$'
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files --cached --others --exclude-standard
    else
        find . -type f ! -path './build*' ! -path './.git/*' | sed 's|^\./||'
    fi | grep -E "$pattern" | grep -vE '^(build[^/]*|tests/data/(golden|fuzz))/'
}

missing=0 checked=0
while IFS= read -r f; do
    [ -f "$f" ] || continue
    checked=$((checked + 1))
    if ! head -n 3 "$f" | grep -q 'SPDX-License-Identifier: MIT'; then
        echo "no SPDX line: $f"
        missing=$((missing + 1))
    fi
done < <(sources)
echo "$checked files, $missing without an SPDX line"
[ "$checked" -gt 0 ] && [ "$missing" -eq 0 ]
