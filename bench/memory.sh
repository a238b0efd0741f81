#!/usr/bin/env bash
# bench/memory.sh - is `lockcast parse`'s peak memory flat in the input's size? The same command
# on a small and a large input (4x the bytes), peak RSS by GNU time, the large/small ratio (1.00
# is flat; 4.00 grows with the input), for a baseline binary and the candidate side by side in
# one run, each command REPEATS times alternating, medians.
#
# Inputs (built once under <target>/bench-data from the repo's real captures):
#   names-S / names-L    one `perf lock report` table of 2.5 M / 10 M distinct lock names (the
#                        limits.sh `names` case: 227 / 906 MB)
#   tracepoint-S / -L    fixtures/replay/micro-16K-r1 perf script --ns repeated to SMALL_MB / LARGE_MB
#   samples-S / -L       fixtures/samples/micro-16K-cpu-clock-g perf script -g repeated likewise
#   perfdata-S / -L      perf.data recordings of lrufault at run length 100 / 300 (60 / 188 MB,
#                        3x the bytes, not 4x: a recording cannot be repeated into a larger
#                        one), under <target>/bench-whatif, recorded when missing (root:
#                        bench/record-lrufault.sh)
#   perfdatazst-S / -L   the same recordings zstd-compressed (`zstd -3`; read as a stream, not
#                        mapped; the MB column shows the compressed sizes)
#   perfdatapipe-S / -L  pipe-mode recordings (`perf record -o -`) of the micro-16K replay
#                        recipe at 20 / 80 loops (fixtures/capture-perfdata.sh --pipe-loops,
#                        root; recorded when missing). perf 6.1 here drains the ring buffers
#                        only at the end of a pipe-mode run, so a stream is at most two full
#                        16 MiB buffers: about 13 / 33.5 MB, 2.6x the bytes, not 4x
# Cases (--cases, default below): input:table:format[:-], the `:-` writing to standard output
# (`-o - --to FORMAT`, into /dev/null) instead of a file. JSON of names-L is left out of the
# default: the baseline builds a serde_json value per cell of 10 M rows (tens of GB).
#
# usage: bench/memory.sh [--repeats N] [--base BIN] [--cases "names:lock_stats:parquet ..."]
#                        [--small-mb MB] [--large-mb MB]
#   --base BIN  the baseline lockcast (e.g. a release build of main); without it only the
#               candidate (<target>/release/lockcast, built here) runs
set -euo pipefail
PROG=${0##*/}
REPEATS=3
BASE=
SMALL_MB=250
LARGE_MB=1000
CASES="names:lock_stats:parquet names:lock_stats:csv
tracepoint:lock_stats:parquet tracepoint:contention:parquet tracepoint:contention:csv
tracepoint:events:parquet tracepoint:events:csv samples:samples:parquet"
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) REPEATS=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --cases) CASES=$2; shift 2 ;;
    --small-mb) SMALL_MB=$2; shift 2 ;;
    --large-mb) LARGE_MB=$2; shift 2 ;;
    -h|--help) sed -n 2,25p "$0"; exit 0 ;;
    *) echo "$PROG: unknown argument: $1" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
data=$target/bench-data
mkdir -p "$data"
echo "$PROG: building lockcast (release)" >&2
cargo build --release --locked -q -j 2
new=$target/release/lockcast
[ -x /usr/bin/time ] || { echo "$PROG: needs GNU time (/usr/bin/time)" >&2; exit 1; }

# repeat BODY into OUT until it holds MB megabytes
build() {
  local out=$1 body=$2 mb=$3
  local want=$((mb * 1000 * 1000))
  if [ -f "$out" ] && [ "$(stat -c %s "$out")" -ge "$want" ]; then return; fi
  echo "$PROG: building $out" >&2
  local n=$(( want / $(stat -c %s "$body") + 1 ))
  for _ in $(seq "$n"); do cat "$body"; done > "$out.tmp"
  mv "$out.tmp" "$out"
}
names() {
  local out=$1 n=$2
  [ -f "$out" ] && return
  echo "$PROG: building $out" >&2
  python3 - "$out.tmp" "$n" <<'PY'
import sys
out, n = sys.argv[1], int(sys.argv[2])
with open(out, "w") as f:
    f.write("                Name   acquired  contended     avg wait   total wait     max wait     min wait\n\n")
    for i in range(n):
        w = n - i
        f.write(f"{'lock_%08x' % i:>20} {2:>10} {2:>10} {w:>9} ns {2*w:>9} ns {w:>9} ns {w:>9} ns\n")
PY
  mv "$out.tmp" "$out"
}
need() {
  case $1 in
    names) names "$data/names-S.txt" 2500000; names "$data/names-L.txt" 10000000 ;;
    tracepoint)
      [ -f "$data/tracepoint.body" ] || zcat fixtures/replay/micro-16K-r1/script-ns.txt.gz > "$data/tracepoint.body"
      build "$data/tracepoint-S.txt" "$data/tracepoint.body" "$SMALL_MB"
      build "$data/tracepoint-L.txt" "$data/tracepoint.body" "$LARGE_MB" ;;
    samples)
      [ -f "$data/samples.body" ] || zcat fixtures/samples/micro-16K-cpu-clock-g/script.txt.gz > "$data/samples.body"
      build "$data/samples-S.txt" "$data/samples.body" "$SMALL_MB"
      build "$data/samples-L.txt" "$data/samples.body" "$LARGE_MB" ;;
    perfdata)
      for run in 100 300; do
        bench/record-lrufault.sh "$new" "$target/bench-whatif/lrufault-16K-t2-s16-l$run-dontneed" "$run"
      done ;;
    perfdatapipe)
      local size loops
      for size in S L; do
        loops=20; [ "$size" = L ] && loops=80
        local f; f=$(path_of perfdatapipe $size)
        [ -f "$f" ] && continue
        fixtures/capture-perfdata.sh --pipe-loops "$loops" --only micro-16K-pipe \
          --out "$data/pipe-$size" >&2
        zcat "$data/pipe-$size/micro-16K-pipe/perf.data.gz" > "$f"
      done ;;
    perfdatazst)
      need perfdata
      for size in S L; do
        local f; f=$(path_of perfdatazst $size)
        [ -f "$f" ] || zstd -q -3 -T2 -o "$f" "$(path_of perfdata $size)"
      done ;;
    *) echo "$PROG: unknown input $1" >&2; exit 2 ;;
  esac
}
# the file of INPUT at SIZE (S or L)
path_of() {
  case $1 in
    perfdata)
      local run=100
      [ "$2" = L ] && run=300
      echo "$target/bench-whatif/lrufault-16K-t2-s16-l$run-dontneed/perf.data" ;;
    perfdatazst) echo "$data/perfdata-$2.perf.data.zst" ;;
    perfdatapipe) echo "$data/perfdatapipe-$2.perf.data" ;;
    *) echo "$data/$1-$2.txt" ;;
  esac
}
for c in $CASES; do need "${c%%:*}"; done

bins=(new)
[ -n "$BASE" ] && bins=(base new)
bin_of() { if [ "$1" = base ]; then echo "$BASE"; else echo "$new"; fi; }
rss=$(mktemp -d)
out=$(mktemp -d -p "$data")
trap 'rm -rf "$rss" "$out"' EXIT
# run BIN CASE SIZE: one peak RSS (KiB) appended to $rss/BIN.CASE.SIZE
run() {
  local bin=$1 c=$2 size=$3
  IFS=: read -r input table fmt dest <<< "$c"
  local log=$rss/log
  rm -f "$out"/t.*
  local to=(-o "$out/t.$fmt")
  [ "$dest" = - ] && to=(-o - --to "$fmt")
  if ! /usr/bin/time -f '%M' -o "$log" "$(bin_of "$bin")" parse "$(path_of "$input" "$size")" \
      --table "$table" "${to[@]}" > /dev/null 2> "$rss/stderr"; then
    echo "$PROG: FAILED: $bin parse $input-$size --table $table -o t.$fmt: $(tail -1 "$rss/stderr")" >&2
    exit 1
  fi
  tail -1 "$log" >> "$rss/$bin.${c//:/_}.$size"
}
median() { sort -g "$1" | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.0f", m / 1024}'; }

mb() { awk -v s="$(stat -c %s "$1")" 'BEGIN {printf "%.0f", s / 1e6}'; }
printf '\n%s\n' "$(uname -r), $(nproc) cores, peak RSS (MiB), medians of $REPEATS; ratio = large / small input"
printf '%-32s %11s' "input:table:format" "MB S / L"
for b in "${bins[@]}"; do printf ' %9s %9s %6s' "$b S" "$b L" ratio; done
[ -n "$BASE" ] && printf ' %9s' "new/base L"
printf '\n'
# one line per case as soon as its runs are done (a long run still shows what it has)
for c in $CASES; do
  for _ in $(seq "$REPEATS"); do
    for size in S L; do
      for b in "${bins[@]}"; do run "$b" "$c" "$size"; done
    done
  done
  input=${c%%:*}
  printf '%-32s %11s' "$c" "$(mb "$(path_of "$input" S)") / $(mb "$(path_of "$input" L)")"
  for b in "${bins[@]}"; do
    s=$(median "$rss/$b.${c//:/_}.S")
    l=$(median "$rss/$b.${c//:/_}.L")
    printf ' %9s %9s %6s' "$s" "$l" "$(awk -v a="$l" -v b="$s" 'BEGIN {printf "%.2f", a / b}')"
  done
  if [ -n "$BASE" ]; then
    bl=$(median "$rss/base.${c//:/_}.L")
    nl=$(median "$rss/new.${c//:/_}.L")
    printf ' %9s' "$(awk -v a="$nl" -v b="$bl" 'BEGIN {printf "%.2f", a / b}')"
  fi
  printf '\n'
done
