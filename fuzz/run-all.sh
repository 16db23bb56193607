#!/bin/sh
# Fuzz every target (or those named) one after another, niced, and print a
# table of what each run did. Repeatable: the corpus grows across runs.
#
#   fuzz/run-all.sh                      # every target, 900 s each
#   FUZZ_TIME=60 fuzz/run-all.sh btf     # one target, one minute
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain.
# Env: FUZZ_TIME (seconds per target, default 900), FUZZ_TARGET_DIR (build
# dir, default fuzz/target), FUZZ_RSS_MB (default 2048: a parser allocating
# more than that is a bug, reported as an oom/malloc crash), FUZZ_NO_BUILD
# (set: run the binaries already built).
# Logs and the table go to fuzz/logs/ (gitignored); crashes to
# fuzz/artifacts/<target>/.
set -eu
cd "$(dirname "$0")"
here=$(pwd)
time=${FUZZ_TIME:-900}
rss=${FUZZ_RSS_MB:-2048}
tdir=${FUZZ_TARGET_DIR:-$here/target}
if [ $# -gt 0 ]; then
    targets="$*"
else
    targets=$(ls fuzz_targets | sed -n 's/\.rs$//p')
fi

# One build of every target first, so that the timed runs only fuzz.
if [ -n "${FUZZ_NO_BUILD:-}" ]; then
    : # the binaries in $tdir as they are (FUZZ_NO_BUILD=1)
elif [ $# -gt 0 ]; then
    for t in $targets; do nice -n 19 cargo +nightly fuzz build --target-dir "$tdir" "$t"; done
else
    nice -n 19 cargo +nightly fuzz build --target-dir "$tdir"
fi
bin=$tdir/x86_64-unknown-linux-gnu/release

mkdir -p logs
# Appended to, one table per run, so that runs of a few targets add up.
table=logs/summary.md
printf '\n%s, %s s per target:\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$time" >>"$table"
printf '| target | time (s) | runs | exec/s | corpus files | corpus bytes | cov | crashes |\n' >>"$table"
printf '|---|---|---|---|---|---|---|---|\n' >>"$table"
for t in $targets; do
    corpus=$here/corpus/$t
    mkdir -p "$corpus" "artifacts/$t" "logs/$t"
    # Seeds are copied in, not fuzzed in place: seeds/ is committed.
    if [ -d "seeds/$t" ]; then
        cp -n seeds/"$t"/* "$corpus"/
    fi
    before=$(ls "artifacts/$t" | wc -l)
    start=$(date +%s)
    # The built binary, not `cargo fuzz run`: that would rebuild from
    # whatever the tree holds by then. -jobs=1 runs one worker, whose output
    # goes to fuzz-0.log in the cwd.
    rm -f "logs/$t/fuzz-0.log"
    (cd "logs/$t" && nice -n 19 "$bin/$t" "$corpus" \
        -max_total_time="$time" -jobs=1 -rss_limit_mb="$rss" -timeout=10 \
        -artifact_prefix="$here/artifacts/$t/" \
        >"$here/logs/$t/driver.log" 2>&1) || true
    end=$(date +%s)
    log=logs/$t/fuzz-0.log
    [ -f "$log" ] || log=logs/$t/driver.log
    runs=$(sed -n 's/^Done \([0-9]*\) runs in.*/\1/p' "$log" | tail -n 1)
    # The last status line carries the coverage and the exec rate.
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    eps=$(echo "$last" | sed -n 's/.* exec\/s: \([0-9]*\).*/\1/p')
    files=$(ls "$corpus" | wc -l)
    bytes=$(du -sb "$corpus" | cut -f1)
    crashes=$(( $(ls "artifacts/$t" | wc -l) - before ))
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$((end - start))" \
        "${runs:-?}" "${eps:-?}" "$files" "$bytes" "${cov:-?}" "$crashes" | tee -a "$table"
done
echo "table: $here/$table"
