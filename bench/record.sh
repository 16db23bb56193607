#!/usr/bin/env bash
# bench/record.sh: `bpfprof record` against `perf record`, run side by side.
#
#  1. CPU time of the recorder process itself (user+sys, /usr/bin/time) with
#     -a -g -F $FREQ over $DUR s of a busy loop on every CPU plus a BPF
#     workload (a generated program with a sub-program on the getpid
#     tracepoint); both recorders run at the same time on the same load.
#     Lost events of both files as `perf report --stats` counts them.
#  2. Start-up with $NPROGS generated BPF programs loaded: wall time of
#     `bpfprof record -a --duration 0` vs `perf record -a -- true` (both
#     include synthesis and writing the file), and file bytes per program
#     for --bpf-info=full and =symbols.
#
# Needs root. Usage: bench/record.sh   (env: DUR=10 FREQ=20000 NPROGS=500 RUNS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-10}
FREQ=${FREQ:-20000}
NPROGS=${NPROGS:-500}
RUNS=${RUNS:-3}
[ "$(id -u)" = 0 ] || { echo "bench/record.sh: run as root" >&2; exit 1; }

cargo build -q --release -p bpfprof --bin bpfprof --example bpf_workload
cargo test -q --release -p bpfprof --test record_bench_load --no-run 2>/dev/null
B=$PWD/target/release/bpfprof
W=$PWD/target/release/examples/bpf_workload
T=$(mktemp -d /tmp/bpfprof-bench.XXXXXX)
trap 'rm -rf "$T"; kill $(jobs -p) 2>/dev/null || true' EXIT

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
cpu() { awk '{ printf "%.2f", $1 + $2 }' "$1"; }
lost() { perf report --stats -i "$1" 2>/dev/null | awk '/LOST(_SAMPLES)? events/ { n += $3 } END { print n + 0 }'; }
samples() { perf report --stats -i "$1" 2>/dev/null | awk '/SAMPLE events/ { print $3; exit }'; }

echo "== 1. recorder CPU time: -a -g -F $FREQ for $DUR s, busy loop on $(nproc) CPUs + BPF workload"
for _ in $(seq "$(nproc)"); do timeout $((DUR + 6)) sh -c 'while :; do :; done' & done
"$W" $((DUR + 6)) 2>/dev/null &
sleep 1
/usr/bin/time -f '%U %S' -o "$T/ours.time" "$B" record -a -g -F "$FREQ" --duration "$DUR" -o "$T/ours.data" 2>"$T/ours.err" &
/usr/bin/time -f '%U %S' -o "$T/perf.time" perf record -a -g -F "$FREQ" -o "$T/perf.data" -- sleep "$DUR" 2>"$T/perf.err" &
wait %4 %5 2>/dev/null || true
wait
ours_cpu=$(cpu "$T/ours.time"); perf_cpu=$(cpu "$T/perf.time")
printf "%-10s cpu %6ss  samples %8s  lost %6s  file %6s MB\n" \
  bpfprof "$ours_cpu" "$(samples "$T/ours.data")" "$(lost "$T/ours.data")" "$(du -m "$T/ours.data" | cut -f1)" \
  perf "$perf_cpu" "$(samples "$T/perf.data")" "$(lost "$T/perf.data")" "$(du -m "$T/perf.data" | cut -f1)"
echo "CPU ratio bpfprof/perf: $(ratio "$ours_cpu" "$perf_cpu")"
grep -h "Captured" "$T/ours.err" "$T/perf.err" | sed 's/^/  /'

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
startup() { # label: prints median wall ms of ours (full), ours (symbols), perf and the file sizes
  local of os pf i t
  for i in $(seq "$RUNS"); do
    t=$(date +%s%N); "$B" record -a --duration 0 -o "$T/full.data" 2>/dev/null; ms "$t" >>"$T/$1.full"
    t=$(date +%s%N); "$B" record -a --duration 0 --bpf-info=symbols -o "$T/sym.data" 2>/dev/null; ms "$t" >>"$T/$1.sym"
    t=$(date +%s%N); perf record -a -o "$T/p.data" -- true 2>/dev/null; ms "$t" >>"$T/$1.perf"
  done
  of=$(median <"$T/$1.full"); os=$(median <"$T/$1.sym"); pf=$(median <"$T/$1.perf")
  echo "$of $os $pf $(stat -c %s "$T/full.data") $(stat -c %s "$T/sym.data") $(stat -c %s "$T/p.data")"
}

echo
echo "== 2. start-up and file size with $NPROGS BPF programs loaded (median of $RUNS)"
read -r b_of b_os b_pf b_fs b_ss b_ps < <(startup base)
HOLD="$T/hold"
BPFPROF_BENCH_PROGRAMS=$NPROGS BPFPROF_BENCH_HOLD=$HOLD \
  cargo test -q --release -p bpfprof --test record_bench_load -- --ignored >/dev/null 2>&1 &
while [ ! -s "$HOLD" ]; do sleep 0.2; done
read -r of os pf fs ss ps < <(startup loaded)
rm -f "$HOLD"
printf "%-24s %8s %8s\n" "" "ms" "bytes"
printf "%-24s %8s %8s\n" "bpfprof (full)" "$of" "$fs" "bpfprof (symbols)" "$os" "$ss" "perf" "$pf" "$ps"
echo "start-up ratio bpfprof/perf: full $(ratio "$of" "$pf"), symbols $(ratio "$os" "$pf")   (no extra programs: $b_of / $b_os / $b_pf ms)"
echo "bytes per program: full $(( (fs - b_fs) / NPROGS )), symbols $(( (ss - b_ss) / NPROGS )), perf $(( (ps - b_ps) / NPROGS ))"
