#!/usr/bin/env python3
"""Where waiters on lru_lock begin relative to the other CPU's last LRU insertion (issue #15,
MODELS.md §5a), straight from a capture's `events` table, without lockcast's calibration.

For a two-CPU capture: every `contention_begin` on the lock, paired with its CPU's next
`contention_end` and with the other CPU's last `mm_lru_insertion` before the begin. Prints, by
how long after that insertion the wait began: the count, the wait's end after the insertion
(quantiles), the median wait, and the other CPU's next traced event after the begin; then the
earliest end after an insertion (the insertion-to-release stretch plus the hand-off, a lower
bound).

usage: lockcast parse CAPTURE --table events --to csv -o DIR
       experiments/holder_offsets.py DIR/events.csv LOCK
       (LOCK: the lru_lock address, e.g. from `lockcast whatif baseline CAPTURE --json`,
        rows[0].lock)
"""
import bisect
import collections
import csv
import sys

BINS = [(0, 200), (200, 400), (400, 600), (600, 800), (800, 1000), (1000, 1500), (1500, 2000)]


def quantile(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, lock = sys.argv[1], sys.argv[2]
    with open(path) as fh:
        ev = sorted((int(r["timestamp_ns"]), int(r["cpu"]), r["event"], r["payload"])
                    for r in csv.DictReader(fh))
    cpus = sorted({e[1] for e in ev})
    if len(cpus) != 2:
        sys.exit(f"{path}: events on {len(cpus)} CPUs; this pairing needs exactly two")
    per_cpu = {c: [e for e in ev if e[1] == c] for c in cpus}
    stamps = {c: [e[0] for e in v] for c, v in per_cpu.items()}
    other = {cpus[0]: cpus[1], cpus[1]: cpus[0]}
    last_ins, pending, waits = {}, {}, []
    for ts, cpu, name, payload in ev:
        if name == "mm_lru_insertion":
            last_ins[cpu] = ts
        elif name == "contention_begin" and payload.split()[:1] == [lock]:
            pending[cpu] = (ts, last_ins.get(other[cpu]))
        elif name == "contention_end" and cpu in pending:
            begin, ins = pending.pop(cpu)
            if ins is None:
                continue
            o = other[cpu]
            i = bisect.bisect_left(stamps[o], begin)
            nxt = per_cpu[o][i][2] if i < len(per_cpu[o]) else None
            waits.append((begin - ins, ts - ins, ts - begin, nxt))
    near = [w for w in waits if 0 <= w[0] < BINS[-1][1]]
    print(f"{path}: lock {lock}, {len(waits)} waits, {len(near)} begun 0-{BINS[-1][1]} ns after the other CPU's last insertion")
    for lo, hi in BINS:
        g = [w for w in near if lo <= w[0] < hi]
        if not g:
            continue
        ends = [w[1] for w in g]
        nxt = collections.Counter(w[3] for w in g).most_common(2)
        print(f"  begun {lo:4}-{hi:4} ns after: {len(g):6} waits; end after the insertion "
              f"q10/50/90 {quantile(ends, .1)}/{quantile(ends, .5)}/{quantile(ends, .9)} ns; "
              f"median wait {quantile([w[2] for w in g], .5)} ns; other CPU's next event {nxt}")
    ends = sorted(w[1] for w in waits if w[1] >= 0)
    if ends:
        print(f"  earliest end after the insertion: {ends[0]} ns (1st percentile {quantile(ends, .01)} ns)")


if __name__ == "__main__":
    main()
