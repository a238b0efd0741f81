//! A/B bar chart: the top locks or callers of a base and a patched capture side by side,
//! contended count in one panel and total wait in the other, with the reduction ratio
//! (base / patched, as in the A/B tables of mm cover letters) after each pair.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::bars::{Bars, Panel, Series};
use super::{tick_count, tick_value, Chart, DrawResult, TimeUnit, BASE, PATCHED};
use crate::analyses::diff::Diff;
use crate::units::ratio;

/// One lock or caller: base and patched values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbRow {
    /// Name shown on the left (lock name, `type caller`, comm, symbol).
    pub key: String,
    /// Base contended count.
    pub base_contended: Option<u64>,
    /// Patched contended count.
    pub patched_contended: Option<u64>,
    /// Base total wait, ns.
    pub base_total_wait_ns: Option<u64>,
    /// Patched total wait, ns.
    pub patched_total_wait_ns: Option<u64>,
}

/// The A/B chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbChart {
    /// Title.
    pub title: String,
    /// Legend text of the base series (its label or file name).
    pub base_label: String,
    /// Legend text of the patched series.
    pub patched_label: String,
    /// Rows, top first.
    pub rows: Vec<AbRow>,
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
            rows: d
                .rows
                .iter()
                .take(top)
                .map(|r| AbRow {
                    key: r.key.clone(),
                    base_contended: r.base_contended,
                    patched_contended: r.patched_contended,
                    base_total_wait_ns: r.base_total_wait_ns,
                    patched_total_wait_ns: r.patched_total_wait_ns,
                })
                .collect(),
        }
    }

    /// The figure as grouped bars.
    pub fn bars(&self) -> Bars {
        let ratio_of = |b: Option<u64>, p: Option<u64>| match (b, p) {
            (Some(b), Some(p)) if p > 0 => Some(ratio(Some(b as f64 / p as f64))),
            (Some(b), Some(0)) if b > 0 => Some("gone".to_string()),
            _ => None,
        };
        let max_wait = self
            .rows
            .iter()
            .flat_map(|r| [r.base_total_wait_ns, r.patched_total_wait_ns])
            .flatten()
            .max()
            .unwrap_or(0);
        let unit = TimeUnit::for_max(max_wait as f64);
        let f = |v: Option<u64>| v.map(|v| v as f64);
        let t = |v: Option<u64>| v.map(|v| unit.of(v as f64));
        let n = self.rows.len();
        Bars {
            title: self.title.clone(),
            subtitle: Some("ratio = base / patched (higher = the patch removed more)".into()),
            keys: self.rows.iter().map(|r| r.key.clone()).collect(),
            series: vec![
                Series {
                    label: self.base_label.clone(),
                    color: BASE,
                },
                Series {
                    label: self.patched_label.clone(),
                    color: PATCHED,
                },
            ],
            panels: vec![
                Panel {
                    axis: "contended acquisitions (count)".into(),
                    values: self
                        .rows
                        .iter()
                        .map(|r| vec![f(r.base_contended), f(r.patched_contended)])
                        .collect(),
                    whiskers: vec![vec![]; n],
                    notes: self
                        .rows
                        .iter()
                        .map(|r| ratio_of(r.base_contended, r.patched_contended))
                        .collect(),
                    tick: tick_count,
                },
                Panel {
                    axis: format!("total wait ({})", unit.name),
                    values: self
                        .rows
                        .iter()
                        .map(|r| vec![t(r.base_total_wait_ns), t(r.patched_total_wait_ns)])
                        .collect(),
                    whiskers: vec![vec![]; n],
                    notes: self
                        .rows
                        .iter()
                        .map(|r| ratio_of(r.base_total_wait_ns, r.patched_total_wait_ns))
                        .collect(),
                    tick: tick_value,
                },
            ],
        }
    }
}

impl Chart for AbChart {
    fn default_size(&self) -> (u32, u32) {
        self.bars().default_size()
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        self.bars().draw(root)
    }
}
