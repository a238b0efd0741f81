//! The summary users read first: rows of `lock_stats` grouped by lock, caller, thread or type,
//! per input table, sorted by total wait.

use polars::prelude::*;
use serde::Serialize;

use super::stat_row::{self, StatRow};
use crate::error::{Error, Result};
use crate::frames::schema::lock_stats as c;
use crate::frames::{strs, u32s, u64s};

/// What rows are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    /// Lock name (report), or symbol / address (`contention -l`).
    Lock,
    /// Contention caller.
    Caller,
    /// Task (`-t`): comm.
    Thread,
    /// Lock type.
    Type,
}

impl By {
    /// The JSON field the key is written under.
    pub fn field(self) -> &'static str {
        match self {
            By::Lock => "name",
            By::Caller => "caller",
            By::Thread => "comm",
            By::Type => "type",
        }
    }

    /// The natural grouping of a table kind (`lock_stats.kind`).
    pub fn natural(kind: &str) -> By {
        match kind {
            "caller" | "klockstat" => By::Caller,
            "task" | "info_thread" => By::Thread,
            _ => By::Lock,
        }
    }
}

/// Sort order of the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Total wait, largest first (perf's default for `contention`).
    TotalWait,
    /// Contended count, largest first.
    Contended,
}

/// Report options.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// Grouping; `None` uses each table's natural key. Default: None.
    pub by: Option<By>,
    /// Rows kept per table. Default: 10.
    pub top: usize,
    /// Sort order. Default: total wait.
    pub sort: SortKey,
    /// Rows kept before grouping (`--lock`, `--caller`, `--type`). Default: all.
    pub filter: super::filter::RowFilter,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            by: None,
            top: 10,
            sort: SortKey::TotalWait,
            filter: Default::default(),
        }
    }
}

/// One summary row: a group of the table's rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryRow {
    /// The group key (lock name, caller, comm or type).
    pub key: String,
    /// Rows of the input merged into this one.
    pub rows: u64,
    /// The merged values: sums of counts and total wait (acquisitions only when the table has
    /// them), total / contended as the average, the largest max and smallest min, and the lock
    /// type when all merged rows agree.
    pub merged: StatRow,
}

/// The summary of one input table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TableSummary {
    /// Input path.
    pub source: String,
    /// Table index.
    pub block: u32,
    /// Table label.
    pub label: Option<String>,
    /// Grouping used.
    pub by: By,
    /// Rows of the input table.
    pub input_rows: u64,
    /// Groups before `top` was applied.
    pub groups: u64,
    /// Sum over the whole table (not only the top rows).
    pub total: SummaryRow,
    /// The top groups.
    pub top: Vec<SummaryRow>,
}

impl TableSummary {
    /// Groups of the table beyond the `top` shown.
    pub fn groups_not_shown(&self) -> u64 {
        self.groups - self.top.len() as u64
    }
}

const KEY: &str = "__key";
const ROWS: &str = "__rows";

/// Summarize every table of a `lock_stats` frame.
pub fn summarize(df: &DataFrame, opts: &Options) -> Result<Vec<TableSummary>> {
    let blocks: Vec<(String, u32)> = {
        let src = strs(df, c::SOURCE)?;
        let blk = u32s(df, c::BLOCK)?;
        let mut seen: Vec<(String, u32)> = Vec::new();
        for (s, b) in src.into_iter().zip(blk) {
            let k = (s.unwrap_or_default(), b.unwrap_or(0));
            if !seen.contains(&k) {
                seen.push(k);
            }
        }
        seen
    };
    let mut out = Vec::new();
    for (source, block) in blocks {
        let part = df
            .clone()
            .lazy()
            .filter(
                col(c::SOURCE)
                    .eq(lit(source.clone()))
                    .and(col(c::BLOCK).eq(lit(block))),
            )
            .collect()
            .map_err(|e| Error::polars("selecting a table", e))?;
        // filtered per table, so a table none of whose rows match still prints (empty)
        let part = opts.filter.frame(&part)?;
        out.push(summarize_table(&part, &source, block, opts)?);
    }
    Ok(out)
}

fn group_keys(df: &DataFrame, by: By) -> Result<Vec<Option<String>>> {
    let line = u64s(df, c::LINE)?;
    let pick = |cols: &[&str]| -> Result<Vec<Option<String>>> {
        let cols: Vec<Vec<Option<String>>> =
            cols.iter().map(|n| strs(df, n)).collect::<Result<_>>()?;
        Ok((0..df.height())
            .map(|i| cols.iter().find_map(|c| c[i].clone()))
            .collect())
    };
    Ok(match by {
        By::Lock => pick(&[c::NAME, c::SYMBOL, c::ADDRESS])?
            .into_iter()
            .zip(line)
            // perf prints every lock instance on its own row; unnamed ones must not merge.
            .map(|(k, l)| Some(k.unwrap_or_else(|| format!("(unnamed, line {})", l.unwrap_or(0)))))
            .collect(),
        By::Caller => pick(&[c::CALLER])?,
        By::Thread => {
            let comm = strs(df, c::COMM)?;
            let name = strs(df, c::NAME)?;
            comm.into_iter().zip(name).map(|(c, n)| c.or(n)).collect()
        }
        By::Type => pick(&[c::TYPE])?,
    })
}

fn summarize_table(
    df: &DataFrame,
    source: &str,
    block: u32,
    opts: &Options,
) -> Result<TableSummary> {
    let kind = strs(df, c::KIND)?
        .into_iter()
        .flatten()
        .next()
        .unwrap_or_default();
    let label = strs(df, c::LABEL)?.into_iter().flatten().next();
    let by = opts.by.unwrap_or_else(|| By::natural(&kind));
    let keys = group_keys(df, by)?;
    if df.height() > 0 && keys.iter().all(Option::is_none) {
        return Err(Error::Input(format!(
            "{source}#{block}: a `{kind}` table has no {} column to group by; try --by {}",
            by.field(),
            match By::natural(&kind) {
                By::Lock => "lock",
                By::Caller => "caller",
                By::Thread => "thread",
                By::Type => "type",
            }
        )));
    }
    // polars sums an all-null column to 0: a column the table does not have (klockstat has no
    // contended count, its hold tables no waits) must stay unknown, not become 0
    let present = Present {
        acquired: u64s(df, c::ACQUIRED)?.iter().any(Option::is_some),
        contended: u64s(df, c::CONTENDED)?.iter().any(Option::is_some),
        total_wait: u64s(df, c::TOTAL_WAIT_NS)?.iter().any(Option::is_some),
    };
    let mut with_key = df.clone();
    with_key
        .with_column(Column::new(KEY.into(), keys))
        .map_err(|e| Error::polars("adding group key", e))?;
    let agg = || {
        [
            len().alias(ROWS),
            col(c::ACQUIRED).sum(),
            col(c::CONTENDED).sum(),
            col(c::TOTAL_WAIT_NS).sum(),
            col(c::MAX_WAIT_NS).max(),
            col(c::MIN_WAIT_NS).min(),
            col(c::TYPE).unique().count().alias("__types"),
            col(c::TYPE).first(),
        ]
    };
    let sort_col = match opts.sort {
        SortKey::TotalWait => c::TOTAL_WAIT_NS,
        SortKey::Contended => c::CONTENDED,
    };
    let grouped = with_key
        .clone()
        .lazy()
        .filter(col(KEY).is_not_null())
        .group_by([col(KEY)])
        .agg(agg())
        .sort(
            [sort_col, KEY],
            SortMultipleOptions::default()
                .with_order_descending_multi([true, false])
                .with_nulls_last(true),
        )
        .collect()
        .map_err(|e| Error::polars("grouping lock_stats", e))?;
    let totals = with_key
        .lazy()
        .select(agg())
        .collect()
        .map_err(|e| Error::polars("summing lock_stats", e))?;
    let mut rows = to_rows(&grouped, present, true)?;
    let groups = rows.len() as u64;
    rows.truncate(opts.top);
    let total = to_rows(&totals, present, false)?
        .into_iter()
        .next()
        .map(|mut t| {
            t.key = "total".to_string();
            t
        })
        .ok_or_else(|| Error::Input(format!("{source}#{block}: empty table")))?;
    Ok(TableSummary {
        source: source.to_string(),
        block,
        label,
        by,
        input_rows: df.height() as u64,
        groups,
        total,
        top: rows,
    })
}

/// A count column of the aggregation (`len()`, `count()`: `UInt32` in polars) as u64s.
fn counts(df: &DataFrame, name: &str, what: &str) -> Result<Vec<Option<u64>>> {
    let n = df
        .column(name)
        .and_then(|c| c.cast(&DataType::UInt64))
        .map_err(|e| Error::polars(what, e))?;
    Ok(n.u64()
        .map_err(|e| Error::polars(what, e))?
        .iter()
        .collect())
}

/// Which summed columns the table has at all.
#[derive(Debug, Clone, Copy)]
struct Present {
    acquired: bool,
    contended: bool,
    total_wait: bool,
}

fn to_rows(df: &DataFrame, present: Present, keyed: bool) -> Result<Vec<SummaryRow>> {
    let keys = if keyed {
        strs(df, KEY)?
    } else {
        vec![None; df.height()]
    };
    let n = counts(df, ROWS, "reading counts")?;
    let types_n = counts(df, "__types", "reading types")?;
    let ty = strs(df, c::TYPE)?;
    let mut merged = vec![StatRow::default(); df.height()];
    stat_row::read_values(df, &mut merged)?;
    Ok(merged
        .into_iter()
        .enumerate()
        .map(|(i, mut m)| {
            // the type only when every merged row had the same one
            m.lock_type = ty[i].clone().filter(|_| types_n[i] == Some(1));
            m.acquired = m.acquired.filter(|_| present.acquired);
            m.contended = m.contended.filter(|_| present.contended);
            m.total_wait_ns = m.total_wait_ns.filter(|_| present.total_wait);
            m.avg_wait_ns = match (m.total_wait_ns, m.contended) {
                (Some(t), Some(c)) if c > 0 => Some(t / c),
                _ => None,
            };
            SummaryRow {
                key: keys[i].clone().unwrap_or_default(),
                rows: n[i].unwrap_or(0),
                merged: m,
            }
        })
        .collect())
}
