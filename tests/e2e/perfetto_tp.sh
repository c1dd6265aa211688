#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# perfetto_tp.sh - loads a Perfetto trace into Perfetto's own importer,
# trace_processor_shell (what the Perfetto UI runs), and prints what it made
# of it, one fact a line:
#   slices N              select count(*) from slice (instants count: dur 0)
#   thread TID NAME       select tid, name from thread (one a thread)
#   flows N               select count(*) from flow
#   error NAME IDX SEVERITY SOURCE VALUE
#                         the stats with severity error or data_loss and a
#                         non-zero value: import errors (IDX "-" if none)
# and checks each EXPECTED argument:
#   slices=N  slices>=N  flows=N  flows>=N  threads=N  threads>=N
#                         (threads: those with tid != 0; trace processor
#                         adds a tid-0 placeholder)
#   thread=NAME           a thread of that name
# usage: perfetto_tp.sh TRACE.pftrace [EXPECTED...]
# The binary is $TRACE_PROCESSOR if set, else trace_processor_shell on PATH.
# It is no dependency of the project: exit 77 (a ctest skip, SKIP_RETURN_CODE)
# when absent. Exit 0 when the trace loads without error stats and every
# expectation holds; 1 otherwise; 2 on a usage error.
set -uo pipefail

if [ $# -lt 1 ]; then
    echo "usage: perfetto_tp.sh TRACE.pftrace [EXPECTED...]" >&2
    exit 2
fi
trace=$1
shift
for want in "$@"; do
    case $want in
    thread=* | slices=* | slices\>=* | flows=* | flows\>=* | threads=* | threads\>=*) ;;
    *)
        echo "perfetto_tp: unknown expectation '$want'" \
             "(slices=N, slices>=N, flows=N, flows>=N, threads=N, threads>=N, thread=NAME)" >&2
        exit 2
        ;;
    esac
done
if [ -n "${TRACE_PROCESSOR:-}" ]; then
    tp=$(command -v "$TRACE_PROCESSOR") || {
        echo "perfetto_tp: TRACE_PROCESSOR=$TRACE_PROCESSOR is not an executable" >&2; exit 1; }
else
    tp=$(command -v trace_processor_shell) || {
        echo "SKIP: trace_processor_shell not found (put it on PATH or name it in" \
             "TRACE_PROCESSOR; Perfetto's releases ship it)"
        exit 77
    }
fi
[ -r "$trace" ] || { echo "perfetto_tp: cannot read $trace" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One statement of one text column: shells of every version run it (before
# v58, -q refuses a file of several statements that return rows), and
# there is no CSV to parse: each row is "a line", quoted.
cat >"$tmp/q.sql" <<'EOF'
select 'slices ' || count(*) as ctrace_line from slice
union all
select 'thread ' || tid || ' ' || coalesce(name, '') from thread
union all
select 'flows ' || count(*) from flow
union all
select 'error ' || name || ' ' || coalesce(idx, '-') || ' ' || severity || ' ' || source
       || ' ' || value
  from stats
  where (severity = 'error' or severity = 'data_loss') and value > 0;
EOF
if ! "$tp" -q "$tmp/q.sql" "$trace" >"$tmp/out.csv" 2>"$tmp/err.txt"; then
    echo "perfetto_tp: $tp could not load $trace or run the query:" >&2
    cat "$tmp/err.txt" >&2
    exit 1
fi
# Drop the header; strip each row's quotes.
sed -e '/^"\{0,1\}ctrace_line"\{0,1\}$/d' -e 's/^"//' -e 's/"$//' "$tmp/out.csv" >"$tmp/facts"
cat "$tmp/facts"

status=0
if grep -q '^error ' "$tmp/facts"; then
    echo "perfetto_tp: $trace: trace processor reports import errors (the error lines above)" >&2
    status=1
fi

# fact KEY: the number on the "KEY N" line.
fact() { sed -n "s/^$1 \([0-9]*\)\$/\1/p" "$tmp/facts" | head -1; }

for want in "$@"; do
    case $want in
    thread=*)
        name=${want#thread=}
        if ! awk -v n="$name" '$1 == "thread" && $2 != 0 {
                 sub(/^thread [0-9-]+ /, ""); if ($0 == n) found = 1 }
                 END { exit !found }' "$tmp/facts"; then
            echo "perfetto_tp: $trace: no thread named '$name'" >&2
            status=1
        fi
        ;;
    slices=* | slices\>=* | flows=* | flows\>=* | threads=* | threads\>=*)
        key=${want%%[>=]*}
        op='='
        [[ $want == *'>='* ]] && op='>='
        n=${want#*=}
        if [ "$key" = threads ]; then
            got=$(awk '$1 == "thread" && $2 != 0' "$tmp/facts" | wc -l)
        else
            got=$(fact "$key")
        fi
        if [ -z "$got" ]; then
            echo "perfetto_tp: $trace: no $key count in the output" >&2
            status=1
        elif { [ "$op" = '=' ] && [ "$got" -ne "$n" ]; } ||
             { [ "$op" = '>=' ] && [ "$got" -lt "$n" ]; }; then
            echo "perfetto_tp: $trace: $key is $got, want $op $n" >&2
            status=1
        fi
        ;;
    esac
done
exit $status
