//! The table registry: every table lockcast builds, by name (`parse --table NAME`, file stems
//! in an output directory), and which tables an input of each kind of content has.

use lockcast_parsers::detect::{Content, Format};

use super::events::EventTable;
use super::schema;

/// A table `parse --table` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    /// `perf lock` rows, or the rows `perf lock contention` would print for a trace.
    LockStats,
    /// One row per traced wait (`contention_begin` → `contention_end`).
    Contention,
    /// A per-event table of an event trace.
    Event(EventTable),
    /// The `perf report --stdio` call-graph tree.
    Callgraph,
}

impl Table {
    /// Name as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Table::LockStats => schema::lock_stats::TABLE,
            Table::Contention => schema::contention::TABLE,
            Table::Event(t) => t.name(),
            Table::Callgraph => schema::callgraph::TABLE,
        }
    }

    /// The table named `s`.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::all().into_iter().find(|t| t.name() == s)
    }

    /// Every table, in the order they are listed and written.
    pub fn all() -> Vec<Table> {
        let mut v = vec![Table::LockStats, Table::Contention];
        v.extend(EventTable::ALL.iter().map(|&t| Table::Event(t)));
        v.push(Table::Callgraph);
        v
    }

    /// Every table's name.
    pub fn all_names() -> Vec<&'static str> {
        Self::all().into_iter().map(Table::name).collect()
    }

    /// The table `lockcast parse` writes for `format` when no `--table` is named: what the
    /// format is about (`lock_stats` of perf lock tables and of event traces' waits,
    /// `callgraph` of `perf report --stdio`).
    pub fn natural(format: Format) -> Table {
        match format.content() {
            Content::LockTables | Content::Events => Table::LockStats,
            Content::Callgraph => Table::Callgraph,
        }
    }

    /// The tables an input of `format` has: `samples` only where its events carry call
    /// chains; every other event table comes from any event format.
    pub fn of_format(format: Format) -> Vec<Table> {
        match format.content() {
            Content::LockTables => vec![Table::LockStats],
            Content::Callgraph => vec![Table::Callgraph],
            Content::Events => {
                let mut v = vec![Table::LockStats, Table::Contention];
                v.extend(
                    EventTable::ALL
                        .iter()
                        .filter(|t| format.info().call_chains || **t != EventTable::Samples)
                        .map(|&t| Table::Event(t)),
                );
                v
            }
        }
    }
}
