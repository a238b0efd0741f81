//! Base vs patched over repeated runs: several `perf lock` tables per side, the rows matched
//! across runs by [`diff`]'s rule, per row the median and min–max of each side, the ratio of
//! medians (base / patched, as in the single-run diff) with a seeded percentile bootstrap
//! interval over runs, and a verdict.
//!
//! The bootstrap resamples runs, not waits: a run is the unit that varies (page placement,
//! timer ticks, the other CPU's load), so the interval says how far the ratio moves when other
//! runs of the same workload are taken. With three runs per side the median of a resample is
//! one of the three values, and the 2.5% and 97.5% quantiles of the replicates are exactly
//! `base min / patched max` and `base max / patched min`: three runs cannot narrow it further.

use std::collections::HashMap;

use serde::Serialize;

use super::diff::{self, MatchedBy};
use super::stat_row::{StatRow, Value};
use crate::stats::{self, Rng};

/// Bootstrap replicates by default.
pub const DEFAULT_REPLICATES: usize = 2000;

/// One input table: how it is named in outputs and its rows.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// `path` or `path#N`.
    pub name: &'a str,
    /// Its rows.
    pub rows: &'a [StatRow],
}

/// What the interval and the spread say about a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole 95% interval of base / patched is above 1 and every patched run is below
    /// every base run.
    Reduction,
    /// The whole interval is below 1 and every patched run is above every base run.
    Regression,
    /// Anything else: the difference is within run-to-run noise.
    Noise,
    /// Fewer than two runs on a side have the row (no spread to judge against).
    TooFewRuns,
}

impl Verdict {
    /// The word printed in tables and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Reduction => "reduction",
            Verdict::Regression => "regression",
            Verdict::Noise => "noise",
            Verdict::TooFewRuns => "too few runs",
        }
    }
}

/// The rule [`Verdict`] follows, for `--help` and the tables' footers.
pub const VERDICT_RULE: &str = "\
reduction = the whole 95% interval of base/patched is above 1 and the patched max is below the base min;
regression = the interval is below 1 and the patched min is above the base max;
noise = anything else (within run-to-run noise); too few runs = a side has the row in < 2 runs";

/// One side of one metric: the value in each run (`None` = the run has no such row).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// Per run, in input order.
    pub values: Vec<Option<u64>>,
    /// Median over the runs that have the row (linear-interpolated for an even count).
    pub median: Option<f64>,
    /// Smallest value.
    pub min: Option<u64>,
    /// Largest value.
    pub max: Option<u64>,
}

impl Side {
    fn of(values: Vec<Option<u64>>) -> Side {
        let present: Vec<u64> = values.iter().flatten().copied().collect();
        let f: Vec<f64> = present.iter().map(|&v| v as f64).collect();
        Side {
            median: stats::median(&f),
            min: present.iter().min().copied(),
            max: present.iter().max().copied(),
            values,
        }
    }

    fn present(&self) -> Vec<f64> {
        self.values.iter().flatten().map(|&v| v as f64).collect()
    }

    /// Runs that have the row.
    pub fn runs(&self) -> usize {
        self.values.iter().flatten().count()
    }
}

/// One metric of one row, base against patched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compare {
    /// Base runs.
    pub base: Side,
    /// Patched runs.
    pub patched: Side,
    /// Median of base / median of patched (`None` when a side is missing or patched is 0).
    pub ratio: Option<f64>,
    /// 2.5% and 97.5% quantiles of the ratio over bootstrap replicates of the runs.
    pub interval: Option<(f64, f64)>,
    /// See [`VERDICT_RULE`].
    pub verdict: Verdict,
}

fn ratio(b: f64, p: f64) -> Option<f64> {
    (p > 0.0).then(|| b / p)
}

impl Compare {
    fn of(base: Side, patched: Side, replicates: usize, rng: &mut Rng) -> Compare {
        let (bv, pv) = (base.present(), patched.present());
        let ratio_of_medians = match (base.median, patched.median) {
            (Some(b), Some(p)) => ratio(b, p),
            _ => None,
        };
        let interval = (!bv.is_empty() && !pv.is_empty() && replicates > 0).then(|| {
            let mut rs = Vec::with_capacity(replicates);
            let (mut bs, mut ps) = (vec![0.0; bv.len()], vec![0.0; pv.len()]);
            for _ in 0..replicates {
                for x in bs.iter_mut() {
                    *x = bv[rng.below(bv.len())];
                }
                for x in ps.iter_mut() {
                    *x = pv[rng.below(pv.len())];
                }
                let (b, p) = (stats::median(&bs), stats::median(&ps));
                // A resample whose patched median is 0 removed everything: an infinite ratio,
                // which sorts above every finite one.
                rs.push(match (b, p) {
                    (Some(b), Some(p)) => ratio(b, p).unwrap_or(f64::INFINITY),
                    _ => f64::NAN,
                });
            }
            (
                stats::quantile(&rs, 0.025).unwrap_or(f64::NAN),
                stats::quantile(&rs, 0.975).unwrap_or(f64::NAN),
            )
        });
        let verdict = match (interval, base.min, base.max, patched.min, patched.max) {
            _ if base.runs() < 2 || patched.runs() < 2 => Verdict::TooFewRuns,
            (Some((lo, _)), Some(bmin), _, _, Some(pmax)) if lo > 1.0 && pmax < bmin => {
                Verdict::Reduction
            }
            (Some((_, hi)), _, Some(bmax), Some(pmin), _) if hi < 1.0 && pmin > bmax => {
                Verdict::Regression
            }
            _ => Verdict::Noise,
        };
        Compare {
            base,
            patched,
            ratio: ratio_of_medians,
            interval,
            verdict,
        }
    }
}

/// One row matched across every run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunsRow {
    /// The key as the single-run diff shows it (`spinlock folio_batch_move_lru+0x88`, `#2` for
    /// the second row with the same key, `(unnamed #1)`).
    pub key: String,
    /// How it was paired with the first base run's row.
    pub matched_by: MatchedBy,
    /// Contended acquisitions.
    pub contended: Compare,
    /// Total wait, ns.
    pub total_wait_ns: Compare,
}

/// The comparison of repeated runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunsDiff {
    /// Base inputs, in order.
    pub base: Vec<String>,
    /// Patched inputs.
    pub patched: Vec<String>,
    /// Identity used to match rows.
    pub matched_on: &'static str,
    /// Bootstrap replicates.
    pub replicates: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
    /// Rows of the first base run, largest base total wait first.
    pub rows: Vec<RunsRow>,
    /// Every row of each run summed (one value per run).
    pub total: RunsRow,
    /// Per other run, rows it has that the first base run lacks (not compared; counted here
    /// so none is dropped silently).
    pub not_in_first_base: Vec<(String, usize)>,
}

/// Compare runs: rows are those of `base[0]`, each other run's row found by [`diff::diff`]
/// against `base[0]` (the single-run diff's matching, ranks included). `base` and `patched`
/// must not be empty.
pub fn compare(base: &[Run], patched: &[Run], replicates: usize, seed: u64) -> RunsDiff {
    let Some(first) = base.first() else {
        return RunsDiff {
            base: vec![],
            patched: patched.iter().map(|r| r.name.to_string()).collect(),
            matched_on: "name",
            replicates,
            seed,
            rows: vec![],
            total: empty_row(),
            not_in_first_base: vec![],
        };
    };
    let runs: Vec<&Run> = base.iter().chain(patched).collect();
    let diffs: Vec<diff::Diff> = runs
        .iter()
        .map(|r| diff::diff(first.name, first.rows, r.name, r.rows))
        .collect();
    // key -> row of that run
    let by_key: Vec<HashMap<&str, &StatRow>> = diffs
        .iter()
        .map(|d| {
            d.rows
                .iter()
                .map(|r| (r.key.as_str(), &r.patched))
                .collect()
        })
        .collect();
    let nb = base.len();
    let mut rng = Rng::new(seed);
    let rows: Vec<RunsRow> = diffs[0]
        .rows
        .iter()
        .map(|r| {
            let per_run = by_key.iter().map(|m| m.get(r.key.as_str()).copied());
            row_of(
                &r.key,
                r.matched_by,
                per_run.collect(),
                nb,
                replicates,
                &mut rng,
            )
        })
        .collect();
    let totals = diffs.iter().map(|d| Some(&d.total.patched)).collect();
    let total = row_of("total", MatchedBy::Key, totals, nb, replicates, &mut rng);
    RunsDiff {
        base: base.iter().map(|r| r.name.to_string()).collect(),
        patched: patched.iter().map(|r| r.name.to_string()).collect(),
        matched_on: diffs[0].matched_on,
        replicates,
        seed,
        rows,
        total,
        not_in_first_base: runs
            .iter()
            .zip(&diffs)
            .filter(|(_, d)| !d.unmatched_patched.is_empty())
            .map(|(r, d)| (r.name.to_string(), d.unmatched_patched.len()))
            .collect(),
    }
}

/// A row from its table row in each run (`per_run[..nb]` the base runs).
fn row_of(
    key: &str,
    matched_by: MatchedBy,
    per_run: Vec<Option<&StatRow>>,
    nb: usize,
    replicates: usize,
    rng: &mut Rng,
) -> RunsRow {
    let side = |metric: Value, runs: &[Option<&StatRow>]| {
        Side::of(runs.iter().map(|r| r.and_then(metric)).collect())
    };
    let (b, p) = per_run.split_at(nb.min(per_run.len()));
    let mut cmp = |metric: Value| Compare::of(side(metric, b), side(metric, p), replicates, rng);
    RunsRow {
        key: key.to_string(),
        matched_by,
        contended: cmp(|r| r.contended),
        total_wait_ns: cmp(|r| r.total_wait_ns),
    }
}

fn empty_row() -> RunsRow {
    let none = || Compare {
        base: Side::of(vec![]),
        patched: Side::of(vec![]),
        ratio: None,
        interval: None,
        verdict: Verdict::TooFewRuns,
    };
    RunsRow {
        key: "total".into(),
        matched_by: MatchedBy::Key,
        contended: none(),
        total_wait_ns: none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str, contended: &[u64]) -> Vec<StatRow> {
        contended
            .iter()
            .enumerate()
            .map(|(i, &c)| StatRow {
                source: name.into(),
                line: i as u64 + 1,
                kind: "name".into(),
                name: Some(format!("lock{i}")),
                contended: Some(c),
                total_wait_ns: Some(c * 1000),
                ..StatRow::default()
            })
            .collect()
    }

    #[test]
    fn three_runs_interval_is_the_extreme_ratios() {
        let b: Vec<Vec<StatRow>> = [10, 12, 11].iter().map(|&c| table("b", &[c])).collect();
        let p: Vec<Vec<StatRow>> = [5, 4, 6].iter().map(|&c| table("p", &[c])).collect();
        let runs = |t: &[Vec<StatRow>]| -> Vec<Vec<StatRow>> { t.to_vec() };
        let (b, p) = (runs(&b), runs(&p));
        let br: Vec<Run> = b.iter().map(|r| Run { name: "b", rows: r }).collect();
        let pr: Vec<Run> = p.iter().map(|r| Run { name: "p", rows: r }).collect();
        let d = compare(&br, &pr, 2000, 1);
        let c = &d.rows[0].contended;
        assert_eq!(c.ratio, Some(11.0 / 5.0));
        assert_eq!(c.interval, Some((10.0 / 6.0, 12.0 / 4.0)));
        assert_eq!(c.verdict, Verdict::Reduction);
        // Overlapping spreads are noise even though the medians differ.
        let p2: Vec<Vec<StatRow>> = [9, 13, 8].iter().map(|&c| table("p", &[c])).collect();
        let pr2: Vec<Run> = p2.iter().map(|r| Run { name: "p", rows: r }).collect();
        assert_eq!(
            compare(&br, &pr2, 500, 1).rows[0].contended.verdict,
            Verdict::Noise
        );
        assert_eq!(
            compare(&pr, &br, 500, 1).rows[0].contended.verdict,
            Verdict::Regression
        );
    }

    #[test]
    fn a_row_missing_from_a_run_counts_only_where_present() {
        let b = [table("b", &[10, 3]), table("b", &[11])];
        let p = [table("p", &[2, 1]), table("p", &[2, 1])];
        let br: Vec<Run> = b.iter().map(|r| Run { name: "b", rows: r }).collect();
        let pr: Vec<Run> = p.iter().map(|r| Run { name: "p", rows: r }).collect();
        let d = compare(&br, &pr, 100, 1);
        let lock1 = d.rows.iter().find(|r| r.key == "lock1").unwrap();
        assert_eq!(lock1.contended.base.values, vec![Some(3), None]);
        assert_eq!(lock1.contended.verdict, Verdict::TooFewRuns);
        assert_eq!(d.total.contended.base.values, vec![Some(13), Some(11)]);
    }
}
