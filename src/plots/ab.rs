//! A/B bar chart: the top locks or callers of a base and a patched capture side by side,
//! contended count in one panel and total wait in the other, with the reduction ratio
//! (base / patched, as in the A/B tables of mm cover letters) after each pair.

use super::bars::{AsBars, Bars, Panel, Series};
use super::{tick_count, tick_value, TimeUnit, BASE, PATCHED};
use crate::analyses::diff::{Diff, DiffRow};
use crate::analyses::stat_row::Value;
use crate::units::ratio;

/// The A/B chart.
#[derive(Debug, Clone, PartialEq)]
pub struct AbChart {
    /// Title.
    pub title: String,
    /// Legend text of the base series (its label or file name).
    pub base_label: String,
    /// Legend text of the patched series.
    pub patched_label: String,
    /// The diff's rows, top first.
    pub rows: Vec<DiffRow>,
}

impl AbChart {
    /// The `top` matched rows of a diff (largest base total wait first, the diff's order).
    pub fn from_diff(d: &Diff, top: usize) -> AbChart {
        let name = |label: &Option<String>, input: &str, fallback: &str| {
            let file = super::short_name(input);
            match label {
                Some(l) => format!("{fallback}: {} ({file})", l.trim_end_matches(':')),
                None => format!("{fallback}: {file}"),
            }
        };
        AbChart {
            title: format!(
                "Lock contention, base vs patched: top {} by base total wait",
                top.min(d.rows.len())
            ),
            base_label: name(&d.base_label, &d.base, "base"),
            patched_label: name(&d.patched_label, &d.patched, "patched"),
            rows: d.rows.iter().take(top).cloned().collect(),
        }
    }
}

impl AsBars for AbChart {
    fn bars(&self) -> Bars {
        let ratio_of = |b: Option<u64>, p: Option<u64>| match (b, p) {
            (Some(b), Some(p)) if p > 0 => Some(ratio(Some(b as f64 / p as f64))),
            (Some(b), Some(0)) if b > 0 => Some("gone".to_string()),
            _ => None,
        };
        let max_wait = self
            .rows
            .iter()
            .flat_map(|r| [r.base.total_wait_ns, r.patched.total_wait_ns])
            .flatten()
            .max()
            .unwrap_or(0);
        let unit = TimeUnit::for_max(max_wait as f64);
        // One panel per metric: `get` reads it from a side's row, `scale` is the axis unit.
        let panel = |axis: String, get: Value, scale: f64, tick: fn(f64) -> String| Panel {
            axis,
            values: self
                .rows
                .iter()
                .map(|r| {
                    [&r.base, &r.patched]
                        .map(|side| get(side).map(|v| v as f64 / scale))
                        .to_vec()
                })
                .collect(),
            whiskers: vec![vec![]; self.rows.len()],
            notes: self
                .rows
                .iter()
                .map(|r| ratio_of(get(&r.base), get(&r.patched)))
                .collect(),
            tick,
        };
        Bars {
            title: self.title.clone(),
            subtitle: Some("ratio = base / patched (higher = the patch removed more)".into()),
            keys: self.rows.iter().map(|r| r.key.clone()).collect(),
            series: base_patched(&self.base_label, &self.patched_label),
            panels: vec![
                panel(
                    "contended acquisitions (count)".into(),
                    |r| r.contended,
                    1.0,
                    tick_count,
                ),
                panel(
                    format!("total wait ({})", unit.name),
                    |r| r.total_wait_ns,
                    unit.ns,
                    tick_value,
                ),
            ],
        }
    }
}

/// The two series of a base-vs-patched chart, in the house colours.
pub(crate) fn base_patched(base: &str, patched: &str) -> Vec<Series> {
    vec![
        Series {
            label: base.to_string(),
            color: BASE,
        },
        Series {
            label: patched.to_string(),
            color: PATCHED,
        },
    ]
}
