//! `--format` on report and diff: perf lock's own layout (checked line by line against the
//! raw captures it came from), Markdown, CSV, and `--json` as a short form.

use lockcast_parsers::perf_lock::{parse_all, Options};

use crate::common::*;

fn run_ok(args: &[&str]) -> String {
    let o = lockcast(args);
    assert!(o.status.success(), "lockcast {args:?}: {}", stderr(&o));
    stdout(&o)
}

fn raw(p: &str) -> String {
    std::fs::read_to_string(fixture(p)).unwrap()
}

#[test]
fn formats_report_text_reproduces_perf_lock_report_lines() {
    let out = run_ok(&[
        "report",
        "fixtures/captures/micro-16K-r1/report.txt",
        "--format",
        "text",
    ]);
    let original = raw("captures/micro-16K-r1/report.txt");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], original.lines().next().unwrap(), "header");
    assert_eq!(lines.len(), 2 + 8, "header, blank, 8 locks");
    // every lock has its own name in this capture, so every row is perf's row, byte for byte
    for l in &lines[2..] {
        assert!(original.lines().any(|o| o == *l), "{l:?} not in report.txt");
    }
}

#[test]
fn formats_report_text_contention_layout_reads_back() {
    let out = run_ok(&[
        "report",
        "fixtures/captures/micro-16K-r1/contention.txt",
        "--format",
        "text",
        "--top",
        "100",
    ]);
    let original = raw("captures/micro-16K-r1/contention.txt");
    assert_eq!(out.lines().next(), original.lines().next(), "header");
    // a caller with one row in the capture prints exactly perf's line
    let line = "     14082     18.73 ms     74.72 us      1.33 us     spinlock   folio_batch_move_lru+0x88";
    assert!(original.lines().any(|l| l == line));
    assert!(out.lines().any(|l| l == line), "{out}");
    // perf lock's own reader (lockcast's parser) reads it back; callers with two rows in the
    // capture are merged, so the sum is compared: 15017 contended in the 18 raw rows
    let parsed = parse_all(out.as_bytes(), &Options::default()).unwrap();
    assert_eq!(parsed.tables.len(), 1);
    let sum: u64 = parsed.tables[0]
        .rows
        .iter()
        .map(|r| r.contended.unwrap())
        .sum();
    assert_eq!(sum, 15017);
    assert_eq!(parsed.tables[0].rows.len(), 14);
}

#[test]
fn formats_diff_text_is_the_seed_mail_layout() {
    let seed = format!("fixtures/{SEED}");
    let out = run_ok(&[
        "diff",
        &format!("{seed}#1"),
        &format!("{seed}#2"),
        "--format",
        "text",
        "--top",
        "4",
    ]);
    let mail = raw(SEED);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "w/o patch:");
    // rows 1-4 of the mail's first table, byte for byte (blank Name column included)
    for l in &lines[4..8] {
        assert!(mail.lines().any(|m| m == *l), "{l:?} not in the mail");
    }
    assert!(lines[4]
        .starts_with("                       21414857   21414857     30.07 us     10.73 m "));
    assert!(out.contains("\nw/ patch:\n"));
    // the totals line: 21459536 = sum of the mail's 9 base rows (matched + unmatched)
    assert!(
        out.contains("contended:  21459536 -> 2880579 (base / patched = 7.45x)"),
        "{out}"
    );
    // perf's reader finds two tables with the labels lockcast wrote
    let parsed = parse_all(out.as_bytes(), &Options::default()).unwrap();
    assert_eq!(parsed.tables.len(), 2);
    assert_eq!(parsed.tables[1].rows[0].contended, Some(2641286));
}

#[test]
fn formats_markdown_and_csv() {
    let seed = format!("fixtures/{SEED}");
    let md = run_ok(&[
        "diff",
        &format!("{seed}#1"),
        &format!("{seed}#2"),
        "--format",
        "markdown",
        "--top",
        "1",
    ]);
    assert!(md.contains(
        "| lock | contended base | patched | ratio | total wait base | patched | ratio | match |\n| :--- | ---: | ---: | ---: | ---: | ---: | ---: | :--- |\n| (unnamed #1) | 21414857 | 2641286 | 8.11x | 10.73 m | 2.06 m | 5.21x | unnamed, rank 1 |\n"
    ), "{md}");
    let csv = run_ok(&[
        "diff",
        &format!("{seed}#1"),
        &format!("{seed}#2"),
        "--format",
        "csv",
    ]);
    let rows: Vec<&str> = csv.lines().collect();
    assert!(rows[0].starts_with("key,matched_by,rank,base_line,patched_line,"));
    // 10.73 m = 643.8 s, 2.06 m = 123.6 s, in integer ns
    assert!(rows[1].starts_with("(unnamed #1),unnamed_rank,1,63,85,21414857,2641286,21414857,2641286,8.1077,643800000000,123600000000,5.2087,"), "{}", rows[1]);
    assert!(rows.last().unwrap().starts_with("total,"));
    let rcsv = run_ok(&[
        "report",
        "fixtures/captures/micro-16K-r1/contention.txt",
        "--format",
        "csv",
        "--top",
        "1",
    ]);
    assert_eq!(
        rcsv,
        "source,block,label,by,rank,key,type,rows,acquired,contended,total_wait_ns,avg_wait_ns,max_wait_ns,min_wait_ns\n\
         fixtures/captures/micro-16K-r1/contention.txt,1,,caller,1,folio_batch_move_lru+0x88,spinlock,1,,14082,18730000,1330,74720,\n\
         fixtures/captures/micro-16K-r1/contention.txt,1,,caller,,total,,18,,15017,23739130,1580,2510000,\n"
    );
    let rmd = run_ok(&[
        "report",
        "fixtures/captures/micro-16K-r1/contention.txt",
        "--format",
        "markdown",
        "--top",
        "1",
    ]);
    assert!(rmd.contains("| folio_batch_move_lru+0x88 | 14082 | 18.73 ms | 1.33 us | 74.72 us | - | 1 | spinlock |"), "{rmd}");
}

#[test]
fn formats_json_flag_is_format_json() {
    let f = "fixtures/captures/micro-16K-r1/contention.txt";
    assert_eq!(
        run_ok(&["report", f, "--json"]),
        run_ok(&["report", f, "--format", "json"])
    );
    let g = "fixtures/captures/micro-4K-r1/contention.txt";
    assert_eq!(
        run_ok(&["diff", f, g, "--json"]),
        run_ok(&["diff", f, g, "--format", "json"])
    );
    // the input format moved to --input-format
    let o = lockcast(&[
        "report",
        f,
        "--input-format",
        "perf-lock",
        "--format",
        "table",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn formats_parse_to_a_directory_writes_the_contention_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = format!("{}/", dir.path().display());
    let o = lockcast(&[
        "parse",
        "fixtures/replay/micro-16K-r1/script-ns.txt.gz",
        "fixtures/replay/micro-4K-r1/script-ns.txt.gz",
        "--to",
        "csv",
        "-o",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(dir.path().join("contention.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("source,begin_line,cpu,tid,comm,lock,flags,type,begin_ns,end_ns,wait_ns,ret,caller,stack")
    );
    // 887 + 661 contention_begin/end pairs in the two traces (zgrep -c contention_end)
    assert_eq!(lines.count(), 887 + 661);
    assert!(dir.path().join("lock_stats.csv").is_file());
}
