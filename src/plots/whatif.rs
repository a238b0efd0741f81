//! What-if chart: per lock, the baseline as measured, the prediction under a policy with its
//! interval, and (when given) what the changed kernel measured afterwards.
//!
//! The input is the JSON of `lockcast whatif --json`: per lock rows with `policy`, `lock`,
//! `measured`, `replayed`, `predicted` (each `{acquisitions, contended, total_wait_ns}`),
//! `ratio_contended`, `ratio_total_wait` (measured / predicted), `interval` (`{low, high}`,
//! each `{contended, total_wait_ns}`) and optionally `after` (shaped like `measured`).
//! [`WhatIfRow`] is that row; callers holding the engine's result can fill it in directly.

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use super::bars::{Bars, Panel, Series};
use super::{tick_count, tick_value, Chart, DrawResult, TimeUnit, AFTER, BASE, PATCHED};
use crate::error::{Error, Result};
use crate::units::ratio;

/// Counts and wait of one lock in one setting. Numbers are `f64` because a prediction may be
/// a mean over replays; measured values are whole numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Lock acquisitions (null when the input had none, e.g. a contention table).
    #[serde(default)]
    pub acquisitions: Option<f64>,
    /// Contended acquisitions.
    #[serde(default)]
    pub contended: Option<f64>,
    /// Total wait, ns.
    #[serde(default)]
    pub total_wait_ns: Option<f64>,
}

/// One end of a prediction interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// Contended acquisitions.
    #[serde(default)]
    pub contended: Option<f64>,
    /// Total wait, ns.
    #[serde(default)]
    pub total_wait_ns: Option<f64>,
}

/// The prediction interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower end.
    pub low: Bound,
    /// Upper end.
    pub high: Bound,
}

/// One row of `lockcast whatif --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhatIfRow {
    /// Policy name, or an object with its name and parameters.
    #[serde(default)]
    pub policy: serde_json::Value,
    /// Lock (or `total`).
    pub lock: String,
    /// The baseline as measured.
    pub measured: Metrics,
    /// The baseline as replayed with no change (model fidelity).
    #[serde(default)]
    pub replayed: Option<Metrics>,
    /// The prediction under the policy.
    pub predicted: Metrics,
    /// measured / predicted contended.
    #[serde(default)]
    pub ratio_contended: Option<f64>,
    /// measured / predicted total wait.
    #[serde(default)]
    pub ratio_total_wait: Option<f64>,
    /// Interval of the prediction.
    #[serde(default)]
    pub interval: Option<Interval>,
    /// Measured on the changed kernel, when known.
    #[serde(default)]
    pub after: Option<Metrics>,
}

/// The what-if chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

fn looks_like_row(v: &serde_json::Value) -> bool {
    v.get("lock").is_some() && v.get("measured").is_some() && v.get("predicted").is_some()
}

/// Rows of a `lockcast whatif --json` document: a bare array of rows, an object holding the
/// rows in an array field (and possibly a total row in another field), or a single row.
pub fn rows_from_json(text: &str, source: &str) -> Result<Vec<WhatIfRow>> {
    let bad = |e: serde_json::Error| {
        Error::Input(format!(
            "{source}:{}:{}: what-if JSON: {e}",
            e.line(),
            e.column()
        ))
    };
    let v: serde_json::Value = serde_json::from_str(text).map_err(bad)?;
    let rows_in = |x: &'_ serde_json::Value| -> Vec<serde_json::Value> {
        x.as_array()
            .map(|a| a.iter().filter(|r| looks_like_row(r)).cloned().collect())
            .unwrap_or_default()
    };
    let mut found: Vec<serde_json::Value> = Vec::new();
    if looks_like_row(&v) {
        found.push(v.clone());
    } else if v.is_array() {
        found = rows_in(&v);
    } else if let Some(m) = v.as_object() {
        for x in m.values() {
            if looks_like_row(x) {
                found.push(x.clone());
            } else {
                found.extend(rows_in(x));
            }
        }
    }
    if found.is_empty() {
        return Err(Error::Input(format!(
            "{source}: no what-if rows (objects with lock, measured and predicted) in the JSON"
        )));
    }
    let policy = v.get("policy").cloned();
    found
        .into_iter()
        .map(|x| {
            let mut row: WhatIfRow = serde_json::from_value(x).map_err(bad)?;
            if row.policy.is_null() {
                row.policy = policy.clone().unwrap_or_default();
            }
            Ok(row)
        })
        .collect()
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

    /// A hand-built example of the documented schema (not a capture): the lruvec lock and
    /// the total, with an `after` measurement on the lock row only.
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
    fn rows_round_trip_through_the_documented_json() {
        let rows = example();
        let text =
            serde_json::to_string_pretty(&serde_json::json!({ "rows": rows })).unwrap_or_default();
        // The keys the lead's `whatif --json` documents must be what we read.
        for key in [
            "\"policy\"",
            "\"lock\"",
            "\"measured\"",
            "\"replayed\"",
            "\"predicted\"",
            "\"acquisitions\"",
            "\"ratio_contended\"",
            "\"ratio_total_wait\"",
            "\"interval\"",
            "\"low\"",
            "\"high\"",
            "\"after\"",
        ] {
            assert!(text.contains(key), "{key} missing");
        }
        let back = rows_from_json(&text, "example.json").unwrap_or_default();
        assert_eq!(back, rows);
        let bare = serde_json::to_string(&rows).unwrap_or_default();
        assert_eq!(rows_from_json(&bare, "bare.json").unwrap_or_default(), rows);
        assert_eq!(
            policy_text(&rows[0].policy),
            "lru-cache (max_cached_pages=31)"
        );
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
        assert!(matches!(e, Some(Error::Input(m)) if m.contains("no what-if rows")));
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
