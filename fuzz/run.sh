#!/usr/bin/env bash
# Run fuzz targets one after another: `fuzz/run.sh SECONDS [TARGET...]` (default: all targets).
# Builds the seed corpora first (seed.sh), then runs each target for SECONDS under libFuzzer
# with the limits below, and prints one summary line per target (executions, corpus, time).
# A crash, timeout or out-of-memory input is saved under fuzz/artifacts/TARGET/ and makes the
# script exit non-zero after the remaining targets ran.
#
# Needs cargo-fuzz on PATH and a nightly toolchain or RUSTC_BOOTSTRAP=1 (set here: cargo fuzz
# uses -Z flags; the machine has only stable). Env: FUZZ_TARGET_DIR (build dir, default
# fuzz/target), NICE (niceness, default 15), FUZZ_SEED (libFuzzer's -seed: the same mutations
# on every run; unset, each run draws its own and explores further).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
secs="${1:?usage: fuzz/run.sh SECONDS [TARGET...]}"
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(perf_lock ftrace perf_script perf_report detect lenient perf_data)
export RUSTC_BOOTSTRAP=1
tdir="${FUZZ_TARGET_DIR:-$here/target}"
nice_n="${NICE:-15}"

"$here/seed.sh" >/dev/null || exit 1
# Debug assertions (-a) so integer overflow on input values panics instead of wrapping.
nice -n "$nice_n" cargo fuzz build -a --target-dir "$tdir" || exit 1

seed_arg=()
[ -z "${FUZZ_SEED:-}" ] || seed_arg=(-seed="$FUZZ_SEED")

failed=0
for t in "${targets[@]}"; do
  log="$here/artifacts/$t.log"
  mkdir -p "$here/artifacts/$t"
  start=$(date +%s)
  # -max_len: 64 KiB inputs expose quadratic behaviour within the timeout while keeping a high
  # exec rate. -timeout: one input may take at most 10 s (any real 64 KiB input takes ms).
  nice -n "$nice_n" cargo fuzz run -a --target-dir "$tdir" "$t" "$here/corpus/$t" -- \
    -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "${seed_arg[@]}" -artifact_prefix="$here/artifacts/$t/" >"$log" 2>&1
  rc=$?
  end=$(date +%s)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  units=$(ls "$here/corpus/$t" | wc -l)
  echo "fuzz $t: rc=$rc execs=${execs:-?} cov=${cov:-?} ft=${ft:-?} corpus=$units time=$((end - start))s"
  if [ $rc -ne 0 ]; then
    failed=1
    grep -E 'panicked|ERROR: libFuzzer|SUMMARY|Test unit written' "$log" | head -5
  fi
done
exit $failed
