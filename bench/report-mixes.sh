#!/usr/bin/env bash
# bench/report.sh on every recording of bench/mixes.sh, as one markdown
# table: per file its size, samples, and our time and peak RSS as a
# fraction of perf's, flat and with call graphs; then, for each 1x/3x
# pair of one mix (MIX-20s.data, MIX-60s.data), how much each tool's
# time and our RSS grew against the samples.
#
#   bench/report-mixes.sh                    # every /work/bench-data/*.data
#   RUNS=5 bench/report-mixes.sh FILE...     # these files, best of 5
#
# env: DATA (default /work/bench-data), RUNS, RSS_RUNS and BPFPROF (passed
# to bench/report.sh); ROWS=FILE keeps the figures in FILE, adds to those
# already there and prints them all (NONE as the only file argument
# measures nothing: the table of FILE again).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
DATA=${DATA:-/work/bench-data}
if [ $# -gt 0 ]; then files=("$@"); else files=("$DATA"/*.data); fi
[ "${files[*]}" = NONE ] && files=()
if [ -n "${ROWS:-}" ]; then
    rows=$ROWS
    touch "$rows"
else
    rows=$(mktemp)
    trap 'rm -f "$rows"' EXIT
fi
for f in "${files[@]+"${files[@]}"}"; do
    echo "== $f (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    ROW=$rows REUSE=$f "$root/bench/report.sh" >&2
done

commit=$(git -C "$root" rev-parse --short HEAD)
dirty=$(git -C "$root" status --porcelain --untracked-files=no | grep -q . && echo "+changes" || true)
echo
echo "Tree at $commit$dirty, binary ${BPFPROF:-of this tree}, $(date -u '+%d %b %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), best of ${RUNS:-3} (peak RSS: the largest of ${RSS_RUNS:-3} more runs)."
echo "Ratios are bpfprof / perf 6.1 in the same run (targets: time flat <= 0.10, -g <= 0.20; RSS flat <= 0.5, -g <= 0.8)."
echo
awk '
function r(a, b) { return b > 0 ? sprintf("%.3f", a / b) : "n/a" }
function mb(k) { return sprintf("%d", k / 1024) }
BEGIN {
    print "| recording | MB | samples | flat time | -g time | flat RSS | -g RSS | flat s ours / perf | -g s ours / perf | RSS MB flat ours / perf | RSS MB -g ours / perf |"
    print "|---|---|---|---|---|---|---|---|---|---|---|"
}
{
    n = split($1, p, "/"); name = p[n]; sub(/\.data$/, "", name)
    printf "| %s | %d | %d | **%s** | **%s** | **%s** | **%s** | %.3f / %.3f | %.3f / %.3f | %s / %s | %s / %s |\n", \
        name, $2, $3, r($6, $4), r($10, $8), r($7, $5), r($11, $9), $6, $4, $10, $8, mb($7), mb($5), mb($11), mb($9)
    if (match(name, /-[0-9]+s$/)) {
        mix = substr(name, 1, RSTART - 1); len = substr(name, RSTART + 1, RLENGTH - 2) + 0
        key = mix SUBSEP len
        seen[key] = $0; lens[mix] = lens[mix] " " len
    }
}
END {
    print ""
    print "| mix, 3x / 1x | samples | perf flat time | our flat time | perf -g time | our -g time | our flat RSS | our -g RSS |"
    print "|---|---|---|---|---|---|---|---|"
    for (mix in lens) {
        if (!((mix SUBSEP 20) in seen) || !((mix SUBSEP 60) in seen)) continue
        split(seen[mix SUBSEP 20], a, " "); split(seen[mix SUBSEP 60], b, " ")
        printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", mix, \
            b[3] / a[3], b[4] / a[4], b[6] / a[6], b[8] / a[8], b[10] / a[10], b[7] / a[7], b[11] / a[11]
    }
}' "$rows"
