//! Closed-form what-if for users who only have a `perf lock report` / `contention` table
//! (MODELS.md §4 M2 with the observation rule; §7 worked example).
//!
//! Model: N CPUs share one lock (machine-repairman, M/M/1//N); per CPU the lock is requested
//! after an exponential think time Z and held for S. By the arrival theorem an arrival sees the
//! N−1 system, so P(slowpath) = 1 − p0(N−1) and, on bare metal where the pending-bit waiter is
//! not traced, P(traced) = 1 − p0(N−1) − p1(N−1).
//!
//! From the table: contended C and total wait W of the lock's row. Acquisitions A default to C
//! (a table without lockdep prints acquired = contended, and a fault storm on 20 CPUs is near
//! saturation), and the scale-free think/hold ratio z = Z/S̄ is not identifiable from one table,
//! so it is swept (the interval covers z ∈ {0.25, 1, 4}).
//!
//! Policy: the adds are a share 1 − φ of acquisitions (φ = free-side `folios_put_refs` batches,
//! 1 per 31 folios freed, so φ = 1/32 by the kernel rule) and are batched k folios per drain
//! (k from the policy's drain rule and the folio size). A hold of k folios costs s0 + k·s1,
//! a free-side batch s0 + 31·s1 (unchanged by the policy). Each CPU's think time in total is
//! unchanged, so Z per request grows as requests fall. The predicted table values are the
//! measured ones times the model's ratios.
//!
//! Calibration from the table: the mean hold S under the table's own contention follows from
//! its average wait (M2 solved for S at the swept z); the per-folio cost s1 is local work that
//! does not depend on contention ([`DEFAULT_S1_NS`], measured on this project's captures), so
//! the fixed share f = s0/(s0+s1) = 1 − s1/S comes out of the table: high under heavy
//! contention, where every handoff moves the lock and lruvec cache lines between CPUs.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analyses::stat_row::StatRow;
use crate::error::{Error, Result};

use super::params::{self, Set};
use super::policy::DrainRule;

/// Untraced per-folio cost inside an `lru_lock` hold, ns: the spacing of `mm_lru_insertion`
/// events in a drain (741 ns in fixtures/replay/micro-4K-r1) minus the spacing of
/// `mm_page_free` events in a `free_unref_folios()` burst (641 ns), i.e. minus one tracepoint
/// emit. A lower bound (the free loop does some work of its own); the sweep covers 50..200 ns.
/// Measured on this project's captures, not fitted to any seed table.
pub const DEFAULT_S1_NS: f64 = 100.0;

/// One prediction under one set of model choices.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// z = Z / S̄ (baseline).
    pub z: f64,
    /// Folios per drain under the policy.
    pub k: u32,
    /// Per-folio hold cost assumed, ns.
    pub s1_ns: f64,
    /// Fixed share of a 1-folio hold (solved from the table unless given).
    pub f: f64,
    /// 1-folio add-side hold under the table's contention, ns (NaN when f was given).
    pub hold_ns: f64,
    /// contended(base) / contended(policy).
    pub ratio_contended: f64,
    /// total wait(base) / total wait(policy).
    pub ratio_total_wait: f64,
}

/// The summary-mode answer.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryOutcome {
    /// Policy name.
    pub policy: String,
    /// Parameters used.
    pub params: BTreeMap<String, String>,
    /// Table and row used.
    pub source: String,
    /// Row's lock label (may be empty: perf prints no name without lockdep).
    pub lock: String,
    /// Measured contended.
    pub contended: u64,
    /// Measured total wait, ns.
    pub total_wait_ns: u64,
    /// Point estimate (z = 1, the policy's default rule).
    pub point: Point,
    /// Predicted contended and total wait (measured / ratio).
    pub predicted_contended: u64,
    /// Predicted total wait, ns.
    pub predicted_total_wait_ns: u64,
    /// Lowest and highest ratios over the swept choices.
    pub ratio_contended_range: (f64, f64),
    /// Lowest and highest total-wait ratios.
    pub ratio_total_wait_range: (f64, f64),
    /// Every swept point.
    pub sweep: Vec<Point>,
}

/// Machine-repairman marginals for population `m`, ratio r = S/Z: p_j ∝ m!/(m−j)! r^j.
fn marginals(m: usize, r: f64) -> Vec<f64> {
    let mut logs = Vec::with_capacity(m + 1);
    let mut acc = 0.0f64;
    logs.push(0.0);
    for j in 1..=m {
        acc += ((m - j + 1) as f64).ln() + r.ln();
        logs.push(acc);
    }
    let mx = logs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = logs.iter().map(|l| (l - mx).exp()).collect();
    let s: f64 = w.iter().sum();
    w.into_iter().map(|x| x / s).collect()
}

/// Per-acquisition quantities of the closed loop: (traced fraction, mean wait per arrival in
/// units of S, slowpath fraction).
fn m2(n: usize, s: f64, z: f64, bare_metal: bool) -> (f64, f64, f64) {
    let r = s / z.max(1e-12);
    let pn = marginals(n, r);
    let l: f64 = pn.iter().enumerate().map(|(j, p)| j as f64 * p).sum();
    let x = (1.0 - pn[0]) / s;
    let resp = l / x; // mean time at the lock (wait + hold)
    let pm = marginals(n.saturating_sub(1), r);
    let slow = 1.0 - pm[0];
    let traced = if bare_metal {
        slow - pm.get(1).copied().unwrap_or(0.0)
    } else {
        slow
    };
    (traced.max(0.0), (resp - s).max(0.0), slow)
}

/// Folios per drain of order-`order` folios under a batch rule (MODELS.md §3a).
pub fn folios_per_drain(
    order: u32,
    max_cached_pages: u64,
    folio_cap: u32,
    page_cap: u64,
    rule: DrainRule,
) -> u32 {
    let p = 1u64 << order;
    if p >= max_cached_pages {
        return 1;
    }
    let by_pages = match rule {
        DrainRule::AfterAdd => page_cap.div_ceil(p),
        DrainRule::BeforeAdd => (page_cap / p).max(1),
    };
    (by_pages.min(u64::from(folio_cap))).max(1) as u32
}

struct Model {
    n: usize,
    phi: f64,
    f: f64,
    bare_metal: bool,
}

impl Model {
    /// Mean hold of the baseline mix, in units of a 1-folio add hold.
    fn s_bar1(&self) -> f64 {
        let s_free = self.f + 31.0 * (1.0 - self.f);
        (1.0 - self.phi) + self.phi * s_free
    }

    /// (contended, total wait, mean hold) per unit of work, in units where a 1-folio add hold
    /// is 1.
    fn eval(&self, k: u32, z: f64) -> (f64, f64, f64) {
        let a_add = (1.0 - self.phi) / f64::from(k);
        let a_free = self.phi;
        let a = a_add + a_free;
        let s_add = self.f + f64::from(k) * (1.0 - self.f);
        let s_free = self.f + 31.0 * (1.0 - self.f);
        let s_bar = (a_add * s_add + a_free * s_free) / a;
        // z is Z/S̄ in the baseline; total think per CPU is fixed, so Z per request ∝ 1/A
        let z_abs = z * self.s_bar1() / a;
        let (traced, wait, slow) = m2(self.n, s_bar, z_abs, self.bare_metal);
        let c = a * traced;
        let w = if slow > 0.0 {
            a * wait * traced / slow
        } else {
            0.0
        };
        (c, w, s_bar)
    }

    /// Mean traced wait of the baseline in units of a 1-folio add hold.
    fn wait_per_traced(&self, z: f64) -> f64 {
        let (c, w, _) = self.eval(1, z);
        if c > 0.0 {
            w / c
        } else {
            0.0
        }
    }
}

/// Solve f = 1 − s1/S_add from the table's average wait (fixed point; S_add in ns).
fn solve_f(n: usize, bare_metal: bool, z: f64, avg_wait_ns: f64, s1_ns: f64) -> (f64, f64) {
    let mut f = 0.9;
    let mut s_add = s1_ns;
    for _ in 0..50 {
        let m = Model {
            n,
            phi: 1.0 / 32.0,
            f,
            bare_metal,
        };
        let per = m.wait_per_traced(z);
        if per <= 0.0 {
            break;
        }
        s_add = avg_wait_ns / per;
        f = (1.0 - s1_ns / s_add).clamp(0.0, 1.0);
    }
    (f, s_add)
}

/// `--set` parameters of the closed-form model (lru-cache on a `perf lock` table).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
struct SummaryParams {
    /// mTHP size of the workload in KiB: required (a table does not say).
    folio_kb: u64,
    /// CPUs contending: required.
    cpus: usize,
    /// Lock acquisitions, when known (bounds the think/hold sweep).
    acquisitions: Option<f64>,
    /// Fixed share of the hold; solved from the table's average wait when not given.
    f: Option<f64>,
    /// Per-folio cost inside the hold, ns ([`DEFAULT_S1_NS`]).
    s1_ns: f64,
    /// `bare-metal` (default) or `paravirt`.
    observation: String,
    /// Row of the table (1-based); default: the row with the most total wait.
    row: Option<usize>,
    /// The RFC's parameters, as for the replay.
    max_cached_pages: u64,
    batch_folio_cap: u32,
    batch_page_cap: u64,
    drain_rule: DrainRule,
}

impl Default for SummaryParams {
    fn default() -> Self {
        SummaryParams {
            folio_kb: 0,
            cpus: 0,
            acquisitions: None,
            f: None,
            s1_ns: DEFAULT_S1_NS,
            observation: "bare-metal".into(),
            row: None,
            max_cached_pages: 31,
            batch_folio_cap: 31,
            batch_page_cap: 31,
            drain_rule: DrainRule::AfterAdd,
        }
    }
}

/// Run the closed-form model on one table's rows.
pub fn run(policy: &str, source: &str, rows: &[StatRow], set: &Set) -> Result<SummaryOutcome> {
    let p: SummaryParams = params::parse(policy, set)?;
    let (folio_kb, cpus) = (p.folio_kb, p.cpus);
    if folio_kb < 4 || !folio_kb.is_power_of_two() || cpus < 2 {
        return Err(Error::Usage(
            "a perf lock table has no folio size or CPU count: pass --set folio_kb=N (e.g. 16) and --set cpus=N (threads contending, at least 2)".into(),
        ));
    }
    let f_given = p.f;
    let s1_ns = p.s1_ns;
    let bare_metal = match p.observation.as_str() {
        "bare-metal" => true,
        "paravirt" => false,
        o => {
            return Err(Error::Usage(format!(
                "observation={o}: expected bare-metal or paravirt"
            )))
        }
    };
    if f_given.is_some_and(|f| !(0.0..=1.0).contains(&f)) || s1_ns <= 0.0 {
        return Err(Error::Usage("f must be in 0..1 and s1_ns positive".into()));
    }
    let row_ix = p.row;
    let row = match row_ix {
        Some(i) => rows.get(i.wrapping_sub(1)).ok_or_else(|| {
            Error::Input(format!(
                "{source}: row={i} but the table has {} rows",
                rows.len()
            ))
        })?,
        None => rows
            .iter()
            .max_by_key(|r| r.total_wait_ns.unwrap_or(0))
            .ok_or_else(|| Error::Input(format!("{source}: the table has no rows")))?,
    };
    let (Some(contended), Some(total_wait_ns)) = (row.contended, row.total_wait_ns) else {
        return Err(Error::Input(format!(
            "{source}:{}: the row has no contended count or total wait",
            row.line
        )));
    };
    let (mcp, fcap, pcap, rule) = (
        p.max_cached_pages,
        p.batch_folio_cap,
        p.batch_page_cap,
        p.drain_rule,
    );
    let order = (folio_kb / 4).trailing_zeros();
    let k_main = folios_per_drain(order, mcp, fcap, pcap, rule);
    let other = match rule {
        DrainRule::AfterAdd => DrainRule::BeforeAdd,
        DrainRule::BeforeAdd => DrainRule::AfterAdd,
    };
    let k_alt = folios_per_drain(order, mcp, fcap, pcap, other);
    if contended == 0 {
        return Err(Error::Input(format!(
            "{source}:{}: the row has no contention to predict from",
            row.line
        )));
    }
    let avg_wait = total_wait_ns as f64 / contended as f64;
    let point_of = |k: u32, z: f64, s1: f64| {
        let (f, s_add) = match f_given {
            Some(f) => (f, f64::NAN),
            None => solve_f(cpus, bare_metal, z, avg_wait, s1),
        };
        let model = Model {
            n: cpus,
            phi: 1.0 / 32.0,
            f,
            bare_metal,
        };
        let (c1, w1, _) = model.eval(1, z);
        let (ck, wk, _) = model.eval(k, z);
        Point {
            z,
            k,
            s1_ns: s1,
            f,
            hold_ns: s_add,
            ratio_contended: if ck > 0.0 { c1 / ck } else { f64::INFINITY },
            ratio_total_wait: if wk > 0.0 { w1 / wk } else { f64::INFINITY },
        }
    };
    // z is swept over 0.25..4; with the acquisitions known (e.g. from the benchmark's loop
    // counts) the traced share C/A bounds it from above (more think time, fewer traced).
    let acquisitions = p.acquisitions;
    let zs: Vec<f64> = match acquisitions {
        Some(a) if a > 0.0 => {
            let target = (contended as f64 / a).min(0.999);
            let traced_at = |z: f64| {
                let f = f_given.unwrap_or_else(|| solve_f(cpus, bare_metal, z, avg_wait, s1_ns).0);
                Model {
                    n: cpus,
                    phi: 1.0 / 32.0,
                    f,
                    bare_metal,
                }
                .eval(1, z)
                .0
            };
            let (mut lo, mut hi) = (1e-3f64, 1e3f64);
            for _ in 0..60 {
                let mid = (lo * hi).sqrt();
                if traced_at(mid) > target {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            let z_max = (lo * hi).sqrt();
            let mut v: Vec<f64> = [0.25, 1.0, 4.0]
                .into_iter()
                .filter(|z| *z <= z_max)
                .collect();
            if v.len() < 3 {
                v.push(z_max);
            }
            v
        }
        Some(_) => return Err(Error::Usage("acquisitions must be positive".into())),
        None => vec![0.25, 1.0, 4.0],
    };
    let z_point = if zs.contains(&1.0) { 1.0 } else { zs[0] };
    let point = point_of(k_main, z_point, s1_ns);
    let mut sweep = Vec::new();
    for k in [k_main, k_alt] {
        for &z in &zs {
            for s1 in [s1_ns / 2.0, s1_ns, s1_ns * 2.0] {
                sweep.push(point_of(k, z, s1));
            }
        }
    }
    let range = |g: &dyn Fn(&Point) -> f64| {
        let lo = sweep.iter().map(g).fold(f64::INFINITY, f64::min);
        let hi = sweep.iter().map(g).fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    };
    let mut params = BTreeMap::new();
    for (k, v) in [
        ("folio_kb", folio_kb.to_string()),
        ("cpus", cpus.to_string()),
        ("s1_ns", s1_ns.to_string()),
        (
            "acquisitions",
            acquisitions.map_or("unknown (z swept)".to_string(), |a| a.to_string()),
        ),
        ("observation", p.observation.clone()),
        ("max_cached_pages", mcp.to_string()),
        ("batch_folio_cap", fcap.to_string()),
        ("batch_page_cap", pcap.to_string()),
        ("drain_rule", rule.to_string()),
    ] {
        params.insert(k.to_string(), v);
    }
    Ok(SummaryOutcome {
        policy: policy.to_string(),
        params,
        source: format!("{source} line {}", row.line),
        lock: row.name.clone().or(row.symbol.clone()).unwrap_or_default(),
        contended,
        total_wait_ns,
        predicted_contended: (contended as f64 / point.ratio_contended).round() as u64,
        predicted_total_wait_ns: (total_wait_ns as f64 / point.ratio_total_wait).round() as u64,
        ratio_contended_range: range(&|p| p.ratio_contended),
        ratio_total_wait_range: range(&|p| p.ratio_total_wait),
        point,
        sweep,
    })
}

/// Terminal text.
pub fn text(s: &SummaryOutcome) -> String {
    use crate::units::perf_time;
    let mut t = format!(
        "what-if {} (closed-form model M2 from a perf lock table)\n  row {}{}\n",
        s.policy,
        s.source,
        if s.lock.is_empty() {
            String::new()
        } else {
            format!(" ({})", s.lock)
        }
    );
    t += &format!(
        "  params: {}\n\n",
        s.params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    t += &format!(
        "  measured   contended {:>12}   total wait {:>10}\n  predicted  contended {:>12}   total wait {:>10}\n\n",
        s.contended,
        perf_time(s.total_wait_ns),
        s.predicted_contended,
        perf_time(s.predicted_total_wait_ns)
    );
    t += &format!(
        "  reduction: contended {:.2}x ({:.2}..{:.2}), total wait {:.2}x ({:.2}..{:.2})\n",
        s.point.ratio_contended,
        s.ratio_contended_range.0,
        s.ratio_contended_range.1,
        s.point.ratio_total_wait,
        s.ratio_total_wait_range.0,
        s.ratio_total_wait_range.1
    );
    t += &format!(
        "  calibration: 1-folio hold under this contention {:.0} ns, fixed share f = {:.3} (s1 = {} ns)\n",
        s.point.hold_ns, s.point.f, s.point.s1_ns
    );
    t += "  sweep (k folios per drain, z = think/hold, s1 per-folio ns):\n";
    for p in &s.sweep {
        t += &format!(
            "    k={:<2} z={:<6.3} s1={:<4} f={:.3}  contended {:.2}x  total wait {:.2}x\n",
            p.k, p.z, p.s1_ns, p.f, p.ratio_contended, p.ratio_total_wait
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drain_rule_folio_counts_match_models_md() {
        // MODELS.md §3a: after-add 31/16/8/4/2, before-add 31/15/7/3/1 for orders 0..4
        let a: Vec<u32> = (0..5)
            .map(|o| folios_per_drain(o, 31, 31, 31, DrainRule::AfterAdd))
            .collect();
        let b: Vec<u32> = (0..5)
            .map(|o| folios_per_drain(o, 31, 31, 31, DrainRule::BeforeAdd))
            .collect();
        assert_eq!(a, vec![31, 16, 8, 4, 2]);
        assert_eq!(b, vec![31, 15, 7, 3, 1]);
        // order 5 (128K) is not cached
        assert_eq!(folios_per_drain(5, 31, 31, 31, DrainRule::AfterAdd), 1);
    }

    #[test]
    fn repairman_marginals_sum_to_one_and_saturate() {
        let p = marginals(19, 10.0);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(
            p[19] > 0.5,
            "S/Z = 10 with 19 others: almost always all queued"
        );
        let (traced, _, slow) = m2(20, 1.0, 0.1, true);
        assert!(traced > 0.99 && slow > 0.99);
        let (traced, _, slow) = m2(2, 1.0, 100.0, true);
        assert!(
            traced < 1e-12,
            "2 CPUs on bare metal: the one waiter is never traced"
        );
        assert!(slow > 0.0);
    }
}
