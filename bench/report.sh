#!/usr/bin/env bash
# bpfprof report against perf report on one big recording, side by side.
#
# Records ~20 s of bench/workload.sh with `perf record -F 20000 -a -g`
# (about 800k samples with callchains on 2 CPUs), then times the flat
# report and the report with call graphs, RUNS times each, and prints the
# best wall time and the peak RSS of each tool, and the ratios.
#
#   sudo bench/report.sh                 # record, then measure
#   REUSE=/path/bench.data bench/report.sh   # measure an existing file
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
DUR=${DUR:-20}
RUNS=${RUNS:-3}
cd "$root"
cargo build --release -q -p bpfprof --bin bpfprof --example bpf_workload
bpfprof=$root/target/release/bpfprof
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

if [ -n "${REUSE:-}" ]; then
    data=$REUSE
else
    data=$dir/bench.data
    bench/workload.sh $((DUR + 3)) >/dev/null 2>&1 &
    sleep 2
    perf record -q -F 20000 -a -g -o "$data" -- sleep "$DUR" >/dev/null 2>&1
    wait
fi
size=$(du -m "$data" | cut -f1)
echo "file: $data, ${size} MB"

# best wall seconds and max RSS (KB) over RUNS runs of a command; wall
# from the clock in nanoseconds (time's %e has 10 ms steps, a tenth of a
# flat report)
measure() {
    local best="" rss=0 t m s e
    for _ in $(seq "$RUNS"); do
        s=$(date +%s%N)
        /usr/bin/time -o "$dir/time" -f "%M" "$@" >/dev/null 2>&1
        e=$(date +%s%N)
        read -r m <"$dir/time"
        t=$(awk -v s="$s" -v e="$e" 'BEGIN{printf "%.3f", (e - s) / 1e9}')
        if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$t; fi
        [ "$m" -gt "$rss" ] && rss=$m
    done
    echo "$best $rss"
}
# Warm the page cache so neither tool pays for the first read.
perf report -i "$data" --stdio --no-children -g none --sort dso,sym >/dev/null 2>&1 || true

read -r pf pfm < <(measure perf report -i "$data" --stdio --no-children -g none --sort dso,sym)
read -r of ofm < <(measure "$bpfprof" report -i "$data" --sort dso,sym)
# The same with no kallsyms cache (the first report of a boot): every run
# starts from an empty cache directory.
read -r oc ocm < <(measure sh -c 'rm -rf "$1/cold"; XDG_CACHE_HOME="$1/cold" "$2" report -i "$3" --sort dso,sym' - "$dir" "$bpfprof" "$data")
read -r pg pgm < <(measure perf report -i "$data" --stdio --no-children --sort dso,sym)
read -r og ogm < <(measure "$bpfprof" report -i "$data" --sort dso,sym -g)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a / b}'; }
printf '%-28s %10s %10s %10s %12s %12s %10s\n' "report" "perf s" "bpfprof s" "ratio" "perf RSS MB" "ours RSS MB" "ratio"
printf '%-28s %10s %10s %10s %12d %12d %10s\n' "flat (-g none)" "$pf" "$of" "$(ratio "$of" "$pf")" $((pfm / 1024)) $((ofm / 1024)) "$(ratio "$ofm" "$pfm")"
printf '%-28s %10s %10s %10s %12d %12d %10s\n' "flat, kallsyms not cached" "$pf" "$oc" "$(ratio "$oc" "$pf")" $((pfm / 1024)) $((ocm / 1024)) "$(ratio "$ocm" "$pfm")"
printf '%-28s %10s %10s %10s %12d %12d %10s\n' "with call graphs (-g)" "$pg" "$og" "$(ratio "$og" "$pg")" $((pgm / 1024)) $((ogm / 1024)) "$(ratio "$ogm" "$pgm")"
echo "targets: flat ratio <= 0.100, call graphs <= 0.200, RSS ratio <= 1"
