#!/usr/bin/env bash
# A system-wide mix for the benchmarks, run for SECONDS. MIX chooses it:
#
#  default      a generated BPF program with a sub-program, hit by
#               getpid(2) calls; a user-space hot loop (a small C
#               program); a Python process; the C compiler run in a loop
#               (cc1 is a 30 MB C++ binary, so a report must symbolize
#               large binaries, as on a real machine).
#  shortlived   a JSON-heavy Python process beside gcc started in a tight
#               loop that fails at once (no main to link): thousands of
#               short-lived processes (gcc, cc1, as, collect2, ld), each
#               with its own maps and command, in the side band.
#  python-json  a JSON-heavy Python process dominating (deep interpreter
#               stacks in libpython and the _json module) beside the busy
#               BPF program.
#
# Usage: MIX=NAME bench/workload.sh SECONDS  (needs the example built:
#   cargo build --release -p bpfprof --example bpf_workload; its binary is
#   looked for under CARGO_TARGET_DIR, default target/)
set -euo pipefail
secs=${1:-20}
mix=${MIX:-default}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

bpf_program() { "$target/release/examples/bpf_workload" "$secs" 400 2>/dev/null; }

# Builds, encodes and decodes nested documents over and over, as a web
# service does: the time is in json's C encoder and scanner and in the
# interpreter around them.
json_python() {
    python3 -c "
import json, time
end = time.time() + $secs
doc = [{'id': i, 'name': 'item-%d' % i, 'tags': ['a', 'b', str(i)],
        'price': i * 1.25, 'nested': {'ok': i % 2 == 0, 'v': [i, i + 1]}}
       for i in range(200)]
n = 0
while time.time() < end:
    for _ in range(20):
        s = json.dumps(doc, sort_keys=True)
        back = json.loads(s)
        n += len(back)
        doc[n % 200]['name'] = s[n % 97:n % 97 + 8]
"
}

case "$mix" in
default)
    cat >"$work/hot.c" <<'C'
#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
static unsigned long mix(unsigned long x) { for (int i = 0; i < 64; i++) x = x * 6364136223846793005UL + 1442695040888963407UL; return x; }
int main(int argc, char **argv) {
    time_t end = time(0) + atoi(argv[1]);
    unsigned long x = 1;
    while (time(0) < end) for (int i = 0; i < 100000; i++) x = mix(x);
    sink = x;
    return 0;
}
C
    gcc -O1 -fno-omit-frame-pointer -o "$work/hot" "$work/hot.c"
    cat >"$work/unit.c" <<'C'
#include <stdio.h>
#include <string.h>
struct s { int a[64]; char name[32]; };
static int f(struct s *p, int n) { int t = 0; for (int i = 0; i < n; i++) t += p->a[i % 64] * i; return t; }
int main(void) { struct s x; memset(&x, 1, sizeof x); printf("%d\n", f(&x, 64)); return 0; }
C
    bpf_program &
    "$work/hot" "$secs" &
    python3 -c "
import time
end = time.time() + $secs
d = {}
while time.time() < end:
    for i in range(10000):
        d[i % 977] = str(i) * 3
" &
    end=$((SECONDS + secs))
    while [ $SECONDS -lt $end ]; do gcc -O2 -c -o "$work/unit.o" "$work/unit.c" 2>/dev/null; done &
    ;;
shortlived)
    json_python &
    end=$((SECONDS + secs))
    while [ $SECONDS -lt $end ]; do gcc -x c /dev/null -o /dev/null 2>/dev/null || :; done &
    ;;
python-json)
    json_python &
    bpf_program &
    ;;
*)
    echo "bench/workload.sh: unknown MIX '$mix' (default, shortlived, python-json)" >&2
    exit 2
    ;;
esac
wait
