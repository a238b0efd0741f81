//! The verdict's split of the total wait at the tail cut (MODELS.md §5b): the measured tail is
//! counted here from the raw lock events of bundled captures, each `contention_begin` paired
//! with its CPU's next `contention_end` on the lock, without the reconstruction.

use std::collections::HashMap;

use lockcast::whatif::trace::Kind;
use lockcast::whatif::verdict::TAIL_REASON;

use crate::common::{fixture, whatif_run as run};

/// Every wait on the lock (ns), from the raw events.
fn raw_waits(path: &str, lock_name: &str) -> Vec<u64> {
    let t = lockcast::whatif::trace::read(path, false).expect("read");
    let lock = t
        .locks
        .iter()
        .position(|l| l == lock_name)
        .expect("lru_lock") as u32;
    let mut begun: HashMap<u32, i64> = HashMap::new();
    let mut waits = Vec::new();
    for e in &t.events {
        match e.kind {
            Kind::Begin { lock: l, .. } if l == lock => {
                begun.insert(e.cpu, e.ts);
            }
            Kind::End { lock: l } if l == lock => {
                if let Some(b) = begun.remove(&e.cpu) {
                    waits.push((e.ts - b) as u64);
                }
            }
            _ => {}
        }
    }
    waits
}

/// A foliochurn capture at 128K whose no-change replay misses the total wait by 76%: the split
/// is the raw waits' own, and the verdict names it.
#[test]
fn the_tail_is_the_raw_waits_above_the_tail_cut() {
    let path = fixture("matrix/foliochurn-128K-t2-s128-l300-dontneed-record-r1/perf.data.zst")
        .to_string_lossy()
        .into_owned();
    let waits = raw_waits(&path, "0xffff8881a2f62a98");
    let o = run(&path, "baseline", &[]);
    let cut = o.calibration.tail_cut_ns.round() as u64;
    // the stall cut past the 99th-percentile modelled hold: a foliochurn drain of 31 folios
    assert!(
        cut > o.calibration.stall_cut_ns as u64 + 10_000,
        "cut {cut} ns"
    );
    let tail: Vec<u64> = waits.iter().copied().filter(|&w| w > cut).collect();
    let t = o.verdict.tail.expect("a cut, so a split");
    assert_eq!(t.cut_ns, cut);
    assert_eq!(waits.len(), 688);
    assert_eq!(
        (t.measured_waits, t.measured_wait_ns),
        (tail.len() as u64, tail.iter().sum::<u64>())
    );
    assert_eq!(t.measured_waits, 25);
    // the replay's tail is part of its traced waits, and the body error is the rest's
    assert!(t.replayed_waits <= o.replayed.contended);
    assert!(t.replayed_wait_ns <= o.replayed.total_wait_ns.0);
    let body = |total: u64, tail: u64| (total - tail) as f64;
    let want = (body(o.replayed.total_wait_ns.0, t.replayed_wait_ns)
        - body(waits.iter().sum(), t.measured_wait_ns))
        / body(waits.iter().sum(), t.measured_wait_ns)
        * 100.0;
    let got = t.body_wait_error_pct.expect("a body");
    assert!((got - want).abs() < 0.01, "{got} vs {want}");
    // the total wait missed by more than 15%: the reason line says where
    let e = o.verdict.replay_error_pct.total_wait.expect("measured");
    assert!(e.abs() > 15.0, "{e}");
    let line = o.verdict.tail_reason().expect("the split's line");
    assert!(
        line.contains(&format!("are {} of 688 measured", tail.len())),
        "{line}"
    );
}

/// lrufault 16K (bundled matrix capture) is reproduced within 4% on total wait, and half its
/// wait is in waits past the cut, replayed as such: the split is in the JSON, its line is not
/// among the reasons.
#[test]
fn a_total_wait_within_the_target_gets_no_tail_line() {
    let path = fixture("matrix/lrufault-16K-t2-s64-l10-dontneed-record-r1/perf.data.zst")
        .to_string_lossy()
        .into_owned();
    let o = run(&path, "baseline", &[]);
    let e = o.verdict.replay_error_pct.total_wait.expect("measured");
    assert!(e.abs() <= 15.0, "{e}");
    assert!(o.verdict.tail_reason().is_none());
    assert!(!o.verdict.reasons.iter().any(|r| r.starts_with(TAIL_REASON)));
    let t = o.verdict.tail.expect("a cut");
    let waits = raw_waits(&path, "0xffff8881a2f62a98");
    let tail: Vec<u64> = waits.iter().copied().filter(|&w| w > t.cut_ns).collect();
    assert_eq!(
        (t.measured_waits, t.measured_wait_ns),
        (tail.len() as u64, tail.iter().sum::<u64>())
    );
    assert_eq!(t.measured_waits, 150);
    // the replay has its own tail here, within 5% of the measured one's count
    let (m, r) = (t.measured_waits as f64, t.replayed_waits as f64);
    assert!((r - m).abs() / m < 0.05, "{r} vs {m}");
}
