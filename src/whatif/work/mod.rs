//! Work what-ifs: patches that remove *work* (a PMD split, a collapse) rather than change when
//! `lru_lock` is taken (issue 7, MODELS.md §3(c), §3(d)).
//!
//! They read a capture *directory* written by `fixtures/capture-lazyfree.sh` (meta and workload
//! `key=value` files, `/proc/vmstat` snapshots, samples or tracepoints in any event format:
//! perf script, raw ftrace, trace-cmd report, perf.data), or one trace file with those side
//! files beside it or their keys given by `--set` ([`capture::WorkInput`]); they share the one registry ([`super::registry`]) with the lock-replay
//! [`super::policy`]s.

pub mod capture;
pub mod khugepaged_lazyfree;
pub mod lazyfree_thp;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;

/// A prediction with its measured inputs, in the shape of `lockcast whatif --json`
/// (top-level keys `policy`, `params`, `measured`, `predicted`, `interval`, `notes`).
#[derive(Debug, Clone, Serialize)]
pub struct WorkOutcome {
    /// Policy name.
    pub policy: String,
    /// Capture directory as given.
    pub capture: String,
    /// Parameters in effect (defaults included).
    pub params: BTreeMap<String, String>,
    /// What the capture shows (counts, ns).
    pub measured: BTreeMap<String, Value>,
    /// What the patched (or unpatched) kernel would show.
    pub predicted: BTreeMap<String, Value>,
    /// `[low, high]` for predicted values whose uncertainty is known.
    pub interval: BTreeMap<String, [f64; 2]>,
    /// How the numbers were obtained and what they leave out.
    pub notes: Vec<String>,
}

impl WorkOutcome {
    /// Plain-text report: one `key  value` line per item, grouped.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "policy    {}", self.policy);
        let _ = writeln!(s, "capture   {}", self.capture);
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(s, "params    {}", params.join(" "));
        for (title, m) in [("measured", &self.measured), ("predicted", &self.predicted)] {
            let _ = writeln!(s, "\n{title}:");
            let w = m.keys().map(|k| k.len()).max().unwrap_or(0);
            for (k, v) in m {
                let v = match v {
                    Value::String(x) => x.clone(),
                    other => other.to_string(),
                };
                let iv = if title == "predicted" {
                    self.interval
                        .get(k)
                        .map(|[lo, hi]| format!("   [{} .. {}]", num(*lo), num(*hi)))
                        .unwrap_or_default()
                } else {
                    String::new()
                };
                let _ = writeln!(s, "  {k:<w$}  {v}{iv}");
            }
        }
        if !self.notes.is_empty() {
            let _ = writeln!(s, "\nnotes:");
            for n in &self.notes {
                let _ = writeln!(s, "  - {n}");
            }
        }
        s
    }
}

/// Rounded to 3 decimals for JSON (ratios and shares; more digits are noise here).
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.3}")
    }
}

/// A patch that removes work, predicted from a capture directory.
pub trait WorkPolicy: std::fmt::Debug {
    /// Name on the command line.
    fn name(&self) -> &'static str;
    /// Run on a capture directory.
    fn run(&self, capture: &str) -> Result<WorkOutcome>;
}

/// Approximate 95% interval of a Poisson count (sampling noise of `perf record` counts):
/// `k ± 1.96·√k`, widened by 1 at the top so that 0 samples does not give a zero interval.
pub(crate) fn poisson95(k: f64) -> (f64, f64) {
    let d = 1.96 * k.sqrt();
    ((k - d).max(0.0), k + d + 1.0)
}
