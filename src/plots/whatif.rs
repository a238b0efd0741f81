//! What-if chart: per lock, the baseline as measured, the prediction under a policy with its
//! interval, and (when given) what the changed kernel measured afterwards.
//!
//! The input is the what-if report ([`crate::whatif::report::Report`], the JSON of
//! `lockcast whatif --json` and `validate --json`), read with the same type that wrote it;
//! [`WhatIfRow`] is the chart's view of one of its rows.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::bars::{Bars, Panel, Series};
use super::{tick_count, tick_value, Chart, DrawResult, TimeUnit, AFTER, BASE, PATCHED};
use crate::error::{Error, Result};
use crate::units::ratio;
use crate::whatif::report::{Counts, Report, Row};

/// Counts and wait of one lock in one setting (`None`: not known for this row).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Metrics {
    /// Lock acquisitions.
    pub acquisitions: Option<f64>,
    /// Contended acquisitions.
    pub contended: Option<f64>,
    /// Total wait, ns.
    pub total_wait_ns: Option<f64>,
}

impl From<&Counts> for Metrics {
    fn from(c: &Counts) -> Self {
        Metrics {
            acquisitions: Some(c.acquisitions as f64),
            contended: Some(c.contended as f64),
            total_wait_ns: Some(c.total_wait_ns.as_f64()),
        }
    }
}

/// One end of a prediction interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bound {
    /// Contended acquisitions.
    pub contended: Option<f64>,
    /// Total wait, ns.
    pub total_wait_ns: Option<f64>,
}

/// The prediction interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub low: Bound,
    /// Upper end.
    pub high: Bound,
}

/// One lock of the chart, from one row of a what-if [`Report`].
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIfRow {
    /// Policy name.
    pub policy: serde_json::Value,
    /// Lock.
    pub lock: String,
    /// The baseline as measured.
    pub measured: Metrics,
    /// The baseline as replayed with no change (model fidelity).
    pub replayed: Option<Metrics>,
    /// The prediction under the policy.
    pub predicted: Metrics,
    /// replayed / predicted contended (the report's reduction factor).
    pub ratio_contended: Option<f64>,
    /// replayed / predicted total wait.
    pub ratio_total_wait: Option<f64>,
    /// Interval of the prediction.
    pub interval: Option<Interval>,
    /// Measured on the changed kernel, when known (`validate`).
    pub after: Option<Metrics>,
}

impl From<&Row> for WhatIfRow {
    fn from(r: &Row) -> Self {
        let bound = |c: &Counts| Bound {
            contended: Some(c.contended as f64),
            total_wait_ns: Some(c.total_wait_ns.as_f64()),
        };
        WhatIfRow {
            policy: serde_json::Value::String(r.policy.clone()),
            lock: r.lock.clone(),
            measured: Metrics::from(&r.measured),
            replayed: Some(Metrics::from(&r.replayed)),
            predicted: Metrics::from(&r.predicted),
            ratio_contended: r.ratio_contended,
            ratio_total_wait: r.ratio_total_wait,
            interval: Some(Interval {
                low: bound(&r.interval.low),
                high: bound(&r.interval.high),
            }),
            after: r.after.as_ref().map(Metrics::from),
        }
    }
}

/// The what-if chart.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIfChart {
    /// Title (defaults to the policy).
    pub title: String,
    /// Rows, top first.
    pub rows: Vec<WhatIfRow>,
}

/// Text for a policy value: `"lru-cache"`, or `lru-cache (max_cached_pages=31, …)` for an
/// object with a `name` and parameters.
pub fn policy_text(v: &serde_json::Value) -> String {
    use serde_json::Value as J;
    match v {
        J::String(s) => s.clone(),
        J::Object(m) => {
            let name = m
                .get("name")
                .or_else(|| m.get("policy"))
                .and_then(J::as_str)
                .unwrap_or("policy");
            let params: Vec<String> = m
                .iter()
                .filter(|(k, _)| *k != "name" && *k != "policy")
                .flat_map(|(k, v)| match v {
                    J::Object(inner) => inner
                        .iter()
                        .map(|(ik, iv)| format!("{ik}={}", scalar(iv)))
                        .collect::<Vec<_>>(),
                    _ => vec![format!("{k}={}", scalar(v))],
                })
                .collect();
            if params.is_empty() {
                name.to_string()
            } else {
                format!("{name} ({})", params.join(", "))
            }
        }
        J::Null => String::new(),
        other => other.to_string(),
    }
}

fn scalar(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// The rows of a what-if report (`lockcast whatif --json` / `validate --json`).
pub fn rows_from_json(text: &str, source: &str) -> Result<Vec<WhatIfRow>> {
    let report: Report = serde_json::from_str(text).map_err(|e| {
        Error::Input(format!(
            "{source}:{}:{}: expected the JSON report of `lockcast whatif --json`: {e}",
            e.line(),
            e.column()
        ))
    })?;
    if report.rows.is_empty() {
        return Err(Error::Input(format!(
            "{source}: the what-if report has no rows"
        )));
    }
    Ok(report.rows.iter().map(WhatIfRow::from).collect())
}

impl WhatIfChart {
    /// A chart of `rows` titled after their policy.
    pub fn new(rows: Vec<WhatIfRow>) -> WhatIfChart {
        let policy = rows
            .first()
            .map(|r| policy_text(&r.policy))
            .unwrap_or_default();
        WhatIfChart {
            title: if policy.is_empty() {
                "What-if: measured vs predicted contention".into()
            } else {
                format!("What-if {policy}: measured vs predicted contention")
            },
            rows,
        }
    }

    /// The figure as grouped bars.
    pub fn bars(&self) -> Bars {
        let has_after = self.rows.iter().any(|r| r.after.is_some());
        let max_wait = self
            .rows
            .iter()
            .flat_map(|r| {
                [
                    r.measured.total_wait_ns,
                    r.predicted.total_wait_ns,
                    r.after.and_then(|a| a.total_wait_ns),
                    r.interval.and_then(|i| i.high.total_wait_ns),
                ]
            })
            .flatten()
            .fold(0.0f64, f64::max);
        let unit = TimeUnit::for_max(max_wait);
        let mut series = vec![
            Series {
                label: "measured (baseline)".into(),
                color: BASE,
            },
            Series {
                label: "predicted (bar) with interval".into(),
                color: PATCHED,
            },
        ];
        if has_after {
            series.push(Series {
                label: "measured after the change".into(),
                color: AFTER,
            });
        }
        let panel = |axis: String,
                     get: fn(&Metrics) -> Option<f64>,
                     bound: fn(&Bound) -> Option<f64>,
                     given_ratio: fn(&WhatIfRow) -> Option<f64>,
                     scale: f64,
                     tick: fn(f64) -> String| {
            let values = self
                .rows
                .iter()
                .map(|r| {
                    let mut v = vec![get(&r.measured), get(&r.predicted)];
                    if has_after {
                        v.push(r.after.as_ref().and_then(get));
                    }
                    v.into_iter().map(|x| x.map(|x| x / scale)).collect()
                })
                .collect();
            let whiskers = self
                .rows
                .iter()
                .map(|r| {
                    let iv = r
                        .interval
                        .and_then(|i| Some((bound(&i.low)?, bound(&i.high)?)));
                    vec![None, iv.map(|(lo, hi)| (lo / scale, hi / scale))]
                })
                .collect();
            let notes = self
                .rows
                .iter()
                .map(|r| {
                    let computed = match (get(&r.measured), get(&r.predicted)) {
                        (Some(m), Some(p)) if p > 0.0 => Some(m / p),
                        _ => None,
                    };
                    given_ratio(r).or(computed).map(|x| ratio(Some(x)))
                })
                .collect();
            Panel {
                axis,
                values,
                whiskers,
                notes,
                tick,
            }
        };
        Bars {
            title: self.title.clone(),
            subtitle: Some(
                "bar = point prediction, whisker = interval; ratio = measured / predicted".into(),
            ),
            keys: self.rows.iter().map(|r| r.lock.clone()).collect(),
            series,
            panels: vec![
                panel(
                    "contended acquisitions (count)".into(),
                    |m| m.contended,
                    |b| b.contended,
                    |r| r.ratio_contended,
                    1.0,
                    tick_count,
                ),
                panel(
                    format!("total wait ({})", unit.name),
                    |m| m.total_wait_ns,
                    |b| b.total_wait_ns,
                    |r| r.ratio_total_wait,
                    unit.ns,
                    tick_value,
                ),
            ],
        }
    }
}

impl Chart for WhatIfChart {
    fn default_size(&self) -> (u32, u32) {
        self.bars().default_size()
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        self.bars().draw(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-built chart rows (drawing only: the chart's input from a real report is tested in
    /// tests/it/plots.rs): the lruvec lock and the total, with an `after` measurement on the
    /// lock row only.
    pub(crate) fn example() -> Vec<WhatIfRow> {
        let m = |a: f64, c: f64, t: f64| Metrics {
            acquisitions: Some(a),
            contended: Some(c),
            total_wait_ns: Some(t),
        };
        let b = |c: f64, t: f64| Bound {
            contended: Some(c),
            total_wait_ns: Some(t),
        };
        let policy = serde_json::json!({"name": "lru-cache", "max_cached_pages": 31});
        vec![
            WhatIfRow {
                policy: policy.clone(),
                lock: "lruvec->lru_lock".into(),
                measured: m(28_000.0, 14_082.0, 18_730_000.0),
                replayed: Some(m(28_000.0, 13_500.0, 17_900_000.0)),
                predicted: m(9_000.0, 2_100.0, 4_100_000.0),
                ratio_contended: Some(14_082.0 / 2_100.0),
                ratio_total_wait: Some(18_730_000.0 / 4_100_000.0),
                interval: Some(Interval {
                    low: b(1_600.0, 3_000_000.0),
                    high: b(2_900.0, 5_600_000.0),
                }),
                after: Some(m(9_100.0, 2_400.0, 4_500_000.0)),
            },
            WhatIfRow {
                policy,
                lock: "total".into(),
                measured: m(30_000.0, 14_900.0, 21_500_000.0),
                replayed: None,
                predicted: m(11_000.0, 2_900.0, 6_800_000.0),
                ratio_contended: None,
                ratio_total_wait: None,
                interval: None,
                after: None,
            },
        ]
    }

    #[test]
    fn renders_the_example_as_png_and_svg() {
        let chart = WhatIfChart::new(example());
        let png =
            crate::plots::render(&chart, crate::plots::ImageFormat::Png, None).unwrap_or_default();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR width and height: 1200 x max(150 + (14 + 3 * 10) * 2, 420)
        assert_eq!(png[16..24], [0, 0, 4, 176, 0, 0, 1, 164]);
        let svg =
            crate::plots::render(&chart, crate::plots::ImageFormat::Svg, None).unwrap_or_default();
        let svg = String::from_utf8_lossy(&svg);
        for label in [
            "What-if lru-cache (max_cached_pages=31)",
            "measured after the change",
            "6.71x",
        ] {
            assert!(svg.contains(label), "{label} missing");
        }
    }

    #[test]
    fn json_without_rows_is_bad_input() {
        let e = rows_from_json("{\"x\": 1}", "x.json").err();
        assert!(
            matches!(e, Some(Error::Input(m)) if m.starts_with("x.json:1:") && m.contains("report of `lockcast whatif --json`"))
        );
        let e = rows_from_json("{\n  \"rows\": [", "y.json").err();
        assert!(matches!(e, Some(Error::Input(m)) if m.starts_with("y.json:2:")));
    }

    #[test]
    fn bars_carry_the_interval_and_the_after_series() {
        let bars = WhatIfChart::new(example()).bars();
        assert_eq!(bars.series.len(), 3);
        assert_eq!(bars.keys, ["lruvec->lru_lock", "total"]);
        let wait = &bars.panels[1];
        assert_eq!(wait.axis, "total wait (ms)");
        assert_eq!(wait.whiskers[0][1], Some((3.0, 5.6)));
        assert_eq!(wait.values[0][2], Some(4.5));
        assert_eq!(wait.notes[0].as_deref(), Some("4.57x"));
        // the total row has no ratio in the JSON: computed from its values
        assert_eq!(bars.panels[0].notes[1].as_deref(), Some("5.14x"));
    }
}
