#!/usr/bin/env python3
"""Score the what-if validation matrix recorded by experiments/matrix.sh (issue #15 §3).

For every capture: the no-change replay (`lockcast whatif baseline`) against what the capture
itself measured (traced lru_lock waits), contended count and total wait, and the answer's
confidence verdict when lockcast prints one. For every folio-size pair (same workload, threads,
region, run length, advice, recipe and run; base size != target size): `lockcast validate
folio-size BASE AFTER`, the prediction against the target capture's measurement.

Nothing is tuned here: lockcast calibrates from each base capture alone; the folio-size time
scale comes from the target's untraced `perf stat` run where `lockcast record` made one (a plain
recipe has none: the default scale 1 is what such a user gets).

A capture lockcast refuses (missing events, say) is counted as refused with its message, not
dropped. Where lockcast asks for `--observation` (a plain recording without call chains or meta
file), the score reruns with `--observation paravirt`, as its message tells the user to do here.

Writes experiments/results/matrix.md, matrix-captures.csv and matrix-pairs.csv.

The run-to-run section asks what no model can beat: how far one run of a configuration is from
its siblings (same workload, size, threads, region, loops, advice, recipe; another run). A
folio-size prediction is compared with one run of the target, so the siblings' spread is the
measurement's own share of its error.

usage: experiments/matrix_score.py [--dir /var/tmp/lockcast-matrix] [--lockcast BIN] [--jobs 2] [--out DIR] [--no-pairs]
       experiments/matrix_score.py --rescore [--out DIR] [--lockcast BIN]
           (rewrite matrix.md from the CSVs there; BIN only names the version that made them)
"""
import argparse
import concurrent.futures as cf
import csv
import json
import os
import statistics as st
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
SIZES = ["4K", "16K", "32K", "64K", "128K"]
GOOD_REPLAY, GOOD_PAIR = 15.0, 30.0  # the targets, percent


def find_lockcast():
    for d in [os.environ.get("CARGO_TARGET_DIR", ""), os.path.join(REPO, "target")]:
        p = os.path.join(d, "release", "lockcast")
        if d and os.access(p, os.X_OK):
            return p
    sys.exit("no release lockcast: cargo build --release, or pass --lockcast")


def key_values(path):
    """`key=value` lines (a capture's `factors` and meta files)."""
    with open(path) as fh:
        return dict(line.rstrip("\n").partition("=")[::2] for line in fh)


def factors(d):
    return key_values(os.path.join(d, "factors"))


def capture_file(d):
    for n in ["perf.data", "report-t.txt.gz", "script-ns.txt.gz"]:
        if os.path.exists(os.path.join(d, n)):
            return os.path.join(d, n)
    return None


def run(binary, args):
    """lockcast's JSON, or (None, message); reruns with --observation paravirt when asked."""
    extra = []
    for _ in range(2):
        r = subprocess.run([binary, *args, *extra, "--bootstrap", "0", "--json"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            return json.loads(r.stdout), ("--observation paravirt" if extra else ""), r.stderr
        if "--observation" in r.stderr and not extra:
            extra = ["--observation", "paravirt"]
            continue
        msg = r.stderr.strip().splitlines()
        return None, (msg[0] if msg else f"exit {r.returncode}")[:300], r.stderr
    return None, "unreachable", ""


def pct(p, m):
    return None if not m else (p - m) / m * 100.0


def metrics(row, key):
    m = row[key]
    return m["contended"], m["total_wait_ns"]


def score_capture(binary, d):
    f = factors(d)
    cap = capture_file(d)
    out = dict(id=os.path.basename(d), **f)
    j, flag, _ = run(binary, ["whatif", "baseline", cap])
    out["flag"] = flag if j else ""
    if j is None:
        out["refused"] = flag
        return out
    row = j["rows"][0]
    mc, mw = metrics(row, "measured")
    rc, rw = metrics(row, "replayed")
    out.update(measured_contended=mc, replayed_contended=rc, measured_wait_ns=mw,
               replayed_wait_ns=rw, err_contended=pct(rc, mc), err_wait=pct(rw, mw),
               acquisitions=row["measured"]["acquisitions"])
    v = j.get("verdict") or row.get("verdict")
    if v:
        # the total wait split at the tail cut (MODELS.md §5b): the body's error, and the
        # tail's share of each side's total wait
        t = v.get("tail")
        if t:
            out["err_wait_body"] = t.get("body_wait_error_pct")
            out["tail_cut_ns"] = t["cut_ns"]
            out["tail_measured"] = t["measured_waits"]
            out["tail_replayed"] = t["replayed_waits"]
            out["tail_share_measured"] = t["measured_wait_ns"] / mw * 100.0 if mw else None
            out["tail_share_replayed"] = t["replayed_wait_ns"] / rw * 100.0 if rw else None
        out["verdict"] = v.get("level", "")
        out["verdict_reasons"] = "; ".join(v.get("reasons", []))[:300]
    out["notes"] = " | ".join(j.get("notes", []))[:400]
    # the stalls the replay re-draws (MODELS.md §5a): how many, and their share of the waits
    cal = j.get("calibration") or {}
    out.update(n_stalls=cal.get("n_stalls", 0), stall_share=cal.get("stall_share", 0.0))
    return out


def score_pair(binary, base, after, target_kb, plain):
    args = ["validate", "folio-size", capture_file(base), capture_file(after)]
    if plain:
        args += ["--set", f"folio_kb={target_kb}"]
    j, flag, _ = run(binary, args)
    fb, fa = factors(base), factors(after)
    out = dict(base=os.path.basename(base), after=os.path.basename(after),
               base_size=fb["size"], target_size=fa["size"], workload=fb["workload"],
               recipe=fb["recipe"], group=group_key(fb))
    if j is None:
        out["refused"] = flag
        return out
    row = j["rows"][0]
    pc, pw = metrics(row, "predicted")
    ac, aw = metrics(row, "after")
    out.update(predicted_contended=pc, after_contended=ac, predicted_wait_ns=pw,
               after_wait_ns=aw, err_contended=pct(pc, ac), err_wait=pct(pw, aw), flag=flag)
    v = j.get("verdict") or row.get("verdict")
    if v:
        out["verdict"] = v.get("level", "")
    # the counting identity: lock acquisitions predicted for the target size against its own
    pa, aa = row["predicted"]["acquisitions"], row["after"]["acquisitions"]
    out.update(predicted_acquisitions=pa, after_acquisitions=aa, err_acquisitions=pct(pa, aa))
    return out


def group_key(f):
    return f"{f['workload']} t{f['threads']} s{f['region']} l{f['loops']} {f['advice']} {f['recipe']} r{f['run']}"


def share(xs, bound):
    xs = [x for x in xs if x is not None]
    return (sum(abs(x) <= bound for x in xs), len(xs))


def med_abs(xs):
    xs = [abs(x) for x in xs if x is not None]
    return st.median(xs) if xs else None


def fmt(x):
    return "-" if x is None else f"{x:+.1f}%"


def write_csv(path, rows):
    keys = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.2f}" if isinstance(v, float) else v) for k, v in r.items()})


def read_csv(path):
    """Rows of a CSV this script wrote, with its numbers as numbers and its empty cells dropped."""
    rows = []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            out = {}
            for k, v in r.items():
                if v == "":
                    continue
                if k.startswith("err_") or "_share" in k:
                    out[k] = float(v)
                elif k.endswith(("_contended", "_wait_ns", "_acquisitions")) or k in (
                        "acquisitions", "n_stalls", "tail_cut_ns", "tail_measured", "tail_replayed"):
                    out[k] = int(v)
                else:
                    out[k] = v
            rows.append(out)
    return rows


def config_key(c):
    return tuple(c[k] for k in ("workload", "size", "threads", "region", "loops", "advice", "recipe"))


def sibling_errors(caps, key):
    """Per configuration with two or more measured runs: every run's value taken as the
    prediction of every other run's, signed percent (the run-to-run floor of a pair's error)."""
    by = {}
    for c in caps:
        if c.get(key) is not None and "refused" not in c:
            by.setdefault(config_key(c), []).append(c)
    errs = {}
    for k, runs in by.items():
        for a in runs:
            for b in runs:
                if a is not b and b[key]:
                    errs.setdefault(k, []).append(pct(a[key], b[key]))
    return errs


def write_vs_median(w, caps, pairs):
    """folio-size pairs whose target configuration has 3 or more measured runs, scored against
    the median of those runs instead of the one run paired with the base."""
    runs = {}
    for c in caps:
        if c.get("measured_contended") is not None and "refused" not in c:
            runs.setdefault(config_key(c), []).append(c)
    byid = {c["id"]: c for c in caps}
    rows = []
    for p in pairs:
        t = byid.get(p["after"])
        if p.get("predicted_contended") is None or t is None:
            continue
        rs = runs.get(config_key(t), [])
        if len(rs) < 3:
            continue
        mc = st.median(r["measured_contended"] for r in rs)
        mw = st.median(r["measured_wait_ns"] for r in rs)
        rows.append((t["advice"], pct(p["predicted_contended"], mc), pct(p["predicted_wait_ns"], mw),
                     p.get("err_contended"), p.get("err_wait")))
    if not rows:
        return
    w("\nThe same pairs where the target configuration has 3 runs, scored against the median of "
      "those runs (the configuration) as well as against the one run paired with the base:\n")
    w(f"| advice | pairs | contended within {GOOD_PAIR:.0f}% (median of runs / one run) | "
      f"median abs | total wait within {GOOD_PAIR:.0f}% | median abs |")
    w("|---|---:|---:|---:|---:|---:|")
    for adv in sorted({r[0] for r in rows}) + ["all"]:
        sel = [r for r in rows if adv in ("all", r[0])]
        a, n = share([r[1] for r in sel], GOOD_PAIR)
        a1, _ = share([r[3] for r in sel], GOOD_PAIR)
        b, _ = share([r[2] for r in sel], GOOD_PAIR)
        b1, _ = share([r[4] for r in sel], GOOD_PAIR)
        m, m1 = med_abs([r[1] for r in sel]), med_abs([r[3] for r in sel])
        mw_, mw1 = med_abs([r[2] for r in sel]), med_abs([r[4] for r in sel])
        w(f"| {adv} | {n} | {a}/{n} / {a1}/{n} | {m:.1f}% / {m1:.1f}% | {b}/{n} / {b1}/{n} | {mw_:.1f}% / {mw1:.1f}% |")


def write_spread(w, caps):
    w("\n## Run-to-run: how far one run is from its siblings\n")
    w("Each measured run of a configuration taken as the prediction of each other run of the same "
      f"configuration (no model involved). This is the floor under a folio-size pair's error: the "
      f"pair compares a prediction with one run of the target.\n")
    w(f"| recipe | workload | advice | configurations | run pairs | contended within {GOOD_PAIR:.0f}% | "
      f"within {GOOD_REPLAY:.0f}% | median abs (contended) | total wait within {GOOD_PAIR:.0f}% | median abs (wait) |")
    w("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    ec, ew = sibling_errors(caps, "measured_contended"), sibling_errors(caps, "measured_wait_ns")
    keys = sorted({(k[6], k[0], k[5]) for k in ec}) + [("all", "all", "all")]
    for rc, wl, adv in keys:
        sel = [k for k in ec if (rc == "all" or k[6] == rc) and (wl == "all" or k[0] == wl)
               and (adv == "all" or k[5] == adv)]
        xc = [x for k in sel for x in ec[k]]
        xw = [x for k in sel for x in ew.get(k, [])]
        a, n = share(xc, GOOD_PAIR)
        b, _ = share(xc, GOOD_REPLAY)
        cw, nw = share(xw, GOOD_PAIR)
        mc, mw = med_abs(xc), med_abs(xw)
        w(f"| {rc} | {wl} | {adv} | {len(sel)} | {n} | {a}/{n} | {b}/{n} | "
          f"{'-' if mc is None else f'{mc:.1f}%'} | {cw}/{nw} | {'-' if mw is None else f'{mw:.1f}%'} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/var/tmp/lockcast-matrix")
    ap.add_argument("--lockcast")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=RESULTS, help="results directory (default experiments/results)")
    ap.add_argument("--no-pairs", action="store_true", help="only the no-change replay of each capture")
    ap.add_argument("--rescore", action="store_true", help="rewrite matrix.md from the CSVs in --out, running nothing")
    a = ap.parse_args()
    if a.rescore:
        caps, pairs = read_csv(os.path.join(a.out, "matrix-captures.csv")), read_csv(os.path.join(a.out, "matrix-pairs.csv"))
        write_md(os.path.join(a.out, "matrix.md"), a.dir, a.lockcast, caps, pairs)
        print(open(os.path.join(a.out, "matrix.md")).read())
        return
    binary = a.lockcast or find_lockcast()
    dirs = sorted(os.path.join(a.dir, d) for d in os.listdir(a.dir)
                  if os.path.exists(os.path.join(a.dir, d, "done")))
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        caps = list(ex.map(lambda d: score_capture(binary, d), dirs))
    by_group = {}
    for d in dirs:
        f = factors(d)
        by_group.setdefault(group_key(f), {})[f["size"]] = d
    jobs = []
    for g, sizes in ({} if a.no_pairs else by_group).items():
        for sb, base in sizes.items():
            for stg, after in sizes.items():
                if sb != stg:
                    plain = factors(base)["recipe"] != "record"
                    jobs.append((base, after, int(stg.rstrip("K")), plain))
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        pairs = list(ex.map(lambda j: score_pair(binary, *j), jobs))
    os.makedirs(a.out, exist_ok=True)
    write_csv(os.path.join(a.out, "matrix-captures.csv"), caps)
    write_csv(os.path.join(a.out, "matrix-pairs.csv"), pairs)
    write_md(os.path.join(a.out, "matrix.md"), a.dir, binary, caps, pairs)
    print(open(os.path.join(a.out, "matrix.md")).read())


def summary_table(w, items, noun, bound, both):
    """One row per (recipe, workload) and a total: how many are within `bound` percent on the
    contended count and on total wait (and on both, for the no-change replay)."""
    head = f"| recipe | workload | {noun} | refused | contended within {bound:.0f}% | total wait within {bound:.0f}% |"
    head += " both |" if both else ""
    w(head + " median abs error (contended / wait) |")
    w("|---|---|---:|---:|---:|---:|" + ("---:|" if both else "") + "---|")
    keys = sorted({(i["recipe"], i["workload"]) for i in items}) + [("all", "all")]
    for rc, wl in keys:
        sel = [i for i in items if (rc == "all" or i["recipe"] == rc) and (wl == "all" or i["workload"] == wl)]
        ok = [i for i in sel if "refused" not in i]
        a, n = share([i.get("err_contended") for i in ok], bound)
        b, _ = share([i.get("err_wait") for i in ok], bound)
        mc, mw = med_abs([i.get("err_contended") for i in ok]), med_abs([i.get("err_wait") for i in ok])
        cell = ""
        if both:
            k = sum(1 for i in ok if all(i.get(e) is not None and abs(i[e]) <= bound
                                         for e in ("err_contended", "err_wait")))
            cell = f" {k}/{n} |"
        w(f"| {rc} | {wl} | {len(sel)} | {len(sel) - len(ok)} | {a}/{n} | {b}/{n} |{cell} "
          f"{'-' if mc is None else f'{mc:.1f}%'} / {'-' if mw is None else f'{mw:.1f}%'} |")


def read_meta(d):
    """A capture's meta file (`lockcast record`'s, else the plain recipes' meta.plain)."""
    for name in ("meta", "meta.plain"):
        try:
            return key_values(os.path.join(d, name))
        except OSError:
            pass
    return {}


# The configuration whose untraced run time stands for the host's speed in the header: the
# accuracy figures depend on the host (experiments/results/pass-2026-12-04/), so every table
# says which one it was measured on.
REFERENCE = "lrufault-16K-t2-s16-l10-dontneed-record-r"


def host_line(src):
    """The recording machine, from the captures' meta files (empty when they are not here)."""
    try:
        metas = {n: read_meta(os.path.join(src, n)) for n in sorted(os.listdir(src))}
    except OSError:
        return ""
    metas = {n: m for n, m in metas.items() if m}
    if not metas:
        return ""

    def values(k):
        return sorted({m[k] for m in metas.values() if k in m})

    dates = values("capture_date")
    ref = [int(m.get("untraced_duration_ns", 0)) / 1e6 for n, m in metas.items()
           if n.startswith(REFERENCE)]
    ref = [r for r in ref if r > 0]
    line = (f"Recorded on: kernel {', '.join(values('kernel'))}, {', '.join(values('nproc'))} CPUs, "
            f"{', '.join(values('perf_version'))}")
    if dates:
        line += f", {dates[0][:10]} to {dates[-1][:10]}"
    if ref:
        line += (f"; host speed: `{REFERENCE}*` ran untraced in {st.median(ref):.1f} ms "
                 f"(median of {len(ref)})")
    return line + "."


def write_md(path, src, binary, caps, pairs):
    L = []
    w = L.append
    version = (subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
               if binary else "rescored from its CSVs")
    scored = [c for c in caps if "refused" not in c]
    w("# What-if validation matrix\n")
    w(f"Made by `experiments/matrix.sh` (captures) and `experiments/matrix_score.py` (this file), "
      f"{version}; {len(caps)} captures, {len(pairs)} folio-size pairs. Targets (issue #15): "
      f"no-change replay within {GOOD_REPLAY:.0f}% on >= 90% of captures (contended and total "
      f"wait), folio-size within {GOOD_PAIR:.0f}% on >= 75% of pairs.\n")
    host = host_line(src)
    if host:
        w(host + "\n")
    w("## No-change replay against the capture itself\n")
    summary_table(w, caps, "captures", GOOD_REPLAY, both=True)
    w("\nWorst ten by contended error (the notes lockcast printed name the cause it could see):\n")
    w("| capture | measured | replayed | error | wait error | verdict | notes |")
    w("|---|---:|---:|---:|---:|---|---|")
    worst = sorted([c for c in scored if c.get("err_contended") is not None],
                   key=lambda c: -abs(c["err_contended"]))[:10]
    for c in worst:
        w(f"| {c['id']} | {c['measured_contended']} | {c['replayed_contended']} | {fmt(c['err_contended'])} | "
          f"{fmt(c['err_wait'])} | {c.get('verdict', '-')} | {c.get('notes', '')[:160]} |")
    split = [c for c in scored if c.get("err_wait_body") is not None and c.get("err_wait") is not None]
    if split:
        tot = sum(1 for c in split if abs(c["err_wait"]) <= GOOD_REPLAY)
        body = sum(1 for c in split if abs(c["err_wait_body"]) <= GOOD_REPLAY)
        tail_miss = [c for c in split if abs(c["err_wait"]) > GOOD_REPLAY
                     and abs(c["err_wait_body"]) <= GOOD_REPLAY]
        both = sum(1 for c in split if c.get("err_contended") is not None
                   and abs(c["err_contended"]) <= GOOD_REPLAY and abs(c["err_wait_body"]) <= GOOD_REPLAY)
        w(f"\nTotal wait split at the tail cut (the stall cut past the 99th-percentile modelled "
          f"hold; the waits up to it, the body, against the capture's; reported, not a target; "
          f"MODELS.md §5b), {len(split)} captures with a cut: total wait within "
          f"{GOOD_REPLAY:.0f}% on {tot}, the body's wait on {body}; median abs error "
          f"{st.median(abs(c['err_wait']) for c in split):.1f}% (total) / "
          f"{st.median(abs(c['err_wait_body']) for c in split):.1f}% (body). On "
          f"{len(tail_miss)} the total wait misses and the body does not: there the miss is in "
          f"the tail (median share of the measured total wait above the cut "
          f"{st.median(c.get('tail_share_measured') or 0 for c in tail_miss) if tail_miss else 0:.0f}%, "
          f"of the replayed "
          f"{st.median(c.get('tail_share_replayed') or 0 for c in tail_miss) if tail_miss else 0:.0f}%). "
          f"Contended and the body's wait both within {GOOD_REPLAY:.0f}%: {both}.")
    refused = [c for c in caps if "refused" in c]
    if refused:
        w("\nRefused captures:\n")
        for c in refused:
            w(f"- {c['id']}: {c['refused']}")
    w("\n## folio-size: predict another mTHP size, compare with its capture\n")
    summary_table(w, pairs, "pairs", GOOD_PAIR, both=False)
    w("\nBy base size -> target size (record recipe, median contended error over groups):\n")
    rec = [p for p in pairs if p["recipe"] == "record" and p.get("err_contended") is not None]
    w("| base \\ target | " + " | ".join(SIZES) + " |")
    w("|---|" + "---:|" * len(SIZES))
    for sb in SIZES:
        cells = []
        for stg in SIZES:
            xs = [p["err_contended"] for p in rec if p["base_size"] == sb and p["target_size"] == stg]
            cells.append("-" if not xs else f"{st.median(xs):+.0f}%")
        w(f"| {sb} | " + " | ".join(cells) + " |")
    write_vs_median(w, caps, pairs)
    acq = [p for p in pairs if p.get("err_acquisitions") is not None]
    if acq:
        w("\nThe counting identity: lock acquisitions predicted for the target size against the "
          "target capture's own (no timing involved):\n")
        w("| recipe | workload | pairs | within 5% | within 15% | median abs error | worst |")
        w("|---|---|---:|---:|---:|---:|---:|")
        keys = sorted({(p["recipe"], p["workload"]) for p in acq}) + [("all", "all")]
        for rc, wl in keys:
            xs = [abs(p["err_acquisitions"]) for p in acq
                  if rc == "all" or (p["recipe"], p["workload"]) == (rc, wl)]
            w(f"| {rc} | {wl} | {len(xs)} | {sum(x <= 5 for x in xs)} | {sum(x <= 15 for x in xs)} | "
              f"{st.median(xs):.1f}% | {max(xs):.1f}% |")
    w("\nWorst ten pairs:\n")
    w("| base | after | predicted | measured | error | wait error |")
    w("|---|---|---:|---:|---:|---:|")
    for p in sorted([p for p in pairs if p.get("err_contended") is not None],
                    key=lambda p: -abs(p["err_contended"]))[:10]:
        w(f"| {p['base']} | {p['target_size']} | {p['predicted_contended']} | {p['after_contended']} | "
          f"{fmt(p['err_contended'])} | {fmt(p['err_wait'])} |")
    levels = sorted({c.get("verdict") for c in scored if c.get("verdict")})
    if levels:
        w("\n## Does the verdict tell good answers from bad ones?\n")
        w("Folio-size pairs grouped by the verdict lockcast gave the base capture's answer:\n")
        w("| verdict | pairs | contended within 30% | median abs error (contended) |")
        w("|---|---:|---:|---:|")
        vb = {c["id"]: c.get("verdict") for c in scored}
        for lv in levels:
            ps = [p for p in pairs if vb.get(p["base"]) == lv and p.get("err_contended") is not None]
            a, n = share([p["err_contended"] for p in ps], GOOD_PAIR)
            mc = med_abs([p["err_contended"] for p in ps])
            w(f"| {lv} | {n} | {a}/{n} | {'-' if mc is None else f'{mc:.1f}%'} |")
    write_spread(w, caps)
    w(f"\nRaw figures: matrix-captures.csv, matrix-pairs.csv (same directory). Captures from {src}.")
    with open(path, "w") as fh:
        fh.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
