//! What-if chart: per lock, the baseline as measured, the prediction under a policy with its
//! interval, and (when given) what the changed kernel measured afterwards.
//!
//! The input is the what-if report ([`crate::whatif::report::Report`], the JSON of
//! `lockcast whatif --json` and `validate --json`), read with the same type that wrote it; the
//! chart holds the report's own [`Row`]s, so the two cannot disagree on what a number means.

use super::bars::{AsBars, Bars, Panel, Series};
use super::{tick_count, tick_value, TimeUnit, AFTER, BASE, PATCHED};
use crate::error::{Error, Result};
use crate::units::ratio;
use crate::whatif::report::{Counts, Report, Row};
use crate::whatif::time_range::TimeCut;

/// The what-if chart.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIfChart {
    /// Title (defaults to the policy).
    pub title: String,
    /// The report's rows, top first.
    pub rows: Vec<Row>,
    /// The part of the capture replayed (`whatif --time`), named under the title: the
    /// chart's numbers are of that part alone.
    pub time: Option<TimeCut>,
}

/// The rows of a what-if report (`lockcast whatif --json` / `validate --json`).
pub fn rows_from_json(text: &str, source: &str) -> Result<Vec<Row>> {
    Ok(report_from_json(text, source)?.rows)
}

/// A what-if report (`lockcast whatif --json` / `validate --json`) with at least one row.
pub fn report_from_json(text: &str, source: &str) -> Result<Report> {
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
    Ok(report)
}

impl WhatIfChart {
    /// A chart of `rows` titled after their policy.
    pub fn new(rows: Vec<Row>) -> WhatIfChart {
        let policy = rows.first().map(|r| r.policy.as_str()).unwrap_or_default();
        WhatIfChart {
            title: if policy.is_empty() {
                "What-if: measured vs predicted contention".into()
            } else {
                format!("What-if {policy}: measured vs predicted contention")
            },
            rows,
            time: None,
        }
    }
}

impl AsBars for WhatIfChart {
    fn bars(&self) -> Bars {
        let has_after = self.rows.iter().any(|r| r.after.is_some());
        let max_wait = self
            .rows
            .iter()
            .flat_map(|r| {
                [&r.measured, &r.predicted, &r.interval.high]
                    .into_iter()
                    .chain(&r.after)
                    .map(|c| c.total_wait_ns.as_f64())
            })
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
        // One panel per metric: `get` reads it from a row's counts (scaled to the axis unit),
        // `given_ratio` is the report's own reduction factor for it.
        let panel = |axis: String,
                     get: fn(&Counts) -> f64,
                     given_ratio: fn(&Row) -> Option<f64>,
                     scale: f64,
                     tick: fn(f64) -> String| {
            let at = |c: &Counts| get(c) / scale;
            let values = self
                .rows
                .iter()
                .map(|r| {
                    let mut v = vec![Some(at(&r.measured)), Some(at(&r.predicted))];
                    if has_after {
                        v.push(r.after.as_ref().map(at));
                    }
                    v
                })
                .collect();
            let whiskers = self
                .rows
                .iter()
                .map(|r| vec![None, Some((at(&r.interval.low), at(&r.interval.high)))])
                .collect();
            let notes = self
                .rows
                .iter()
                .map(|r| {
                    let (m, p) = (get(&r.measured), get(&r.predicted));
                    let computed = (p > 0.0).then(|| m / p);
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
            subtitle: Some(format!(
                "{}bar = point prediction, whisker = interval; ratio = measured / predicted",
                self.time
                    .as_ref()
                    .map(|t| format!("{}; ", t.label()))
                    .unwrap_or_default()
            )),
            keys: self.rows.iter().map(|r| lock_label(&r.lock)).collect(),
            series,
            panels: vec![
                panel(
                    "contended acquisitions (count)".into(),
                    |c| c.contended as f64,
                    |r| r.ratio_contended,
                    1.0,
                    tick_count,
                ),
                panel(
                    format!("total wait ({})", unit.name),
                    |c| c.total_wait_ns.as_f64(),
                    |r| r.ratio_total_wait,
                    unit.ns,
                    tick_value,
                ),
            ],
        }
    }
}

/// A row's lock as a label: a replay models `lru_lock` (the lock it picked from the
/// capture, printed as its address: `0x…` from perf, 16 hashed hex digits from ftrace), so a
/// bare address is named; anything else (a name, `total`) is kept.
fn lock_label(lock: &str) -> String {
    let hex = lock.strip_prefix("0x").unwrap_or(lock);
    if !hex.is_empty()
        && (lock.starts_with("0x") || hex.len() == 16)
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        format!("lru_lock {lock}")
    } else {
        lock.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::whatif::report::Bounds;

    /// Hand-built report rows (drawing only: the chart's input from a real report is tested in
    /// tests/it/plots.rs): the lruvec lock and the total, with an `after` measurement on the
    /// lock row only and no ratio on the total row.
    pub(crate) fn example() -> Vec<Row> {
        let c = |acquisitions: u64, contended: u64, total_wait_ns: u64| Counts {
            acquisitions,
            contended,
            total_wait_ns: crate::duration::Ns(total_wait_ns),
            ..Counts::default()
        };
        // A row whose interval is the point prediction alone.
        let row = |lock: &str, measured: Counts, predicted: Counts| Row {
            policy: "lru-cache".into(),
            lock: lock.into(),
            measured,
            replayed: measured,
            predicted,
            ratio_contended: None,
            ratio_total_wait: None,
            interval: Bounds {
                low: predicted,
                high: predicted,
            },
            replayed_interval: Bounds::default(),
            after: None,
            after_capture: None,
            error: None,
        };
        let lock = Row {
            replayed: c(28_000, 13_500, 17_900_000),
            ratio_contended: Some(14_082.0 / 2_100.0),
            ratio_total_wait: Some(18_730_000.0 / 4_100_000.0),
            interval: Bounds {
                low: c(0, 1_600, 3_000_000),
                high: c(0, 2_900, 5_600_000),
            },
            after: Some(c(9_100, 2_400, 4_500_000)),
            ..row(
                "lruvec->lru_lock",
                c(28_000, 14_082, 18_730_000),
                c(9_000, 2_100, 4_100_000),
            )
        };
        let total = row(
            "total",
            c(30_000, 14_900, 21_500_000),
            c(11_000, 2_900, 6_800_000),
        );
        vec![lock, total]
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
            "What-if lru-cache: measured vs predicted contention",
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
