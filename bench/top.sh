#!/usr/bin/env bash
# bench/top.sh: the CPU `bpfprof top` itself uses, against `perf top` at the
# same frequency, both running at once over the same seconds.
#
#  1. idle: nothing but the machine's own background; our CPU in percent of
#     one core (the target is at most 1%).
#  2. under load: a busy loop on every CPU, plus a bpftrace program on
#     sys_enter_getppid hit by a getppid loop; our CPU / perf top's (the
#     target is at most 1).
#
# Each tool's CPU is utime+stime from /proc/PID/stat (all its threads),
# counted from $WARM s after start to $WARM+$DUR s. perf top runs with -g
# (we always take call chains) in --stdio mode on a pseudo-terminal
# (`script`), since it spins without one; ours writes --json to /dev/null.
#
# Needs root, perf, bpftrace. Usage: bench/top.sh  (env: DUR=20 FREQ=4000 WARM=3;
# BIN=path: that bpfprof binary instead of this tree's release build, to
# compare two builds on the same machine)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-20}
FREQ=${FREQ:-4000}
WARM=${WARM:-3}
[ "$(id -u)" = 0 ] || { echo "bench/top.sh: run as root" >&2; exit 1; }
if [ -n "${BIN:-}" ]; then
  B=$BIN
else
  cargo build -q --release -p bpfprof --bin bpfprof
  B=${CARGO_TARGET_DIR:-$PWD/target}/release/bpfprof
fi
TCK=$(getconf CLK_TCK)
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
# The perf process under `script` (its child or grandchild): not any perf
# another user runs.
perf_under() {
  local p=$1 c _
  for _ in 1 2 3; do
    c=$(pgrep -P "$p" | head -1)
    [ -n "$c" ] || return 1
    if [ "$(cat "/proc/$c/comm")" = perf ]; then echo "$c"; return 0; fi
    p=$c
  done
  return 1
}

run() { # label
  "$B" top --json -F "$FREQ" -d 1 >/dev/null 2>&1 &
  local ours=$!
  script -qfc "perf top -F $FREQ -a -g --stdio -d 1" /dev/null >/dev/null 2>&1 &
  local script=$!
  sleep "$WARM"
  local perf
  perf=$(perf_under "$script")
  local o0 p0 o1 p1
  o0=$(ticks "$ours"); p0=$(ticks "$perf")
  sleep "$DUR"
  o1=$(ticks "$ours"); p1=$(ticks "$perf")
  kill "$ours" "$perf" 2>/dev/null || true
  wait "$ours" "$script" 2>/dev/null || true
  awk -v l="$1" -v o=$((o1 - o0)) -v p=$((p1 - p0)) -v t="$TCK" -v d="$DUR" 'BEGIN {
    printf "%-10s bpfprof top %6.2f%% of a core   perf top %6.2f%%   ratio ours/perf %s\n",
      l, 100 * o / t / d, 100 * p / t / d, (p > 0 ? sprintf("%.2f", o / p) : "n/a") }'
}

echo "== top -F $FREQ, $DUR s after $WARM s of warm-up, $(nproc) CPUs"
run idle

for _ in $(seq "$(nproc)"); do timeout $((DUR + WARM + 5)) sh -c 'while :; do :; done' & done
bpftrace -e 'tracepoint:syscalls:sys_enter_getppid { @c[comm, pid] = count(); }' >/dev/null 2>&1 &
BT=$!
timeout $((DUR + WARM + 5)) python3 -c 'import os
while True: os.getppid()' &
run "under load"
# bpftrace outlives the jobs trap's kill unless told by its own pid.
kill -INT "$BT" 2>/dev/null || true
wait "$BT" 2>/dev/null || true
