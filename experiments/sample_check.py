#!/usr/bin/env python3
"""Sampled bootstrap replicates against whole-capture ones (issue #16).

On a capture of more than twice `--sample N` holds + folios (default 50,000), each bootstrap
replicate of `lockcast whatif` replays 8 time windows holding about N of them and is scaled to
the whole by the windows' own point estimates (src/whatif/sample.rs). This script runs every
capture given twice, with the default and with `--sample 0` (every replicate replays the whole
capture, as before the change), and for the captures the default sampled reports:

  - each interval end (prediction and no-change replay; contended and total wait) as the
    difference sampled - whole, in % of the whole run's end and in widths of its interval;
  - the ratio of widths sampled / whole;
  - the wall time of both runs (one run each, sequential: a rough figure; bench/whatif.sh is
    the timing benchmark);
  - that the point estimates and the sensitivity rows are the same in both (they always replay
    the whole capture; a difference is a bug and the script exits 1).

usage: experiments/sample_check.py [--lockcast BIN] [--policy P] [--out FILE.md] CAPTURE...
  CAPTURE: a `lockcast record` directory, a perf.data or a text capture; e.g. the record
  captures of a matrix pass: /var/tmp/lockcast-matrix/*-record-r*
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def run(lockcast, policy, capture, extra):
    t0 = time.monotonic()
    p = subprocess.run([lockcast, "whatif", policy, capture, "--json", *extra],
                       capture_output=True, text=True)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        return None, dt, p.stderr.strip().splitlines()[-1:] or [""]
    return json.loads(p.stdout), dt, None


def ends(d):
    row = d["rows"][0]
    out = []
    for iv, name in (("interval", "prediction"), ("replayed_interval", "no-change")):
        for m, short in (("contended", "contended"), ("total_wait_ns", "wait")):
            out.append((f"{name} {short}", row[iv]["low"][m], row[iv]["high"][m]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lockcast", default="target/release/lockcast")
    ap.add_argument("--policy", default="lru-cache")
    ap.add_argument("--out")
    ap.add_argument("captures", nargs="+")
    a = ap.parse_args()

    lines = []
    per_end, widths, bad = [], [], []
    header = ("| capture | share | replicates whole / sampled | time whole / sampled (s) "
              "| largest end move: % of end, widths | width ratio sampled/whole (min-max) |")
    lines += [header, "|" + "---|" * 6]
    for cap in a.captures:
        s, ts, err = run(a.lockcast, a.policy, cap, [])
        if s is None:
            print(f"{cap}: {err[0]}", file=sys.stderr)
            continue
        b = s["bootstrap"]
        if not b.get("windows"):
            continue
        w, tw, err = run(a.lockcast, a.policy, cap, ["--sample", "0"])
        if w is None:
            print(f"{cap}: --sample 0: {err[0]}", file=sys.stderr)
            continue
        for k in ("measured", "replayed", "predicted"):
            if s["rows"][0][k] != w["rows"][0][k]:
                bad.append(f"{cap}: {k} differs")
        if s["sensitivity"] != w["sensitivity"]:
            bad.append(f"{cap}: sensitivity rows differ")
        worst = (0.0, 0.0)
        ratios = []
        for (name, wl, wh), (_, sl, sh) in zip(ends(w), ends(s)):
            width = max(wh - wl, 1)
            ratios.append((sh - sl) / width)
            for we, se in ((wl, sl), (wh, sh)):
                pct = (se - we) / max(we, 1) * 100
                wid = (se - we) / width
                per_end.append((abs(pct), abs(wid)))
                if abs(wid) > abs(worst[1]):
                    worst = (pct, wid)
        widths += ratios
        lines.append(
            f"| {os.path.basename(cap.rstrip('/'))} | {b['sampled_share'] * 100:.1f}% "
            f"| {w['bootstrap']['replicates']} / {b['replicates']} | {tw:.2f} / {ts:.2f} "
            f"| {worst[0]:+.1f}%, {worst[1]:+.2f} | {min(ratios):.2f}-{max(ratios):.2f} |")
    if per_end:
        pcts = sorted(p for p, _ in per_end)
        wids = sorted(w for _, w in per_end)
        q = lambda v, f: v[min(len(v) - 1, int(f * len(v)))]
        lines += ["", f"{len(per_end) // 8} sampled captures, {len(per_end)} interval ends:",
                  f"- end moves, % of the end: median {statistics.median(pcts):.1f}%, "
                  f"90th percentile {q(pcts, 0.9):.1f}%, largest {pcts[-1]:.1f}%",
                  f"- end moves, widths of the whole run's interval: median "
                  f"{statistics.median(wids):.2f}, 90th percentile {q(wids, 0.9):.2f}, "
                  f"largest {wids[-1]:.2f}",
                  f"- width ratio sampled / whole: median {statistics.median(widths):.2f}, "
                  f"range {min(widths):.2f}-{max(widths):.2f}"]
    if bad:
        lines += ["", "**point estimates or sensitivity rows differ:**"] + [f"- {x}" for x in bad]
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text, end="")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
