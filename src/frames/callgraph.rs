//! `perf report --stdio` entries → the `callgraph` table: one row per histogram entry (node
//! null) and one per call-graph node below it, with the path of frames from the graph's root
//! down to that node, so `self_pct`/`children_pct` and each branch's `--NN%--` can be queried
//! per call path. Schema: [`super::schema::callgraph`].

use polars::prelude::*;

use lockcast_parsers::perf_report::Entry;

use super::schema::callgraph as c;
use crate::error::{Error, Result};

/// Streaming builder of the `callgraph` table.
pub struct Callgraph {
    source: String,
    line: Vec<u64>,
    entry_line: Vec<u64>,
    event: Vec<Option<String>>,
    command: Vec<Option<String>>,
    dso: Vec<Option<String>>,
    symbol: Vec<String>,
    sym_kind: Vec<Option<String>>,
    children_pct: Vec<Option<f64>>,
    self_pct: Vec<Option<f64>>,
    node: Vec<Option<u32>>,
    parent: Vec<Option<u32>>,
    depth: Vec<Option<u32>>,
    branch_pct: Vec<Option<f64>>,
    frame: Vec<Option<String>>,
    path: ListStringChunkedBuilder,
    /// Entries read.
    pub entries: u64,
}

impl Callgraph {
    /// A builder for input `source`.
    pub fn new(source: &str) -> Self {
        Callgraph {
            source: source.to_string(),
            line: Vec::new(),
            entry_line: Vec::new(),
            event: Vec::new(),
            command: Vec::new(),
            dso: Vec::new(),
            symbol: Vec::new(),
            sym_kind: Vec::new(),
            children_pct: Vec::new(),
            self_pct: Vec::new(),
            node: Vec::new(),
            parent: Vec::new(),
            depth: Vec::new(),
            branch_pct: Vec::new(),
            frame: Vec::new(),
            path: ListStringChunkedBuilder::new(c::PATH.into(), 256, 1024),
            entries: 0,
        }
    }

    fn push_entry_cols(&mut self, e: &Entry, line: u64) {
        self.line.push(line);
        self.entry_line.push(e.line);
        self.event.push(e.event.clone());
        self.command.push(e.command.clone());
        self.dso.push(e.dso.clone());
        self.symbol.push(e.symbol.clone());
        self.sym_kind.push(e.sym_kind.map(String::from));
        self.children_pct.push(e.children_pct);
        self.self_pct.push(e.self_pct);
    }

    /// Add one entry and its graph.
    pub fn push(&mut self, e: &Entry) {
        self.entries += 1;
        self.push_entry_cols(e, e.line);
        self.node.push(None);
        self.parent.push(None);
        self.depth.push(None);
        self.branch_pct.push(None);
        self.frame.push(None);
        self.path.append_values_iter(std::iter::empty());
        for (i, n) in e.graph.iter().enumerate() {
            self.push_entry_cols(e, n.line);
            self.node.push(u32::try_from(i).ok());
            self.parent
                .push(n.parent.and_then(|p| u32::try_from(p).ok()));
            self.depth.push(Some(n.depth));
            self.branch_pct.push(n.pct);
            self.frame.push(Some(n.symbol.clone()));
            // parents come before children: walk up, then reverse to root-first
            let mut path = vec![n.symbol.as_str()];
            let mut p = n.parent;
            while let Some(j) = p {
                let Some(up) = e.graph.get(j) else { break };
                path.push(up.symbol.as_str());
                p = up.parent.filter(|&k| k < j);
            }
            path.reverse();
            self.path.append_values_iter(path.into_iter());
        }
    }

    /// The table.
    pub fn finish(mut self) -> Result<DataFrame> {
        let n = self.line.len();
        let s = |name: &str, v| -> Column { Series::new(name.into(), v).into() };
        let cols = vec![
            Column::new_scalar(
                c::SOURCE.into(),
                Scalar::from(PlSmallStr::from(self.source.as_str())),
                n,
            ),
            Series::new(c::LINE.into(), self.line).into(),
            Series::new(c::ENTRY_LINE.into(), self.entry_line).into(),
            s(c::EVENT, self.event),
            s(c::COMMAND, self.command),
            s(c::DSO, self.dso),
            Series::new(c::SYMBOL.into(), self.symbol).into(),
            s(c::SYM_KIND, self.sym_kind),
            Series::new(c::CHILDREN_PCT.into(), self.children_pct).into(),
            Series::new(c::SELF_PCT.into(), self.self_pct).into(),
            Series::new(c::NODE.into(), self.node).into(),
            Series::new(c::PARENT.into(), self.parent).into(),
            Series::new(c::DEPTH.into(), self.depth).into(),
            Series::new(c::BRANCH_PCT.into(), self.branch_pct).into(),
            s(c::FRAME, self.frame),
            self.path.finish().into_series().into(),
        ];
        DataFrame::new(n, cols).map_err(|e| Error::polars("building callgraph", e))
    }
}
