#!/usr/bin/env bash
# bench/perfdata.sh - on one recording, side by side in one run (REPEATS rounds, default 5, the
# commands alternating, page cache warm; medians and ratios):
#   (a) `lockcast parse --table all perf.data` against the text path it replaces,
#       `perf script --ns -i perf.data | lockcast parse --table all -` (every table as Parquet);
#   (b) `lockcast report perf.data` against `perf lock contention -i perf.data`;
#   (c) peak RSS of (a)'s direct parse and of (b)'s report against the file size
#       (GNU time's maximum resident set size, one extra run each).
#
# Input: fixtures/perfdata/micro-16K-replay/perf.data.gz (decompressed once to a temp file), or
# --data FILE (any perf.data with tracepoints). Needs perf (the text path) and a lockcast binary
# (--lockcast PATH; default: target/release/lockcast, build it with `cargo build --release`).
#
# usage: bench/perfdata.sh [--repeats N] [--data perf.data] [--lockcast PATH]
set -euo pipefail
PROG=${0##*/}
REPEATS=5
here=$(cd "$(dirname "$0")/.." && pwd)
DATA=
LOCKCAST=${CARGO_TARGET_DIR:-$here/target}/release/lockcast
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) REPEATS=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --lockcast) LOCKCAST=$2; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) echo "$PROG: unknown argument: $1" >&2; exit 2 ;;
  esac
done
command -v perf >/dev/null || { echo "$PROG: perf not found" >&2; exit 2; }
[ -x "$LOCKCAST" ] || { echo "$PROG: no lockcast binary at $LOCKCAST (cargo build --release, or --lockcast PATH)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/lockcast-bench-perfdata.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$DATA" ]; then
  zcat "$here/fixtures/perfdata/micro-16K-replay/perf.data.gz" > "$tmp/perf.data"
  DATA=$tmp/perf.data
fi
now() { date +%s.%N; }
direct=() text=() rep=() plc=()
for i in $(seq 1 "$REPEATS"); do
  rm -rf "$tmp/o"; t0=$(now)
  "$LOCKCAST" parse --table all "$DATA" -o "$tmp/o" --to parquet 2>/dev/null
  t1=$(now); direct+=("$(echo "$t1 - $t0" | bc)")
  rm -rf "$tmp/o"; t0=$(now)
  perf script --ns -i "$DATA" 2>/dev/null | "$LOCKCAST" parse --table all - -o "$tmp/o" --to parquet 2>/dev/null
  t1=$(now); text+=("$(echo "$t1 - $t0" | bc)")
  t0=$(now)
  "$LOCKCAST" report "$DATA" > /dev/null 2>&1
  t1=$(now); rep+=("$(echo "$t1 - $t0" | bc)")
  t0=$(now)
  perf lock contention -i "$DATA" > /dev/null 2>&1
  t1=$(now); plc+=("$(echo "$t1 - $t0" | bc)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
md=$(median "${direct[@]}"); mt=$(median "${text[@]}")
echo "input: $DATA ($(stat -c %s "$DATA") bytes), $REPEATS rounds, lockcast $LOCKCAST"
printf '%-58s %8.3f s\n' "lockcast parse --table all perf.data" "$md"
printf '%-58s %8.3f s\n' "perf script --ns -i perf.data | lockcast parse --table all -" "$mt"
echo "ratio (text path / perf.data): $(echo "scale=2; $mt / $md" | bc)x"
mr=$(median "${rep[@]}"); mp=$(median "${plc[@]}")
printf '%-58s %8.3f s\n' "lockcast report perf.data" "$mr"
printf '%-58s %8.3f s\n' "perf lock contention -i perf.data" "$mp"
echo "ratio (perf lock contention / lockcast report): $(echo "scale=2; $mp / $mr" | bc)x"
if [ -x /usr/bin/time ]; then
  rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
  rm -rf "$tmp/o"
  kp=$(rss "$LOCKCAST" parse --table all "$DATA" -o "$tmp/o" --to parquet)
  kr=$(rss "$LOCKCAST" report "$DATA")
  mb=$(echo "scale=1; $(stat -c %s "$DATA") / 1048576" | bc)
  echo "peak RSS: parse --table all $((kp / 1024)) MiB, report $((kr / 1024)) MiB, file $mb MiB"
fi
