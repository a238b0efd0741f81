#!/usr/bin/env bash
# bench/whatif.sh - what-if cost against the cost of reading the capture (issue 16), side by
# side in one run (REPEATS rounds, default 3, the commands alternating, page cache warm;
# medians and ratios):
#   (a) per capture: `lockcast report CAPTURE`, `lockcast whatif POLICY CAPTURE` (its default
#       interval: up to 200 replicates, fewer by its stopping rule) and `whatif --bootstrap 0`; the goal is whatif <= 3x report;
#   (b) with --base PATH (an older lockcast build): its report, whatif and --bootstrap 0 in the same rounds,
#       the ratio old / new, and the base's own whatif / report (bwi/br);
#   (c) peak RSS of whatif per capture (GNU time, one extra run), and whatif's median CPU time
#       (user + system) new and base: a load-robust companion to the wall times; `win`: the
#       time windows its replicates replayed (`bootstrap.windows` of --json; 0 = the whole
#       capture each, expected below twice --sample holds + folios, a slow fallback above);
#   (d) with --base: the interval of every bundled capture (fixtures/replay/*), old and new
#       (width = high - low of contended and of total wait, prediction and no-change replay;
#       the replicates the new default ran; the point estimates must agree);
#   (e) replay throughput: examples/replay_bench (des::replay beside a heap merge of the same
#       request streams), when built: cargo build --release --example replay_bench.
#
# Captures: the bundled fixtures/replay/micro-16K-r1 (64 k events) and micro-4K-r1 (248 k
# events), and a ~2 M-event `lockcast record` directory: --data DIR, or recorded here into
# $CARGO_TARGET_DIR/bench-whatif/ (root; lrufault -t 2 -s 16 -l 100 -a dontneed at 16K mTHP, the
# validation matrix's 10x-run-length row; `lockcast record` restores mTHP; the run holds
# /tmp/lockcast-capture.lock so no other capture runs beside it).
#
# usage: bench/whatif.sh [--repeats N] [--data DIR] [--lockcast PATH] [--base PATH]
#                        [--policy NAME] [--only small|large]
set -euo pipefail
PROG=${0##*/}
REPEATS=3
here=$(cd "$(dirname "$0")/.." && pwd)
DATA=
BASE=
POLICY=lru-cache
ONLY=
LOCKCAST=${CARGO_TARGET_DIR:-$here/target}/release/lockcast
while [ $# -gt 0 ]; do
  case "$1" in
    --repeats) REPEATS=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --lockcast) LOCKCAST=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --policy) POLICY=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    -h|--help) sed -n 2,26p "$0"; exit 0 ;;
    *) echo "$PROG: unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ -x "$LOCKCAST" ] || { echo "$PROG: no lockcast binary at $LOCKCAST (cargo build --release, or --lockcast PATH)" >&2; exit 2; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "$PROG: no lockcast binary at --base $BASE" >&2; exit 2; }
command -v jq >/dev/null || { echo "$PROG: jq not found (it reads whatif --json)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/lockcast-bench-whatif.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cases=()
if [ "$ONLY" != large ]; then
  cases+=("$here/fixtures/replay/micro-16K-r1" "$here/fixtures/replay/micro-4K-r1")
fi
if [ "$ONLY" != small ]; then
  if [ -z "$DATA" ]; then
    DATA=${CARGO_TARGET_DIR:-$here/target}/bench-whatif/lrufault-16K-t2-s16-l100-dontneed
    "$here/bench/record-lrufault.sh" "$LOCKCAST" "$DATA" 100
  fi
  cases+=("$DATA")
fi

now() { date +%s.%N; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ratio() { echo "scale=2; $1 / $2" | bc; }
timed() { # command... ; prints "wall_seconds cpu_seconds" (user + system, GNU time)
  local t0 t1
  t0=$(now)
  /usr/bin/time -f '%U %S' -o "$tmp/cpu" "$@" > /dev/null 2>&1
  t1=$(now)
  echo "$(echo "$t1 - $t0" | bc) $(awk '{print $1 + $2}' "$tmp/cpu")"
}
# col N "wall cpu"...: the Nth field of each pair (1 = wall, 2 = CPU)
col() { local n=$1; shift; printf '%s\n' "$@" | awk -v n="$n" '{print $n}'; }
mcol() { local n=$1; shift; median $(col "$n" "$@"); }
events() { # capture dir
  if [ -e "$1/perf.data" ]; then
    perf script -i "$1/perf.data" -F event 2>/dev/null | wc -l
  else
    zcat "$1/script-ns.txt.gz" | wc -l
  fi
}

echo "lockcast $LOCKCAST${BASE:+, base $BASE}; policy $POLICY; $REPEATS rounds; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %9s %9s %9s %9s %7s %9s %9s %7s %7s %9s %7s %8s %8s %8s %7s %4s\n' capture events report whatif 'boot=0' 'wi/rep' 'base_rep' 'base_wi' 'bwi/br' 'old/new' 'base_b0' 'b0_o/n' 'rss_MiB' 'wi_cpu' 'bwi_cpu' 'cpu_o/n' 'win'
for c in "${cases[@]}"; do
  rep=() wi=() wi0=() brep=() bwi=() bwi0=()
  for i in $(seq 1 "$REPEATS"); do
    if [ -n "$BASE" ]; then
      brep+=("$(timed "$BASE" report "$c")")
      bwi+=("$(timed "$BASE" whatif "$POLICY" "$c")")
      bwi0+=("$(timed "$BASE" whatif "$POLICY" "$c" --bootstrap 0)")
    fi
    rep+=("$(timed "$LOCKCAST" report "$c")")
    wi+=("$(timed "$LOCKCAST" whatif "$POLICY" "$c")")
    wi0+=("$(timed "$LOCKCAST" whatif "$POLICY" "$c" --bootstrap 0)")
  done
  /usr/bin/time -f %M -o "$tmp/rss" "$LOCKCAST" whatif "$POLICY" "$c" > /dev/null 2>&1
  rss=$(tail -1 "$tmp/rss")
  win=$("$LOCKCAST" whatif "$POLICY" "$c" --json 2>/dev/null | jq -r '.bootstrap.windows // 0')
  mr=$(mcol 1 "${rep[@]}"); mw=$(mcol 1 "${wi[@]}"); m0=$(mcol 1 "${wi0[@]}")
  cw=$(printf '%.2f' "$(mcol 2 "${wi[@]}")")
  br=- bw=- bwr=- on=- b0=- on0=- bcw=- con=-
  if [ -n "$BASE" ]; then
    br=$(printf '%.3f' "$(mcol 1 "${brep[@]}")"); bw=$(printf '%.3f' "$(mcol 1 "${bwi[@]}")"); on=$(ratio "$bw" "$mw")x
    bwr=$(ratio "$bw" "$br")x
    b0=$(printf '%.3f' "$(mcol 1 "${bwi0[@]}")"); on0=$(ratio "$b0" "$m0")x
    bcw=$(printf '%.2f' "$(mcol 2 "${bwi[@]}")"); con=$(ratio "$bcw" "$cw")x
  fi
  printf '%-44s %9s %9.3f %9.3f %9.3f %6sx %9s %9s %7s %7s %9s %7s %8s %8s %8s %7s %4s\n' "${c#"$here/"}" "$(events "$c")" \
    "$mr" "$mw" "$m0" "$(ratio "$mw" "$mr")" "$br" "$bw" "$bwr" "$on" "$b0" "$on0" "$((rss / 1024))" "$cw" "$bcw" "$con" "$win"
done
echo "(seconds, medians; wi/rep = whatif / report of the new build, goal <= 3x; bwi/br = the same of"
echo " the base, so a moved ratio shows which of the two moved; wi_cpu / bwi_cpu = whatif's CPU time,"
echo " user + system, new / base: less moved by other load than wall time)"

if [ -n "$BASE" ] && [ "$ONLY" != large ]; then
  echo
  echo "interval on the bundled captures (width = high - low, prediction and no-change replay;"
  echo "reps = bootstrap replicates of the new build's default run; point = predicted), old vs new:"
  printf '%-14s %5s %15s %19s %15s %19s %6s\n' capture reps 'contended o->n' 'total_wait o->n' 'repl_cont o->n' 'repl_wait o->n' point
  w='.rows[0] | [.interval.high.contended - .interval.low.contended, .interval.high.total_wait_ns - .interval.low.total_wait_ns, .replayed_interval.high.contended - .replayed_interval.low.contended, .replayed_interval.high.total_wait_ns - .replayed_interval.low.total_wait_ns, .predicted.contended, .predicted.total_wait_ns] | @tsv'
  sum_old=0 sum_new=0
  for d in "$here"/fixtures/replay/*/; do
    d=${d%/}
    "$LOCKCAST" whatif "$POLICY" "$d" --json > "$tmp/new.json" 2>/dev/null
    read -r oc ow orc orw op opw _ < <("$BASE" whatif "$POLICY" "$d" --json 2>/dev/null | jq -r "$w")
    read -r nc nw nrc nrw np npw _ < <(jq -r "$w" "$tmp/new.json")
    reps=$(jq -r '.bootstrap.replicates // "-"' "$tmp/new.json")
    same=same; [ "$op $opw" = "$np $npw" ] || same=DIFFER
    printf '%-14s %5s %15s %19s %15s %19s %6s\n' "${d##*/}" "$reps" "$oc->$nc" "$ow->$nw" "$orc->$nrc" "$orw->$nrw" "$same"
    # relative widths, summed over the four widths of every capture: new / old
    sum_old=$(echo "$sum_old + 4" | bc -l)
    sum_new=$(echo "$sum_new + $nc / $oc + $nw / $ow + $nrc / $orc + $nrw / $orw" | bc -l)
  done
  printf 'mean width new/old over the 48 widths: %.3f\n' "$(echo "$sum_new / $sum_old" | bc -l)"
fi

rb=${CARGO_TARGET_DIR:-$here/target}/release/examples/replay_bench
if [ -x "$rb" ]; then
  echo
  echo "replay throughput ($rb, median of 5):"
  "$rb"
fi
