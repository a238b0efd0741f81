//! `diff --base B1 B2 B3 --patched P1 P2 P3` on the bundled three-run sets: the medians, the
//! min–max, the ratio of medians, its 95% bootstrap interval and the verdict, recomputed here
//! from the numbers `perf lock contention` printed in each capture (read as text, not through
//! lockcast).

use crate::common::{fixture, lockcast, stderr, stdout};

/// `18.73 ms` -> ns, in integers as printed (perf's `%.2f` of the unit).
fn ns(value: &str, unit: &str) -> u64 {
    let scale: u64 = match unit {
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        other => panic!("unit {other:?}"),
    };
    match value.split_once('.') {
        Some((i, f)) => {
            let frac: u64 = f.parse().unwrap();
            i.parse::<u64>().unwrap() * scale + frac * scale / 10u64.pow(f.len() as u32)
        }
        None => value.parse::<u64>().unwrap() * scale,
    }
}

/// (contended, total wait ns) of every row whose caller column is `caller` (summed: none of
/// the rows used here repeats), or of all rows when `caller` is None.
fn raw(path: &str, caller: Option<&str>) -> (u64, u64) {
    let text = std::fs::read_to_string(fixture(path)).unwrap();
    let mut out = (0, 0);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // contended, total wait (value unit), max wait, avg wait, type, caller
        if f.len() < 9 || f[0].parse::<u64>().is_err() {
            continue;
        }
        if caller.is_some_and(|c| f[8] != c) {
            continue;
        }
        out.0 += f[0].parse::<u64>().unwrap();
        out.1 += ns(f[1], f[2]);
    }
    out
}

struct Expect {
    median: (f64, f64),
    ratio: f64,
    interval: (f64, f64),
    verdict: &'static str,
}

/// The rule `diff --help` states, applied to three runs per side: the 2.5% / 97.5%
/// bootstrap quantiles of the ratio of medians are the extreme ratios.
fn expect(b: &[u64], p: &[u64]) -> Expect {
    let med = |v: &[u64]| {
        let mut s = v.to_vec();
        s.sort();
        s[1] as f64
    };
    let (bmin, bmax) = (*b.iter().min().unwrap(), *b.iter().max().unwrap());
    let (pmin, pmax) = (*p.iter().min().unwrap(), *p.iter().max().unwrap());
    let interval = (bmin as f64 / pmax as f64, bmax as f64 / pmin as f64);
    let verdict = if interval.0 > 1.0 && pmax < bmin {
        "reduction"
    } else if interval.1 < 1.0 && pmin > bmax {
        "regression"
    } else {
        "noise"
    };
    Expect {
        median: (med(b), med(p)),
        ratio: med(b) / med(p),
        interval,
        verdict,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn check(cmp: &serde_json::Value, e: &Expect, what: &str) {
    let f = |k: &str| {
        cmp[k]
            .as_f64()
            .unwrap_or_else(|| panic!("{what}: {k} in {cmp}"))
    };
    assert!(
        close(cmp["base"]["median"].as_f64().unwrap(), e.median.0),
        "{what}: {cmp}"
    );
    assert!(
        close(cmp["patched"]["median"].as_f64().unwrap(), e.median.1),
        "{what}: {cmp}"
    );
    assert!(
        close(f("ratio"), e.ratio),
        "{what}: ratio {} vs {}",
        f("ratio"),
        e.ratio
    );
    let iv = &cmp["interval"];
    let (lo, hi) = (iv[0].as_f64().unwrap(), iv[1].as_f64().unwrap());
    assert!(
        close(lo, e.interval.0) && close(hi, e.interval.1),
        "{what}: interval [{lo}, {hi}], expected {:?}",
        e.interval
    );
    assert_eq!(cmp["verdict"], e.verdict, "{what}");
}

fn runs_json(base: &[String], patched: &[String]) -> serde_json::Value {
    let mut args = vec!["diff", "--json", "--base"];
    args.extend(base.iter().map(String::as_str));
    args.push("--patched");
    args.extend(patched.iter().map(String::as_str));
    let o = lockcast(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn paths(pattern: &str) -> Vec<String> {
    (1..=3)
        .map(|r| {
            fixture(&pattern.replace("{r}", &r.to_string()))
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

#[test]
fn capture_runs_lru_lock_row_and_total_match_the_raw_tables() {
    let (b, p) = (
        "captures/micro-16K-r{r}/contention.txt",
        "captures/micro-4K-r{r}/contention.txt",
    );
    let d = runs_json(&paths(b), &paths(p));
    let raw_of = |pat: &str, caller| -> Vec<(u64, u64)> {
        (1..=3)
            .map(|r| raw(&pat.replace("{r}", &r.to_string()), caller))
            .collect()
    };
    for caller in [Some("folio_batch_move_lru+0x88"), None] {
        let (rb, rp) = (raw_of(b, caller), raw_of(p, caller));
        let row = match caller {
            Some(c) => d["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["key"] == format!("spinlock {c}"))
                .unwrap()
                .clone(),
            None => d["total"].clone(),
        };
        let c = |v: &[(u64, u64)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
        let w = |v: &[(u64, u64)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
        let what = format!("{caller:?}");
        check(&row["contended"], &expect(&c(&rb), &c(&rp)), &what);
        check(&row["total_wait_ns"], &expect(&w(&rb), &w(&rp)), &what);
    }
    // 14082, 13967, 15190 against 754, 905, 748: 16K folios contend far more on this kernel.
    assert_eq!(d["rows"][0]["contended"]["verdict"], "reduction");
}

#[test]
fn replay_runs_give_noise_and_regression_verdicts_from_the_raw_tables() {
    // Each replay table has one row (caller Unknown; its type differs between runs, so rows
    // do not match across runs and the total carries the comparison).
    let cases = [
        ("16K", "64K", "reduction", "noise"),
        ("16K", "4K", "noise", "regression"),
        ("32K", "4K", "regression", "regression"),
    ];
    for (base, patched, v_contended, v_wait) in cases {
        let b = format!("replay/micro-{base}-r{{r}}/contention.txt");
        let p = format!("replay/micro-{patched}-r{{r}}/contention.txt");
        let d = runs_json(&paths(&b), &paths(&p));
        let side = |pat: &str| -> (Vec<u64>, Vec<u64>) {
            (1..=3)
                .map(|r| raw(&pat.replace("{r}", &r.to_string()), None))
                .unzip()
        };
        let ((bc, bw), (pc, pw)) = (side(&b), side(&p));
        let what = format!("{base} vs {patched}");
        let (ec, ew) = (expect(&bc, &pc), expect(&bw, &pw));
        assert_eq!((ec.verdict, ew.verdict), (v_contended, v_wait), "{what}");
        check(&d["total"]["contended"], &ec, &what);
        check(&d["total"]["total_wait_ns"], &ew, &what);
    }
}

#[test]
fn runs_output_formats_and_usage() {
    let (b, p) = (
        paths("captures/micro-16K-r{r}/contention.txt"),
        paths("captures/micro-4K-r{r}/contention.txt"),
    );
    let run = |fmt: &str| {
        let mut args = vec!["diff", "--format", fmt, "--base"];
        args.extend(b.iter().map(String::as_str));
        args.push("--patched");
        args.extend(p.iter().map(String::as_str));
        let o = lockcast(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let csv = run("csv");
    let line = csv
        .lines()
        .find(|l| l.starts_with("spinlock folio_batch_move_lru+0x88,key,contended,"))
        .unwrap();
    // The per-run values as perf printed them, base then patched.
    assert!(line.contains(",14082;13967;15190,754;905;748,"), "{line}");
    let text = run("text");
    assert!(
        text.contains("14082 [13967–15190]") && text.contains("754 [748–905]"),
        "{text}"
    );
    assert!(text.contains("reduction"), "{text}");
    assert!(run("markdown").contains("| ratio [95% CI] |"));
    // Mixing the forms, or one side only, is a usage error.
    let o = lockcast(&["diff", &b[0], &p[0], "--base", &b[1]]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = lockcast(&["diff", "--base", &b[0], &b[1]]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn plot_ab_over_runs_draws_medians_whiskers_and_the_interval() {
    let (bp, pp) = (
        "captures/micro-16K-r{r}/contention.txt",
        "captures/micro-4K-r{r}/contention.txt",
    );
    let (b, p) = (paths(bp), paths(pp));
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("ab-runs.svg");
    let mut args = vec![
        "plot",
        "ab",
        "--top",
        "3",
        "-o",
        svg.to_str().unwrap(),
        "--base",
    ];
    args.extend(b.iter().map(String::as_str));
    args.push("--patched");
    args.extend(p.iter().map(String::as_str));
    let o = lockcast(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    let c = |pat: &str| -> Vec<u64> {
        (1..=3)
            .map(|r| {
                raw(
                    &pat.replace("{r}", &r.to_string()),
                    Some("folio_batch_move_lru+0x88"),
                )
                .0
            })
            .collect()
    };
    let e = expect(&c(bp), &c(pp));
    let note = format!(
        "{:.2}x [{:.2}x–{:.2}x]",
        e.ratio, e.interval.0, e.interval.1
    );
    assert!(text.contains(&note), "no {note:?} in the SVG");
    assert!(text.contains("micro-16K-r1 … (3 runs)"), "legend");
}
