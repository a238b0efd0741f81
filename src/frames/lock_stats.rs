//! `perf lock` tables → the `lock_stats` frame (schema in [`super::schema::lock_stats`]).

use polars::prelude::*;

use lockcast_parsers::perf_lock::{Hold, Parsed, PointKind, Row, Table};
use lockcast_parsers::time::TimeNs;

use super::schema::lock_stats as c;
use crate::error::{Error, Result};

/// The tables of one parsed input, with the name it is known by.
pub struct Source<'a> {
    /// Path as given (`-` for stdin).
    pub path: &'a str,
    /// Tables to include.
    pub tables: Vec<&'a Table>,
}

impl<'a> Source<'a> {
    /// All tables of `parsed`, or only table `block` (1-based) when given.
    pub fn select(path: &'a str, parsed: &'a Parsed, block: Option<u32>) -> Result<Self> {
        let tables: Vec<&Table> = match block {
            None => parsed.tables.iter().collect(),
            Some(b) => {
                let t = parsed
                    .tables
                    .iter()
                    .find(|t| t.header.index == b)
                    .ok_or_else(|| {
                        Error::Input(format!(
                            "{path}#{b}: the file has {} table(s); use #1..#{}",
                            parsed.tables.len(),
                            parsed.tables.len()
                        ))
                    })?;
                vec![t]
            }
        };
        Ok(Source { path, tables })
    }
}

#[derive(Default)]
struct Builder {
    source: Vec<String>,
    block: Vec<u32>,
    label: Vec<Option<String>>,
    line: Vec<u64>,
    kind: Vec<&'static str>,
    name: Vec<Option<String>>,
    name_truncated: Vec<bool>,
    caller: Vec<Option<String>>,
    ty: Vec<Option<String>>,
    pid: Vec<Option<i64>>,
    comm: Vec<Option<String>>,
    address: Vec<Option<String>>,
    symbol: Vec<Option<String>>,
    cgroup: Vec<Option<String>>,
    acquired: Vec<Option<u64>>,
    contended: Vec<Option<u64>>,
    waits: [Vec<Option<u64>>; 4],
    errs: [Vec<Option<u64>>; 4],
    /// `-v` call stacks, one list per row. A list builder, not a `Series` per row: a table of
    /// 10 million rows (mostly without stacks) would spend gigabytes on per-row Series.
    stack: Option<ListStringChunkedBuilder>,
    rw: Vec<Option<String>>,
    /// con_bounces, acq_bounces, hold min/max/total/avg, hold_total_err.
    hold: [Vec<Option<u64>>; 7],
    /// contention and contending points: symbols and counts.
    points: Option<PointLists>,
}

struct PointLists {
    syms: [ListStringChunkedBuilder; 2],
    counts: [ListPrimitiveChunkedBuilder<UInt64Type>; 2],
}

impl PointLists {
    fn new() -> Self {
        let s = |n: &str| ListStringChunkedBuilder::new(n.into(), 0, 0);
        let n = |n: &str| {
            ListPrimitiveChunkedBuilder::<UInt64Type>::new(n.into(), 0, 0, DataType::UInt64)
        };
        PointLists {
            syms: [s(c::CONTENTION_POINTS), s(c::CONTENDING_POINTS)],
            counts: [n(c::CONTENTION_POINT_COUNTS), n(c::CONTENDING_POINT_COUNTS)],
        }
    }
}

impl Builder {
    fn push(&mut self, path: &str, label: Option<&str>, r: &Row) {
        self.source.push(path.to_string());
        self.block.push(r.table);
        self.label.push(label.map(str::to_string));
        self.line.push(r.line);
        self.kind.push(r.mode.as_str());
        self.name.push(r.name.clone());
        self.name_truncated.push(r.name_truncated);
        self.caller.push(r.caller.clone());
        self.ty.push(r.lock_type.clone());
        self.pid.push(r.pid);
        self.comm.push(r.comm.clone());
        self.address.push(r.address.map(|a| format!("{a:#x}")));
        self.symbol.push(r.symbol.clone());
        self.cgroup.push(r.cgroup.clone());
        self.acquired.push(r.acquired);
        self.contended.push(r.contended);
        let times: [Option<TimeNs>; 4] = [r.avg_wait, r.total_wait, r.max_wait, r.min_wait];
        for (i, t) in times.iter().enumerate() {
            self.waits[i].push(t.map(|t| t.ns));
            self.errs[i].push(t.map(|t| t.err_ns));
        }
        self.push_stack(r.stack.iter().map(|f| f.symbol.as_str()));
        self.rw.push(r.rw.clone());
        self.push_hold(r.hold.as_ref());
        let pts = self.points.get_or_insert_with(PointLists::new);
        for (i, kind) in [PointKind::Contention, PointKind::Contending]
            .into_iter()
            .enumerate()
        {
            let of = || r.points.iter().filter(move |p| p.kind == kind);
            pts.syms[i].append_values_iter(of().map(|p| p.symbol.as_str()));
            pts.counts[i].append_slice(&of().map(|p| p.count).collect::<Vec<u64>>());
        }
    }

    fn push_hold(&mut self, h: Option<&Hold>) {
        let t = |v: Option<lockcast_parsers::time::TimeNs>| v.map(|t| t.ns);
        let vals = match h {
            None => [None; 7],
            Some(h) => [
                h.con_bounces,
                h.acq_bounces,
                t(h.min),
                t(h.max),
                t(h.total),
                t(h.avg),
                h.total.map(|t| t.err_ns),
            ],
        };
        for (col, v) in self.hold.iter_mut().zip(vals) {
            col.push(v);
        }
    }

    /// Rows without points (every tool but lock_stat) still need their empty lists.
    fn push_no_points(&mut self) {
        let pts = self.points.get_or_insert_with(PointLists::new);
        for i in 0..2 {
            pts.syms[i].append_values_iter(std::iter::empty());
            pts.counts[i].append_slice(&[]);
        }
    }

    fn push_stack<'a>(&mut self, frames: impl Iterator<Item = &'a str>) {
        self.stack
            .get_or_insert_with(|| ListStringChunkedBuilder::new(c::STACK.into(), 0, 0))
            .append_values_iter(frames);
    }

    fn finish(self) -> Result<DataFrame> {
        let height = self.source.len();
        let [avg, total, max, min] = self.waits;
        let [avg_e, total_e, max_e, min_e] = self.errs;
        let stack = match self.stack {
            None => Series::new_empty(c::STACK.into(), &DataType::List(Box::new(DataType::String))),
            Some(mut b) => b.finish().into_series(),
        };
        let mut pts = self.points.unwrap_or_else(PointLists::new);
        let [s0, s1] = &mut pts.syms;
        let [n0, n1] = &mut pts.counts;
        let point_cols: Vec<Column> = vec![
            s0.finish().into_series().into(),
            n0.finish().into_series().into(),
            s1.finish().into_series().into(),
            n1.finish().into_series().into(),
        ];
        let [con_b, acq_b, hmin, hmax, htot, havg, htot_e] = self.hold;
        let cols: Vec<Column> = vec![
            Column::new(c::SOURCE.into(), self.source),
            Column::new(c::BLOCK.into(), self.block),
            Column::new(c::LABEL.into(), self.label),
            Column::new(c::LINE.into(), self.line),
            Column::new(c::KIND.into(), self.kind),
            Column::new(c::NAME.into(), self.name),
            Column::new(c::NAME_TRUNCATED.into(), self.name_truncated),
            Column::new(c::CALLER.into(), self.caller),
            Column::new(c::TYPE.into(), self.ty),
            Column::new(c::PID.into(), self.pid),
            Column::new(c::COMM.into(), self.comm),
            Column::new(c::ADDRESS.into(), self.address),
            Column::new(c::SYMBOL.into(), self.symbol),
            Column::new(c::CGROUP.into(), self.cgroup),
            Column::new(c::ACQUIRED.into(), self.acquired),
            Column::new(c::CONTENDED.into(), self.contended),
            Column::new(c::AVG_WAIT_NS.into(), avg),
            Column::new(c::TOTAL_WAIT_NS.into(), total),
            Column::new(c::MAX_WAIT_NS.into(), max),
            Column::new(c::MIN_WAIT_NS.into(), min),
            Column::new(c::AVG_WAIT_ERR_NS.into(), avg_e),
            Column::new(c::TOTAL_WAIT_ERR_NS.into(), total_e),
            Column::new(c::MAX_WAIT_ERR_NS.into(), max_e),
            Column::new(c::MIN_WAIT_ERR_NS.into(), min_e),
            stack.into(),
            Column::new(c::RW.into(), self.rw),
            Column::new(c::CON_BOUNCES.into(), con_b),
            Column::new(c::ACQ_BOUNCES.into(), acq_b),
            Column::new(c::HOLD_MIN_NS.into(), hmin),
            Column::new(c::HOLD_MAX_NS.into(), hmax),
            Column::new(c::HOLD_TOTAL_NS.into(), htot),
            Column::new(c::HOLD_AVG_NS.into(), havg),
            Column::new(c::HOLD_TOTAL_ERR_NS.into(), htot_e),
        ];
        let mut cols = cols;
        cols.extend(point_cols);
        DataFrame::new(height, cols).map_err(|e| Error::polars("building lock_stats", e))
    }
}

/// Build the `lock_stats` frame from any number of inputs.
pub fn build(sources: &[Source<'_>]) -> Result<DataFrame> {
    let mut b = Builder::default();
    for s in sources {
        for t in &s.tables {
            for r in &t.rows {
                b.push(s.path, t.header.label.as_deref(), r);
            }
        }
    }
    b.finish()
}

/// Aggregate a `contention` frame (traced waits) into `lock_stats` rows keyed by caller and
/// type, as `perf lock contention` does: contended = waits, total/max/min wait from the
/// intervals, avg = total / contended. Exact integers, so `*_err_ns` is 0.
pub fn from_contention(df: &DataFrame) -> Result<DataFrame> {
    let mut a = ContentionAgg::default();
    a.add(df)?;
    a.finish()
}

#[derive(Default)]
struct Agg {
    n: u64,
    total: u64,
    max: u64,
    min: u64,
    order: usize,
}

/// [`from_contention`] fed a piece at a time: the groups (one per source, caller and type, as
/// `perf lock contention` keys them) are all it keeps, so a trace streamed in pieces gives
/// the same rows without its waits ever being held together.
#[derive(Default)]
pub struct ContentionAgg {
    /// Per group: (source, caller, type) and its sums, in order of first sight.
    groups: Vec<((String, String, String), Agg)>,
    /// Each group's place in `groups`, by [`group_key`]: a row is found with no allocation
    /// (a `String` per row and key column was ~4% of `report`).
    index: std::collections::HashMap<String, usize>,
}

/// One string for a (source, caller, type) key: each of the first two after its length, so
/// no two keys give the same string whatever bytes they hold.
fn group_key(out: &mut String, source: &str, caller: &str, ty: &str) {
    use std::fmt::Write;
    out.clear();
    for part in [source, caller] {
        let _ = write!(out, "{}:", part.len());
        out.push_str(part);
    }
    out.push_str(ty);
}

impl ContentionAgg {
    /// Add the waits of one `contention` frame (in the order they were paired).
    pub fn add(&mut self, df: &DataFrame) -> Result<()> {
        use super::schema::contention as k;
        let strs = |name: &str| super::str_col(df, name);
        let (source, caller, ty) = (strs(k::SOURCE)?, strs(k::CALLER)?, strs(k::TYPE)?);
        let wait = super::i64s(df, k::WAIT_NS)?;
        let mut key = String::new();
        let rows = source.iter().zip(caller.iter()).zip(ty.iter()).zip(wait);
        for (((source, caller), ty), wait) in rows {
            let (source, caller, ty) = (
                source.unwrap_or_default(),
                caller.unwrap_or("Unknown"),
                ty.unwrap_or_default(),
            );
            group_key(&mut key, source, caller, ty);
            let at = match self.index.get(key.as_str()) {
                Some(&at) => at,
                None => {
                    let at = self.groups.len();
                    self.index.insert(key.clone(), at);
                    let names = (source.to_string(), caller.to_string(), ty.to_string());
                    let fresh = Agg {
                        min: u64::MAX,
                        order: at,
                        ..Agg::default()
                    };
                    self.groups.push((names, fresh));
                    at
                }
            };
            let a = &mut self.groups[at].1;
            let w = u64::try_from(wait.unwrap_or(0)).unwrap_or(0);
            a.n += 1;
            // Saturating: only waits of centuries (hostile timestamps) can reach it.
            a.total = a.total.saturating_add(w);
            a.max = a.max.max(w);
            a.min = a.min.min(w);
        }
        Ok(())
    }

    /// The `lock_stats` rows, in perf's default order per source: total wait, largest first
    /// (first seen first on ties).
    pub fn finish(self) -> Result<DataFrame> {
        let mut rows = self.groups;
        rows.sort_by(|a, b| {
            a.0 .0
                .cmp(&b.0 .0)
                .then(b.1.total.cmp(&a.1.total))
                .then(a.1.order.cmp(&b.1.order))
        });
        let mut b = Builder::default();
        for (line, ((src, caller, ty), a)) in rows.into_iter().enumerate() {
            let exact = |v: u64| Some(TimeNs::exact(v));
            b.push_parts(
                &src,
                None,
                &RowParts {
                    line: line as u64 + 1,
                    caller: Some(caller),
                    lock_type: Some(ty),
                    contended: Some(a.n),
                    total_wait: exact(a.total),
                    avg_wait: exact(a.total / a.n.max(1)),
                    max_wait: exact(a.max),
                    min_wait: exact(a.min),
                },
            );
        }
        b.finish()
    }
}

/// Rows of a perf lock table per frame when it is streamed ([`Chunks`]): a Parquet row group
/// each, and what memory holds of the table at once (~35 columns: tens of MB).
pub const CHUNK_ROWS: usize = 65_536;

/// The `lock_stats` frame built a piece at a time from rows as a perf lock reader yields
/// them, in the order [`build`] would put them: a table of 10 million rows never exists as
/// one frame (nor as 10 million owned `Row`s).
#[derive(Default)]
pub struct Chunks {
    b: Builder,
}

impl Chunks {
    /// Add one row of the table labelled `label` of input `path`.
    pub fn push(&mut self, path: &str, label: Option<&str>, r: &Row) {
        self.b.push(path, label, r);
    }

    /// Rows added since the last [`Chunks::take`].
    pub fn len(&self) -> usize {
        self.b.source.len()
    }

    /// No rows since the last [`Chunks::take`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows added so far as a frame (possibly empty: it still has the schema); starts over.
    pub fn take(&mut self) -> Result<DataFrame> {
        std::mem::take(&mut self.b).finish()
    }
}

/// The fields of an aggregated contention row.
struct RowParts {
    line: u64,
    caller: Option<String>,
    lock_type: Option<String>,
    contended: Option<u64>,
    total_wait: Option<TimeNs>,
    avg_wait: Option<TimeNs>,
    max_wait: Option<TimeNs>,
    min_wait: Option<TimeNs>,
}

impl Builder {
    fn push_parts(&mut self, path: &str, label: Option<&str>, r: &RowParts) {
        self.source.push(path.to_string());
        self.block.push(1);
        self.label.push(label.map(str::to_string));
        self.line.push(r.line);
        self.kind.push("caller");
        self.name.push(None);
        self.name_truncated.push(false);
        self.caller.push(r.caller.clone());
        self.ty.push(r.lock_type.clone());
        self.pid.push(None);
        self.comm.push(None);
        self.address.push(None);
        self.symbol.push(None);
        self.cgroup.push(None);
        self.acquired.push(None);
        self.contended.push(r.contended);
        let times = [r.avg_wait, r.total_wait, r.max_wait, r.min_wait];
        for (i, t) in times.iter().enumerate() {
            self.waits[i].push(t.map(|t| t.ns));
            self.errs[i].push(t.map(|t| t.err_ns));
        }
        self.push_stack(std::iter::empty());
        self.rw.push(None);
        self.push_hold(None);
        self.push_no_points();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::schema::contention as k;

    /// Waits are grouped per (source, caller, type) exactly: keys whose parts would join into
    /// the same text stay apart, a missing caller is perf's `Unknown`, and the rows come per
    /// source by total wait, largest first, first seen first on ties, across pieces.
    #[test]
    fn waits_are_grouped_by_source_caller_and_type() {
        let piece = |rows: &[(&str, Option<&str>, &str, i64)]| {
            df![
                k::SOURCE => rows.iter().map(|r| r.0).collect::<Vec<_>>(),
                k::CALLER => rows.iter().map(|r| r.1).collect::<Vec<_>>(),
                k::TYPE => rows.iter().map(|r| r.2).collect::<Vec<_>>(),
                k::WAIT_NS => rows.iter().map(|r| r.3).collect::<Vec<_>>(),
            ]
            .unwrap()
        };
        let mut agg = ContentionAgg::default();
        agg.add(&piece(&[
            ("b", Some("a"), "bc", 10),
            ("b", Some("ab"), "c", 7),
            ("a", None, "spinlock", 5),
            ("b", Some("a"), "bc", 30),
            ("b", Some("x"), "spinlock", 3),
        ]))
        .unwrap();
        agg.add(&piece(&[
            ("a", Some("Unknown"), "spinlock", 4),
            ("b", Some("x"), "spinlock", 4),
        ]))
        .unwrap();
        let df = agg.finish().unwrap();
        let ints = |name: &str| -> Vec<i64> {
            let c = df.column(name).unwrap().cast(&DataType::Int64).unwrap();
            c.i64().unwrap().into_no_null_iter().collect()
        };
        let text = |name: &str| crate::frames::strs(&df, name).unwrap();
        let s = |v: &str| Some(v.to_string());
        assert_eq!(text(c::SOURCE), [s("a"), s("b"), s("b"), s("b")]);
        // "ab" and "x" tie at 7 ns: "ab" was seen first
        assert_eq!(text(c::CALLER), [s("Unknown"), s("a"), s("ab"), s("x")]);
        assert_eq!(
            text(c::TYPE),
            [s("spinlock"), s("bc"), s("c"), s("spinlock")]
        );
        assert_eq!(ints(c::CONTENDED), [2, 2, 1, 2]);
        assert_eq!(ints(c::TOTAL_WAIT_NS), [9, 40, 7, 7]);
        assert_eq!(ints(c::MAX_WAIT_NS), [5, 30, 7, 4]);
        assert_eq!(ints(c::MIN_WAIT_NS), [4, 10, 7, 3]);
    }
}
