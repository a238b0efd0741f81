//! The committed real captures (fixtures/captures, made by fixtures/capture.sh) parse, and the
//! two perf outputs of each recording agree with each other.

use lockcast_parsers::perf_lock::{parse_all, Mode, Options, Parsed};
use lockcast_parsers::time::TimeNs;

use crate::common::*;

fn parse(p: &str) -> Parsed {
    let f = std::fs::File::open(fixture(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    parse_all(std::io::BufReader::new(f), &Options::default())
        .unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn captures() -> Vec<String> {
    let mut v = Vec::new();
    for size in ["4K", "16K", "64K"] {
        for run in 1..=3 {
            v.push(format!("captures/micro-{size}-r{run}"));
        }
    }
    v
}

fn is_lru_caller(c: &str) -> bool {
    c.starts_with("folio_batch_move_lru+") || c.starts_with("__page_cache_release")
}

#[test]
fn captures_16k_r1_values_from_raw_text() {
    let p = parse("captures/micro-16K-r1/contention.txt");
    let rows = &p.tables[0].rows;
    assert_eq!(rows.len(), 18);
    let top = &rows[0];
    assert_eq!(top.caller.as_deref(), Some("folio_batch_move_lru+0x88"));
    assert_eq!(top.contended, Some(14082));
    assert_eq!(
        top.total_wait,
        Some(TimeNs {
            ns: 18_730_000,
            err_ns: 5_000
        })
    );
    assert_eq!(
        top.max_wait,
        Some(TimeNs {
            ns: 74_720,
            err_ns: 5
        })
    );
    assert_eq!(
        top.avg_wait,
        Some(TimeNs {
            ns: 1_330,
            err_ns: 5
        })
    );
    let rel: Vec<u64> = rows
        .iter()
        .filter(|r| r.caller.as_deref() == Some("__page_cache_release.part.0+0x58"))
        .filter_map(|r| r.contended)
        .collect();
    assert_eq!(rel, [330, 58]);
}

#[test]
fn captures_verbose_stacks_show_paravirt_slowpath() {
    let p = parse("captures/micro-16K-r1/contention-v.txt");
    let top = &p.tables[0].rows[0];
    assert_eq!(top.caller.as_deref(), Some("folio_batch_move_lru+0x88"));
    assert_eq!(top.stack[0].symbol, "__pv_queued_spin_lock_slowpath+0x10e");
    assert_eq!(top.stack[0].addr, 0xffffffff82203efe);
    assert_eq!(top.stack[3].symbol, "folio_batch_move_lru+0x88");
    assert_eq!(top.stack.len(), 8);
}

/// perf 6.1 on a kernel without lockdep builds `perf lock report` from the same contention
/// events, per lock address, named after the first caller. So the LRU lock's report row must
/// equal the sum of the LRU callers' contention rows: two independent printings, one recording.
#[test]
fn captures_report_agrees_with_contention_for_every_capture() {
    for dir in captures() {
        let con = parse(&format!("{dir}/contention.txt"));
        let rep = parse(&format!("{dir}/report.txt"));
        assert_eq!(con.tables[0].header.mode, Mode::Caller, "{dir}");
        let lru: Vec<_> = con.tables[0]
            .rows
            .iter()
            .filter(|r| r.caller.as_deref().is_some_and(is_lru_caller))
            .collect();
        let sum_c: u64 = lru.iter().filter_map(|r| r.contended).sum();
        let sum_w: u64 = lru.iter().filter_map(|r| r.total_wait.map(|t| t.ns)).sum();
        let sum_err: u64 = lru
            .iter()
            .filter_map(|r| r.total_wait.map(|t| t.err_ns))
            .sum();
        let rep_rows: Vec<_> = rep.tables[0]
            .rows
            .iter()
            .filter(|r| {
                r.name.as_deref().is_some_and(|n| {
                    n.starts_with("folio_batch_move") || n.starts_with("__page_cache_rel")
                })
            })
            .collect();
        assert_eq!(rep_rows.len(), 1, "{dir}: one lruvec, one LRU lock");
        let r = rep_rows[0];
        assert_eq!(r.contended, Some(sum_c), "{dir}");
        assert_eq!(
            r.acquired, r.contended,
            "{dir}: no lockdep, acquired counts contended only"
        );
        let t = r.total_wait.unwrap();
        assert!(
            t.ns.abs_diff(sum_w) <= t.err_ns + sum_err,
            "{dir}: report {t:?} vs contention sum {sum_w} ± {sum_err}"
        );
    }
}

#[test]
fn captures_contention_counts_in_expected_ranges() {
    // CAPTURE.md: LRU-lock contended about 1.5k-2.2k at 4K and 12k-20k at 16K mTHP.
    for dir in captures() {
        let con = parse(&format!("{dir}/contention.txt"));
        let c: u64 = con.tables[0]
            .rows
            .iter()
            .filter(|r| r.caller.as_deref().is_some_and(is_lru_caller))
            .filter_map(|r| r.contended)
            .sum();
        let range = if dir.contains("-4K-") {
            1_500..=2_200
        } else if dir.contains("-16K-") {
            12_000..=20_000
        } else {
            300..=3_000
        };
        assert!(range.contains(&c), "{dir}: {c} not in {range:?}");
    }
}

#[test]
fn captures_task_mode_and_wait_max() {
    let t = parse("captures/micro-16K-r1/contention-t.txt");
    assert_eq!(t.tables[0].header.mode, Mode::Task);
    assert!(t.tables[0].rows.iter().all(|r| r.pid.is_some()));
    let w = parse("captures/micro-16K-r1/contention-wait_max.txt");
    assert!(w.tables[0].rows.len() <= 10);
    let maxes: Vec<u64> = w.tables[0]
        .rows
        .iter()
        .map(|r| r.max_wait.unwrap().ns)
        .collect();
    assert!(
        maxes.windows(2).all(|p| p[0] >= p[1]),
        "sorted by max wait: {maxes:?}"
    );
}
