#!/usr/bin/env bash
# bpfprof report against perf report on one big recording, side by side.
#
# Records ~20 s of bench/workload.sh with `perf record -F 20000 -a -g`
# (about 800k samples with callchains on 2 CPUs), then times the flat
# report and the report with call graphs, RUNS times each, and prints the
# best wall time and the peak RSS of each tool, and the ratios.
#
#   sudo bench/report.sh                 # record, then measure
#   sudo MIX=shortlived bench/report.sh  # another mix of bench/workload.sh
#   REUSE=/path/bench.data bench/report.sh   # measure an existing file
#   BPFPROF=/path/bpfprof REUSE=... bench/report.sh   # that build, not this tree's
#
# With ROW=FILE it also appends one line of figures to FILE for
# bench/report-mixes.sh: file, MB, samples, then perf's and our best
# seconds and peak RSS (KB) of the flat report, of the report with call
# graphs, and our flat cold-cache and --bpf seconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
DUR=${DUR:-20}
RUNS=${RUNS:-3}
RSS_RUNS=${RSS_RUNS:-3}
cd "$root"
if [ -n "${BPFPROF:-}" ]; then
    bpfprof=$BPFPROF # a build kept aside, as it is
else
    cargo build --release -q -p bpfprof --bin bpfprof --example bpf_workload
    bpfprof=${CARGO_TARGET_DIR:-$root/target}/release/bpfprof
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

if [ -n "${REUSE:-}" ]; then
    data=$REUSE
else
    data=$dir/bench.data
    bench/workload.sh $((DUR + 3)) >/dev/null 2>&1 &
    sleep 2
    # -N: see bench/mixes.sh (perf 6.1 aborts filling its build-id cache).
    perf record -q -N -F 20000 -a -g -o "$data" -- sleep "$DUR" >/dev/null 2>&1 || :
    wait
fi
size=$(du -m "$data" | cut -f1)
samples=$(perf report -i "$data" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
echo "file: $data, ${size} MB, ${samples:-?} samples"

# Best wall seconds and max RSS (KB) of each command of a set, the set's
# commands taking turns (perf, ours, perf, ours, ...), so that a slow
# spell of this shared machine falls on both tools alike. Commands are
# separated by "--"; prints "best rss" per command, one per line.
#
# Wall time: RUNS runs, each command run alone, timed by bash's own
# microsecond clock. Timing a run through /usr/bin/time and two `date`
# processes added 4.5-6.5 ms of process starts to every figure (measured
# on `true`): a tenth of perf's time, but 5-7% of ours.
# Peak RSS: the largest of RSS_RUNS (default 3) more runs each under
# /usr/bin/time.
measure() {
    local cmds=() cur="" i n t m s e
    for a in "$@"; do
        if [ "$a" = "--" ]; then cmds+=("$cur"); cur=""; else cur+="$(printf '%q ' "$a")"; fi
    done
    cmds+=("$cur")
    n=${#cmds[@]}
    local best=() rss=()
    for ((i = 0; i < n; i++)); do best[i]=""; rss[i]=0; done
    for _ in $(seq "$RSS_RUNS"); do
        for ((i = 0; i < n; i++)); do
            eval "/usr/bin/time -o \"$dir/time\" -f %M ${cmds[i]}" >/dev/null 2>&1
            read -r m <"$dir/time"
            [ "$m" -gt "${rss[i]}" ] && rss[i]=$m
        done
    done
    for _ in $(seq "$RUNS"); do
        for ((i = 0; i < n; i++)); do
            s=${EPOCHREALTIME/[.,]/}
            eval "${cmds[i]}" >/dev/null 2>&1
            e=${EPOCHREALTIME/[.,]/}
            t=$((e - s))
            if [ -z "${best[i]}" ] || [ "$t" -lt "${best[i]}" ]; then best[i]=$t; fi
        done
    done
    for ((i = 0; i < n; i++)); do
        echo "$(awk -v t="${best[i]}" 'BEGIN{printf "%.3f", t / 1e6}') ${rss[i]}"
    done
}
# Warm the page cache so neither tool pays for the first read, and
# bpfprof's symbol caches (kallsyms, parsed ELF tables) as a second report
# finds them.
perf report -i "$data" --stdio --no-children -g none --sort dso,sym >/dev/null 2>&1 || true
"$bpfprof" report -i "$data" --no-children --sort dso,sym -g none >/dev/null 2>&1 || true

# The same with empty symbol caches (the first report of a boot, or of a
# new build of bpfprof): every run starts from an empty cache directory.
cold() { rm -rf "$dir/cold"; XDG_CACHE_HOME="$dir/cold" "$bpfprof" report -i "$data" --no-children --sort dso,sym -g none; }
export -f cold
export dir bpfprof data
{
    read -r pf pfm
    read -r of ofm
    read -r oc ocm
} < <(measure perf report -i "$data" --stdio --no-children -g none --sort dso,sym \
    -- "$bpfprof" report -i "$data" --no-children --sort dso,sym -g none -- bash -c cold)
# The BPF view reads the call chains to cost each program in parts: it
# is timed against perf's report with call graphs, the nearest thing perf
# has.
{
    read -r pg pgm
    read -r og ogm
    read -r ob obm
} < <(measure perf report -i "$data" --stdio --no-children --sort dso,sym \
    -- "$bpfprof" report -i "$data" --no-children --sort dso,sym -g \
    -- "$bpfprof" report -i "$data" --bpf)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", a / b}'; }
printf '%-28s %10s %10s %10s %12s %12s %10s\n' "report" "perf s" "bpfprof s" "ratio" "perf RSS MB" "ours RSS MB" "ratio"
printf '%-28s %10s %10s %10s %12d %12d %10s\n' "flat (-g none)" "$pf" "$of" "$(ratio "$of" "$pf")" $((pfm / 1024)) $((ofm / 1024)) "$(ratio "$ofm" "$pfm")"
printf '%-28s %10s %10s %10s %12d %12d %10s\n' "flat, caches empty" "$pf" "$oc" "$(ratio "$oc" "$pf")" $((pfm / 1024)) $((ocm / 1024)) "$(ratio "$ocm" "$pfm")"
printf '%-28s %10s %10s %10s %12d %12d %10s\n' "with call graphs (-g)" "$pg" "$og" "$(ratio "$og" "$pg")" $((pgm / 1024)) $((ogm / 1024)) "$(ratio "$ogm" "$pgm")"
printf '%-28s %10s %10s %10s %12d %12d %10s\n' "BPF cost view (--bpf)" "$pg" "$ob" "$(ratio "$ob" "$pg")" $((pgm / 1024)) $((obm / 1024)) "$(ratio "$obm" "$pgm")"
echo "targets: flat ratio <= 0.100, call graphs <= 0.200, RSS ratio <= 1"
if [ -n "${ROW:-}" ]; then
    echo "$data $size ${samples:-0} $pf $pfm $of $ofm $pg $pgm $og $ogm $oc $ob" >>"$ROW"
fi
