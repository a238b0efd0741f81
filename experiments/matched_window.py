#!/usr/bin/env python3
"""Would a window matched to the base capture's own replay predict other folio sizes better?
(issue #15, MODELS.md §5a)

The add-side window's edge is read as the 97.5th percentile of the waiters' arrival offsets
(`--window-quantile`). On the 2026-12-04 machine that overshoots the no-change replay by a
median quarter. A user could pick, for each base capture, the quantile at which its own
no-change replay fits best (the smaller of the larger of its two errors, contended and total
wait, over a grid), and then ask folio-size with it. Only the base capture is used to pick
it; the target capture is what the answer is judged against, as in matrix_score.py.

For every folio-size pair of a matrix pass (or of the bundled replay captures, grouped by run)
this prints the pair scores with the default window and with the matched one, overall and per
(workload, advice, base size, target size). Nothing in lockcast is changed.

usage: experiments/matched_window.py --dir /var/tmp/lockcast-matrix [--lockcast BIN] [--jobs 2] [--json OUT]
       experiments/matched_window.py --dir fixtures/replay   (the old machine's bundled captures)
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import re
import statistics as st
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from matrix_score import (GOOD_PAIR, capture_file, find_lockcast, group_key, metrics,  # noqa: E402
                          pct, run)
from window_scan import capture_dirs, conf, errors, worst  # noqa: E402

GRID = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975, 0.99, 0.995]


def matched(binary, d):
    """The grid quantile at which d's own no-change replay fits best, or None (refused)."""
    cap = capture_file(d)
    errs = [errors(binary, cap, q) for q in GRID] if cap else []
    if not errs or all(e is None for e in errs):
        return d, None
    best = min(range(len(GRID)), key=lambda i: worst(errs[i]))
    return d, GRID[best] if worst(errs[best]) != math.inf else None


def group(d):
    f = conf(d)
    if os.path.exists(os.path.join(d, "factors")):
        return group_key(f)
    return os.path.basename(d).rsplit("-", 1)[-1]  # micro-16K-r1: the run


def pair(binary, base, after, q, plain):
    """(contended %, total wait %) of validate folio-size with the default window and with q."""
    kb = int(conf(after)["size"].rstrip("K"))
    out = []
    for extra in ([], ["--window-quantile", str(q)]):
        args = ["validate", "folio-size", capture_file(base), capture_file(after)]
        args += (["--set", f"folio_kb={kb}"] if plain else []) + extra
        j, _, _ = run(binary, args)
        if j is None:
            return None
        row = j["rows"][0]
        (pc, pw), (ac, aw) = metrics(row, "predicted"), metrics(row, "after")
        out.append((pct(pc, ac), pct(pw, aw)))
    return out


def score(rows, i):
    ok = [r for r in rows if None not in r[i]]
    c, w = [r[i][0] for r in ok], [r[i][1] for r in ok]
    both = sum(1 for x, y in zip(c, w) if abs(x) <= GOOD_PAIR and abs(y) <= GOOD_PAIR)
    return (f"{sum(abs(x) <= GOOD_PAIR for x in c)} | {sum(abs(y) <= GOOD_PAIR for y in w)} | {both} | "
            f"{st.median(abs(x) for x in c):.1f}% / {st.median(abs(y) for y in w):.1f}% | "
            f"{st.median(c):+.1f}% / {st.median(w):+.1f}%")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="/var/tmp/lockcast-matrix")
    ap.add_argument("--lockcast")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", help="also write every pair's errors here")
    a = ap.parse_args()
    binary = a.lockcast or find_lockcast()
    dirs = capture_dirs(a.dir)
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        q = {d: v for d, v in ex.map(lambda d: matched(binary, d), dirs) if v is not None}
    by = {}
    for d in dirs:
        by.setdefault(group(d), {})[conf(d)["size"]] = d
    jobs = [(b, t, q[b], conf(b).get("recipe") not in ("record", ""))
            for sizes in by.values() for b in sizes.values() if b in q
            for t in sizes.values() if t != b]
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        got = list(ex.map(lambda j: pair(binary, *j), jobs))
    rows = [(os.path.basename(j[0]), os.path.basename(j[1]), j[2], *g)
            for j, g in zip(jobs, got) if g]
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh)
    print(f"# folio-size with a matched window: {a.dir}, {len(q)} base captures, {len(rows)} pairs\n")
    print(f"| window | contended within {GOOD_PAIR:.0f}% | total wait within {GOOD_PAIR:.0f}% | both | "
          "median abs error (contended / wait) | median signed error |")
    print("|---|---:|---:|---:|---|---|")
    print(f"| default (q97.5) | {score(rows, 3)} |")
    print(f"| matched to the base's own replay | {score(rows, 4)} |\n")
    print("Per configuration, median signed error, contended (total wait), default → matched, "
          "and the base runs' matched quantile:\n")
    print("| workload | advice | base → target | pairs | default | matched | matched quantile |")
    print("|---|---|---|---:|---|---|---|")
    size = lambda n: re.search(r"-(\d+)K-", n + "-").group(1)
    key = lambda r: (r[0].split("-")[0], "free" if "-free-" in r[0] else "dontneed", size(r[0]), size(r[1]))
    cells = {}
    for r in rows:
        if None not in r[3] and None not in r[4]:
            cells.setdefault(key(r), []).append(r)
    for k in sorted(cells, key=lambda k: (k[0], k[1], int(k[2]), int(k[3]))):
        v = cells[k]
        m = lambda i, j: st.median(r[i][j] for r in v)
        print(f"| {k[0]} | {k[1]} | {k[2]}K → {k[3]}K | {len(v)} | {m(3, 0):+.0f}% ({m(3, 1):+.0f}%) | "
              f"{m(4, 0):+.0f}% ({m(4, 1):+.0f}%) | {st.median(r[2] for r in v):.3g} |")


if __name__ == "__main__":
    main()
