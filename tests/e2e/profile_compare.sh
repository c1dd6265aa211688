# SPDX-License-Identifier: MIT
# profile_compare.sh - sourced by the tests that read one run two ways (a
# native trace against an LTTng session of the same run, or against its
# conversion to CTF): what ctrace says of each, compared.
#   shares FILE       "share<TAB>stack" for each stack of a -top listing
#   same_shares A B   the same stacks in two -top listings, each share
#                     within 5 points (prints the ones that differ)
#   counts TRACE      the event counts of `$ctrace stats TRACE` (the caller
#                     sets $ctrace)

# shellcheck shell=bash

shares() {
    awk '/^ +[0-9.]+[a-z]*s +[0-9]+ +[0-9.]+%/ { if (key != "") print share "\t" key
                                                   share = $3; sub(/%/, "", share); key = $4; next }
         /^ {20,}[^ ]/ && key != "" { sub(/^ +/, ""); key = key " | " $0 }
         END { if (key != "") print share "\t" key }' "$1"
}

same_shares() {
    join -t $'\t' -a1 -a2 -e X -o 0,1.1,2.1 -1 2 -2 2 \
        <(shares "$1" | sort -t $'\t' -k2) <(shares "$2" | sort -t $'\t' -k2) |
        awk -F '\t' '$2 == "X" || $3 == "X" || $2 - $3 > 5 || $3 - $2 > 5 { print "differs: " $0; bad = 1 }
                     END { exit bad }'
}

counts() { "$ctrace" stats "$1" | grep -E '^  [A-Z_]+ +[0-9]+$'; }
