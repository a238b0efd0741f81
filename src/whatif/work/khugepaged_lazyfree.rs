//! `khugepaged-lazyfree`: "mm: khugepaged: skip lazy-free folios" (Vernon Yang; MODELS.md §3(d)).
//!
//! With the patch, `hpage_collapse_scan_pmd()` stops at the first clean lazyfree PTE of a
//! range (not `VM_DROPPABLE`) with `SCAN_PAGE_LAZYFREE` ("page_lazyfree") instead of scanning
//! the 512 PTEs and, when it would succeed, collapsing the range.
//!
//! Replay. khugepaged's scans (`huge_memory:mm_khugepaged_scan_pmd`, fired after any collapse,
//! `mm_collapse_huge_page[_isolate]` before it) are grouped into passes (a gap longer than half
//! of `scan_sleep_millisecs` starts one). Each scan is a work item with its measured duration
//! (time since the previous scan of the pass) and a budget cost of 512 progress units
//! (`khugepaged_scan_mm_slot()` adds `HPAGE_PMD_NR` per PMD whatever the result); a pass ends
//! when its units are used (the capture's own pass holds exactly its scans' units), then
//! khugepaged sleeps for the gap measured after that pass. Scans of
//! a lazyfree range are replaced by an early exit (duration `lazyfree_scan_ns`, budget
//! `skip_progress` units), and everything after them moves up. Replaying the unchanged scans
//! the same way reproduces the capture (the null check in `measured`).
//!
//! Which scans are lazyfree: the scan events carry the mm but no address, so a task is tied
//! to its mm by the first `mmap_lock:*` event in its own context after its
//! `syscalls:sys_enter_madvise`; an mm whose `MADV_HUGEPAGE` ranges are all covered by its
//! `MADV_FREE` ranges has only lazyfree ranges eligible for khugepaged in THP "madvise" mode,
//! so every scan of it after the `MADV_FREE` is a lazyfree scan (no re-dirtying assumed: the
//! cold task does not touch its memory again).

use super::round3;
use std::collections::{BTreeMap, HashMap};

use lockcast_parsers::payload::{self, MADV_FREE, MADV_HUGEPAGE};
use serde_json::{json, Value};

use super::capture;
use super::{WorkOutcome, WorkPolicy};
use crate::error::{Error, Result};
use crate::whatif::params::{self, Set};

const HPAGE_PMD_NR: f64 = 512.0;

/// The policy.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KhugepagedLazyfree {
    /// Budget units a skipped (lazyfree) scan costs: 512 with this kernel's accounting (per PMD,
    /// whatever the result); 1 if progress counted the PTEs actually scanned.
    pub skip_progress: f64,
    /// Duration of a skipped scan in ns; default: median of the capture's `page_pmd_mapped`
    /// scans (the other scans that return before looking at PTEs), else its shortest scan.
    pub lazyfree_scan_ns: Option<f64>,
    /// khugepaged's `scan_sleep_millisecs` during the capture; default: the capture's
    /// `meta.txt` (`khugepaged_scan_sleep_millisecs=`). Needed for a bare trace file.
    pub scan_sleep_millisecs: Option<f64>,
    /// khugepaged's `pages_to_scan` during the capture; default: `meta.txt`
    /// (`khugepaged_pages_to_scan=`).
    pub pages_to_scan: Option<f64>,
    /// Task names by pid, `PID:NAME,PID:NAME` (`14993:hot1,14994:cold`); default: the
    /// `task= pid=` lines of `workload.txt`, else `tid N`.
    pub tasks: Option<String>,
}

impl Default for KhugepagedLazyfree {
    fn default() -> Self {
        KhugepagedLazyfree {
            skip_progress: HPAGE_PMD_NR,
            lazyfree_scan_ns: None,
            scan_sleep_millisecs: None,
            pages_to_scan: None,
            tasks: None,
        }
    }
}

/// Constructor for the registry.
pub fn make(set: &Set) -> Result<Box<dyn WorkPolicy>> {
    let p: KhugepagedLazyfree = params::parse("khugepaged-lazyfree", set)?;
    let ok = |x: f64| x.is_finite() && x >= 0.0;
    if !ok(p.skip_progress) || p.lazyfree_scan_ns.is_some_and(|x| !ok(x)) {
        return Err(Error::Usage(
            "khugepaged-lazyfree: --set skip_progress and lazyfree_scan_ns take non-negative numbers"
                .into(),
        ));
    }
    for (k, v) in [
        ("scan_sleep_millisecs", p.scan_sleep_millisecs),
        ("pages_to_scan", p.pages_to_scan),
    ] {
        if v.is_some_and(|x| !(x.is_finite() && x > 0.0)) {
            return Err(Error::Usage(format!(
                "khugepaged-lazyfree: --set {k}: expected a positive number"
            )));
        }
    }
    if let Some(t) = &p.tasks {
        task_names(t)?;
    }
    Ok(Box::new(p))
}

/// `PID:NAME,...` of `--set tasks=`.
fn task_names(s: &str) -> Result<HashMap<i32, String>> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|item| {
            item.split_once(':')
                .and_then(|(p, n)| Some((p.trim().parse::<i32>().ok()?, n.trim().to_string())))
                .filter(|(_, n)| !n.is_empty())
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "khugepaged-lazyfree: --set tasks: '{item}': expected PID:NAME (e.g. tasks=14993:hot1,14994:cold)"
                    ))
                })
        })
        .collect()
}

/// One khugepaged scan of a PMD range.
#[derive(Debug, Clone)]
pub struct Scan {
    /// Time of the scan event (after its collapse, if any).
    pub ts: i64,
    /// mm as printed.
    pub mm: String,
    /// Scan result.
    pub status: String,
    /// The collapse's small folios (`512 - none_or_zero` of its isolate event), when it collapsed.
    pub isolated_pages: Option<u32>,
    /// Pass index (0-based) in the capture.
    pub pass: usize,
    /// Work time: since the previous scan of the pass (the median for a pass's first scan).
    pub dur: i64,
}

/// What the events say about the tasks and khugepaged.
#[derive(Debug, Clone, Default)]
pub struct Khugepaged {
    /// khugepaged's scans in time order.
    pub scans: Vec<Scan>,
    /// mm → task label (`hot1` from workload.txt, else `tid N`).
    pub mm_task: BTreeMap<String, String>,
    /// mm → time of its first `MADV_HUGEPAGE`.
    pub registered: BTreeMap<String, i64>,
    /// mm → time from which all its eligible ranges are lazyfree.
    pub lazyfree_from: BTreeMap<String, i64>,
    /// Start time of each captured pass.
    pub pass_start: Vec<i64>,
    /// Gap after each pass (sleep), ns.
    pub pass_gap: Vec<i64>,
    /// Coarsest timestamp resolution of the events, ns (1000: raw ftrace and default
    /// `trace-cmd report` print µs).
    pub ts_res_ns: u32,
}

#[derive(Debug, Clone, Copy)]
struct Range {
    ts: i64,
    start: u64,
    end: u64,
}

fn covered(r: (u64, u64), by: &[Range]) -> Option<i64> {
    // the time when the union of `by` first covers r: sort by start, sweep
    let mut v: Vec<&Range> = by.iter().filter(|f| f.end > r.0 && f.start < r.1).collect();
    v.sort_by_key(|f| f.start);
    let mut at = r.0;
    let mut when = i64::MIN;
    for f in v {
        if f.start > at {
            return None;
        }
        if f.end > at {
            at = f.end;
            when = when.max(f.ts);
        }
        if at >= r.1 {
            return Some(when);
        }
    }
    None
}

/// Task names by pid: the `task= pid=` lines of `workload.txt` when there is one, then
/// `--set tasks=` on top.
fn names_of(input: &capture::WorkInput, tasks: Option<&str>) -> Result<HashMap<i32, String>> {
    let mut names: HashMap<i32, String> = HashMap::new();
    if let Some(wp) = input.side("workload.txt") {
        for (_, kv) in capture::kv_lines(&wp)? {
            if let (Some(t), Some(p)) = (kv.get("task"), kv.get("pid")) {
                if let Ok(pid) = p.parse::<i32>() {
                    names.insert(pid, t.clone());
                }
            }
        }
    }
    if let Some(t) = tasks {
        names.extend(task_names(t)?);
    }
    Ok(names)
}

/// Read a capture's events (any event format: perf script, raw ftrace, trace-cmd report,
/// perf.data) and tie scans to tasks named by `names` (pid → name).
pub fn read(path: &str, scan_sleep_ms: f64, names: &HashMap<i32, String>) -> Result<Khugepaged> {
    let events = capture::perf_events(path)?;
    let bad = |line: u64, what: &str, err: lockcast_parsers::LineError| {
        Error::Input(format!("{path}:{line}: {what} payload: {err}"))
    };
    let mut madv: Vec<(i64, i32, payload::Madvise)> = Vec::new();
    let mut locks: HashMap<i32, Vec<(i64, String)>> = HashMap::new();
    let mut scans = Vec::new();
    let mut pending_isolate: Option<u32> = None;
    let mut ts_res_ns = 1;
    for e in &events {
        ts_res_ns = ts_res_ns.max(e.ts_res_ns);
        let ts = e
            .ts_ns
            .ok_or_else(|| Error::Input(format!("{path}:{}: event without a timestamp", e.line)))?;
        match (e.system.as_deref(), e.name.as_str()) {
            (_, "sys_enter_madvise") => {
                let m = payload::madvise(&e.payload)
                    .map_err(|x| bad(e.line, "sys_enter_madvise", x))?;
                madv.push((ts, e.tid, m));
            }
            // ftrace and trace-cmd print no system: the event names say it
            (Some("mmap_lock"), _) | (None, "mmap_lock_acquire_returned") => {
                let m = payload::mmap_lock(&e.payload).map_err(|x| bad(e.line, "mmap_lock", x))?;
                locks.entry(e.tid).or_default().push((ts, m.mm));
            }
            (_, "mm_collapse_huge_page_isolate") => {
                let m = payload::collapse_huge_page_isolate(&e.payload)
                    .map_err(|x| bad(e.line, "mm_collapse_huge_page_isolate", x))?;
                pending_isolate =
                    (m.status == "succeeded").then(|| (512 - m.none_or_zero.clamp(0, 512)) as u32);
            }
            (_, "mm_collapse_huge_page") => {
                payload::collapse_huge_page(&e.payload)
                    .map_err(|x| bad(e.line, "mm_collapse_huge_page", x))?;
            }
            (_, "mm_khugepaged_scan_pmd") => {
                let s = payload::khugepaged_scan_pmd(&e.payload)
                    .map_err(|x| bad(e.line, "mm_khugepaged_scan_pmd", x))?;
                let iso = pending_isolate.take();
                scans.push(Scan {
                    ts,
                    isolated_pages: if s.status == "succeeded" { iso } else { None },
                    mm: s.mm,
                    status: s.status,
                    pass: 0,
                    dur: 0,
                });
            }
            _ => {}
        }
    }
    if scans.is_empty() {
        return Err(Error::Input(format!(
            "{path}: no huge_memory:mm_khugepaged_scan_pmd events (see `lockcast whatif --help`)"
        )));
    }
    // task -> mm, and each mm's madvise ranges
    let mut k = Khugepaged {
        ts_res_ns,
        ..Khugepaged::default()
    };
    let mut hp: BTreeMap<String, Vec<Range>> = BTreeMap::new();
    let mut fr: BTreeMap<String, Vec<Range>> = BTreeMap::new();
    for (ts, tid, m) in &madv {
        let Some(mm) = locks
            .get(tid)
            .and_then(|v| v.iter().find(|(t, _)| t >= ts))
            .map(|(_, mm)| mm.clone())
        else {
            continue;
        };
        k.mm_task.entry(mm.clone()).or_insert_with(|| {
            names
                .get(tid)
                .cloned()
                .unwrap_or_else(|| format!("tid {tid}"))
        });
        let r = Range {
            ts: *ts,
            start: m.start,
            end: m.start.saturating_add(m.len),
        };
        match m.behavior {
            MADV_HUGEPAGE => {
                k.registered.entry(mm.clone()).or_insert(*ts);
                hp.entry(mm).or_default().push(r);
            }
            MADV_FREE => fr.entry(mm).or_default().push(r),
            _ => {}
        }
    }
    for (mm, ranges) in &hp {
        let Some(frees) = fr.get(mm) else { continue };
        let mut when = i64::MIN;
        let mut all = true;
        for r in ranges {
            match covered((r.start, r.end), frees) {
                Some(t) => when = when.max(t),
                None => all = false,
            }
        }
        if all {
            k.lazyfree_from.insert(mm.clone(), when);
        }
    }
    // passes
    let gap = (scan_sleep_ms * 1e6 / 2.0) as i64;
    let mut pass = 0;
    for i in 0..scans.len() {
        if i > 0 && scans[i].ts - scans[i - 1].ts > gap {
            pass += 1;
        }
        scans[i].pass = pass;
        scans[i].dur = if i > 0 && scans[i - 1].pass == pass {
            scans[i].ts - scans[i - 1].ts
        } else {
            -1
        };
    }
    // first scan of a pass: the median in-pass duration of scans with the same result
    let mut by_status: HashMap<String, Vec<i64>> = HashMap::new();
    for s in &scans {
        if s.dur >= 0 {
            by_status.entry(s.status.clone()).or_default().push(s.dur);
        }
    }
    let all: Vec<i64> = scans.iter().filter(|s| s.dur >= 0).map(|s| s.dur).collect();
    for s in scans.iter_mut() {
        if s.dur < 0 {
            s.dur = by_status
                .get(&s.status)
                .map(|v| median(v))
                .unwrap_or_else(|| median(&all));
        }
    }
    let npass = pass + 1;
    k.pass_start = vec![0; npass];
    let mut end = vec![0; npass];
    for (i, s) in scans.iter().enumerate() {
        if i == 0 || scans[i - 1].pass != s.pass {
            k.pass_start[s.pass] = s.ts - s.dur;
        }
        end[s.pass] = s.ts;
    }
    k.pass_gap = (0..npass.saturating_sub(1))
        .map(|p| k.pass_start[p + 1] - end[p])
        .collect();
    k.scans = scans;
    Ok(k)
}

use crate::stats::upper_median as median;

/// Replay the scans pass by pass; `cost`/`dur` per scan. Returns each scan's time.
///
/// Pass `k` of the capture holds `512 × its scans` budget units (what it used on scans; the
/// kernel's other progress, e.g. for VMAs it skips, is folded in), later passes
/// `pages_to_scan`; a pass ends when its units are used, and the next starts after the gap the
/// capture shows after pass `k` (median beyond). Replaying the capture's own costs and
/// durations gives back its times.
fn replay(k: &Khugepaged, budget: f64, cost: &[f64], dur: &[i64]) -> Vec<i64> {
    let gap_med = median(&k.pass_gap);
    let npass = k.pass_start.len();
    let mut cap = vec![0.0; npass];
    for s in &k.scans {
        cap[s.pass] += HPAGE_PMD_NR;
    }
    let capacity = |p: usize| cap.get(p).copied().unwrap_or(budget);
    let mut out = Vec::with_capacity(k.scans.len());
    let mut pass = 0usize;
    let mut t = k.pass_start[0];
    let mut used = 0.0;
    for i in 0..k.scans.len() {
        if used >= capacity(pass) {
            let g = k.pass_gap.get(pass).copied().unwrap_or(gap_med);
            pass += 1;
            // khugepaged sleeps after each pass: less work in it starts the next one sooner
            t += g;
            used = 0.0;
        }
        t += dur[i];
        used += cost[i];
        out.push(t);
    }
    out
}

impl WorkPolicy for KhugepagedLazyfree {
    fn name(&self) -> &'static str {
        "khugepaged-lazyfree"
    }

    fn run(&self, dir: &str) -> Result<WorkOutcome> {
        let input = capture::WorkInput::new(dir)?;
        let meta = input.kv("meta.txt")?;
        // --set wins over meta.txt; without either the error names both
        let setting = |param: &str, given: Option<f64>| -> Result<f64> {
            if let Some(v) = given {
                return Ok(v);
            }
            let key = format!("khugepaged_{param}");
            match &meta {
                Some(m) if m.pairs.contains_key(&key) => Ok(m.int(&key)? as f64),
                Some(m) => Err(Error::Input(format!(
                    "{}: no {key}= line; pass --set {param}=N (khugepaged's {param} during the capture)",
                    m.path
                ))),
                None => Err(Error::Input(format!(
                    "{dir}: no meta.txt in {} with {key}=; pass --set {param}=N (khugepaged's {param} during the capture, /sys/kernel/mm/transparent_hugepage/khugepaged/{param})",
                    input.dir()
                ))),
            }
        };
        let sleep_ms = setting("scan_sleep_millisecs", self.scan_sleep_millisecs)?;
        let budget = setting("pages_to_scan", self.pages_to_scan)?;
        let names = names_of(&input, self.tasks.as_deref())?;
        let trace = input.trace("events.txt")?;
        let k = read(&trace, sleep_ms, &names)?;
        let n = k.scans.len();
        let is_lf: Vec<bool> = k
            .scans
            .iter()
            .map(|s| k.lazyfree_from.get(&s.mm).is_some_and(|t| s.ts > *t))
            .collect();
        let quick: Vec<i64> = k
            .scans
            .iter()
            .filter(|s| s.status == "page_pmd_mapped")
            .map(|s| s.dur)
            .collect();
        // no page_pmd_mapped scan in the capture: its shortest scan of any kind (an upper
        // bound of an early exit, so the saving is not overstated)
        let shortest = k.scans.iter().map(|s| s.dur).min().unwrap_or(0);
        let lf_ns = self.lazyfree_scan_ns.unwrap_or_else(|| {
            if quick.is_empty() {
                shortest as f64
            } else {
                median(&quick) as f64
            }
        });

        // replays: identity (null check), patch with this kernel's budget accounting, and with
        // progress counted per PTE scanned
        let base_cost = vec![HPAGE_PMD_NR; n];
        let base_dur: Vec<i64> = k.scans.iter().map(|s| s.dur).collect();
        let null = replay(&k, budget, &base_cost, &base_dur);
        let pdur: Vec<i64> = (0..n)
            .map(|i| {
                if is_lf[i] {
                    lf_ns.round() as i64
                } else {
                    base_dur[i]
                }
            })
            .collect();
        let cost_with = |c: f64| -> Vec<f64> {
            (0..n)
                .map(|i| if is_lf[i] { c } else { HPAGE_PMD_NR })
                .collect()
        };
        let pred = replay(&k, budget, &cost_with(self.skip_progress), &pdur);
        let alt_progress = if self.skip_progress == HPAGE_PMD_NR {
            1.0
        } else {
            HPAGE_PMD_NR
        };
        let alt = replay(&k, budget, &cost_with(alt_progress), &pdur);

        // identity replay: must give back the capture's times (a check of the pass model)
        let same_pass_ns: i64 = (0..n)
            .map(|i| (null[i] - k.scans[i].ts).abs())
            .max()
            .unwrap_or(0);
        let mut measured: BTreeMap<String, Value> = BTreeMap::new();
        let mut predicted: BTreeMap<String, Value> = BTreeMap::new();
        let mut interval = BTreeMap::new();
        let mut status: BTreeMap<String, u64> = BTreeMap::new();
        for s in &k.scans {
            *status.entry(s.status.clone()).or_default() += 1;
        }
        measured.insert("scans".into(), json!(n));
        measured.insert("scans_by_status".into(), json!(status));
        measured.insert("passes".into(), json!(k.pass_start.len()));
        measured.insert("pass_gap_median_ns".into(), json!(median(&k.pass_gap)));
        measured.insert(
            "lazyfree_scans".into(),
            json!(is_lf.iter().filter(|x| **x).count()),
        );
        measured.insert("null_replay_max_error_ns".into(), json!(same_pass_ns));
        if let Ok(d) = capture::vmstat_delta(input.dir()) {
            measured.insert(
                "thp_collapse_alloc".into(),
                json!(d.get("thp_collapse_alloc").copied().unwrap_or(0)),
            );
        }
        // savings: dropped collapses of lazyfree ranges
        let dropped: Vec<&Scan> = (0..n)
            .filter(|&i| is_lf[i] && k.scans[i].status == "succeeded")
            .map(|i| &k.scans[i])
            .collect();
        let iso: u64 = dropped
            .iter()
            .map(|s| s.isolated_pages.unwrap_or(512) as u64)
            .sum();
        predicted.insert("collapses_saved".into(), json!(dropped.len()));
        predicted.insert("thp_allocations_saved".into(), json!(dropped.len()));
        predicted.insert(
            "lru_lock_acquisitions_saved".into(),
            json!(iso + dropped.len() as u64),
        );
        predicted.insert("mmap_lock_write_saved".into(), json!(dropped.len()));
        predicted.insert(
            "ptes_scanned_saved".into(),
            json!(is_lf.iter().filter(|x| **x).count() as u64 * 511),
        );
        let scan_ns_saved: i64 = (0..n)
            .filter(|&i| is_lf[i])
            .map(|i| base_dur[i] - pdur[i])
            .sum();
        predicted.insert("khugepaged_work_ns_saved".into(), json!(scan_ns_saved));

        // per task: last collapse (all its ranges PMD-mapped), relative to registration
        let mut tasks: Vec<(&String, &String)> = k.mm_task.iter().collect();
        tasks.sort_by_key(|(mm, _)| k.registered.get(*mm).copied().unwrap_or(i64::MAX));
        for (mm, task) in tasks {
            let idx: Vec<usize> = (0..n)
                .filter(|&i| &k.scans[i].mm == mm && k.scans[i].status == "succeeded")
                .collect();
            let reg = k.registered.get(mm).copied().unwrap_or(0);
            if k.lazyfree_from.contains_key(mm) {
                let c = (0..n).filter(|&i| &k.scans[i].mm == mm).count();
                measured.insert(format!("{task}.lazyfree"), json!(true));
                measured.insert(format!("{task}.scans"), json!(c));
                continue;
            }
            let Some(&last) = idx.last() else { continue };
            measured.insert(format!("{task}.collapses"), json!(idx.len()));
            measured.insert(
                format!("{task}.last_collapse_ns"),
                json!(k.scans[last].ts - reg),
            );
            let p = pred[last] - reg;
            let a = alt[last] - reg;
            let sooner = k.scans[last].ts - pred[last];
            let sooner_alt = k.scans[last].ts - alt[last];
            predicted.insert(format!("{task}.last_collapse_ns"), json!(p));
            predicted.insert(format!("{task}.sooner_ns"), json!(sooner));
            predicted.insert(
                format!("{task}.sooner_ns_skip_progress_{}", alt_progress as i64),
                json!(sooner_alt),
            );
            interval.insert(
                format!("{task}.last_collapse_ns"),
                [p.min(a) as f64, p.max(a) as f64],
            );
            // time share of the task's run spent with 4 KiB mappings (dTLB-miss proxy), from
            // registration to the end of the capture's scans
            let end = k.scans[n - 1].ts.max(k.scans[last].ts);
            let share = |times: &[i64]| -> f64 {
                let total = (end - reg).max(1) as f64;
                let m = idx.len() as f64;
                let s: f64 = idx
                    .iter()
                    .map(|&i| (times[i] - reg).max(0) as f64 / m)
                    .sum();
                (s / total).min(1.0)
            };
            let meas: Vec<i64> = k.scans.iter().map(|s| s.ts).collect();
            let (sb, sp, sa) = (share(&meas), share(&pred), share(&alt));
            measured.insert(format!("{task}.unhuge_time_share"), json!(round3(sb)));
            predicted.insert(format!("{task}.unhuge_time_share"), json!(round3(sp)));
            predicted.insert(
                format!("{task}.unhuge_time_change"),
                json!(round3(if sb > 0.0 { (sp - sb) / sb } else { 0.0 })),
            );
            predicted.insert(
                format!(
                    "{task}.unhuge_time_change_skip_progress_{}",
                    alt_progress as i64
                ),
                json!(round3(if sb > 0.0 { (sa - sb) / sb } else { 0.0 })),
            );
        }
        let mut params = BTreeMap::new();
        params.insert("skip_progress".into(), format!("{}", self.skip_progress));
        params.insert("lazyfree_scan_ns".into(), format!("{lf_ns:.0}"));
        params.insert("pages_to_scan".into(), format!("{budget}"));
        params.insert("scan_sleep_millisecs".into(), format!("{sleep_ms}"));
        let mut notes = vec![
            "scans of an mm whose MADV_HUGEPAGE ranges are all MADV_FREE'd (task -> mm from mmap_lock events in the task's context) are lazyfree scans; none is re-dirtied".into(),
            format!(
                "skip_progress={}: budget units a skipped scan uses; this kernel adds HPAGE_PMD_NR (512) per PMD whatever the result, so with 512 the skip saves only scan time; the skip_progress_{} variant shows a per-PTE accounting",
                self.skip_progress, alt_progress as i64
            ),
            "unhuge_time_share: mean share of the task's time (registration .. last scan) its ranges were still 4 KiB-mapped, the proxy for the posted dTLB-miss change (no hardware counters in this VM)".into(),
            "posted (x86_64): hot2 dTLB-load-misses -75.56%, cycles per access -55.44% (qemu: -98.67%, -71.60%)".into(),
        ];
        if k.ts_res_ns > 1 {
            notes.push(format!(
                "timestamps have {} ns resolution (raw ftrace / trace-cmd report without -t): scan durations are rounded to it",
                k.ts_res_ns
            ));
        }
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
