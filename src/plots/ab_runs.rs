//! A/B bar chart over repeated runs: per lock or caller the median of the base and patched
//! runs as bars, the min–max of the runs as a whisker over each bar, and after each pair the
//! ratio of medians with its 95% bootstrap interval (from [`crate::analyses::ab_runs`]).

use super::ab::base_patched;
use super::bars::{AsBars, Bars, Panel};
use super::{tick_count, tick_value, TimeUnit};
use crate::analyses::ab_runs::{Compare, RunsDiff, RunsRow};
use crate::units::ratio;

/// The repeated-run A/B chart.
#[derive(Debug, Clone, PartialEq)]
pub struct AbRunsChart {
    /// Title.
    pub title: String,
    /// Legend text of the base series.
    pub base_label: String,
    /// Legend text of the patched series.
    pub patched_label: String,
    /// The compared rows, top first.
    pub rows: Vec<RunsRow>,
}

impl AbRunsChart {
    /// The `top` rows of a repeated-run diff (largest first-base-run total wait first).
    pub fn from_runs(d: &RunsDiff, top: usize) -> AbRunsChart {
        // The first run's folder names the side (`micro-16K-r1`); the others are its repeats.
        let side = |what: &str, runs: &[String]| {
            let first = runs
                .first()
                .map(|r| super::short_name(r))
                .unwrap_or_default();
            let folder = first.split('/').next().unwrap_or_default().to_string();
            format!("{what}: {folder} … ({} runs)", runs.len())
        };
        AbRunsChart {
            title: format!(
                "Lock contention over repeated runs, base vs patched: top {}",
                top.min(d.rows.len())
            ),
            base_label: side("base", &d.base),
            patched_label: side("patched", &d.patched),
            rows: d.rows.iter().take(top).cloned().collect(),
        }
    }
}

fn note(c: &Compare) -> Option<String> {
    let r = c.ratio.filter(|r| r.is_finite())?;
    Some(match c.interval {
        Some((lo, hi)) if lo.is_finite() && hi.is_finite() => {
            format!(
                "{} [{}–{}]",
                ratio(Some(r)),
                ratio(Some(lo)),
                ratio(Some(hi))
            )
        }
        _ => ratio(Some(r)),
    })
}

impl AsBars for AbRunsChart {
    fn bars(&self) -> Bars {
        let max_wait = self
            .rows
            .iter()
            .flat_map(|r| [r.total_wait_ns.base.max, r.total_wait_ns.patched.max])
            .flatten()
            .max()
            .unwrap_or(0);
        let unit = TimeUnit::for_max(max_wait as f64);
        let panel = |axis: String, get: fn(&RunsRow) -> &Compare, scale: f64, tick| Panel {
            axis,
            values: self
                .rows
                .iter()
                .map(|r| {
                    let c = get(r);
                    [&c.base, &c.patched]
                        .map(|s| s.median.map(|m| m / scale))
                        .to_vec()
                })
                .collect(),
            whiskers: self
                .rows
                .iter()
                .map(|r| {
                    let c = get(r);
                    [&c.base, &c.patched]
                        .map(|s| match (s.min, s.max) {
                            (Some(lo), Some(hi)) => Some((lo as f64 / scale, hi as f64 / scale)),
                            _ => None,
                        })
                        .to_vec()
                })
                .collect(),
            notes: self.rows.iter().map(|r| note(get(r))).collect(),
            tick,
        };
        Bars {
            title: self.title.clone(),
            subtitle: Some(
                "bar = median, whisker = min–max of the runs; ratio = base / patched [95% interval]"
                    .into(),
            ),
            keys: self.rows.iter().map(|r| r.key.clone()).collect(),
            series: base_patched(&self.base_label, &self.patched_label),
            panels: vec![
                panel(
                    "contended acquisitions (count)".into(),
                    |r| &r.contended,
                    1.0,
                    tick_count,
                ),
                panel(
                    format!("total wait ({})", unit.name),
                    |r| &r.total_wait_ns,
                    unit.ns,
                    tick_value,
                ),
            ],
        }
    }
}
