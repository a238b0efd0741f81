//! `lazyfree-thp`: "Reclaim lazyfree THP without splitting" (Lance Yang, v3; MODELS.md §3(c)).
//!
//! Before the patch, reclaim of a PMD-mapped clean lazyfree (MADV_FREE) THP splits the PMD in
//! `try_to_unmap_one()` (`split_huge_pmd_locked()` → `__split_huge_pmd_locked()`: 512 PTEs
//! written, rmap moved to PTEs, one `thp_split_pmd`), restarts the walk and unmaps the PTEs;
//! after it, `unmap_huge_pmd_locked()` → `__discard_anon_folio_pmd_locked()` clears the PMD
//! (one TLB flush), drops the PMD rmap and frees the deposited page table. Freeing the folio
//! (`free_unref_folios()` in `shrink_folio_list()`) and `lru_lock` are the same on both sides.
//!
//! Without kprobes, time is attributed from `perf record -g -e cpu-clock` samples: a reclaim
//! sample (its stack holds a reclaim entry point) is *split* when the stack holds
//! `__split_huge_pmd_locked`, *PTE unmap* when it holds `try_to_unmap_one` without a split,
//! *discard* when it holds `unmap_huge_pmd_locked`, *free* when it holds the folio freeing.
//! Counts come from `/proc/vmstat` around the reclaim (`thp_split_pmd`, `pglazyfreed`).
//!
//! The discard cost is calibrated on the same machine from a whole-PMD zap (`MADV_DONTNEED`
//! of PMD-mapped THPs: `zap_huge_pmd()` does the same PMD clear, rmap drop and page-table
//! free) plus one TLB flush per PMD as measured under the split (`pmdp_invalidate` →
//! `flush_tlb_mm_range`): the zap batches its flush over the range, the discard does not.
//!
//! Prediction (capture with splits, the unpatched side):
//! `T_after = T_wall − (S_split + S_pte)·p + n_thp·c_discard`, off-CPU time kept.
//! A capture with discards and no splits (patched side) is predicted backwards only with the
//! split and PTE-unmap costs given (`--set c_split_ns=… c_pte_unmap_ns=…`).

use super::round3;
use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::capture;
use super::{poisson95, WorkOutcome, WorkPolicy};
use crate::error::{Error, Result};
use crate::whatif::params::{self, Set};

/// Base pages per PMD-mapped THP (x86-64, 4 KiB pages).
const HPAGE_PMD_NR: i64 = 512;

/// Stack frames that mark a reclaim sample (memcg force_empty / limit, direct, kswapd).
const RECLAIM_ROOTS: &[&str] = &[
    "shrink_folio_list",
    "try_to_free_mem_cgroup_pages",
    "mem_cgroup_force_empty_write",
    "do_try_to_free_pages",
    "balance_pgdat",
];
const SPLIT: &[&str] = &["__split_huge_pmd_locked", "split_huge_pmd_locked"];
const DISCARD: &[&str] = &["unmap_huge_pmd_locked", "__discard_anon_folio_pmd_locked"];
const PTE_UNMAP: &[&str] = &["try_to_unmap_one"];
const FREE: &[&str] = &[
    "free_unref_folios",
    "__mem_cgroup_uncharge_folios",
    "free_frozen_pages",
];
const TLB_FLUSH: &[&str] = &["flush_tlb_mm_range"];

/// The policy (parameters: optional cost overrides, ns; none given = calibrated from the
/// capture).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LazyfreeThp {
    /// Override of the calibrated whole-PMD discard cost per THP.
    pub c_discard_ns: Option<f64>,
    /// Split cost per THP, needed to predict backwards from a patched capture.
    pub c_split_ns: Option<f64>,
    /// PTE-unmap cost per THP, needed to predict backwards from a patched capture.
    pub c_pte_unmap_ns: Option<f64>,
}

/// Constructor for the registry.
pub fn make(set: &Set) -> Result<Box<dyn WorkPolicy>> {
    let p: LazyfreeThp = params::parse("lazyfree-thp", set)?;
    for (k, v) in [
        ("c_discard_ns", p.c_discard_ns),
        ("c_split_ns", p.c_split_ns),
        ("c_pte_unmap_ns", p.c_pte_unmap_ns),
    ] {
        if v.is_some_and(|x| !(x.is_finite() && x >= 0.0)) {
            return Err(Error::Usage(format!(
                "lazyfree-thp: --set {k}: expected a non-negative number"
            )));
        }
    }
    Ok(Box::new(p))
}

/// Sample counts of one capture, by class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attribution {
    /// Samples whose stack is in reclaim.
    pub reclaim: u64,
    /// Reclaim samples under the PMD split.
    pub split: u64,
    /// Reclaim samples in `try_to_unmap_one` outside a split (PTE unmap).
    pub pte_unmap: u64,
    /// Reclaim samples under the whole-PMD discard.
    pub discard: u64,
    /// Reclaim samples freeing the folios.
    pub free: u64,
    /// TLB-flush samples under the split (one flush per PMD).
    pub split_flush: u64,
    /// Samples in the `MADV_DONTNEED` calibration under `zap_huge_pmd`.
    pub zap_pmd: u64,
    /// Sample period in ns (cpu-clock: the period is the CPU time a sample stands for).
    pub period_ns: u64,
}

fn has(stack: &[String], names: &[&str]) -> bool {
    stack.iter().any(|f| names.contains(&f.as_str()))
}

/// Classify the samples of `samples.txt[.gz]`.
pub fn attribute(path: &str) -> Result<Attribution> {
    let mut a = Attribution::default();
    let mut periods = Vec::new();
    for e in capture::perf_events(path)? {
        if e.name != "cpu-clock" {
            continue;
        }
        if let Some(p) = e.period {
            periods.push(p);
        }
        let stack: Vec<String> = e.callchain.iter().map(|f| f.symbol.clone()).collect();
        if has(&stack, RECLAIM_ROOTS) {
            a.reclaim += 1;
            if has(&stack, SPLIT) {
                a.split += 1;
                if has(&stack, TLB_FLUSH) {
                    a.split_flush += 1;
                }
            } else if has(&stack, DISCARD) {
                a.discard += 1;
            } else if has(&stack, PTE_UNMAP) {
                a.pte_unmap += 1;
            } else if has(&stack, FREE) {
                a.free += 1;
            }
        } else if has(&stack, &["zap_huge_pmd"]) {
            a.zap_pmd += 1;
        }
    }
    periods.sort_unstable();
    a.period_ns = periods.get(periods.len() / 2).copied().ok_or_else(|| {
        Error::Input(format!(
            "{path}: no cpu-clock samples with a period (record with perf record -g -e cpu-clock)"
        ))
    })?;
    Ok(a)
}

impl WorkPolicy for LazyfreeThp {
    fn name(&self) -> &'static str {
        "lazyfree-thp"
    }

    fn run(&self, dir: &str) -> Result<WorkOutcome> {
        // a directory, or one sample trace (any event format) with its directory's side files
        let input = capture::WorkInput::new(dir)?;
        let w = capture::KvFile::open(input.dir(), "workload.txt")?;
        let wall = w.int("reclaim_ns")? as f64;
        let delta = capture::vmstat_delta(input.dir())?;
        let d = |k: &str| delta.get(k).copied().unwrap_or(0);
        let split_pmd = d("thp_split_pmd");
        let lazyfreed = d("pglazyfreed");
        let n_thp = lazyfreed / HPAGE_PMD_NR;
        let a = attribute(&input.trace("samples.txt")?)?;
        let p = a.period_ns as f64;
        let cpu = a.reclaim as f64 * p;

        // zap calibration: THPs zapped = AnonHugePages before MADV_DONTNEED / 2 MiB
        let zapped = w.int("anon_huge_kb_before_dontneed").unwrap_or(0) / 2048;
        let flush_per_pmd = if split_pmd > 0 {
            a.split_flush as f64 * p / split_pmd as f64
        } else {
            0.0
        };
        let c_discard_cal = if zapped > 0 {
            Some(a.zap_pmd as f64 * p / zapped as f64 + flush_per_pmd)
        } else {
            None
        };
        let c_discard = self.c_discard_ns.or(c_discard_cal).ok_or_else(|| {
            Error::Input(format!(
                "{dir}: no MADV_DONTNEED calibration (anon_huge_kb_before_dontneed) in {}; \
                 pass --set c_discard_ns=N",
                w.path
            ))
        })?;

        let mut measured: BTreeMap<String, Value> = BTreeMap::new();
        measured.insert("reclaim_wall_ns".into(), json!(wall as i64));
        measured.insert("reclaim_cpu_ns".into(), json!(cpu as i64));
        measured.insert("thp_split_pmd".into(), json!(split_pmd));
        measured.insert("pglazyfreed".into(), json!(lazyfreed));
        measured.insert("lazyfree_thps".into(), json!(n_thp));
        measured.insert("thp_split_page".into(), json!(d("thp_split_page")));
        measured.insert("samples_reclaim".into(), json!(a.reclaim));
        measured.insert("samples_split".into(), json!(a.split));
        measured.insert("samples_pte_unmap".into(), json!(a.pte_unmap));
        measured.insert("samples_discard".into(), json!(a.discard));
        measured.insert("samples_free".into(), json!(a.free));
        measured.insert("samples_zap_pmd".into(), json!(a.zap_pmd));
        measured.insert("sample_period_ns".into(), json!(a.period_ns));
        if let Ok(dn) = w.int("dontneed_ns") {
            measured.insert("dontneed_wall_ns".into(), json!(dn));
            measured.insert("dontneed_thps".into(), json!(zapped));
        }
        let mut predicted: BTreeMap<String, Value> = BTreeMap::new();
        let mut interval = BTreeMap::new();
        let mut notes = Vec::new();
        let mut params = BTreeMap::new();
        params.insert("c_discard_ns".into(), format!("{c_discard:.0}"));

        if split_pmd > 0 || a.split > 0 {
            // unpatched capture: predict the discard side
            let n = split_pmd.max(0) as f64;
            let c_split = a.split as f64 * p / n.max(1.0);
            let c_pte = a.pte_unmap as f64 * p / n.max(1.0);
            let removed = (a.split + a.pte_unmap) as f64 * p;
            let t_after = (wall - removed + n * c_discard).max(0.0);
            measured.insert(
                "direction".into(),
                json!("before (splits) -> after (discard)"),
            );
            measured.insert("c_split_ns_per_thp".into(), json!(c_split.round() as i64));
            measured.insert("c_pte_unmap_ns_per_thp".into(), json!(c_pte.round() as i64));
            predicted.insert("reclaim_wall_ns".into(), json!(t_after.round() as i64));
            predicted.insert(
                "reclaim_cpu_ns".into(),
                json!((cpu - removed + n * c_discard).round() as i64),
            );
            predicted.insert("speedup".into(), json!(round3(wall / t_after.max(1.0))));
            predicted.insert(
                "removed_ns_per_thp".into(),
                json!((c_split + c_pte - c_discard).round() as i64),
            );
            predicted.insert("thp_split_pmd".into(), json!(0));
            predicted.insert("ptes_written_saved".into(), json!(n as i64 * HPAGE_PMD_NR));
            predicted.insert("rmap_walk_restarts_saved".into(), json!(n as i64));
            predicted.insert(
                "pmd_ptl_hold_ns_saved".into(),
                json!(((a.split as f64 * p) - n * c_discard).max(0.0).round() as i64),
            );
            predicted.insert("lru_lock_acquisitions_saved".into(), json!(0));
            // sampling noise on the removed and the discard counts
            let (rlo, rhi) = poisson95((a.split + a.pte_unmap) as f64);
            let (zlo, zhi) = poisson95(a.zap_pmd as f64);
            let cd = |z: f64| {
                if self.c_discard_ns.is_some() || zapped == 0 {
                    c_discard
                } else {
                    z * p / zapped as f64 + flush_per_pmd
                }
            };
            let lo = (wall - rhi * p + n * cd(zlo)).max(0.0);
            let hi = (wall - rlo * p + n * cd(zhi)).max(0.0);
            interval.insert("reclaim_wall_ns".into(), [lo.round(), hi.round()]);
            interval.insert(
                "speedup".into(),
                [round3(wall / hi.max(1.0)), round3(wall / lo.max(1.0))],
            );
            notes.push(format!(
                "{} of {} THPs were split in reclaim (thp_split_pmd), so this capture is the unpatched side: the discard side is predicted",
                split_pmd, n_thp
            ));
            notes.push(format!(
                "costs per THP from cpu-clock samples (period {} ns): split {:.0} ns, PTE unmap {:.0} ns, discard {:.0} ns \
                 (MADV_DONTNEED zap_huge_pmd {} samples over {} THPs + one TLB flush per PMD {:.0} ns)",
                a.period_ns, c_split, c_pte, c_discard, a.zap_pmd, zapped, flush_per_pmd
            ));
            notes.push(format!(
                "off-CPU time in the reclaim ({:.0} ns of {:.0} ns wall: drain of per-CPU LRU batches, cond_resched on a shared machine) is kept as measured",
                (wall - cpu).max(0.0),
                wall
            ));
            notes.push("interval: Poisson 95% on the removed and calibration sample counts; lru_lock is unchanged (the folio was already isolated)".into());
        } else if a.discard > 0 {
            // patched capture: predict the split side from given costs
            let (cs, cp) = match (self.c_split_ns, self.c_pte_unmap_ns) {
                (Some(s), Some(u)) => (s, u),
                _ => {
                    return Err(Error::Usage(format!(
                        "{dir}: this capture discards lazyfree THPs whole (patched kernel); predicting the split side \
                         needs --set c_split_ns=N --set c_pte_unmap_ns=N (e.g. from an unpatched capture)"
                    )))
                }
            };
            let n = n_thp as f64;
            let t_before = wall - a.discard as f64 * p + n * (cs + cp);
            measured.insert(
                "direction".into(),
                json!("after (discard) -> before (splits)"),
            );
            predicted.insert("reclaim_wall_ns".into(), json!(t_before.round() as i64));
            predicted.insert("slowdown".into(), json!(round3(t_before / wall.max(1.0))));
            predicted.insert("thp_split_pmd".into(), json!(n_thp));
            params.insert("c_split_ns".into(), format!("{cs:.0}"));
            params.insert("c_pte_unmap_ns".into(), format!("{cp:.0}"));
            notes.push("no splits in reclaim: the capture is the patched side; the unpatched side is predicted".into());
        } else {
            return Err(Error::Input(format!(
                "{dir}: no reclaim of PMD-mapped lazyfree THPs seen (thp_split_pmd 0, no samples under {} or {})",
                SPLIT[0], DISCARD[0]
            )));
        }
        notes.push(format!(
            "posted (Intel i5, 1 GiB via mem_cgroup_force_empty): 0.683426 s -> 0.049197 s, 13.9x, {:.0} ns removed per THP",
            (0.683426 - 0.049197) * 1e9 / 512.0
        ));
        Ok(WorkOutcome {
            policy: self.name().into(),
            capture: dir.into(),
            params,
            measured,
            predicted,
            interval,
            notes,
        })
    }
}
