#!/usr/bin/env bash
# matrix.sh - record the what-if validation matrix on this machine (issue #15 §3).
#
# Captures the model was never tuned on, made the ways users make them: the seed
# microbenchmark (lrufault) and foliochurn over mTHP folio sizes, thread/process counts,
# region sizes, run lengths (short and 10x longer), MADV_DONTNEED and MADV_FREE, three runs of
# the main block; recorded with `lockcast record` and with two plain recipes users type:
#   perfg     perf record -e lock:contention_begin -e lock:contention_end
#             -e pagemap:mm_lru_insertion -g -- WORKLOAD        (read as perf.data)
#   tracecmd  the five replay events enabled in a tracefs instance, WORKLOAD, `trace-cmd extract`,
#             `trace-cmd report -t` (`trace-cmd record` itself fails on these VMs: it cannot write
#             /proc/sys/kernel/ftrace_enabled; docs/CAPTURE.md)
# experiments/matrix_score.py scores every capture (no-change replay vs measured) and every
# folio-size pair (prediction vs the measured capture at the target size) into
# experiments/results/matrix.{md,csv}.
#
# One directory per capture under OUT, named by its factors:
#   <workload>-<size>-t<threads>-s<region>-l<loops>-<advice>-<recipe>-r<run>/
# with `lockcast record`'s files (perf.data, meta, contention*.txt, perf-stat.csv), or for a
# plain recipe perf.data / report-t.txt plus a meta file saying what was run (no untraced run,
# no slowpath: a user's plain recording has neither).
#
# mTHP settings are saved first and restored on any exit (fixtures/lib/mthp.sh); the tracefs
# instance (its own 64 MiB-per-CPU buffer, so the top-level buffer and its settings are never
# touched) is removed on any exit; no other kernel setting changes. The captures are large (up to ~100 MB each): OUT defaults to
# /var/tmp, not the repository.
#
# usage: sudo experiments/matrix.sh [--out DIR] [--lockcast BIN] [--only REGEX] [--list]
set -euo pipefail
PROG=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
OUT=/var/tmp/lockcast-matrix
LOCKCAST=
ONLY=.
LIST=no
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --lockcast) LOCKCAST=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --list) LIST=yes; shift ;;
    -h|--help) sed -n 2,26p "$0"; exit 0 ;;
    *) echo "$PROG: unknown argument: $1" >&2; exit 2 ;;
  esac
done

# The matrix: workload size threads region loops advice recipe run
rows() {
  local s t a r
  # A: the main block, three runs
  for s in 4K 16K 32K 64K 128K; do for t in 2 4; do for a in dontneed free; do for r in 1 2 3; do
    echo "lrufault $s $t 16 10 $a record $r"
  done; done; done; done
  for s in 4K 16K 32K 64K 128K; do
    echo "lrufault $s 2 64 10 dontneed record 1"   # B: 4x the region
    echo "lrufault $s 2 16 100 dontneed record 1"  # C: 10x the run length
    echo "foliochurn $s 2 128 300 dontneed record 1"
    echo "foliochurn $s 3 128 300 dontneed record 1"
    echo "foliochurn $s 2 128 3000 dontneed record 1"
    echo "lrufault $s 2 16 10 dontneed perfg 1"
    echo "lrufault $s 2 16 10 dontneed perfg 2"    # summary mode's validation (tables with callers)
    echo "lrufault $s 4 16 10 dontneed perfg 1"
    echo "lrufault $s 2 16 100 dontneed perfg 1"
    echo "lrufault $s 2 16 10 dontneed tracecmd 1"
  done
}

name() { echo "$1-$2-t$3-s$4-l$5-$6-$7-r$8"; }

if [ $LIST = yes ]; then
  rows | while read -r w s t g l a rc r; do name "$w" "$s" "$t" "$g" "$l" "$a" "$rc" "$r"; done | grep -E -- "$ONLY"
  exit 0
fi

[ "$(id -u)" = 0 ] || { echo "$PROG: run as root (perf record, trace-cmd and mTHP sysfs need it)" >&2; exit 2; }
# trace-cmd only for the tracecmd rows, so a selection of the others runs where it is missing
need=(perf cc)
selected=$(rows | while read -r w s t g l a rc r; do name "$w" "$s" "$t" "$g" "$l" "$a" "$rc" "$r"; done | grep -E -- "$ONLY" || true)
case "$selected" in *-tracecmd-*) need+=(trace-cmd) ;; esac
for t in "${need[@]}"; do command -v "$t" >/dev/null || { echo "$PROG: $t not found (Debian: apt-get install linux-perf trace-cmd)" >&2; exit 2; }; done
if [ -z "$LOCKCAST" ]; then
  for p in "${CARGO_TARGET_DIR:-$repo/target}/release/lockcast" "$repo/target/release/lockcast"; do
    [ -x "$p" ] && { LOCKCAST=$p; break; }
  done
fi
[ -x "$LOCKCAST" ] || { echo "$PROG: no lockcast binary: cargo build --release, or pass --lockcast" >&2; exit 2; }

PROG=$PROG
. "$repo/fixtures/lib/mthp.sh"
mthp_save
tmp=$(mktemp -d /tmp/lockcast-matrix.XXXXXX)
TI=/sys/kernel/tracing/instances/lockcast-matrix
TEV=(lock/contention_begin lock/contention_end pagemap/mm_lru_insertion kmem/mm_page_alloc kmem/mm_page_free)
instance_off() {
  [ -d "$TI" ] || return 0
  echo 0 > "$TI/tracing_on"
  local e; for e in "${TEV[@]}"; do echo 0 > "$TI/events/$e/enable"; done
  rmdir "$TI"
}
restore() {
  local ok=0
  instance_off || { echo "$PROG: could not remove $TI" >&2; ok=1; }
  mthp_restore || ok=1
  rm -rf "$tmp"
  [ $ok = 0 ] && echo "$PROG: mTHP settings restored" >&2
}
trap restore EXIT
trap 'exit 130' INT TERM

cc -O2 -pthread -o "$tmp/lrufault" "$repo/fixtures/workload/lrufault.c"
cc -O2 -o "$tmp/foliochurn" "$repo/fixtures/workload/foliochurn.c"
mkdir -p "$OUT"
replay_events=(-e lock:contention_begin -e lock:contention_end -e pagemap:mm_lru_insertion
               -e kmem:mm_page_alloc -e kmem:mm_page_free)

plain_meta() { # dir size recipe-command
  {
    echo "capture_date=$(date -u +%FT%TZ)"
    echo "kernel=$(uname -r)"
    echo "nproc=$(nproc)"
    echo "perf_version=$(perf version)"
    echo "mthp_size=$2"
    echo "cmd_record=$3"
    echo "loadavg=$(cat /proc/loadavg)"
  } > "$1/meta.plain"
}

n=0
total=$(rows | while read -r w s t g l a rc r; do name "$w" "$s" "$t" "$g" "$l" "$a" "$rc" "$r"; done | grep -cE -- "$ONLY" || true)
rows | while read -r w s t g l a rc r; do
  id=$(name "$w" "$s" "$t" "$g" "$l" "$a" "$rc" "$r")
  echo "$id" | grep -qE -- "$ONLY" || continue
  n=$((n + 1))
  dir=$OUT/$id
  if [ -e "$dir/done" ]; then echo "$PROG: [$n/$total] $id: kept" >&2; continue; fi
  rm -rf "$dir"
  echo "$PROG: [$n/$total] $id" >&2
  if [ "$w" = lrufault ]; then
    cmd=("$tmp/lrufault" -t "$t" -s "$g" -l "$l" -a "$a")
  else
    cmd=("$tmp/foliochurn" -p "$t" -k "$g" -l "$l")
  fi
  case "$rc" in
    record)
      "$LOCKCAST" record --mthp "$s" -o "$dir" -- "${cmd[@]}" 2> "$tmp/rec.err" ||
        { cat "$tmp/rec.err" >&2; exit 1; }
      ;;
    perfg)
      mkdir -p "$dir"
      mthp_only "$s"
      perf record -q -e lock:contention_begin -e lock:contention_end -e pagemap:mm_lru_insertion -g \
        -o "$dir/perf.data" -- "${cmd[@]}" > "$dir/workload.out" 2> "$dir/record.log"
      perf lock contention -i "$dir/perf.data" 2> "$dir/contention.txt" > /dev/null
      plain_meta "$dir" "$s" "perf record -e lock:contention_begin -e lock:contention_end -e pagemap:mm_lru_insertion -g -- ${cmd[*]##*/}"
      mthp_all_never
      ;;
    tracecmd)
      mkdir -p "$dir"
      mthp_only "$s"
      mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
      mkdir "$TI"
      echo 65536 > "$TI/buffer_size_kb"
      for e in "${TEV[@]}"; do echo 1 > "$TI/events/$e/enable"; done
      echo 1 > "$TI/tracing_on"
      "${cmd[@]}" > "$dir/workload.out" 2> "$dir/record.log"
      echo 0 > "$TI/tracing_on"
      (cd "$tmp" && trace-cmd extract -B lockcast-matrix -o "$tmp/trace.dat") >> "$dir/record.log" 2>&1
      instance_off
      trace-cmd report -t -i "$tmp/trace.dat" 2>> "$dir/record.log" | gzip -1 > "$dir/report-t.txt.gz"
      rm -f "$tmp"/trace*.dat
      plain_meta "$dir" "$s" "tracefs instance: ${TEV[*]} enabled; ${cmd[*]##*/}; trace-cmd extract; trace-cmd report -t"
      mthp_all_never
      ;;
  esac
  {
    echo "workload=$w"; echo "size=$s"; echo "threads=$t"; echo "region=$g"
    echo "loops=$l"; echo "advice=$a"; echo "recipe=$rc"; echo "run=$r"
  } > "$dir/factors"
  touch "$dir/done"
done
echo "$PROG: $OUT: $(ls "$OUT" | wc -l) captures; score with experiments/matrix_score.py --dir $OUT" >&2
