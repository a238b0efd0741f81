#!/usr/bin/env bash
# bench/ingest.sh - how fast `lockcast parse --to parquet` reads event traces, side by side
# with `wc -l` (the floor: read every byte, find every newline), a baseline lockcast (--base)
# and, on cpu-clock samples with call chains, `inferno-collapse-perf` (the usual perf script
# reader) with one thread and with as many as lockcast's parser threads (--jobs, default: the
# machine's CPUs).
#
# Inputs (>= 1 GB each, built once under the target directory by repeating real captures):
#   samples     fixtures/samples/micro-16K-cpu-clock-g  perf script of perf record -g -e cpu-clock
#   ftrace      fixtures/ftrace/tracefs-6.18.44-default.txt  raw tracefs text (header kept once)
#   tracepoint  fixtures/replay/micro-16K-r1  perf script --ns of lock/pagemap/kmem tracepoints
# Every command runs REPEATS times (default 3), alternating, with the page cache warm; the
# median wall time is printed with MB/s, the ratios to wc -l and to inferno at the same thread
# count (below 1 = faster), and the baseline's time over the candidate's (above 1 = faster).
#
# lockcast builds, per input: samples -> the `samples` table (call chains as lists);
# ftrace / tracepoint -> `events` and the typed tables of the events they hold.
#
# usage: bench/ingest.sh [--repeats N] [--size-mb MB] [--jobs N] [--base BIN] [--inputs "samples ..."]
#   --base BIN  a baseline lockcast (e.g. a release build of main), run beside the candidate
#               (<target>/release/lockcast, built here)
#        (inferno is installed by `cargo install inferno` into <target>/bench-tools, not the repo)
set -euo pipefail
PROG=${0##*/}
REPEATS=3
SIZE_MB=1100
JOBS=
BASE=
INPUTS="samples ftrace tracepoint"
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) REPEATS=$2; shift 2 ;;
    --size-mb) SIZE_MB=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --inputs) INPUTS=$2; shift 2 ;;
    -h|--help) sed -n 2,23p "$0"; exit 0 ;;
    *) echo "$PROG: unknown argument: $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
data=$target/bench-data
tools=$target/bench-tools
mkdir -p "$data" "$tools"

echo "$PROG: building lockcast (release)" >&2
cargo build --release --locked -q -j 2
lockcast=$target/release/lockcast
if [ -n "$BASE" ] && [ ! -x "$BASE" ]; then
  echo "$PROG: --base $BASE: not an executable" >&2; exit 2
fi
threads=${JOBS:-$(nproc)}
inferno=$tools/bin/inferno-collapse-perf
if [ ! -x "$inferno" ]; then
  echo "$PROG: cargo install inferno --root $tools" >&2
  cargo install -q inferno --version '^0.12' --locked --root "$tools"
fi

# repeat BODY into OUT (after HEAD once) until OUT holds SIZE_MB megabytes
build() {
  local out=$1 head=$2 body=$3
  local want=$((SIZE_MB * 1000 * 1000))
  if [ -f "$out" ] && [ "$(stat -c %s "$out")" -ge "$want" ]; then return; fi
  echo "$PROG: building $out" >&2
  local tmp=$out.tmp
  cat "$head" > "$tmp"
  local n=$(( want / $(stat -c %s "$body") + 1 ))
  for _ in $(seq "$n"); do cat "$body"; done >> "$tmp"
  mv "$tmp" "$out"
}
: > "$data/empty"
zcat fixtures/samples/micro-16K-cpu-clock-g/script.txt.gz > "$data/samples.body"
build "$data/samples.txt" "$data/empty" "$data/samples.body"
f=fixtures/ftrace/tracefs-6.18.44-default.txt
grep '^#' "$f" > "$data/ftrace.head"
grep -v '^#' "$f" > "$data/ftrace.body"
build "$data/ftrace.txt" "$data/ftrace.head" "$data/ftrace.body"
zcat fixtures/replay/micro-16K-r1/script-ns.txt.gz > "$data/tracepoint.body"
build "$data/tracepoint.txt" "$data/empty" "$data/tracepoint.body"

jobs=(--jobs "$threads")
out=$data/out
typed=events,contention_begin,contention_end,lru_insertion,page_alloc,page_free

# time_runs NAME CMD...: REPEATS wall times (s) appended to $times/NAME
times=$(mktemp -d)
trap 'rm -rf "$times" "$out"' EXIT
run() {
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || { echo "$PROG: FAILED: $*" >&2; exit 1; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}' >> "$times/$name"
}
median() { sort -g "$times/$1" | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }

bench_input() {
  local input=$1 tables=$2 with_inferno=$3
  local file=$data/$input.txt
  cat "$file" > /dev/null # warm the page cache
  for _ in $(seq "$REPEATS"); do
    run "$input.wc" wc -l "$file"
    if [ "$with_inferno" = 1 ]; then
      run "$input.inferno1" "$inferno" --nthreads 1 "$file"
      [ "$threads" != 1 ] && run "$input.infernoN" "$inferno" --nthreads "$threads" "$file"
    fi
    if [ -n "$BASE" ]; then
      rm -rf "$out"
      run "$input.base" "$BASE" parse "$file" --table "$tables" --to parquet -o "$out" "${jobs[@]}"
    fi
    rm -rf "$out"
    run "$input.lockcast" "$lockcast" parse "$file" --table "$tables" --to parquet -o "$out" "${jobs[@]}"
  done
  rm -rf "$out"
}

for input in $INPUTS; do
  case $input in
    samples) bench_input samples samples 1 ;;
    ftrace|tracepoint) bench_input "$input" "$typed" 0 ;;
    *) echo "$PROG: unknown input $input" >&2; exit 2 ;;
  esac
done

printf '\n%s\n' "$(uname -r), $(nproc) cores, lockcast $("$lockcast" --version | awk '{print $2}'), $(cargo install --list --root "$tools" | awk '/^inferno /{print $1, $2}' | tr -d :), $threads parser thread(s), medians of $REPEATS"
printf '%-11s %6s  %-30s %8s %7s %8s %10s %9s\n' input MB command seconds MB/s "x wc -l" "x inferno" "base/this"
for input in $INPUTS; do
  mb=$(awk -v s="$(stat -c %s "$data/$input.txt")" 'BEGIN {printf "%.0f", s / 1e6}')
  wc_s=$(median "$input.wc")
  # inferno at lockcast's thread count is the comparison (the -n1 row for reference)
  inf_s=
  [ -f "$times/$input.inferno1" ] && inf_s=$(median "$input.inferno1")
  [ -f "$times/$input.infernoN" ] && inf_s=$(median "$input.infernoN")
  new_s=$(median "$input.lockcast")
  for tool in wc inferno1 infernoN base lockcast; do
    [ -f "$times/$input.$tool" ] || continue
    s=$(median "$input.$tool")
    case $tool in
      wc) label="wc -l" ;;
      inferno1) label="inferno-collapse-perf -n1" ;;
      infernoN) label="inferno-collapse-perf -n$threads" ;;
      base) label="OLD lockcast parse -j$threads" ;;
      lockcast) label="lockcast parse -j$threads" ;;
    esac
    vs_inf=-
    [ -n "$inf_s" ] && vs_inf=$(awk -v a="$s" -v b="$inf_s" 'BEGIN {printf "%.2f", a / b}')
    vs_base=-
    [ "$tool" = base ] && vs_base=$(awk -v a="$s" -v b="$new_s" 'BEGIN {printf "%.2f", a / b}')
    printf '%-11s %6s  %-30s %8s %7.0f %8.2f %10s %9s\n' "$input" "$mb" "$label" "$s" \
      "$(awk -v m="$mb" -v s="$s" 'BEGIN {print m / s}')" \
      "$(awk -v a="$s" -v b="$wc_s" 'BEGIN {print a / b}')" "$vs_inf" "$vs_base"
  done
done
echo "(x wc -l, x inferno: this command's median time over theirs (inferno at $threads thread(s)); below 1 = faster."
echo " base/this: the baseline's median over the candidate's; above 1 = the candidate is faster)"
