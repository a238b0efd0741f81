//! A typed view of `lock_stats` rows for analyses that match rows one by one.

use polars::prelude::DataFrame;
use serde::Serialize;

use crate::error::Result;
use crate::frames::schema::lock_stats as c;
use crate::frames::{i64s, strs, u32s, u64s};

/// One `lock_stats` row with the fields analyses use (also a sum of rows: a diff's totals, a
/// report's group).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StatRow {
    /// Input path.
    pub source: String,
    /// Table index in the input.
    pub block: u32,
    /// Table label.
    pub label: Option<String>,
    /// Input line.
    pub line: u64,
    /// Row kind (`lock`, `caller`, ...).
    pub kind: String,
    /// Lock name.
    pub name: Option<String>,
    /// Caller.
    pub caller: Option<String>,
    /// Lock type.
    #[serde(rename = "type")]
    pub lock_type: Option<String>,
    /// Task id.
    pub pid: Option<i64>,
    /// Task name.
    pub comm: Option<String>,
    /// Lock address (hex text).
    pub address: Option<String>,
    /// Lock symbol.
    pub symbol: Option<String>,
    /// Cgroup.
    pub cgroup: Option<String>,
    /// Acquisitions.
    pub acquired: Option<u64>,
    /// Contended acquisitions.
    pub contended: Option<u64>,
    /// Total wait, ns.
    pub total_wait_ns: Option<u64>,
    /// Rounding half-width of total wait, ns.
    pub total_wait_err_ns: Option<u64>,
    /// Average wait, ns.
    pub avg_wait_ns: Option<u64>,
    /// Maximum wait, ns.
    pub max_wait_ns: Option<u64>,
    /// Minimum wait, ns.
    pub min_wait_ns: Option<u64>,
    /// Total hold time, ns (tools that measure holds: `/proc/lock_stat`, klockstat hold tables).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold_total_ns: Option<u64>,
    /// `/proc/lock_stat` read/write state (`W`, `R`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rw: Option<String>,
}

/// One of a row's counts or waits, picked out of it (`|r| r.contended`).
pub type Value = fn(&StatRow) -> Option<u64>;

/// The count and wait columns of `lock_stats`, and where each goes in a row.
type ValueSlot = fn(&mut StatRow) -> &mut Option<u64>;
const VALUE_COLUMNS: [(&str, ValueSlot); 7] = [
    (c::ACQUIRED, |r| &mut r.acquired),
    (c::CONTENDED, |r| &mut r.contended),
    (c::TOTAL_WAIT_NS, |r| &mut r.total_wait_ns),
    (c::TOTAL_WAIT_ERR_NS, |r| &mut r.total_wait_err_ns),
    (c::AVG_WAIT_NS, |r| &mut r.avg_wait_ns),
    (c::MAX_WAIT_NS, |r| &mut r.max_wait_ns),
    (c::MIN_WAIT_NS, |r| &mut r.min_wait_ns),
];

/// Fill in the counts and waits of `rows` (one per row of `df`) from the value columns of
/// `lock_stats` that `df` has: all of them in `lock_stats`, the aggregated ones in an
/// aggregation of it (which keeps their names).
pub fn read_values(df: &DataFrame, rows: &mut [StatRow]) -> Result<()> {
    for (name, slot) in VALUE_COLUMNS {
        if df.column(name).is_ok() {
            for (r, v) in rows.iter_mut().zip(u64s(df, name)?) {
                *slot(r) = v;
            }
        }
    }
    Ok(())
}

/// All rows of a `lock_stats` frame, in frame order.
pub fn rows(df: &DataFrame) -> Result<Vec<StatRow>> {
    let source = strs(df, c::SOURCE)?;
    let block = u32s(df, c::BLOCK)?;
    let label = strs(df, c::LABEL)?;
    let line = u64s(df, c::LINE)?;
    let kind = strs(df, c::KIND)?;
    let name = strs(df, c::NAME)?;
    let caller = strs(df, c::CALLER)?;
    let ty = strs(df, c::TYPE)?;
    let pid = i64s(df, c::PID)?;
    let comm = strs(df, c::COMM)?;
    let address = strs(df, c::ADDRESS)?;
    let symbol = strs(df, c::SYMBOL)?;
    let cgroup = strs(df, c::CGROUP)?;
    let mut rows: Vec<StatRow> = (0..df.height())
        .map(|i| StatRow {
            source: source[i].clone().unwrap_or_default(),
            block: block[i].unwrap_or(0),
            label: label[i].clone(),
            line: line[i].unwrap_or(0),
            kind: kind[i].clone().unwrap_or_default(),
            name: name[i].clone(),
            caller: caller[i].clone(),
            lock_type: ty[i].clone(),
            pid: pid[i],
            comm: comm[i].clone(),
            address: address[i].clone(),
            symbol: symbol[i].clone(),
            cgroup: cgroup[i].clone(),
            ..StatRow::default()
        })
        .collect();
    read_values(df, &mut rows)?;
    // aggregations of lock_stats keep only some columns
    if df.column(c::HOLD_TOTAL_NS).is_ok() {
        for (r, v) in rows.iter_mut().zip(u64s(df, c::HOLD_TOTAL_NS)?) {
            r.hold_total_ns = v;
        }
    }
    if df.column(c::RW).is_ok() {
        for (r, v) in rows.iter_mut().zip(strs(df, c::RW)?) {
            r.rw = v;
        }
    }
    Ok(rows)
}
