#!/usr/bin/env bash
# bench/record-lrufault.sh - the benchmarks' large perf.data recordings, made on this machine
# when missing: `lockcast record --mthp 16K -- lrufault -t 2 -s 16 -l RUN -a dontneed` (the
# validation matrix's lrufault row at a longer run) into DIR. Needs root and cc; `lockcast
# record` restores the mTHP setting it changes, and the run holds /tmp/lockcast-capture.lock so
# no other capture runs beside it. Used by bench/whatif.sh (RUN 100, ~640 k events, 60 MB) and
# bench/memory.sh (RUN 100 and 300, ~2 M events, 188 MB). POLICY (default lru-cache) picks the
# recipe: `fbatch-drain` records the lock and madvise events with call chains (`-g`), the
# per-folio events without (the recipe of every call-chain policy; RUN 300: 2.1 M events, 236 MB).
#
# usage: bench/record-lrufault.sh LOCKCAST DIR RUN [POLICY]
set -euo pipefail
PROG=${0##*/}
[ $# -eq 3 ] || [ $# -eq 4 ] || { sed -n 2,12p "$0" >&2; exit 2; }
LOCKCAST=$1 DIR=$2 RUN=$3 POLICY=${4:-lru-cache}
[ -e "$DIR/perf.data" ] && exit 0
here=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "$PROG: recording $DIR needs root (or give the benchmark a recording)" >&2; exit 2; }
command -v cc >/dev/null || { echo "$PROG: cc not found (the workload is C)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/lockcast-record-lrufault.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -pthread -o "$tmp/lrufault" "$here/fixtures/workload/lrufault.c"
mkdir -p "$(dirname "$DIR")"
rm -rf "$DIR"
echo "$PROG: recording $DIR (waits for /tmp/lockcast-capture.lock)" >&2
flock /tmp/lockcast-capture.lock "$LOCKCAST" record --policy "$POLICY" --mthp 16K -o "$DIR" -- \
  "$tmp/lrufault" -t 2 -s 16 -l "$RUN" -a dontneed >&2
