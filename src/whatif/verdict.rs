//! How far to trust a what-if answer, from the capture's own evidence (MODELS.md §5b): the
//! no-change replay's error against the measured capture, the number of traced waits the hold
//! window was calibrated on, the counting identities and the share of traced waits the answer
//! cannot cover ([`super::checks`]). Every threshold is here, and MODELS.md §5b says why.

use serde::{Deserialize, Serialize};

use super::checks::Warning;
use super::des::Metrics;

/// No-change replay within this (|error|, both contended and total wait): `good`. The project's
/// target for the no-change replay; the bundled captures meet it on 11 of 12, and run-to-run
/// spread of the measurement itself is about ±20%, so a tighter bound cannot be told from noise.
pub const GOOD_MAX_ERROR: f64 = 0.15;
/// Beyond this: `poor`. A 40% miss on the capture the model was calibrated on means its
/// timing model does not describe this workload (the `-g` recording, a capture without frees).
pub const ROUGH_MAX_ERROR: f64 = 0.40;
/// Fewer traced waits than this to place the hold window: at most `rough` (the bootstrap
/// interval understates the uncertainty with so few samples).
pub const MIN_WAITS: u64 = 30;
/// More of the traced waits uncovered than this: at most `rough`.
pub const UNCOVERED_ROUGH: f64 = 0.05;
/// More than this: `poor` (a quarter of what was measured is outside the model).
pub const UNCOVERED_POOR: f64 = 0.25;

/// The verdict's level, worst last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The replay reproduces the capture: the ratios can be quoted with their interval.
    #[default]
    Good,
    /// Direction and rough size only.
    Rough,
    /// Do not quote the ratios.
    Poor,
}

impl Level {
    /// Name as printed and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Good => "good",
            Level::Rough => "rough",
            Level::Poor => "poor",
        }
    }
}

/// Signed percent errors of the no-change replay against the capture, `null` when nothing was
/// measured to compare with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayError {
    /// Contended (traced waits on the lock).
    pub contended: Option<f64>,
    /// Total traced wait.
    pub total_wait: Option<f64>,
}

/// The confidence verdict of one answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// `good`, `rough` or `poor`.
    pub level: Level,
    /// One line for people.
    pub summary: String,
    /// (replayed − measured) / measured × 100 of the no-change replay, 2 decimals.
    pub replay_error_pct: ReplayError,
    /// Every reason the level is not better, and the replay's fit.
    pub reasons: Vec<String>,
    /// Share (0..1) of the lock's traced waits the answer cannot cover; `null` where the engine
    /// cannot tell (the closed-form model).
    pub uncovered_share: Option<f64>,
    /// The total wait split at the tail cut; `null` where there is no cut (no waiter after a
    /// holder's insertion to measure the waiter's own path on) or no replay.
    #[serde(default)]
    pub tail: Option<TailSplit>,
}

/// The no-change replay's total wait split at the tail cut
/// ([`super::calibrate::Calibration::tail_cut_ns`], MODELS.md §5b: the stall cut past the
/// 99th-percentile modelled hold): the waits up to the cut (the body: holds, handoffs and the
/// waiter's own path, what the model times) and the longer ones, which a usual hold does not
/// explain (the tail:
/// on a 2-CPU guest, where one waiter waits at a time, the host's stalls, a vCPU descheduled
/// while holding or a halted waiter kicked late, which a rerun has more or fewer of). Reported
/// beside the verdict, never instead of it: the level is judged on the totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TailSplit {
    /// The cut, ns.
    pub cut_ns: u64,
    /// Measured traced waits longer than the cut.
    pub measured_waits: u64,
    /// Their sum, ns.
    pub measured_wait_ns: u64,
    /// Replayed traced waits longer than the cut.
    pub replayed_waits: u64,
    /// Their sum, ns.
    pub replayed_wait_ns: u64,
    /// (replayed − measured) / measured × 100 of the total wait of the waits up to the cut, 2
    /// decimals.
    pub body_wait_error_pct: Option<f64>,
}

/// How the reason line of a [`TailSplit`] starts.
pub const TAIL_REASON: &str = "total wait split past the usual hold";

impl TailSplit {
    fn of(measured: &Metrics, replayed: &Metrics, tail_cut_ns: f64) -> Option<Self> {
        if tail_cut_ns <= 0.0 {
            return None;
        }
        let body = |m: &Metrics| m.total_wait_ns.0.saturating_sub(m.tail_wait_ns.0) as f64;
        Some(TailSplit {
            cut_ns: tail_cut_ns.round() as u64,
            measured_waits: measured.tail_waits,
            measured_wait_ns: measured.tail_wait_ns.0,
            replayed_waits: replayed.tail_waits,
            replayed_wait_ns: replayed.tail_wait_ns.0,
            body_wait_error_pct: pct_err(body(replayed), body(measured)),
        })
    }

    /// The reason line when the total wait missed: where the miss is.
    fn reason(&self, measured: &Metrics, replayed: &Metrics) -> String {
        let share = |t: u64, m: &Metrics| {
            if m.total_wait_ns.0 == 0 {
                0.0
            } else {
                t as f64 / m.total_wait_ns.0 as f64 * 100.0
            }
        };
        let body = self
            .body_wait_error_pct
            .map_or("-".to_string(), |v| format!("{v:+.1}%"));
        format!(
            "{TAIL_REASON} ({}): waits longer than it are {} of {} measured ({:.0}% of its \
             total wait) and {} of {} replayed ({:.0}%); the waits up to it differ by {body} \
             (stalls, a rare long hold or a queue of waiters)",
            crate::duration::Ns(self.cut_ns),
            self.measured_waits,
            measured.contended,
            share(self.measured_wait_ns, measured),
            self.replayed_waits,
            replayed.contended,
            share(self.replayed_wait_ns, replayed),
        )
    }
}

impl Verdict {
    /// The reason line that splits the total wait at the tail cut, when the total wait missed.
    pub fn tail_reason(&self) -> Option<&str> {
        self.reasons
            .iter()
            .find(|r| r.starts_with(TAIL_REASON))
            .map(String::as_str)
    }
}

fn pct_err(replayed: f64, measured: f64) -> Option<f64> {
    if measured > 0.0 {
        Some(((replayed - measured) / measured * 10000.0).round() / 100.0)
    } else if replayed == 0.0 {
        Some(0.0)
    } else {
        None
    }
}

/// The verdict of a replay: `measured` vs the no-change `replayed`, `waits` the traced waits
/// the hold window was placed with, `tail_cut_ns` where the total wait is split into body and
/// tail ([`TailSplit`]), `warnings` from the checks, `uncovered` their share.
pub fn of_replay(
    measured: &Metrics,
    replayed: &Metrics,
    waits: u64,
    tail_cut_ns: f64,
    warnings: &[Warning],
    uncovered: f64,
) -> Verdict {
    let err = ReplayError {
        contended: pct_err(replayed.contended as f64, measured.contended as f64),
        total_wait: pct_err(
            replayed.total_wait_ns.as_f64(),
            measured.total_wait_ns.as_f64(),
        ),
    };
    let mut level = Level::Good;
    let mut reasons = Vec::new();
    // the worse metric decides; a metric with nothing measured but something replayed is a miss
    let worst = [("contended", err.contended), ("total wait", err.total_wait)]
        .into_iter()
        .map(|(n, e)| (n, e.map_or(f64::INFINITY, f64::abs)))
        .fold(("", -1.0f64), |a, b| if b.1 > a.1 { b } else { a });
    let (miss_name, miss) = worst;
    let fmt = |e: Option<f64>| e.map_or("-".to_string(), |v| format!("{v:+.1}%"));
    let fit = format!(
        "no-change replay vs the capture: contended {} ({} vs {}), total wait {} ({} vs {})",
        fmt(err.contended),
        replayed.contended,
        measured.contended,
        fmt(err.total_wait),
        replayed.total_wait_ns,
        measured.total_wait_ns
    );
    let summary_fit = if miss <= 100.0 * GOOD_MAX_ERROR {
        format!("replay reproduces this capture within {miss:.1}%")
    } else if miss.is_finite() {
        level = level.max(if miss <= 100.0 * ROUGH_MAX_ERROR {
            Level::Rough
        } else {
            Level::Poor
        });
        format!("replay misses this capture by {miss:.1}% ({miss_name})")
    } else {
        level = Level::Poor;
        "the capture has no traced wait on the lock to check the replay against".to_string()
    };
    reasons.push(fit);
    let tail = TailSplit::of(measured, replayed, tail_cut_ns);
    if let (Some(t), Some(e)) = (&tail, err.total_wait) {
        if e.abs() > 100.0 * GOOD_MAX_ERROR {
            reasons.push(t.reason(measured, replayed));
        }
    }
    if waits < MIN_WAITS {
        level = level.max(Level::Rough);
        reasons.push(format!(
            "only {waits} traced waits placed the hold window (fewer than {MIN_WAITS}): the \
             calibration is weak and the interval understates it"
        ));
    }
    for w in warnings {
        let l = match w.uncovered_share {
            Some(s) if s > UNCOVERED_POOR => Level::Poor,
            Some(s) if s > UNCOVERED_ROUGH => Level::Rough,
            Some(_) => Level::Good,
            // identity failures and unmodelled parts without a share
            None => Level::Rough,
        };
        level = level.max(l);
        reasons.push(format!("{}: {}", w.check, w.message));
    }
    if uncovered > UNCOVERED_POOR {
        level = level.max(Level::Poor);
    } else if uncovered > UNCOVERED_ROUGH {
        level = level.max(Level::Rough);
    }
    let advice = match level {
        Level::Good => "good",
        Level::Rough => "treat the ratios as rough",
        Level::Poor => "poor: do not quote the ratios",
    };
    let mut summary = format!("{summary_fit}: {advice}");
    if level != Level::Good && miss <= 100.0 * GOOD_MAX_ERROR {
        // the fit was fine: say what made it worse
        let why: Vec<&str> = warnings.iter().map(|w| w.check.as_str()).collect();
        let mut why = why.join(", ");
        if waits < MIN_WAITS {
            if !why.is_empty() {
                why += ", ";
            }
            why += "few calibration waits";
        }
        summary = format!("{summary_fit}, but {why}: {advice}");
    }
    Verdict {
        level,
        summary,
        replay_error_pct: err,
        reasons,
        uncovered_share: Some((uncovered * 10000.0).round() / 10000.0),
        tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::duration::Ns;

    fn m(contended: u64, total: u64, tail_waits: u64, tail: u64) -> Metrics {
        Metrics {
            contended,
            total_wait_ns: Ns(total),
            tail_waits,
            tail_wait_ns: Ns(tail),
            ..Default::default()
        }
    }

    #[test]
    fn the_split_takes_the_tail_off_both_totals() {
        // measured 100 waits, 10 000 ns, 6 000 of it in 4 waits above the cut; replayed 100
        // waits, 5 000 ns, 1 000 in 1: total −50%, body 4 000 both sides (0%)
        let (me, re) = (m(100, 10_000, 4, 6_000), m(100, 5_000, 1, 1_000));
        let v = of_replay(&me, &re, 100, 3_500.4, &[], 0.0);
        let t = v.tail.unwrap();
        assert_eq!(
            (t.cut_ns, t.measured_waits, t.replayed_wait_ns),
            (3_500, 4, 1_000)
        );
        assert_eq!(t.body_wait_error_pct, Some(0.0));
        assert_eq!(v.level, Level::Poor);
        let line = v.tail_reason().unwrap();
        assert!(
            line.contains("4 of 100 measured (60% of its total wait)")
                && line.contains("1 of 100 replayed (20%)")
                && line.contains("differ by +0.0%"),
            "{line}"
        );
    }

    #[test]
    fn no_cut_no_split_and_a_fit_within_the_target_no_line() {
        let (me, re) = (m(100, 10_000, 4, 6_000), m(100, 9_000, 3, 5_000));
        let v = of_replay(&me, &re, 100, 0.0, &[], 0.0);
        assert!(v.tail.is_none() && v.tail_reason().is_none());
        let v = of_replay(&me, &re, 100, 3_000.0, &[], 0.0);
        assert_eq!(v.level, Level::Good);
        assert_eq!(v.tail.unwrap().body_wait_error_pct, Some(0.0));
        assert!(v.tail_reason().is_none());
    }
}
