# SPDX-License-Identifier: MIT
# stats.sh - the figures the benchmark scripts print, from columns of
# numbers (sourced by bench_cpu.sh and run.sh; bash).
#   col FILE N     column N of FILE
#   median         of stdin's numbers
#   minmax         "min max" of stdin's numbers
#   spread         as benchstat prints it: the largest distance from the
#                  median of the numbers left once outliers (beyond 1.5
#                  interquartile ranges) are set aside, in % of the median
#   pct A B        A against B, as "+1.23%"

col() { awk -v n="$2" '{ print $n }' "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
minmax() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo, hi }'; }
spread() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "?"; exit }
        m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        q1 = v[int((NR + 3) / 4)]; q3 = v[int((3 * NR + 1) / 4)]; iqr = q3 - q1
        d = 0
        for (i = 1; i <= NR; i++) {
            if (v[i] < q1 - 1.5 * iqr || v[i] > q3 + 1.5 * iqr) continue
            x = v[i] > m ? v[i] - m : m - v[i]; if (x > d) d = x
        }
        printf "±%.1f%%", m ? 100 * d / m : 0 }'
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f%%", (a / b - 1) * 100 }'; }
