//! The what-if report: what `lockcast whatif` / `validate` print as JSON and what `plot whatif`
//! and the notebooks read back. One typed struct, serialised and deserialised by serde, so the
//! writer and the readers cannot disagree on a field.
//!
//! Shape: the question (`policy`, `params`, `capture`, `observation`) at the top, one row per
//! modelled lock in `rows` (measured, replayed with no change, predicted, its interval, and for
//! `validate` what the AFTER capture measured with the prediction's error), then how the answer
//! was obtained (`calibration`, `identities`, `by_path`, `sensitivity`, `notes`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::calibrate::Calibration;
use super::checks::Warning;
use super::des::Metrics;
use super::trace::Observation;
use super::verdict::Verdict;
use super::{BootstrapRun, Identities, Outcome, PathRow, Sensitivity};
use crate::duration::Ns;

/// Counts of one lock in one setting (times in integer ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Lock acquisitions.
    pub acquisitions: u64,
    /// Acquisitions `contention_begin` reports.
    pub contended: u64,
    /// Sum of traced waits.
    pub total_wait_ns: Ns,
    /// Mean traced wait (rounded).
    pub avg_wait_ns: Ns,
    /// Longest traced wait.
    pub max_wait_ns: Ns,
}

impl From<&Metrics> for Counts {
    fn from(m: &Metrics) -> Self {
        Counts {
            acquisitions: m.acquisitions,
            contended: m.contended,
            total_wait_ns: m.total_wait_ns,
            avg_wait_ns: Ns(m.avg_wait_ns().round() as u64),
            max_wait_ns: m.max_wait_ns,
        }
    }
}

/// An interval: per metric, the 2.5th and 97.5th percentiles over bootstrap replicates and
/// policy alternatives (`low`/`high` are taken per metric, so `avg_wait_ns` is not meaningful
/// there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    /// Lower end.
    pub low: Counts,
    /// Upper end.
    pub high: Counts,
}

/// `(predicted − measured) / measured` per metric, rounded to 4 decimals; `None` when nothing
/// was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Errors {
    /// Acquisitions.
    pub acquisitions: Option<f64>,
    /// Contended.
    pub contended: Option<f64>,
    /// Total wait.
    pub total_wait_ns: Option<f64>,
}

/// One modelled lock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Policy name.
    pub policy: String,
    /// Lock address as printed in the capture.
    pub lock: String,
    /// As measured in the capture (acquisitions = reconstructed holds).
    pub measured: Counts,
    /// The capture replayed with no change (the model's fidelity).
    pub replayed: Counts,
    /// Replayed under the policy.
    pub predicted: Counts,
    /// replayed / predicted contended: the patch's reduction factor, like `diff`'s ratios.
    pub ratio_contended: Option<f64>,
    /// replayed / predicted total wait.
    pub ratio_total_wait: Option<f64>,
    /// Interval of the prediction.
    pub interval: Bounds,
    /// Interval of the no-change replay.
    pub replayed_interval: Bounds,
    /// `validate`: what the AFTER capture measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Counts>,
    /// `validate`: the AFTER capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_capture: Option<String>,
    /// `validate`: the prediction's error against AFTER.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Errors>,
}

/// The report of one what-if question.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Policy name.
    pub policy: String,
    /// Its parameters, defaults included.
    pub params: BTreeMap<String, String>,
    /// The baseline capture.
    pub capture: String,
    /// Observation rule of `contention_begin` used.
    pub observation: Observation,
    /// Where it came from: `call chains`, `meta file` or `option`.
    pub observation_source: String,
    /// One row per modelled lock.
    pub rows: Vec<Row>,
    /// The hold model fitted to the capture.
    pub calibration: Calibration,
    /// Counting identities: the kernel's rules against the capture.
    pub identities: Identities,
    /// Lock traffic by kernel path.
    pub by_path: Vec<PathRow>,
    /// Sensitivity to calibration choices.
    pub sensitivity: Vec<Sensitivity>,
    /// How many bootstrap replicates the intervals are made of, and why that many.
    #[serde(default)]
    pub bootstrap: BootstrapRun,
    /// What the user must know about this answer.
    pub notes: Vec<String>,
    /// What the answer cannot cover (missing events, failed identities), with shares.
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// How far to trust the answer: `level` good/rough/poor, the no-change replay's signed
    /// `replay_error_pct` per metric, `reasons`, `uncovered_share`.
    #[serde(default)]
    pub verdict: Verdict,
    /// With `--time`: the part of the capture replayed (`from_ns`, `to_ns` inclusive), and
    /// how many of its replayed events fell there. Absent for the whole capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<super::time_range::TimeCut>,
}

fn r3(x: Option<f64>) -> Option<f64> {
    x.map(|v| (v * 1000.0).round() / 1000.0)
}

fn err(pred: f64, meas: f64) -> Option<f64> {
    (meas != 0.0).then(|| ((pred - meas) / meas * 10000.0).round() / 10000.0)
}

impl Report {
    /// The report of an engine outcome; `after` is `validate`'s AFTER capture and what it
    /// measured.
    pub fn new(o: &Outcome, after: Option<(&str, &Metrics)>) -> Report {
        let range = |r: &super::Range| Bounds {
            low: Counts::from(&r.low),
            high: Counts::from(&r.high),
        };
        let row = Row {
            policy: o.policy.clone(),
            lock: o.lock.clone(),
            measured: Counts::from(&o.measured),
            replayed: Counts::from(&o.replayed),
            predicted: Counts::from(&o.predicted),
            ratio_contended: r3(o.ratio_contended()),
            ratio_total_wait: r3(o.ratio_total_wait()),
            interval: range(&o.interval),
            replayed_interval: range(&o.replayed_interval),
            after: after.map(|(_, m)| Counts::from(m)),
            after_capture: after.map(|(p, _)| p.to_string()),
            error: after.map(|(_, m)| {
                let p = &o.predicted;
                Errors {
                    acquisitions: err(p.acquisitions as f64, m.acquisitions as f64),
                    contended: err(p.contended as f64, m.contended as f64),
                    total_wait_ns: err(p.total_wait_ns.as_f64(), m.total_wait_ns.as_f64()),
                }
            }),
        };
        Report {
            policy: o.policy.clone(),
            params: o.params.clone(),
            capture: o.capture.clone(),
            observation: o.observation,
            observation_source: o.observation_source.clone(),
            rows: vec![row],
            calibration: o.calibration.clone(),
            identities: o.identities.clone(),
            by_path: o.by_path.clone(),
            sensitivity: o.sensitivity.clone(),
            bootstrap: o.bootstrap.clone(),
            notes: o.notes.clone(),
            warnings: o.warnings.clone(),
            verdict: o.verdict.clone(),
            time: o.time.clone(),
        }
    }
}
