# checks.sh - sourced by the shell tests: a temporary directory ($tmp,
# removed at exit), and counting checks with the "N passed, N failed" line
# at the end that test runners read.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# check NAME COMMAND...: passes when the command succeeds.
check() {
    local name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}

# finish: the closing line; its status is whether every check passed.
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
