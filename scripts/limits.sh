#!/usr/bin/env bash
# Resource limits at full scale (issue 8): peak RSS and wall time of `lockcast parse` on
# hostile inputs generated here at run time (never committed), from the repo's real captures.
#   scripts/limits.sh [LOCKCAST_BINARY]      (default: target/release/lockcast, built if missing)
#   LIMITS_CASES="names cpus" scripts/limits.sh   (a subset of: long-line blank names backwards cpus whatif)
# Prints one line per case and mode: exit code, peak RSS (MiB), wall time, and the message a
# user sees (the error, or the first line `parse` prints). tests/it/limits.rs checks the same
# cases' outcomes at test scale; this script is for the numbers (not in CI: ~1.6 GB of input).
# The whatif case: `whatif lru-cache` on the 16K replay capture and on the same capture repeated
# 8 times end to end in time (two sizes of one workload; its peak RSS should not grow with it).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-${CARGO_TARGET_DIR:-target}/release/lockcast}"
if [ ! -x "$bin" ]; then
  cargo build --release --locked
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cases="${LIMITS_CASES:-long-line blank names backwards cpus whatif}"
# only the inputs of the cases asked for (all of them are ~1.6 GB)
python3 - "$work" $cases <<'PY'
import sys, os
work, want = sys.argv[1], set(sys.argv[2:])
cap = open("fixtures/captures/micro-16K-r1/contention.txt").read().splitlines()
ftrace = open("fixtures/ftrace/tracefs-6.18.44-default.txt").read().splitlines()

# 1. One line of 100 MB inside a real table (line 5).
if "long-line" in want:
    with open(f"{work}/long-line.txt", "w") as f:
        f.write("\n".join(cap[:4] + ["9" * (100 << 20)] + cap[4:]) + "\n")

# 2. Only blank lines: 100 MB of newlines (104857600 lines).
if "blank" in want:
    with open(f"{work}/blank.txt", "wb") as f:
        f.write(b"\n" * (100 << 20))

# 3. 10 million distinct lock names in one perf lock report table (waits decreasing).
n = 10_000_000
if "names" in want:
    with open(f"{work}/names.txt", "w") as f:
        f.write("                Name   acquired  contended     avg wait   total wait     max wait     min wait\n\n")
        for i in range(n):
            w = n - i
            f.write(f"{'lock_%08x' % i:>20} {2:>10} {2:>10} {w:>9} ns {2*w:>9} ns {w:>9} ns {w:>9} ns\n")

# Events of the real ftrace capture repeated with shifted timestamps: 1M begin/end pairs.
events = [l for l in ftrace if "contention_" in l]
header = [l for l in ftrace if l.startswith("#")]
def ts_split(l):
    head, rest = l.split(": ", 1)
    before, ts = head.rsplit(" ", 1)
    return before, float(ts), rest
reps = 1_000_000 // (len(events) // 2)

# 4. Timestamps going backwards: every end stamped 1 us before its begin.
if "backwards" in want:
  with open(f"{work}/backwards.txt", "w") as f:
    f.write("\n".join(header) + "\n")
    for r in range(reps):
        for l in events:
            before, ts, rest = ts_split(l)
            ts += r * 10.0
            if rest.startswith("contention_end"):
                ts -= 0.001
            f.write(f"{before} {ts:.6f}: {rest}\n")

# 5. CPU numbers above 4096: each repetition on another CPU, 4097 .. 4097+reps.
if "cpus" in want:
  with open(f"{work}/cpus.txt", "w") as f:
    f.write("\n".join(header) + "\n")
    for r in range(reps):
        for l in events:
            before, ts, rest = ts_split(l)
            i = before.index("[")
            j = before.index("]", i)
            f.write(f"{before[:i]}[{4097 + r}{before[j:]} {ts + r * 10.0:.6f}: {rest}\n")
PY

printf '%-12s %6s %5s %10s %8s  %s\n' case size exit "rss_MiB" "time_s" "message"
for c in $cases; do
  if [ "$c" = whatif ]; then
    # the real capture's lines, copy k shifted by k x (its span + 1 s)
    for k in 1 8; do
      d="$work/whatif-x$k"
      mkdir -p "$d"
      cp fixtures/replay/micro-16K-r1/meta "$d/meta"
      zcat fixtures/replay/micro-16K-r1/script-ns.txt.gz | python3 -c '
import re, sys
k = int(sys.argv[1])
lines = sys.stdin.read().splitlines()
stamp = re.compile(r"^(.*?\] +)(\d+)\.(\d{9}):")
ts = [int(m.group(2)) * 10**9 + int(m.group(3)) for m in map(stamp.match, lines) if m]
step = max(ts) - min(ts) + 10**9
out = sys.stdout
for c in range(k):
    for l in lines:
        m = stamp.match(l)
        if not m:
            out.write(l + "\n")
            continue
        t = int(m.group(2)) * 10**9 + int(m.group(3)) + c * step
        out.write(f"{m.group(1)}{t // 10**9}.{t % 10**9:09d}:{l[m.end():]}\n")
' "$k" | gzip -1 > "$d/script-ns.txt.gz"
      size=$(zcat "$d/script-ns.txt.gz" | wc -l)ev
      set +e
      /usr/bin/time -v "$bin" whatif lru-cache "$d" >"$work/stdout" 2>"$work/stderr"
      rc=$?
      set -e
      rss=$(grep 'Maximum resident set size' "$work/stderr" | grep -o '[0-9]*$')
      wall=$(grep 'Elapsed (wall clock)' "$work/stderr" | awk '{print $NF}')
      msg=$( { grep -m1 '^lockcast:' "$work/stderr" || grep -m1 '^predicted' "$work/stdout"; } | sed "s#$work/##" | tr -s ' ' | cut -c1-160)
      printf '%-12s %6s %5s %10s %8s  %s\n' "whatif/x$k" "$size" "$rc" "$((rss / 1024))" "$wall" "$msg"
    done
    continue
  fi
  f="$work/$c.txt"
  size=$(du -m "$f" | cut -f1)M
  for mode in strict lenient; do
    flag=(); [ $mode = lenient ] && flag=(--lenient)
    set +e
    # Without -o: `parse` still builds the lock_stats table, and prints what it found.
    /usr/bin/time -v "$bin" parse "$f" "${flag[@]}" >"$work/stdout" 2>"$work/stderr"
    rc=$?
    set -e
    rss=$(grep 'Maximum resident set size' "$work/stderr" | grep -o '[0-9]*$')
    wall=$(grep 'Elapsed (wall clock)' "$work/stderr" | awk '{print $NF}')
    msg=$( { grep -m1 '^lockcast:' "$work/stderr" || head -1 "$work/stdout"; } | sed "s#$work/##" | cut -c1-160)
    printf '%-12s %6s %5s %10s %8s  %s\n' "$c/$mode" "$size" "$rc" "$((rss / 1024))" "$wall" "$msg"
  done
done
