#!/bin/sh
# Regression run of the fuzz targets on the stable toolchain (no nightly, no
# cargo-fuzz): build every target in fuzz_targets/ as a plain libFuzzer
# binary, without coverage instrumentation or sanitizers but with debug
# assertions and overflow checks, then run each once over its committed
# seeds (seeds/<target>/), one execution per file. No fuzzing happens; it
# catches a parser change that breaks a target's build, or a seed that now
# panics, hangs or runs out of memory. scripts/test (and so CI) runs it.
#
#   fuzz/replay-seeds.sh                 # every target
#   fuzz/replay-seeds.sh btf kcore       # some
#
# Prints one line per target: name, seeds run, ok / FAILED (a target
# without seeds fails).
# Exits non-zero if a target does not build or crashes on a seed.
# Env: FUZZ_TARGET_DIR (build dir, default fuzz/target), FUZZ_TIMEOUT
# (seconds per seed, default 60), FUZZ_RSS_MB (default 2048).
set -eu
cd "$(dirname "$0")"
here=$(pwd)
tdir=${FUZZ_TARGET_DIR:-$here/target}
timeout=${FUZZ_TIMEOUT:-60}
rss=${FUZZ_RSS_MB:-2048}
if [ $# -gt 0 ]; then
    targets="$*"
else
    targets=
    for f in fuzz_targets/*.rs; do
        f=${f#fuzz_targets/}
        targets="$targets ${f%.rs}"
    done
fi
# Line tables are enough for a panic's backtrace, and link 3-4x faster
# than full debug info.
export CARGO_PROFILE_DEV_DEBUG=line-tables-only
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

# One build of them all, going on past a target that fails; cargo's JSON
# messages name every binary this build produced (fresh ones too), so a
# stale binary from an earlier build is never replayed.
failed=0
if ! nice -n 19 cargo build -q --locked --manifest-path Cargo.toml --target-dir "$tdir" \
    --bins --keep-going --message-format=json-render-diagnostics >"$work/build.json"; then
    echo "fuzz/replay-seeds.sh: the build failed (errors above)" >&2
    failed=1
fi
# A failed run's log, without the lines saying there is no sanitizer.
show() { grep -v '^WARNING: Failed to find function "__sanitizer_' "$1" >&2 || true; }

built=$(sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' "$work/build.json")

for t in $targets; do
    exe=$(printf '%s\n' "$built" | grep -x ".*/$t" || true)
    if [ -z "$exe" ]; then
        printf '%-16s %4s seeds  FAILED (not built: errors above, or no [[bin]] in Cargo.toml)\n' "$t" -
        failed=1
        continue
    fi
    set --
    for f in "seeds/$t"/*; do
        if [ -f "$f" ]; then set -- "$@" "$f"; fi
    done
    log=$work/$t.log
    opts="-timeout=$timeout -rss_limit_mb=$rss -artifact_prefix=$work/"
    if [ $# -eq 0 ]; then
        # A target with nothing to replay guards nothing: every parser's
        # target keeps at least one real input in seeds/.
        printf '%-16s %4s seeds  FAILED (seeds/%s/ is missing or empty)\n' "$t" 0 "$t"
        failed=1
        continue
    fi
    # File arguments (not a directory): libFuzzer then executes each file
    # once, whole, printing "Executed <file>", and stops at a crash.
    # shellcheck disable=SC2086 # $opts again
    if nice -n 19 "$exe" $opts "$@" >"$log" 2>&1; then rc=0; else rc=$?; fi
    ran=$(grep -c '^Executed ' "$log" || true)
    if [ "$rc" -eq 0 ] && [ "$ran" -eq $# ]; then
        printf '%-16s %4s seeds  ok\n' "$t" "$ran"
    else
        # libFuzzer names each file before running it: the last one named
        # is the seed it stopped on.
        on=$(sed -n 's/^Running: //p' "$log" | tail -n 1)
        printf '%-16s %4s seeds  FAILED (exit %s on %s; %s of %s seeds executed)\n' \
            "$t" "$ran" "$rc" "${on:-?}" "$ran" $#
        show "$log"
        failed=1
    fi
done

# Seeds of no target are never replayed: say so (it does not fail).
for d in seeds/*/; do
    d=${d%/}
    [ -e "fuzz_targets/${d#seeds/}.rs" ] || echo "warning: $d/ belongs to no target in fuzz_targets/" >&2
done
exit "$failed"
