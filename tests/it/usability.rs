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
