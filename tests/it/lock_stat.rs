//! `/proc/lock_stat` postings through the CLI: detection, `lock_stats` columns, `diff`,
//! `report` and `plot ab`, values checked against the mails (tests/corpus/SOURCES.md).

use crate::common::*;

const RQ: &str = "tests/corpus/lock-stat/lkml-2022-rq-lock-load-balance-unpatched-patched-v0.4.txt";
const MMAP: &str = "tests/corpus/lock-stat/linux-mm-2008-mmap-sem-page-fault-retry-quoted-v0.3.txt";

fn json(args: &[&str]) -> serde_json::Value {
    let o = lockcast(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn lock_stat_diff_gives_the_posted_reduction() {
    // the patch mail: "this patch brings ~35% rq lock contentions reduced"
    let v = json(&["diff", &format!("{RQ}#1"), &format!("{RQ}#2"), "--json"]);
    assert_eq!(v["base_label"], "unpatched");
    assert_eq!(v["patched_label"], "patched");
    let r = &v["rows"][0];
    assert_eq!(r["key"], "&rq->lock");
    assert_eq!(r["base_contended"], 25996);
    assert_eq!(r["patched_contended"], 17105);
    let ratio = r["ratio_contended"].as_f64().unwrap();
    assert!((ratio - 25996.0 / 17105.0).abs() < 1e-12);
    let reduced = 1.0 - 1.0 / ratio;
    assert!((0.34..0.35).contains(&reduced), "{reduced}");
    // waittime-total 43122.87 us -> 31154.45 us
    assert_eq!(r["base_total_wait_ns"], 43_122_870u64);
    assert_eq!(r["patched_total_wait_ns"], 31_154_450u64);
}

#[test]
fn lock_stat_rows_carry_hold_times_bounces_and_points() {
    let o = lockcast(&["parse", RQ, "-o", "-", "--to", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v[0];
    assert_eq!(r["kind"], "lock_stat");
    assert_eq!(r["acquired"], 6601547);
    assert_eq!(r["con_bounces"], 24906);
    assert_eq!(r["acq_bounces"], 1216316);
    assert_eq!(r["hold_min_ns"], 50);
    assert_eq!(r["hold_max_ns"], 41590);
    assert_eq!(r["hold_total_ns"], 10_224_267_380u64);
    assert_eq!(r["hold_avg_ns"], 1550);
    assert_eq!(r["hold_total_err_ns"], 5);
    assert_eq!(
        r["contention_points"][2],
        "update_blocked_averages+0x30/0x6f0"
    );
    assert_eq!(r["contention_point_counts"][2], 15111);
    assert_eq!(
        r["contending_points"][0],
        "update_blocked_averages+0x30/0x6f0"
    );
    assert_eq!(r["contending_point_counts"][0], 15542);
}

#[test]
fn lock_stat_read_and_write_rows_are_matched_each_with_its_own() {
    let v = json(&["diff", MMAP, MMAP, "--json"]);
    let keys: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["&mm->mmap_sem-R", "&mm->mmap_sem-W"]);
    assert_eq!(v["rows"][0]["matched_by"], "key");
    assert_eq!(v["rows"][0]["base_contended"], 34911);
}

#[test]
fn lock_stat_report_and_plot_ab_work() {
    let o = lockcast(&["report", &format!("{RQ}#2")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("&rq->lock") && out.contains("17105"), "{out}");
    let dir = std::env::temp_dir().join(format!("lockcast-lockstat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("ab.svg");
    let o = lockcast(&[
        "plot",
        "ab",
        &format!("{RQ}#1"),
        &format!("{RQ}#2"),
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&png).unwrap();
    assert!(svg.contains("rq"), "no lock name in the plot");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn lock_stat_row_cut_short_is_an_error_naming_file_and_line() {
    // a posting's table cut after the first line of a wrapped row
    let text = std::fs::read_to_string(repo().join(RQ)).unwrap();
    let cut: String = text.lines().take(10).map(|l| format!("{l}\n")).collect();
    let o = lockcast_stdin(&["parse", "-"], cut.as_bytes());
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(e.contains("-:10:1: lock_stat: expected 12 columns"), "{e}");
}

const KLOCK_BCC: &str = "tests/corpus/klockstat/bcc-klockstat_example.txt";
const KLOCK_P: &str = "tests/corpus/klockstat/libbpf-tools-pr3984-per-thread-P.txt";

#[test]
fn klockstat_tables_are_blocks_of_lock_stats_by_caller() {
    let o = lockcast(&["parse", KLOCK_BCC]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains(": klockstat, 16 table(s)"), "{out}");
    // table 2 is the first hold table: its rows carry hold times, no waits
    let o = lockcast(&[
        "parse",
        &format!("{KLOCK_BCC}#2"),
        "-o",
        "-",
        "--to",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v[0];
    assert_eq!(r["kind"], "klockstat");
    assert_eq!(r["caller"], "flush_to_ldisc+0x22");
    assert_eq!(r["hold_avg_ns"], 42558);
    assert_eq!(r["acquired"], 2);
    assert_eq!(r["hold_max_ns"], 76135);
    assert_eq!(r["hold_total_ns"], 85116);
    assert!(r["total_wait_ns"].is_null());
    // report groups a klockstat table by caller
    let o = lockcast(&["report", &format!("{KLOCK_BCC}#1")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("psi_avgs_work+0x2e") && out.contains("18.38 us"),
        "{out}"
    );
    // klockstat counts acquisitions, not contentions, and its hold tables have no waits: the
    // summary says unknown ("-", null), never 0
    let o = lockcast(&["report", &format!("{KLOCK_BCC}#2"), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let total = &v[0]["total"];
    assert_eq!(total["acquired"], 12, "{total}");
    assert!(total["contended"].is_null(), "{total}");
    assert!(total["total_wait_ns"].is_null(), "{total}");
    let o = lockcast(&["report", &format!("{KLOCK_BCC}#2")]);
    let out = stdout(&o);
    let row = out
        .lines()
        .find(|l| l.starts_with("flush_to_ldisc+0x22"))
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>();
    // caller acquired contended total-wait ...: 2 acquisitions, the rest unknown
    assert_eq!(row.get(1..4), Some(&["2", "-", "-"][..]), "{out}");
}

#[test]
fn klockstat_diff_of_two_runs_matches_callers() {
    // the -p run and the -c run of the example file: the same three pipe callers
    let v = json(&[
        "diff",
        &format!("{KLOCK_BCC}#7"),
        &format!("{KLOCK_BCC}#9"),
        "--json",
    ]);
    assert_eq!(v["matched_on"], "caller (comm with -P)");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    // pipe_wait+0xa9: Total spin 258277958 (-p 883) and 319017069 (-c pipe_)
    let w = rows.iter().find(|r| r["key"] == "pipe_wait+0xa9").unwrap();
    assert_eq!(w["base_total_wait_ns"], 258277958u64);
    assert_eq!(w["patched_total_wait_ns"], 319017069u64);
    let o = lockcast(&["parse", KLOCK_P, "-o", "-", "--to", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["pid"], 8428);
    assert_eq!(v[0]["comm"], "IPDL Background");
    assert_eq!(v[0]["kind"], "task", "-P rows are tasks, like perf's -t");
    let o = lockcast(&["report", &format!("{KLOCK_P}#1")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("5 rows, 5 groups by comm"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn lock_stat_summary_whatif_takes_the_measured_hold() {
    // a perf lock table cannot tell think time from hold time; lock_stat measured the hold:
    // holdtime-total 10224267.38 us over 6601547 acquisitions
    let args = |t: &str| {
        vec![
            "whatif".to_string(),
            "lru-cache".into(),
            t.to_string(),
            "--set".into(),
            "folio_kb=16".into(),
            "--set".into(),
            "cpus=8".into(),
            "--json".into(),
        ]
    };
    let a = args(&format!("{RQ}#1"));
    let v = json(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let want = 10_224_267_380.0 / 6_601_547.0;
    let h: f64 = v["params"]["hold_ns"].as_str().unwrap().parse().unwrap();
    assert!((h - want).abs() < 1e-6, "{h}");
    assert!((v["point"]["hold_ns"].as_f64().unwrap() - want).abs() < 1e-6);
    // --set hold_ns still wins over the table's
    let mut a = args(&format!("{RQ}#1"));
    a.splice(7..7, ["--set".to_string(), "hold_ns=2000".to_string()]);
    let v = json(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(v["params"]["hold_ns"], "2000");
}
