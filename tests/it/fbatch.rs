//! `whatif fbatch-drain` / `dead-prefree` on the real captures of fixtures/fbatch
//! (fixtures/capture-fbatch.sh: foliochurn -p 4 -k 64 -l 400 on v6.18, 2 vCPUs): waits split by
//! call chain against perf lock contention's rows of the same recording, the dead-on-batch
//! identity, the no-change replay per caller, and the direction of the report's regression.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

use lockcast::whatif::{trace::Via, Outcome, PathRow};

use crate::common::{fixture, lockcast, whatif_run as run};

const RUNS: [&str; 3] = ["churn-4K-r1", "churn-4K-r2", "churn-4K-r3"];

fn capture(run: &str) -> String {
    fixture(&format!("fbatch/{run}/script-ns.txt.gz"))
        .to_string_lossy()
        .into_owned()
}

fn path(o: &Outcome, via: Via) -> &PathRow {
    o.by_path
        .iter()
        .find(|r| r.via == via)
        .unwrap_or_else(|| panic!("no {via:?} row"))
}

/// perf lock contention's text (stderr of `perf lock contention -i`, saved by the capture
/// script): contended per caller symbol, summed over rows, read with plain splitting.
fn perf_lock_rows(run: &str) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(fixture(&format!("fbatch/{run}/contention.txt")))
        .expect("contention.txt");
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 6 && f[f.len() - 2] == "spinlock" {
            if let Ok(n) = f[0].parse::<u64>() {
                let sym = f[f.len() - 1].split('+').next().unwrap_or("").to_string();
                *m.entry(sym).or_default() += n;
            }
        }
    }
    m
}

#[test]
fn fbatch_waits_by_call_chain_are_perf_lock_contention_rows() {
    for r in RUNS {
        let o = run(&capture(r), "baseline", &[]);
        let rows = perf_lock_rows(r);
        assert_eq!(
            path(&o, Via::Drain).measured_contended,
            rows["folio_batch_move_lru"],
            "{r}"
        );
        assert_eq!(
            path(&o, Via::Release).measured_contended + path(&o, Via::Zap).measured_contended,
            rows["__page_cache_release.part.0"],
            "{r}"
        );
    }
    // run 1 as printed: 267 and 525 + 102 (two __page_cache_release rows, one per stack)
    let o = run(&capture("churn-4K-r1"), "baseline", &[]);
    assert_eq!(path(&o, Via::Drain).measured_contended, 267);
    assert_eq!(path(&o, Via::Release).measured_contended, 525);
    assert_eq!(path(&o, Via::Zap).measured_contended, 102);
}

#[test]
fn fbatch_dead_on_batch_folios_are_the_post_drain_releases() {
    for r in RUNS {
        let path = capture(r);
        let f = std::fs::File::open(&path).expect("open");
        let (mut insertions, mut dontneed) = (0u64, 0u64);
        for line in BufReader::new(flate2::read::GzDecoder::new(f)).lines() {
            let line = line.expect("gzip text");
            if line.contains("pagemap:mm_lru_insertion:") {
                insertions += 1;
            }
            if line.contains("sys_enter_madvise:") && line.ends_with("behavior: 0x00000004") {
                dontneed += 1;
            }
        }
        // 4 processes × 400 rounds, each one MADV_DONTNEED
        assert_eq!(dontneed, 1600, "{r}");
        let o = run(&path, "baseline", &[]);
        let id = &o.identities;
        assert_eq!(id.folios_added, insertions, "{r}");
        // most folios die on the batch: fewer than 16 of a round's pages drain before its zap
        assert!(
            id.dead_on_batch > insertions * 7 / 10,
            "{r}: {}",
            id.dead_on_batch
        );
        // what the madvise times say died on the batch is what the post-drain holds free
        let rel = (id.release_folios as f64 - id.dead_on_batch as f64) / id.dead_on_batch as f64;
        assert!(
            rel.abs() < 0.03,
            "{r}: {} vs {}",
            id.release_folios,
            id.dead_on_batch
        );
    }
}

#[test]
fn fbatch_no_change_replay_per_caller() {
    let (mut drain, mut pcr) = (Vec::new(), Vec::new());
    for r in RUNS {
        let o = run(&capture(r), "baseline", &[]);
        let e = |m: u64, p: u64| ((p as f64 - m as f64) / m as f64).abs();
        let d = path(&o, Via::Drain);
        drain.push(e(d.measured_contended, d.replayed.contended));
        let (rl, z) = (path(&o, Via::Release), path(&o, Via::Zap));
        pcr.push(e(
            rl.measured_contended + z.measured_contended,
            rl.replayed.contended + z.replayed.contended,
        ));
        // the replay keeps every hold: acquisitions within 1% of the capture's
        let a = (o.replayed.acquisitions as f64 - o.measured.acquisitions as f64).abs();
        assert!(a < 0.01 * o.measured.acquisitions as f64, "{r}");
    }
    drain.sort_by(f64::total_cmp);
    pcr.sort_by(f64::total_cmp);
    // measured: __page_cache_release 2.6/2.9/12.5%, folio_batch_move_lru 4.1/10.0/23.7%
    assert!(pcr[1] < 0.05, "{pcr:?}");
    assert!(drain[1] < 0.105, "{drain:?}");
    assert!(drain[2] < 0.30, "{drain:?}");
}

#[test]
fn fbatch_series_takes_the_lock_at_unmap_and_the_fix_gives_it_back() {
    let cap = capture("churn-4K-r1");
    let pre = run(&cap, "dead-prefree", &[]);
    let series = run(&cap, "fbatch-drain", &[]);
    let fix = run(
        &cap,
        "fbatch-drain",
        &[("dead_on_batch_takes_lock", "false")],
    );
    let base = run(&cap, "baseline", &[]);
    // every patch drops the post-drain relock of v6.18
    for o in [&pre, &series, &fix] {
        assert_eq!(path(o, Via::Release).predicted.acquisitions, 0);
    }
    assert!(path(&base, Via::Release).predicted.acquisitions > 800);
    // drains carry only live folios in all three, so they take the lock equally often
    assert_eq!(
        path(&series, Via::Drain).predicted.acquisitions,
        path(&pre, Via::Drain).predicted.acquisitions
    );
    // the regression: the unmap path's lock time rises several-fold (3.6-5.2x over 3 runs)
    let z = |o: &Outcome| path(o, Via::Zap).predicted_share_pct;
    assert!(z(&series) > 3.0 * z(&pre), "{} vs {}", z(&series), z(&pre));
    assert!(
        path(&series, Via::Zap).predicted.acquisitions
            > path(&pre, Via::Zap).predicted.acquisitions + 500
    );
    // with lru_add_del_folio() the dead folios take no lock: the pre-free kernel's traffic
    assert_eq!(fix.predicted, pre.predicted);
    assert!((z(&fix) - z(&pre)).abs() < 1e-9);
}

#[test]
fn cli_fbatch_drain_contract() {
    let cap = "fixtures/fbatch/churn-4K-r1/script-ns.txt.gz";
    let out = lockcast(&["whatif", "fbatch-drain", cap, "--bootstrap", "0"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("__page_cache_release (unmap)"), "{text}");
    assert!(text.contains("dead on the batch: 18397 folios"), "{text}");
    // the capture with call chains on every event names its drain sites
    let out = lockcast(&[
        "whatif",
        "fbatch-drain",
        "fixtures/fbatch/churn-4K-g/script-ns.txt.gz",
        "--bootstrap",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("do_wp_page 1"));
    // no madvise events: says what to record, exit 3 (bad input)
    let out = lockcast(&[
        "whatif",
        "fbatch-drain",
        "fixtures/replay/micro-16K-r1/script-ns.txt.gz",
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("syscalls:sys_enter_madvise"));
    // a pre-free capture cannot show its dead folios: refused, exit 2 (usage)
    for set in ["baseline_prefree=true", "dead_on_batch_takes_lok=false"] {
        let out = lockcast(&["whatif", "fbatch-drain", cap, "--set", set]);
        assert_eq!(out.status.code(), Some(2), "{set}");
    }
}
