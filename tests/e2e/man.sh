#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# man.sh - the manual pages against what they document: each renders through
# man-db and groff without a warning, with every flag escaped (\-); ctrace.1
# has an entry for every verb and flag that `ctrace -h` and each verb's -h
# print, and both pages one for every CTRACE_* variable the binaries hold;
# libctrace.3 names every function and macro the public headers declare; the
# build's gzip'd copies are the pages. A flag, variable or function added
# without its documentation fails here.
#
# usage: man.sh CTRACE LIBCTRACE_SO GZ_DIR CTRACE_1 LIBCTRACE_3 HEADER...
#   CTRACE        the ctrace binary      LIBCTRACE_SO  libctrace.so
#   GZ_DIR        where the build put ctrace.1.gz and libctrace.3.gz
#   HEADER...     the public headers (ctrace/*.h)
# Needs man-db and groff (tests/tools/deps.sh), objcopy (binutils), perl.
set -uo pipefail
# shellcheck source=checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

if [ $# -lt 6 ]; then
    echo "usage: $0 CTRACE LIBCTRACE_SO GZ_DIR CTRACE_1 LIBCTRACE_3 HEADER..." >&2
    exit 2
fi
ctrace=$1 lib=$2 gzdir=$3 page1=$4 page3=$5
shift 5
headers=("$@")

# ------------------------------------------------------------ reading a page

# text PAGE: the page's source as words: comments dropped, font changes and
# zero-width escapes removed, \- and \~ made plain, macro quotes dropped.
text() {
    sed -e '/^\.\\"/d' -e 's/\\f\[[^]]*\]//g' -e 's/\\f(..//g' -e 's/\\f.//g' \
        -e 's/\\-/-/g' -e 's/\\~/ /g' -e 's/\\&//g' -e 's/\\c$//' -e 's/\\|//g' \
        -e 's/"//g' "$1"
}

# tags PAGE: the tag of every .TP and .TQ entry (the line after it), plain,
# without the macro that sets its font.
tags() {
    text "$1" | awk '
        tag { sub(/^\.[A-Z]+ +/, ""); print; tag = 0; next }
        /^\.T[PQ]( |$)/ { tag = 1 }'
}

# has WORD FILE: FILE holds WORD, not as part of a longer name.
has() {
    grep -qE -- "(^|[^A-Za-z0-9_-])$1([^A-Za-z0-9_-]|\$)" "$2"
}

# --------------------------------------------------- (a) groff's rendering

for page in "$page1" "$page3"; do
    name=$(basename "$page")
    # -ww (every warning) rather than man-db's default (macros only):
    # undefined escapes, fonts and characters are mistakes too.
    if env -u MAN_KEEP_FORMATTING LC_ALL=C.UTF-8 MANWIDTH=80 \
        man --warnings=w -E UTF-8 -l "$page" >"$tmp/out" 2>"$tmp/err" &&
        [ -s "$tmp/out" ] && [ ! -s "$tmp/err" ]; then
        ok "$name renders without a warning"
    else
        bad "$name: man --warnings -l failed or warned:"
        head -20 "$tmp/err"
    fi
    # A flag written with a bare '-' renders as a hyphen (U+2010 in UTF-8):
    # it does not copy and paste. In the source, a '-' that begins a word.
    if grep -v '^\.\\"' "$page" | grep -nE '(^|[][ (|"=,])-[[:alnum:]]' >"$tmp/dash"; then
        bad "$name: unescaped '-' before a flag (write \\-):"
        head -10 "$tmp/dash"
    else
        ok "$name escapes its dashes"
    fi
    # The installed copy is this page.
    if gzip -dc "$gzdir/$name.gz" 2>/dev/null | cmp -s - "$page"; then
        ok "$gzdir/$name.gz is $name"
    else
        bad "$gzdir/$name.gz is missing or differs from $name (rebuild)"
    fi
done

tags "$page1" >"$tmp/tags1"
tags "$page3" >"$tmp/tags3"
text "$page3" >"$tmp/text3"
# The words of the tags, one per line: flags as their name without dashes.
tr ' ,|[]()=' '\n' <"$tmp/tags1" | sed -n 's/^-\{1,2\}\([a-z]\)/\1/p' | sort -u >"$tmp/tagflags"
tr ' ,|[]()=' '\n' <"$tmp/tags1" | sort -u >"$tmp/tagwords"

# ------------------------------------------- (b) every flag of every -h

# flags: the flags a help text mentions, without dashes: a '-' or '--'
# that begins a word, then a name (-pprof=TYPE, [-o FILE], (-cpu alone)).
flags() {
    grep -oE -- '(^|[[:space:][(|,])--?[a-z][a-z0-9-]*' | sed 's/^[^-]*-\{1,2\}//'
}

if ! "$ctrace" -h >"$tmp/help" 2>"$tmp/err"; then
    bad "ctrace -h failed:"
    head -5 "$tmp/err"
fi
flags <"$tmp/help" >"$tmp/flags"
# The verbs: the word after "ctrace" on a usage line (run, tasks, -perfetto,
# -pprof, ...). A verb with usage of its own adds its flags; -pprof's are
# in ctrace -h itself (`ctrace -pprof -h` is a usage error).
verbs=$(grep -oE '^(usage:)?[[:space:]]+ctrace[[:space:]]+-{0,2}[a-z][a-z0-9-]*' "$tmp/help" |
        awk '{print $NF}' | sort -u)
[ -n "$verbs" ] || bad "no verb found in ctrace -h (has its usage changed?)"
for verb in $verbs; do
    [ "$verb" = -h ] && continue
    word=${verb#-}
    word=${word#-}
    if grep -qxF -- "$word" "$tmp/tagflags" || grep -qxF -- "$word" "$tmp/tagwords"; then
        ok "ctrace.1 has an entry for $verb"
    else
        bad "ctrace.1 has no entry (.TP) for the verb $verb"
    fi
    if "$ctrace" "$verb" -h >"$tmp/vhelp" 2>/dev/null; then
        flags <"$tmp/vhelp" >>"$tmp/flags"
    fi
done
nflags=0
while read -r flag; do
    nflags=$((nflags + 1))
    grep -qxF -- "$flag" "$tmp/tagflags" || bad "ctrace.1 has no entry (.TP) for the flag -$flag"
done < <(sort -u "$tmp/flags")
# Sanity: the help texts were read (run alone has a dozen flags).
if [ "$nflags" -ge 20 ]; then
    ok "ctrace.1 has an entry for each of the $nflags flags the help texts print"
else
    bad "only $nflags flags found in the help texts: is the extraction broken?"
fi

# ------------------------------------------ (c) every CTRACE_* variable

# vars BINARY: the CTRACE_* names in a binary's read-only data (its string
# constants: getenv's arguments and the messages that name variables).
vars() {
    objcopy -O binary --only-section='.rodata*' "$1" "$tmp/rodata" 2>/dev/null &&
        grep -aoE 'CTRACE_[A-Z0-9_]*[A-Z0-9]' "$tmp/rodata" | sort -u
}
libvars=$(vars "$lib")
clivars=$(vars "$ctrace")
# Both name CTRACE_OUTPUT (libctrace reads it, ctrace run sets it).
for found in "$lib:$libvars" "$ctrace:$clivars"; do
    grep -q CTRACE_OUTPUT <<<"${found#*:}" ||
        bad "no CTRACE_OUTPUT in ${found%%:*}'s .rodata: is the extraction broken?"
done
nvars=0
for v in $(printf '%s\n' "$libvars" "$clivars" | sort -u); do
    nvars=$((nvars + 1))
    grep -qE "^$v\$" "$tmp/tags1" || bad "ctrace.1 has no entry (.TP) for $v"
done
for v in $libvars; do
    grep -qE "^$v\$" "$tmp/tags3" || bad "libctrace.3 has no entry (.TP) for $v, which libctrace reads"
done
ok "checked the $nvars CTRACE_* variables of libctrace.so and ctrace"

# ------------------------------- (d) every function of the public headers

# names HEADER: what a header declares for programs: exported functions and
# variables (CTRACE_EXPORT), static inline functions, and macros (not the
# include guard, nor a macro's private helpers, named with __).
names() {
    perl -0777 -ne '
        my $s = $_;
        $s =~ s{/\*.*?\*/}{}gs;                 # comments
        while ($s =~ /^#\s*define\s+(\w+)/mg) { print "$1\n" unless $1 =~ /_H$|__/ }
        $s =~ s/^#.*(?:\\\n.*)*$//mg;           # preprocessor lines
        while ($s =~ /\bCTRACE_EXPORT\b([^;{]*)/g) {
            my $d = $1;
            print(($d =~ /(\w+)\s*\(/) ? "$1\n" : ($d =~ /(\w+)\s*(?:\[[^]]*\])?\s*$/) ? "$1\n" : "");
        }
        while ($s =~ /\bstatic\s+inline\b[^;{(]*?(\w+)\s*\(/g) { print "$1\n" }
    ' "$1"
}
namesection=$(sed -n '/^\.SH NAME/,/^\.SH/p' "$page3" | sed 's/\\-/-/g')
nnames=0
for h in "${headers[@]}"; do
    for n in $(names "$h" | sort -u); do
        nnames=$((nnames + 1))
        has "$n" "$tmp/text3" || bad "libctrace.3 does not mention $n ($(basename "$h"))"
        # A function for programs (no __, lower case) is in NAME, for whatis.
        if [[ $n =~ ^[a-z][a-z0-9_]*$ && $n != *__* ]] && ! grep -qw -- "$n" <<<"$namesection"; then
            bad "libctrace.3's NAME does not list $n"
        fi
    done
done
if [ "$nnames" -ge 20 ]; then
    ok "libctrace.3 mentions each of the $nnames names of the public headers"
else
    bad "only $nnames names found in ${headers[*]}: is the extraction broken?"
fi

finish
