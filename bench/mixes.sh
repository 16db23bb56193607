#!/usr/bin/env bash
# Record every benchmark mix (bench/workload.sh) at 1x and 3x length with
# `perf record -B -F $FREQ -a -g`, for bench/report-mixes.sh.
#
#   sudo bench/mixes.sh                  # all mixes, 20 s and 60 s each
#   sudo MIXES="shortlived" LENGTHS="20" bench/mixes.sh
#
# env: OUT (default /work/bench-data; recordings are not kept in git),
# MIXES (default "default shortlived python-json"), LENGTHS (seconds,
# default "20 60"), FREQ (default 20000). Files are OUT/MIX-SECONDSs.data;
# an existing one is kept unless FORCE=1. A recording perf cannot read
# is made again, up to TRIES (default 5) times.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/work/bench-data}
MIXES=${MIXES:-default shortlived python-json}
LENGTHS=${LENGTHS:-20 60}
FREQ=${FREQ:-20000}
TRIES=${TRIES:-5}
[ "$(id -u)" = 0 ] || { echo "bench/mixes.sh: run as root (perf record -a)" >&2; exit 1; }
cd "$root"
cargo build --release -q -p bpfprof --example bpf_workload
mkdir -p "$OUT"
for mix in $MIXES; do
    for secs in $LENGTHS; do
        data=$OUT/$mix-${secs}s.data
        if [ -e "$data" ] && [ -z "${FORCE:-}" ]; then
            echo "$data: kept (FORCE=1 records it again)"
            continue
        fi
        for try in $(seq "$TRIES"); do
            # The mix starts 2 s early and ends 1 s late, so that the
            # recording holds it at full load from end to end.
            MIX=$mix bench/workload.sh $((secs + 3)) >/dev/null 2>&1 &
            sleep 2
            # -B: perf 6.1 here aborts in its end-of-run build-id pass
            # ("assertion failed at util/build-id.c:1010", then "stack
            # smashing detected"), leaving a file it cannot read; -N (no
            # build-id cache) was not enough on 60 s recordings. Without
            # build ids in the file, both reports take binaries by path.
            perf record -q -B -F "$FREQ" -a -g -o "$data" -- sleep "$secs" >/dev/null 2>&1 || :
            wait
            # perf cannot read a file in which a BPF program loaded while
            # another tool also listened for BPF events (the kernel writes
            # those records over-long: "failed to process type: 17"), nor
            # one it did not finish; it still exits 0. Record again.
            bad=$(perf report -i "$data" --stats 2>&1 | grep -m1 -E 'WARNING|Error|failed to process' || :)
            if [ -n "$bad" ]; then
                echo "$data: try $try: perf cannot read it: $bad" >&2
                rm -f "$data"
                continue
            fi
            break
        done
        [ -e "$data" ] || { echo "$data: no readable recording in $TRIES tries" >&2; exit 1; }
        chmod 600 "$data"
        echo "$data: $(du -m "$data" | cut -f1) MB, load $(cut -d' ' -f1-3 /proc/loadavg)"
    done
done
