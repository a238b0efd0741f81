//! `report`/`parse AFTER --since BEFORE` on `/proc/lock_stat` postings.
//!
//! No posting of two snapshots of one machine was found (searched: "cat /proc/lock_stat"
//! before/after, `echo 0 > /proc/lock_stat`), and this kernel has no CONFIG_LOCK_STAT, so
//! these use two tables of one mail each: not snapshots of one boot. They check what is
//! real about them: a table minus itself, a class only in the later table, and the
//! refusals (the rq mail's tables go down both ways, as tables of two kernels do).

use crate::common::*;

const RQ: &str = "tests/corpus/lock-stat/lkml-2022-rq-lock-load-balance-unpatched-patched-v0.4.txt";
const RC: &str = "tests/corpus/lock-stat/linux-mm-2009-res-counter-before-after-v0.3.txt";

fn rows(args: &[&str]) -> Vec<serde_json::Value> {
    let o = lockcast(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice::<Vec<serde_json::Value>>(&o.stdout).unwrap()
}

#[test]
fn a_snapshot_since_itself_is_an_interval_of_nothing() {
    let rq1 = format!("{RQ}#1");
    let r = &rows(&["parse", &rq1, "--since", &rq1, "-o", "-", "--to", "json"])[0];
    assert_eq!(r["name"], "&rq->lock");
    for c in [
        "contended",
        "acquired",
        "total_wait_ns",
        "con_bounces",
        "acq_bounces",
        "hold_total_ns",
    ] {
        assert_eq!(r[c], 0, "{c}");
    }
    // the printed 43122.87 and 10224267.38 us are each ±5 ns: their difference ±10
    assert_eq!(r["total_wait_err_ns"], 10);
    assert_eq!(r["hold_total_err_ns"], 10);
    // min and max of an interval are not in the two snapshots; no average over 0 events
    for c in [
        "min_wait_ns",
        "max_wait_ns",
        "hold_min_ns",
        "hold_max_ns",
        "avg_wait_ns",
        "hold_avg_ns",
    ] {
        assert!(r[c].is_null(), "{c}: {}", r[c]);
    }
    // the mail's four contention points (1210, 1885, 15111, 1156) each minus itself
    assert_eq!(
        r["contention_point_counts"],
        serde_json::json!([0, 0, 0, 0])
    );
    assert_eq!(
        r["contending_point_counts"],
        serde_json::json!([0, 0, 0, 0])
    );
    assert_eq!(
        r["contention_points"][2],
        "update_blocked_averages+0x30/0x6f0"
    );
}

#[test]
fn a_class_only_in_the_later_table_is_taken_whole() {
    // "Before" names &counter->lock, "After" &(&counter->lock)->lock (the patch renamed it)
    let v = rows(&[
        "parse",
        &format!("{RC}#2"),
        "--since",
        &format!("{RC}#1"),
        "-o",
        "-",
        "--to",
        "json",
    ]);
    assert_eq!(v.len(), 1);
    let r = &v[0];
    assert_eq!(r["name"], "&(&counter->lock)->lock");
    assert_eq!(r["contended"], 976349);
    assert_eq!(r["acquired"], 66041988);
    assert_eq!(r["total_wait_ns"], 465_926_040u64);
    assert_eq!(r["max_wait_ns"], 14_070);
    assert_eq!(r["con_bounces"], 962193);
    assert_eq!(
        r["contention_point_counts"],
        serde_json::json!([495468, 480881])
    );
}

#[test]
fn a_counter_that_went_down_is_an_error_naming_both_files_and_the_class() {
    let (rq1, rq2) = (format!("{RQ}#1"), format!("{RQ}#2"));
    // unpatched: acquisitions 6601547; patched: 6602803
    let o = lockcast(&["report", &rq1, "--since", &rq2]);
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    for s in [
        rq1.as_str(),
        rq2.as_str(),
        "&rq->lock",
        "acquisitions went down",
        "6602803",
        "6601547",
        "line 10",
    ] {
        assert!(e.contains(s), "{s:?} not in {e}");
    }
    // the other way round: contentions 25996 -> 17105
    let o = lockcast(&["parse", &rq2, "--since", &rq1]);
    assert_eq!(o.status.code(), Some(3));
    let e = stderr(&o);
    assert!(e.contains("contentions went down, from 25996"), "{e}");
    assert!(o.stdout.is_empty());
}

#[test]
fn since_is_refused_for_tables_of_one_recording() {
    for f in [
        "tests/corpus/klockstat/bcc-klockstat_example.txt",
        "tests/corpus/perf-lock/contention-threads-t.txt",
    ] {
        let o = lockcast(&["report", f, "--since", f]);
        assert_eq!(o.status.code(), Some(3), "{f}");
        let e = stderr(&o);
        assert!(
            e.contains(f) && e.contains("counts one recording only"),
            "{e}"
        );
    }
    // a file of two tables needs #N on each side
    let o = lockcast(&["report", RQ, "--since", &format!("{RQ}#1")]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("#N"), "{}", stderr(&o));
}

#[test]
fn write_and_read_rows_are_subtracted_each_from_its_own() {
    // -W: 10462 contentions, -R: 34911; matched by name alone, R - W would leave 24449
    let m = "tests/corpus/lock-stat/linux-mm-2008-mmap-sem-page-fault-retry-quoted-v0.3.txt";
    let v = rows(&["parse", m, "--since", m, "-o", "-", "--to", "json"]);
    let rw: Vec<_> = v
        .iter()
        .map(|r| (r["rw"].clone(), r["contended"].clone()))
        .collect();
    assert_eq!(
        rw,
        [
            (serde_json::json!("W"), serde_json::json!(0)),
            (serde_json::json!("R"), serde_json::json!(0))
        ]
    );
}

#[test]
fn diff_sides_may_each_be_an_interval() {
    let rq1 = format!("{RQ}#1");
    let o = lockcast(&["diff", &rq1, &rq1, "--base-since", &rq1, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v["rows"][0];
    assert_eq!(r["key"], "&rq->lock");
    assert_eq!(r["base_contended"], 0);
    assert_eq!(r["patched_contended"], 25996);
    // the patched side's snapshot is checked too
    let o = lockcast(&["diff", &rq1, &rq1, "--patched-since", &format!("{RQ}#2")]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).contains("acquisitions went down"),
        "{}",
        stderr(&o)
    );
}
