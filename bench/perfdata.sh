#!/usr/bin/env bash
# bench/perfdata.sh - on one recording, side by side in one run (REPEATS rounds, default 5, the
# commands alternating, page cache warm; medians and ratios):
#   (a) `lockcast parse --table all perf.data` against the text path it replaces,
#       `perf script --ns -i perf.data | lockcast parse --table all -` (every table as Parquet),
#       and `lockcast parse --table events perf.data` (the one table, bound by the reader);
#   (b) `lockcast report perf.data` against `perf lock contention -i perf.data`;
#   (c) peak RSS of (a)'s direct parse and of (b)'s report against the file size
#       (GNU time's maximum resident set size, one extra run each);
#   (d) with --base PATH (an older lockcast build): its parse and report in the same rounds,
#       and the ratios old / new;
#   (e) `lockcast export perfetto perf.data -o FILE.json` (the timeline for a trace viewer),
#       with its peak RSS, and with --base the base's time and peak RSS beside it; FILE is in
#       /dev/shm when there is one (a memory file system: written to disk, the 404 MB of a
#       2 M-event recording's export met the kernel's writeback throttling, which added 0.3 to
#       1 s to single runs and drowned the medians);
#   (f) `lockcast flamegraph perf.data -o FILE.folded` (its time whatever its exit code: a
#       recording without call chains is an error, found after reading the waits), and with
#       --base the base's.
#
# Input: fixtures/perfdata/micro-16K-replay/perf.data.gz (decompressed once to a temp file), or
# --data FILE (any perf.data with tracepoints). Needs perf (the text path) and a lockcast binary
# (--lockcast PATH; default: target/release/lockcast, build it with `cargo build --release`).
#
# usage: bench/perfdata.sh [--repeats N] [--data perf.data] [--lockcast PATH] [--base PATH]
#
# Measured 2026-12-01 (--repeats 3, release, a 235 MiB lockcast record of lrufault 4K l100 with
# the five replay tracepoints, 2.5 M events; 2-CPU VM, load average 10-13 from other builds):
#   parse --table all 76.9 s, text path 83.6 s: 1.08x (goal 10x: missed)
#   report 3.54 s, perf lock contention 3.96 s: 1.12x (goal: faster than perf, met)
#   --base main@5c680f9: parse 97.5 s (1.26x), report 25.5 s (7.2x)
#   peak RSS: parse 408 MiB, report 286 MiB, file 234.5 MiB (goal flat in the file size: missed)
# Measured 2026-12-01, after the three-thread parse (reader, builders, writers), on a 94 MiB
# lockcast record of lrufault 4K l10 (1.0 M events), --repeats 3, --base main@48ab68d, load 8-10:
#   parse --table all 11.2 s / 7.87 s (two runs): 1.31x / 1.14x faster than base;
#   text path / direct 1.74x / 1.62x (goal 10x: missed); peak RSS parse 284 MiB (base 241 MiB)
# Measured 2026-12-06 (session 32), --repeats 5, the 193 MB lrufault 16K l300 recording of
# bench/whatif.sh (2.0 M events), --base main@5fd7d5d, load ~1:
#   report 0.182 s, perf lock contention 0.200 s: 1.09x (goal: faster than perf, met again;
#   0.263 s before: prefetch, the check in parts, numbering by counting, the kept records copied)
#   parse --table all 2.196 s (base 2.259 s), text path / direct 2.29x (goal 10x: missed)
# Measured 2026-12-07 (session 40), --repeats 5, a fresh recording of the same kind (195 MB,
# 2.0 M events), --base main@a23544a, load ~1:
#   export perfetto 2.098 s (base 7.630 s: 3.63x), peak RSS 353 MiB (base 2098 MiB); parse and
#   report unchanged (1.02x, 0.99x, 1.00x)
# Measured 2026-12-07 (session 41), --repeats 5, the same recording, --base main@78006d5, the
# export to /dev/shm, load ~0.5:
#   export perfetto 1.269 s (base 1.796 s: 1.41x), peak RSS 350 MiB (base 347 MiB); flamegraph
#   0.168 s (base 1.482 s: 8.83x; the recording has no call chains, both exit 3); parse and
#   report unchanged code (0.98x, 0.93x, 0.95x here; parse events again, 7 alternating runs:
#   1.243 vs 1.208 s); report 0.236 s, perf lock contention 0.218 s: 0.92x
#   then with the task names from one pass over COMM/FORK (60bf4ad): export perfetto 0.872 s
#   (base 1.857 s: 2.13x), peak RSS 350 MiB (base 347 MiB); flamegraph 0.173 s (8.80x)
# Measured 2026-12-07 (session 42), --repeats 5, the 236 MB fbatch-drain recipe recording of
# lrufault 16K l300 (bench/record-lrufault.sh LOCKCAST DIR 300 fbatch-drain: lock events with
# call chains, 2.1 M samples), --base main@2301abf, load ~1.5:
#   report 1.609 -> 0.650 s (2.47x), perf lock contention 0.433 s (0.67x lockcast's time: missed
#   on this recording); export perfetto 4.165 -> 1.528 s (2.72x); flamegraph 1.421 -> 0.564 s
#   (2.51x); parse --table all 1.04x, events 1.11x. On l300 (no call chains), 9 alternating runs: report
#   0.242 -> 0.217 s, perf lock contention 0.234 s (1.08x lockcast's time: faster than perf)
set -euo pipefail
PROG=${0##*/}
REPEATS=5
here=$(cd "$(dirname "$0")/.." && pwd)
DATA=
BASE=
LOCKCAST=${CARGO_TARGET_DIR:-$here/target}/release/lockcast
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) REPEATS=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --lockcast) LOCKCAST=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    -h|--help) sed -n 2,25p "$0"; exit 0 ;;
    *) echo "$PROG: unknown argument: $1" >&2; exit 2 ;;
  esac
done
command -v perf >/dev/null || { echo "$PROG: perf not found" >&2; exit 2; }
[ -x "$LOCKCAST" ] || { echo "$PROG: no lockcast binary at $LOCKCAST (cargo build --release, or --lockcast PATH)" >&2; exit 2; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "$PROG: no lockcast binary at --base $BASE" >&2; exit 2; }
tmp=$(mktemp -d /tmp/lockcast-bench-perfdata.XXXXXX)
out=$tmp
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  out=$(mktemp -d /dev/shm/lockcast-bench-perfdata.XXXXXX)
fi
trap 'rm -rf "$tmp" "$out"' EXIT
if [ -z "$DATA" ]; then
  zcat "$here/fixtures/perfdata/micro-16K-replay/perf.data.gz" > "$tmp/perf.data"
  DATA=$tmp/perf.data
fi
now() { date +%s.%N; }
direct=() text=() rep=() plc=() bdirect=() brep=() ev=() bev=() ex=() bex=() fl=() bfl=()
for i in $(seq 1 "$REPEATS"); do
  if [ -n "$BASE" ]; then
    rm -rf "$tmp/o"; t0=$(now)
    "$BASE" parse --table all "$DATA" -o "$tmp/o" --to parquet 2>/dev/null
    t1=$(now); bdirect+=("$(echo "$t1 - $t0" | bc)")
    rm -rf "$tmp/o"; t0=$(now)
    "$BASE" parse --table events "$DATA" -o "$tmp/o" --to parquet 2>/dev/null
    t1=$(now); bev+=("$(echo "$t1 - $t0" | bc)")
    t0=$(now)
    "$BASE" report "$DATA" > /dev/null 2>&1
    t1=$(now); brep+=("$(echo "$t1 - $t0" | bc)")
    rm -f "$out/p.json"; t0=$(now)
    "$BASE" export perfetto "$DATA" -o "$out/p.json" > /dev/null 2>&1
    t1=$(now); bex+=("$(echo "$t1 - $t0" | bc)")
    t0=$(now)
    "$BASE" flamegraph "$DATA" -o "$out/f.folded" > /dev/null 2>&1 || true
    t1=$(now); bfl+=("$(echo "$t1 - $t0" | bc)")
  fi
  rm -rf "$tmp/o"; t0=$(now)
  "$LOCKCAST" parse --table all "$DATA" -o "$tmp/o" --to parquet 2>/dev/null
  t1=$(now); direct+=("$(echo "$t1 - $t0" | bc)")
  rm -rf "$tmp/o"; t0=$(now)
  "$LOCKCAST" parse --table events "$DATA" -o "$tmp/o" --to parquet 2>/dev/null
  t1=$(now); ev+=("$(echo "$t1 - $t0" | bc)")
  rm -rf "$tmp/o"; t0=$(now)
  perf script --ns -i "$DATA" 2>/dev/null | "$LOCKCAST" parse --table all - -o "$tmp/o" --to parquet 2>/dev/null
  t1=$(now); text+=("$(echo "$t1 - $t0" | bc)")
  t0=$(now)
  "$LOCKCAST" report "$DATA" > /dev/null 2>&1
  t1=$(now); rep+=("$(echo "$t1 - $t0" | bc)")
  t0=$(now)
  perf lock contention -i "$DATA" > /dev/null 2>&1
  t1=$(now); plc+=("$(echo "$t1 - $t0" | bc)")
  rm -f "$out/p.json"; t0=$(now)
  "$LOCKCAST" export perfetto "$DATA" -o "$out/p.json" > /dev/null 2>&1
  t1=$(now); ex+=("$(echo "$t1 - $t0" | bc)")
  t0=$(now)
  "$LOCKCAST" flamegraph "$DATA" -o "$out/f.folded" > /dev/null 2>&1 || true
  t1=$(now); fl+=("$(echo "$t1 - $t0" | bc)")
done
rm -f "$out/p.json"
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
md=$(median "${direct[@]}"); mt=$(median "${text[@]}")
echo "input: $DATA ($(stat -c %s "$DATA") bytes), $REPEATS rounds, lockcast $LOCKCAST"
printf '%-58s %8.3f s\n' "lockcast parse --table all perf.data" "$md"
printf '%-58s %8.3f s\n' "perf script --ns -i perf.data | lockcast parse --table all -" "$mt"
echo "ratio (text path / perf.data): $(echo "scale=2; $mt / $md" | bc)x"
me=$(median "${ev[@]}")
printf '%-58s %8.3f s\n' "lockcast parse --table events perf.data" "$me"
mr=$(median "${rep[@]}"); mp=$(median "${plc[@]}")
printf '%-58s %8.3f s\n' "lockcast report perf.data" "$mr"
printf '%-58s %8.3f s\n' "perf lock contention -i perf.data" "$mp"
echo "ratio (perf lock contention / lockcast report): $(echo "scale=2; $mp / $mr" | bc)x"
mx=$(median "${ex[@]}"); mf=$(median "${fl[@]}")
printf '%-58s %8.3f s\n' "lockcast export perfetto perf.data" "$mx"
printf '%-58s %8.3f s\n' "lockcast flamegraph perf.data" "$mf"
if [ -n "$BASE" ]; then
  mbd=$(median "${bdirect[@]}"); mbr=$(median "${brep[@]}"); mbe=$(median "${bev[@]}")
  printf '%-58s %8.3f s\n' "base: lockcast parse --table all perf.data" "$mbd"
  printf '%-58s %8.3f s\n' "base: lockcast parse --table events perf.data" "$mbe"
  printf '%-58s %8.3f s\n' "base: lockcast report perf.data" "$mbr"
  mbx=$(median "${bex[@]}"); mbf=$(median "${bfl[@]}")
  printf '%-58s %8.3f s\n' "base: lockcast export perfetto perf.data" "$mbx"
  printf '%-58s %8.3f s\n' "base: lockcast flamegraph perf.data" "$mbf"
  echo "ratio (base / lockcast): parse all $(echo "scale=2; $mbd / $md" | bc)x, parse events $(echo "scale=2; $mbe / $me" | bc)x, report $(echo "scale=2; $mbr / $mr" | bc)x, export perfetto $(echo "scale=2; $mbx / $mx" | bc)x, flamegraph $(echo "scale=2; $mbf / $mf" | bc)x (base $BASE)"
fi
if [ -x /usr/bin/time ]; then
  rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
  rm -rf "$tmp/o"
  kp=$(rss "$LOCKCAST" parse --table all "$DATA" -o "$tmp/o" --to parquet)
  kr=$(rss "$LOCKCAST" report "$DATA")
  mb=$(echo "scale=1; $(stat -c %s "$DATA") / 1048576" | bc)
  echo "peak RSS: parse --table all $((kp / 1024)) MiB, report $((kr / 1024)) MiB, file $mb MiB"
  kx=$(rss "$LOCKCAST" export perfetto "$DATA" -o "$out/p.json")
  rm -f "$out/p.json"
  if [ -n "$BASE" ]; then
    kbx=$(rss "$BASE" export perfetto "$DATA" -o "$out/p.json")
    rm -f "$out/p.json"
    echo "peak RSS: export perfetto $((kx / 1024)) MiB, base $((kbx / 1024)) MiB"
  else
    echo "peak RSS: export perfetto $((kx / 1024)) MiB"
  fi
fi
