//! `perf lock` tables → the `lock_stats` frame (schema in [`super::schema::lock_stats`]).

use polars::prelude::*;

use lockcast_parsers::perf_lock::{Parsed, Row, Table};
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
    stack: Vec<Series>,
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
        let frames: Vec<&str> = r.stack.iter().map(|f| f.symbol.as_str()).collect();
        self.stack.push(Series::new(PlSmallStr::EMPTY, frames));
    }

    fn finish(self) -> Result<DataFrame> {
        let height = self.source.len();
        let [avg, total, max, min] = self.waits;
        let [avg_e, total_e, max_e, min_e] = self.errs;
        let stack = if self.stack.is_empty() {
            Series::new_empty(c::STACK.into(), &DataType::List(Box::new(DataType::String)))
        } else {
            Series::new(c::STACK.into(), self.stack)
        };
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
        ];
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
