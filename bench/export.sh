#!/usr/bin/env bash
# bpfprof's exports against perf script on one recording, side by side.
#
# Records 10 s of a load with `perf record -F 4000 -a -g` (or takes
# REUSE=FILE): bench/workload.sh when its example is built, else a
# bpftrace program on getppid hit by a Python loop, and gcc compiling in a
# loop (a large C++ binary to symbolize). Then it times `perf script` alone, `bpfprof export
# --format svg` (the whole flame graph) and `bpfprof script`, each
# writing to /dev/null, RUNS times, taking turns, and prints the best wall
# time of each and its ratio to perf script's. Targets: svg 0.25, script
# 0.5 (issue 21).
#
#   sudo bench/export.sh
#   REUSE=/path/bench.data RUNS=5 bench/export.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
DUR=${DUR:-10}
RUNS=${RUNS:-3}
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
cargo build --release -q -p bpfprof --bin bpfprof
bpfprof=$target/release/bpfprof
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

if [ -n "${REUSE:-}" ]; then
    data=$REUSE
else
    data=$dir/bench.data
    pids=()
    if [ -x "$root/target/release/examples/bpf_workload" ]; then
        bench/workload.sh $((DUR + 3)) >/dev/null 2>&1 &
        pids+=($!)
    else
        bpftrace -e 'tracepoint:syscalls:sys_enter_getppid { @c[pid] = count(); }' >"$dir/bt" 2>&1 &
        pids+=($!)
        # perf must not start while bpftrace loads its program (perf 6.1
        # can abort on BPF events it is still synthesizing): wait for it.
        for _ in $(seq 100); do grep -q Attaching "$dir/bt" && break; sleep 0.2; done
        python3 -c "
import os, time
end = time.time() + $DUR + 3
while time.time() < end:
    os.getppid()" &
        pids+=($!)
        printf 'int f(int x) { return x * 3; }\n' >"$dir/unit.c"
        (end=$((SECONDS + DUR + 3)); while [ $SECONDS -lt $end ]; do gcc -O2 -c -o /dev/null "$dir/unit.c"; done) &
        pids+=($!)
    fi
    sleep 2
    perf record -q -F 4000 -a -g -o "$data" -- sleep "$DUR" >/dev/null 2>&1
    kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
fi
echo "file: $data, $(du -m "$data" | cut -f1) MB"

# Warm the page cache and bpfprof's symbol caches, as a second run finds
# them.
perf script -i "$data" >/dev/null 2>&1 || true
"$bpfprof" script -i "$data" >/dev/null 2>&1 || true

# Best wall time in seconds of each command, the commands taking turns so
# that a slow spell of this shared machine falls on all alike; bash's own
# microsecond clock (no process start in the figure).
names=("perf script" "bpfprof export --format svg" "bpfprof script")
cmds=(
    "perf script -i '$data'"
    "'$bpfprof' export --format svg -i '$data'"
    "'$bpfprof' script -i '$data'"
)
best=("" "" "")
for _ in $(seq "$RUNS"); do
    for i in 0 1 2; do
        s=${EPOCHREALTIME/[.,]/}
        eval "${cmds[i]}" >/dev/null 2>"$dir/err" || {
            echo "failed: ${names[i]}: $(tail -3 "$dir/err")" >&2
            exit 1
        }
        e=${EPOCHREALTIME/[.,]/}
        t=$((e - s))
        if [ -z "${best[i]}" ] || [ "$t" -lt "${best[i]}" ]; then best[i]=$t; fi
    done
done
printf '%-30s %10s %8s %8s\n' command "best (s)" ratio target
targets=("" 0.25 0.5)
for i in 0 1 2; do
    awk -v n="${names[i]}" -v t="${best[i]}" -v p="${best[0]}" -v g="${targets[i]}" \
        'BEGIN { printf "%-30s %10.3f %8.3f %8s\n", n, t / 1e6, t / p, g }'
done
