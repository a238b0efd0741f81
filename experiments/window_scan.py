#!/usr/bin/env python3
"""Scan the add-side window quantile over a recorded matrix (issue #15, MODELS.md §5a).

For every capture of a matrix directory (experiments/matrix.sh; plain `-g` recordings, which
lockcast refuses, are skipped): the no-change replay's error, contended and total wait, at each
`--window-quantile` of a fixed grid. Prints, per configuration (workload, folio size, advice,
recipe), the quantile at which each capture's own replay fits best (the smaller of the larger
of its two errors), and for each quantile of the grid how many captures reproduce within 15%
on both metrics.

This fits nothing into lockcast: it asks whether the window rule's miss is one number per
host (the best quantile the same for every configuration) or depends on the configuration.

usage: experiments/window_scan.py [--dir /var/tmp/lockcast-matrix] [--lockcast BIN] [--jobs 2]
       experiments/window_scan.py --dir fixtures/replay   (the bundled captures, another host)
"""
import argparse
import collections
import concurrent.futures as cf
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from matrix_score import capture_file, factors, find_lockcast, metrics, pct, run  # noqa: E402

GRID = [0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975, 0.99]
SIZES = ["4K", "16K", "32K", "64K", "128K"]


def conf(d):
    """A matrix capture's factors; for the bundled replay captures (`micro-16K-r1`, no
    factors file) the workload and size from the name."""
    if os.path.exists(os.path.join(d, "factors")):
        return factors(d)
    name = os.path.basename(d).split("-")
    return {"workload": name[0], "size": name[1] if len(name) > 1 else "",
            "advice": "", "recipe": ""}


def errors(binary, cap, q):
    """(contended %, total wait %) of the no-change replay at quantile q, or None."""
    j, _, _ = run(binary, ["whatif", "baseline", cap, "--window-quantile", str(q)])
    if j is None:
        return None
    row = j["rows"][0]
    (mc, mw), (rc, rw) = metrics(row, "measured"), metrics(row, "replayed")
    if not mc or not mw:
        return None
    return pct(rc, mc), pct(rw, mw)


def worst(e):
    """The larger of a replay's two errors (contended, total wait), or infinity without both."""
    if not e or None in e or math.isnan(e[0] + e[1]):
        return math.inf
    return max(abs(e[0]), abs(e[1]))


def capture_dirs(root):
    """The capture directories under root that lockcast can replay (plain `-g` recordings,
    which it refuses for want of the page events, left out)."""
    dirs = sorted(os.path.join(root, n) for n in os.listdir(root)
                  if os.path.isdir(os.path.join(root, n)))
    return [d for d in dirs if conf(d).get("recipe") != "perfg"]


def scan(binary, d):
    cap = capture_file(d)
    return d, [errors(binary, cap, q) for q in GRID] if cap else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="/var/tmp/lockcast-matrix")
    ap.add_argument("--lockcast")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    binary = a.lockcast or find_lockcast()
    dirs = capture_dirs(a.dir)
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        got = list(ex.map(lambda d: scan(binary, d), dirs))
    by_conf = collections.defaultdict(list)
    within = [0] * len(GRID)
    scored = 0
    for d, errs in got:
        if not errs or all(e is None for e in errs):
            continue
        scored += 1
        for i, e in enumerate(errs):
            within[i] += worst(e) <= 15.0
        best = min(range(len(GRID)), key=lambda i: worst(errs[i]))
        f = conf(d)
        key = (f.get("workload"), f.get("size"), f.get("advice"), f.get("recipe"))
        by_conf[key].append((GRID[best], worst(errs[best])))
    print(f"# window quantile scan: {a.dir}, {scored} captures answered\n")
    print("| quantile | " + " | ".join(str(q) for q in GRID) + " |")
    print("|---|" + "---:|" * len(GRID))
    print("| both within 15% | " + " | ".join(f"{w} of {scored}" for w in within) + " |\n")
    print("Best quantile per capture (and its larger error, %), by configuration:\n")
    print("| workload | size | advice | recipe | captures | median best quantile | best quantile (larger error) each |")
    print("|---|---|---|---|---:|---:|---|")
    order = lambda k: (k[0] or "", SIZES.index(k[1]) if k[1] in SIZES else 9, k[2] or "", k[3] or "")
    for k in sorted(by_conf, key=order):
        v = sorted(by_conf[k])
        med = v[len(v) // 2][0]
        each = ", ".join(f"{q} ({e:.0f})" if e != math.inf else f"{q} (-)" for q, e in by_conf[k])
        print(f"| {' | '.join(x or '' for x in k)} | {len(v)} | {med} | {each} |")


if __name__ == "__main__":
    main()
