//! The small things a user hits (issue 18): each format's natural table by default. Expected
//! values are counted in the raw files by the test.

use crate::common::{fixture, lockcast, stderr, stdout};

/// `perf report --stdio` entry lines: the overhead column(s) first (`    62.02%     0.00%  dd ...`).
fn entry_lines(raw: &str) -> Vec<&str> {
    raw.lines()
        .filter(|l| {
            let t = l.trim_start();
            l.len() > t.len()
                && t.split_whitespace()
                    .next()
                    .and_then(|w| w.strip_suffix('%'))
                    .is_some_and(|p| p.parse::<f64>().is_ok())
        })
        .collect()
}

#[test]
fn parse_of_perf_report_defaults_to_its_callgraph() {
    for (f, entries) in [
        ("perf-report/dd-cpu-clock-children.txt", 93),
        ("perf-report/dd-cpu-clock-no-children.txt", 49),
        ("perf-report/dd-cpu-task-clock-no-children-limit5.txt", 9),
    ] {
        let raw = std::fs::read_to_string(fixture(f)).unwrap();
        let want = entry_lines(&raw);
        assert_eq!(want.len(), entries, "{f}");
        let path = format!("fixtures/{f}");
        // no --table, no -o: what is found, not "no lock_stats table"
        let o = lockcast(&["parse", &path]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.starts_with(&format!("{path}: perf-report, {entries} entries\n")),
            "{out}"
        );
        assert!(out.contains("\ncallgraph: "), "{out}");
        // -o -: the callgraph table, the same bytes as naming it
        let d = lockcast(&["parse", &path, "-o", "-"]);
        assert!(d.status.success(), "{f}: {}", stderr(&d));
        let named = lockcast(&["parse", &path, "--table", "callgraph", "-o", "-"]);
        assert_eq!(d.stdout, named.stdout, "{f}");
        // its first entry row is the first entry line of the text
        let csv = stdout(&d);
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
        let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        let first: Vec<&str> = want[0].split_whitespace().collect();
        let pct: f64 = first[0].trim_end_matches('%').parse().unwrap();
        let cell = |n: &str| row[col(n)].parse::<f64>().ok();
        // with --children the first column is children, else self overhead
        let got = cell("children_pct").or(cell("self_pct")).unwrap();
        assert_eq!(got, pct, "{f}");
        assert_eq!(row[col("symbol")], *first.last().unwrap(), "{f}");
    }
    // a perf lock table still defaults to lock_stats: its first row is the text's first row
    let o = lockcast(&[
        "parse",
        "fixtures/captures/micro-4K-r1/report.txt",
        "-o",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = stdout(&o);
    assert!(
        csv.lines().next().unwrap().contains(",acquired,contended,"),
        "{csv}"
    );
    let raw = std::fs::read_to_string(fixture("captures/micro-4K-r1/report.txt")).unwrap();
    let first = raw
        .lines()
        .nth(2)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>();
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .contains(&format!(",{},{},", first[1], first[2])),
        "{csv}"
    );
}

/// `contended` summed over the rows of a `perf lock contention` text whose caller (last
/// column) and type satisfy `keep`.
fn contended_where(f: &str, keep: impl Fn(&str, &str) -> bool) -> u64 {
    let raw = std::fs::read_to_string(fixture(f)).unwrap();
    raw.lines()
        .skip(2)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() >= 8 && keep(w[w.len() - 1], w[w.len() - 2]))
                .then(|| w[0].parse::<u64>().unwrap())
        })
        .sum()
}

fn report_total(args: &[&str]) -> u64 {
    let mut a = vec!["report"];
    a.extend_from_slice(args);
    a.push("--json");
    let o = lockcast(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    j[0]["total"]["contended"].as_u64().unwrap_or(0)
}

#[test]
fn report_diff_plot_filter_rows_like_perf_lock() {
    let f = "captures/micro-16K-r1/contention.txt";
    let p = format!("fixtures/{f}");
    // substring: both rows of __page_cache_release (two call stacks, one caller)
    assert_eq!(
        report_total(&[&p, "--caller", "page_cache_release"]),
        contended_where(f, |c, _| c.contains("page_cache_release"))
    );
    // /regex/, and several values are alternatives
    let lru = contended_where(f, |c, _| {
        c.starts_with("folio_batch_move_lru") || c.starts_with("__page_cache_release")
    });
    assert_eq!(
        report_total(&[
            &p,
            "--caller",
            "/^folio_batch_move_lru/,/^__page_cache_release/"
        ]),
        lru
    );
    assert_eq!(
        report_total(&[
            &p,
            "--caller",
            "/^folio_batch/",
            "--caller",
            "/^__page_cache/"
        ]),
        lru
    );
    // a regex anchored where the substring is not: nothing starts with page_cache
    assert_eq!(report_total(&[&p, "--caller", "/^page_cache/"]), 0);
    // --type
    assert_eq!(
        report_total(&[&p, "--type", "rwsem"]),
        contended_where(f, |_, t| t.starts_with("rwsem"))
    );
    // --lock on a perf lock report table (rows keyed by lock name)
    let r = "fixtures/captures/micro-16K-r1/report.txt";
    let raw = std::fs::read_to_string(fixture("captures/micro-16K-r1/report.txt")).unwrap();
    let want: u64 = raw
        .lines()
        .filter(|l| l.trim_start().starts_with("get_page_from_fr"))
        .map(|l| l.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(report_total(&[r, "--lock", "get_page_from"]), want);
    // diff keeps the filtered rows on both sides
    let a = "fixtures/captures/micro-4K-r1/contention.txt";
    let o = lockcast(&["diff", a, &p, "--caller", "/^__page_cache/", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = j["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows
        .iter()
        .all(|r| r["caller"].as_str().unwrap().starts_with("__page_cache")));
    // matched rows plus the base rows left without a partner (the third call stack)
    let base: u64 = rows
        .iter()
        .filter_map(|r| r["base_contended"].as_u64())
        .sum::<u64>()
        + j["unmatched_base"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["contended"].as_u64().unwrap())
            .sum::<u64>();
    assert_eq!(
        base,
        contended_where("captures/micro-4K-r1/contention.txt", |c, _| c
            .starts_with("__page_cache"))
    );
    // plot ab takes it too
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("ab.svg");
    let o = lockcast(&[
        "plot",
        "ab",
        a,
        &p,
        "--caller",
        "__page_cache",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // the two matched __page_cache_release rows, not the 10 of the whole table
    assert!(stderr(&o).contains("(2 lock(s))"), "{}", stderr(&o));
    // a bad regex is a usage error naming the option
    let o = lockcast(&["report", &p, "--lock", "/(/"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--lock /(/"), "{}", stderr(&o));
}

#[test]
fn wait_panels_name_the_lru_lock_and_other_locks_by_caller() {
    // micro-16K-g has call chains: the lock whose contention_begin stacks pass through
    // folio_batch_move_lru is the LRU lock (perf lock contention's LRU callers)
    let f = "traces/micro-16K-g/script-ns.txt.gz";
    let raw = {
        use std::io::Read;
        let mut s = String::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(fixture(f)).unwrap())
            .read_to_string(&mut s)
            .unwrap();
        s
    };
    let lru: std::collections::BTreeSet<&str> = raw
        .split("\n\n")
        .filter(|b| b.contains("lock:contention_begin:") && b.contains("folio_batch_move_lru"))
        .map(|b| {
            let h = b.lines().next().unwrap();
            h.split("lock:contention_begin:")
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(lru.len(), 1, "{lru:?}");
    let addr = lru.into_iter().next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("w.svg");
    let o = lockcast(&[
        "plot",
        "waits",
        &format!("fixtures/{f}"),
        "--by",
        "lock",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains(&format!("lru_lock {addr} (spinlock)")), "{s}");
    // the rwsem of the page faults: no LRU caller, named after exc_page_fault's call site
    assert!(s.contains(" of exc_page_fault+0x1d8 (rwsem:R)"));
    assert!(!s.contains(&format!("\nlock {addr} (spinlock)")));
    // --lock keeps that lock's waits only: one panel
    let o = lockcast(&[
        "plot",
        "waits",
        &format!("fixtures/{f}"),
        "--by",
        "lock",
        "--lock",
        addr,
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("(1 panel(s))"), "{}", stderr(&o));
}
