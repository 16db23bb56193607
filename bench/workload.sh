#!/usr/bin/env bash
# A realistic system-wide mix for the benchmarks, run for SECONDS:
#  - a generated BPF program with a sub-program, hit by getpid(2) calls;
#  - a user-space hot loop (a small C program);
#  - a Python process;
#  - the C compiler run in a loop (cc1 is a 30 MB C++ binary, so a report
#    must symbolize large binaries, as on a real machine).
# Usage: bench/workload.sh SECONDS  (needs the example built:
#   cargo build --release -p bpfprof --example bpf_workload)
set -euo pipefail
secs=${1:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

cat > "$work/hot.c" <<'C'
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
cat > "$work/unit.c" <<'C'
#include <stdio.h>
#include <string.h>
struct s { int a[64]; char name[32]; };
static int f(struct s *p, int n) { int t = 0; for (int i = 0; i < n; i++) t += p->a[i % 64] * i; return t; }
int main(void) { struct s x; memset(&x, 1, sizeof x); printf("%d\n", f(&x, 64)); return 0; }
C

"$root/target/release/examples/bpf_workload" "$secs" 400 2>/dev/null &
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
wait
