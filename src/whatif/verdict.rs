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
/// the hold window was placed with, `warnings` from the checks, `uncovered` their share.
pub fn of_replay(
    measured: &Metrics,
    replayed: &Metrics,
    waits: u64,
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
    }
}
