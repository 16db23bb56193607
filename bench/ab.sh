#!/usr/bin/env bash
# Builds of bpfprof against each other (and perf, for scale) on one or
# more recordings: the best and median wall time of RUNS alternating runs
# and the peak RSS of each, for choices such as the allocator.
#
#   RUNS=10 bench/ab.sh FILE... -- 'plain=/tmp/bins/plain' 'mi=/tmp/bins/mi'
#
# Each variant is NAME=COMMAND (COMMAND may begin with VAR=value words);
# it runs as `COMMAND $ARGS -i FILE`, ARGS defaulting to the flat report
# `report --no-children --sort dso,sym -g none`. PERF=0 leaves perf out (its command is
# `perf report --stdio --no-children -g none --sort dso,sym`, or with
# PERF_ARGS). Prints one markdown table.
set -euo pipefail
RUNS=${RUNS:-10}
ARGS=${ARGS:-report --no-children --sort dso,sym -g none}
PERF_ARGS=${PERF_ARGS:-report --stdio --no-children -g none --sort dso,sym}
files=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do files+=("$1"); shift; done
[ $# -gt 1 ] || { echo "usage: bench/ab.sh FILE... -- NAME=COMMAND..." >&2; exit 2; }
shift
names=() cmds=()
if [ "${PERF:-1}" != 0 ]; then names+=(perf); cmds+=("perf $PERF_ARGS"); fi
for v in "$@"; do names+=("${v%%=*}"); cmds+=("env ${v#*=} $ARGS"); done
n=${#cmds[@]}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "| file | variant | best s | median s | peak RSS MB | best / perf |"
echo "|---|---|---|---|---|---|"
for f in "${files[@]}"; do
    q=$(printf '%q' "$f")
    for ((i = 0; i < n; i++)); do eval "${cmds[i]} -i $q" >/dev/null 2>&1 || true; done
    declare -A rss=()
    for _ in 1 2 3; do
        for ((i = 0; i < n; i++)); do
            eval "/usr/bin/time -o $tmp/t -f %M ${cmds[i]} -i $q" >/dev/null 2>&1 || :
            read -r m <"$tmp/t"
            [ "$m" -gt "${rss[$i]:-0}" ] && rss[$i]=$m
        done
    done
    for ((i = 0; i < n; i++)); do : >"$tmp/times.$i"; done
    for _ in $(seq "$RUNS"); do
        for ((i = 0; i < n; i++)); do
            s=${EPOCHREALTIME/[.,]/}
            eval "${cmds[i]} -i $q" >/dev/null 2>&1
            e=${EPOCHREALTIME/[.,]/}
            echo $((e - s)) >>"$tmp/times.$i"
        done
    done
    pbest=""
    for ((i = 0; i < n; i++)); do
        read -r best med < <(sort -n "$tmp/times.$i" | awk '{t[NR] = $1} END {printf "%d %d\n", t[1], (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2}')
        [ "${names[i]}" = perf ] && pbest=$best
        ratio=$([ -n "$pbest" ] && awk -v a="$best" -v b="$pbest" 'BEGIN{printf "%.3f", a / b}' || echo "")
        printf '| %s | %s | %.3f | %.3f | %d | %s |\n' "$(basename "$f")" "${names[i]}" \
            "$(awk -v t="$best" 'BEGIN{print t / 1e6}')" "$(awk -v t="$med" 'BEGIN{print t / 1e6}')" \
            $((rss[$i] / 1024)) "$ratio"
    done
    unset rss
done
