//! `lockcast flamegraph`: folded sums against `report` and against what perf printed of the same
//! recording, `-v` stacks against the printed stack, the differential graph's colours against
//! the direction the raw tables show, and captures without call chains refused.

use crate::common::*;

type Stacks = Vec<(Vec<String>, u64)>;

fn parse_folded(text: &str) -> Stacks {
    text.lines()
        .map(|l| {
            let (s, w) = l.rsplit_once(' ').expect("folded line: stack weight");
            (
                s.split(';').map(String::from).collect(),
                w.parse().expect("integer weight"),
            )
        })
        .collect()
}

fn folded(args: &[&str]) -> Stacks {
    let mut a = vec!["flamegraph"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", "-"]);
    let o = lockcast(&a);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    parse_folded(&stdout(&o))
}

fn sum(s: &Stacks) -> u64 {
    s.iter().map(|(_, w)| w).sum()
}

/// `report --json` of a whole input: (contended, total wait ns).
fn report_total(args: &[&str]) -> (u64, u64) {
    let mut a = vec!["report"];
    a.extend_from_slice(args);
    a.push("--json");
    let o = lockcast(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    let t = &v[0]["total"];
    (
        t["contended"].as_u64().unwrap(),
        t["total_wait_ns"].as_u64().unwrap(),
    )
}

/// The rows of a `perf lock contention` table as perf printed them, read here with nothing but
/// `split_whitespace`: (contended, total wait ns, rounding of the printed total wait ns, caller).
fn perf_rows(path: &str) -> Vec<(u64, f64, f64, String)> {
    let text = std::fs::read_to_string(fixture(path)).unwrap();
    text.lines()
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let contended: u64 = t.first()?.parse().ok()?;
            let unit = match *t.get(2)? {
                "ns" => 1.0,
                "us" => 1e3,
                "ms" => 1e6,
                "s" => 1e9,
                _ => return None,
            };
            let v: f64 = t[1].parse().ok()?;
            let decimals = t[1].split_once('.').map_or(0, |(_, d)| d.len()) as i32;
            let err = 0.5 * 10f64.powi(-decimals) * unit;
            Some((contended, v * unit, err, t.last()?.to_string()))
        })
        .collect()
}

const PD: &str = "fixtures/perfdata/micro-16K-g/perf.data.gz";
const PD_KALLSYMS: &str = "fixtures/perfdata/micro-16K-g/kallsyms.gz";

#[test]
fn flamegraph_folded_sums_are_reports_total_on_every_input_with_call_chains() {
    let inputs: &[&[&str]] = &[
        &["fixtures/captures/micro-16K-r1/contention-v.txt"],
        &["fixtures/captures/micro-4K-r2/contention-v.txt"],
        &["fixtures/perf-script/lrufault-lock-lru-kmem-g.txt"],
        &["fixtures/traces/micro-16K-g/script-ns.txt.gz"],
        &["fixtures/fbatch/churn-4K-g/script-ns.txt.gz"],
        &[PD, "--kallsyms", PD_KALLSYMS],
    ];
    for args in inputs {
        let (contended, wait) = report_total(args);
        assert!(wait > 0, "{args:?}");
        let by_wait = folded(args);
        assert_eq!(sum(&by_wait), wait, "{args:?}: folded wait vs report");
        let mut a = args.to_vec();
        a.extend_from_slice(&["--weight", "count"]);
        assert_eq!(
            sum(&folded(&a)),
            contended,
            "{args:?}: folded count vs report"
        );
        for (stack, _) in &by_wait {
            assert!(
                ["spinlock", "rwsem:R", "rwsem:W", "mutex"].contains(&stack[0].as_str()),
                "{args:?}: root frame {stack:?}"
            );
            assert!(stack.iter().all(|f| !f.contains("+0x")), "{stack:?}");
        }
    }
}

#[test]
fn flamegraph_perf_data_agrees_with_perf_lock_contention_of_the_same_file() {
    let rows = perf_rows("perfdata/micro-16K-g/contention.txt");
    assert_eq!(rows.len(), 4);
    let contended: u64 = rows.iter().map(|r| r.0).sum();
    let (wait, err): (f64, f64) = rows.iter().fold((0.0, 0.0), |a, r| (a.0 + r.1, a.1 + r.2));
    let by_count = folded(&[PD, "--kallsyms", PD_KALLSYMS, "--weight", "count"]);
    assert_eq!(sum(&by_count), contended);
    let by_wait = folded(&[PD, "--kallsyms", PD_KALLSYMS]);
    assert!(
        (sum(&by_wait) as f64 - wait).abs() <= err,
        "{} vs perf's {wait} ± {err}",
        sum(&by_wait)
    );
    // one caller: perf's row folio_batch_move_lru+0x88
    let fb = rows
        .iter()
        .find(|r| r.3 == "folio_batch_move_lru+0x88")
        .unwrap();
    let one = folded(&[
        PD,
        "--kallsyms",
        PD_KALLSYMS,
        "--caller",
        "folio_batch_move_lru+0x88",
        "--weight",
        "count",
    ]);
    assert_eq!(sum(&one), fb.0);
    // the shared filter: a type and a /REGEX/ caller select the same row
    let typed = folded(&[
        PD,
        "--kallsyms",
        PD_KALLSYMS,
        "--type",
        "spin",
        "--caller",
        "/^folio_batch_move_lru\\+0x88$/",
        "--weight",
        "count",
    ]);
    assert_eq!(sum(&typed), fb.0);
    let one = folded(&[
        PD,
        "--kallsyms",
        PD_KALLSYMS,
        "--caller",
        "folio_batch_move_lru",
    ]);
    assert!((sum(&one) as f64 - fb.1).abs() <= fb.2);
    for (stack, _) in &one {
        let n = stack.len();
        assert_eq!(
            &stack[n - 4..],
            [
                "folio_batch_move_lru",
                "folio_lruvec_lock_irqsave",
                "_raw_spin_lock_irqsave",
                "__pv_queued_spin_lock_slowpath"
            ]
        );
    }
}

#[test]
fn flamegraph_v_row_is_its_printed_stack_reversed_under_its_type() {
    let path = "captures/micro-16K-r1/contention-v.txt";
    let text = std::fs::read_to_string(fixture(path)).unwrap();
    // the first row and the frame lines under it, read from the raw text
    let mut lines = text
        .lines()
        .skip_while(|l| !l.contains("folio_batch_move_lru+0x88"));
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(&row[..3], ["14082", "18.73", "ms"]);
    let frames: Vec<String> = lines
        .take_while(|l| l.starts_with('\t'))
        .map(|l| {
            let sym = l.split_whitespace().nth(1).unwrap();
            sym.split("+0x").next().unwrap().to_string()
        })
        .collect();
    assert_eq!(frames.len(), 8);
    let mut want = vec!["spinlock".to_string()];
    want.extend(frames.into_iter().rev());
    let f = folded(&[&format!("fixtures/{path}")]);
    let got: Vec<u64> = f
        .iter()
        .filter(|(s, _)| *s == want)
        .map(|(_, w)| *w)
        .collect();
    assert_eq!(got, [18_730_000], "{want:?}");
    let c = folded(&[&format!("fixtures/{path}"), "--weight", "count"]);
    let got: Vec<u64> = c
        .iter()
        .filter(|(s, _)| *s == want)
        .map(|(_, w)| *w)
        .collect();
    assert_eq!(got, [14082]);
}

/// Share of the total held by stacks through `frame`, base and patched, from diff-folded text.
fn shares(diff: &str, frame: &str) -> (f64, f64) {
    let (mut tb, mut tp, mut fb, mut fp) = (0u64, 0u64, 0u64, 0u64);
    for l in diff.lines() {
        let mut it = l.rsplitn(3, ' ');
        let p: u64 = it.next().unwrap().parse().unwrap();
        let b: u64 = it.next().unwrap().parse().unwrap();
        let stack = it.next().unwrap();
        tb += b;
        tp += p;
        if stack.split(';').any(|f| f == frame) {
            fb += b;
            fp += p;
        }
    }
    (fb as f64 / tb as f64, fp as f64 / tp as f64)
}

/// The fill of the widest box named `name`.
fn widest_fill(svg: &str, name: &str) -> (u8, u8, u8) {
    let attr = |g: &str, k: &str| -> String {
        let at = g.find(&format!(" {k}=\"")).unwrap() + k.len() + 3;
        g[at..].split('"').next().unwrap().to_string()
    };
    let best = svg
        .split("<g class=\"f\"")
        .skip(1)
        .filter(|g| attr(g, "data-n") == name)
        .max_by(|a, b| {
            let w = |g: &str| attr(g, "data-w").parse::<f64>().unwrap();
            w(a).total_cmp(&w(b))
        })
        .unwrap_or_else(|| panic!("no frame {name}"));
    let c = attr(best, "data-c");
    let v: Vec<u8> = c
        .trim_start_matches("rgb(")
        .trim_end_matches(')')
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

#[test]
fn flamegraph_diff_colours_follow_the_change_16k_to_4k() {
    let base = "fixtures/captures/micro-16K-r1/contention-v.txt";
    let patched = "fixtures/captures/micro-4K-r1/contention-v.txt";
    let o = lockcast(&["flamegraph", base, "--diff", patched, "-o", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let diff = stdout(&o);
    // the diff-folded columns are the two profiles
    let (cols_b, cols_p) = diff.lines().fold((0u64, 0u64), |a, l| {
        let t: Vec<&str> = l.rsplitn(3, ' ').collect();
        (
            a.0 + t[1].parse::<u64>().unwrap(),
            a.1 + t[0].parse::<u64>().unwrap(),
        )
    });
    assert_eq!(cols_b, report_total(&[base]).1);
    assert_eq!(cols_p, report_total(&[patched]).1);
    // the direction, from the tables: the drain's lru_lock waits shrink at 4K (18.73 ms of
    // 23.74 ms → 8.58 ms of 11.55 ms), the unmap release's grow
    let (fb, fp) = shares(&diff, "folio_batch_move_lru");
    assert!(fb > fp, "{fb} {fp}");
    let (rb, rp) = shares(&diff, "__page_cache_release.part.0");
    assert!(rb < rp, "{rb} {rp}");
    // stacks the 4K run does not have: no width in the graph, so the subtitle says how much
    let gone: u64 = diff
        .lines()
        .filter(|l| l.ends_with(" 0"))
        .map(|l| l.rsplit(' ').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(gone > 0);
    let dir = tempfile::tempdir().unwrap();
    for norm in [false, true] {
        let out = dir.path().join(format!("diff-{norm}.svg"));
        let mut a = vec![
            "flamegraph",
            base,
            "--diff",
            patched,
            "-o",
            out.to_str().unwrap(),
        ];
        if norm {
            a.push("--normalize");
        }
        let o = lockcast(&a);
        assert!(o.status.success(), "{}", stderr(&o));
        let svg = std::fs::read_to_string(&out).unwrap();
        let gone_s = gone.to_string();
        let mut with_commas = String::new();
        for (i, c) in gone_s.chars().enumerate() {
            if i > 0 && (gone_s.len() - i) % 3 == 0 {
                with_commas.push(',');
            }
            with_commas.push(c);
        }
        assert!(
            svg.contains(&format!("not drawn: {with_commas} ns")),
            "{with_commas}"
        );
        let (r, _, b) = widest_fill(&svg, "folio_batch_move_lru");
        assert!(
            b == 255 && r < 255,
            "shrank, so blue: rgb({r},_,{b}) normalize={norm}"
        );
        let (r, _, b) = widest_fill(&svg, "__page_cache_release.part.0");
        assert!(
            r == 255 && b < 255,
            "grew, so red: rgb({r},_,{b}) normalize={norm}"
        );
    }
}

#[test]
fn flamegraph_svg_is_whole_and_its_frames_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pd.svg");
    let o = lockcast(&[
        "flamegraph",
        PD,
        "--kallsyms",
        PD_KALLSYMS,
        "--title",
        "micro 16K",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.starts_with("<?xml"));
    assert!(svg.ends_with("</svg>\n"));
    assert!(svg.contains(">micro 16K</text>"));
    let frames = svg.matches("<g class=\"f\"").count();
    assert!(frames > 10);
    assert_eq!(svg.matches("</g>").count(), frames);
    assert_eq!(svg.matches("<title>").count(), frames);
    for f in ["function zoom(", "function unzoom(", "function search("] {
        assert!(svg.contains(f), "{f}");
    }
    // the root box's tooltip is the whole traced wait
    let (_, wait) = report_total(&[PD, "--kallsyms", PD_KALLSYMS]);
    let s = wait.to_string();
    let with_commas: String = s
        .chars()
        .enumerate()
        .flat_map(|(i, c)| {
            let comma = i > 0 && (s.len() - i) % 3 == 0;
            comma.then_some(',').into_iter().chain(std::iter::once(c))
        })
        .collect();
    assert!(
        svg.contains(&format!("<title>all ({with_commas} ns, 100.00%)</title>")),
        "{with_commas}"
    );
    // boxes one level up fill the root exactly
    let widths: f64 = svg
        .split("<g class=\"f\"")
        .filter(|g| g.contains(" data-d=\"1\""))
        .map(|g| {
            let at = g.find(" data-w=\"").unwrap() + 9;
            g[at..].split('"').next().unwrap().parse::<f64>().unwrap()
        })
        .sum();
    assert!((widths - 1.0).abs() < 1e-6, "{widths}");
}

#[test]
fn flamegraph_refuses_captures_without_call_chains() {
    for p in [
        "fixtures/replay/micro-4K-r1/script-ns.txt.gz",
        "fixtures/captures/micro-4K-r1/contention.txt",
    ] {
        let o = lockcast(&["flamegraph", p, "-o", "-"]);
        assert_eq!(o.status.code(), Some(3), "{p}");
        let e = stderr(&o);
        assert!(e.contains(p) && e.contains("record with `-g`"), "{e}");
    }
    let o = lockcast(&[
        "flamegraph",
        "fixtures/captures/micro-4K-r1/contention-v.txt",
        "-o",
        "x.png",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("FILE.svg"));
}

#[test]
fn flamegraph_whatif_by_path_sums_to_the_replays_totals() {
    use lockcast::analyses::flame::{from_whatif, Weight, WhatifSide};
    let capture = "fixtures/replay/micro-16K-r1";
    let out = whatif_run(
        fixture("replay/micro-16K-r1").to_str().unwrap(),
        "folio-size",
        &[("folio_kb", "64")],
    );
    let pred = from_whatif(&out, WhatifSide::Predicted, Weight::Wait);
    let meas = from_whatif(&out, WhatifSide::Measured, Weight::Wait);
    assert_eq!(pred.total(), out.predicted.total_wait_ns.0);
    assert_eq!(meas.total(), out.measured.total_wait_ns.0);
    assert_eq!(
        from_whatif(&out, WhatifSide::Predicted, Weight::Count).total(),
        out.predicted.contended
    );
    assert!(pred
        .stacks
        .iter()
        .all(|(s, _)| s.len() == 2 && s[0] == "lru_lock"));
    // the command writes the two side by side
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pred.folded");
    let o = lockcast(&[
        "flamegraph",
        capture,
        "--whatif",
        "folio-size",
        "--set",
        "folio_kb=64",
        "-o",
        f.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p = parse_folded(&std::fs::read_to_string(&f).unwrap());
    let m =
        parse_folded(&std::fs::read_to_string(dir.path().join("pred-measured.folded")).unwrap());
    assert_eq!(sum(&p), pred.total());
    assert_eq!(sum(&m), meas.total());
}
