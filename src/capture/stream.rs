//! `parse`'s lock tables (`lock_stats`, `contention`) of one input, read as a stream and handed
//! on a frame at a time: what memory holds is one piece of rows, whatever the input's size (a
//! perf lock table of 10 million lock names, a trace of millions of waits).
//!
//! The rows and their order are those of [`super::load::load`] + [`super::load::frame_of`]
//! (what `report` and `diff` read): perf lock rows in printed order, waits in pairing order,
//! a trace's `lock_stats` aggregated over all of its waits and written last.

use polars::prelude::DataFrame;

use lockcast_parsers::detect::{Content, Format};
use lockcast_parsers::event::{Event, Source};
use lockcast_parsers::perf_lock::{self, Item};
use lockcast_parsers::Diagnostics;

use super::load::{frame_of, load};
use super::{open, OpenOptions};
use crate::error::{Error, Result};
use crate::frames::contention::{Pairer, PairingCounts};
use crate::frames::lock_stats::{self, ContentionAgg};
use crate::frames::table::Table;
use crate::input::InputSpec;

/// What reading the lock tables found besides their rows.
pub struct LockTablesRead {
    /// Malformed lines skipped (lenient).
    pub diagnostics: Diagnostics,
    /// How begins and ends paired (event traces).
    pub pairing: Option<PairingCounts>,
    /// Events read (event traces; those passed over undecoded count too).
    pub events: u64,
}

/// Read `spec` (of `format`) and hand its `lock_stats` (when `stats`) and `contention` (when
/// `contention`) to `emit` a piece of at most `chunk_rows` rows at a time (usually
/// [`lock_stats::CHUNK_ROWS`]); every table asked for gets at least one (possibly empty) frame, so its
/// schema is known.
pub fn lock_tables(
    spec: &InputSpec,
    format: Format,
    stats: bool,
    contention: bool,
    opts: &OpenOptions,
    chunk_rows: usize,
    emit: &mut dyn FnMut(Table, DataFrame) -> Result<()>,
) -> Result<LockTablesRead> {
    let opts = OpenOptions {
        format: Some(format),
        ..opts.clone()
    };
    match (format, format.content()) {
        // perf lock text (and tables in free text) has a row-at-a-time reader; lock_stat and
        // klockstat files are read whole (a few thousand classes at most)
        (Format::LockStat | Format::Klockstat, _) | (_, Content::Callgraph) => {
            whole(spec, stats, contention, &opts, emit)
        }
        (_, Content::LockTables) => perf_lock_rows(spec, stats, &opts, chunk_rows.max(1), emit),
        (_, Content::Events) => {
            trace_waits(spec, stats, contention, &opts, chunk_rows.max(1), emit)
        }
    }
}

/// The collected way, for the formats read whole.
fn whole(
    spec: &InputSpec,
    stats: bool,
    contention: bool,
    opts: &OpenOptions,
    emit: &mut dyn FnMut(Table, DataFrame) -> Result<()>,
) -> Result<LockTablesRead> {
    let loaded = load(&spec.display(), opts)?;
    if stats {
        emit(Table::LockStats, frame_of(std::slice::from_ref(&loaded))?)?;
    }
    let pairing = loaded.trace.as_ref().map(|t| t.counts);
    if let (Some(t), true) = (&loaded.trace, contention) {
        emit(Table::Contention, t.contention.clone())?;
    }
    Ok(LockTablesRead {
        diagnostics: loaded.diagnostics,
        pairing,
        events: loaded.trace.as_ref().map_or(0, |t| t.events),
    })
}

fn perf_lock_rows(
    spec: &InputSpec,
    stats: bool,
    opts: &OpenOptions,
    chunk_rows: usize,
    emit: &mut dyn FnMut(Table, DataFrame) -> Result<()>,
) -> Result<LockTablesRead> {
    let opened = open(spec, opts)?;
    let progress = opened.progress.clone();
    let mut rd = perf_lock::Reader::new(opened.reader, &opts.reader());
    let path = spec.path.as_str();
    let mut chunks = lock_stats::Chunks::default();
    let (mut tables, mut found) = (0u32, false);
    // (index, label) of the table whose rows are being read
    let mut current: Option<(u32, Option<String>)> = None;
    while let Some(item) = rd.next_item().map_err(|e| Error::parse(path, e))? {
        match item {
            Item::Table(h) => {
                tables += 1;
                found |= spec.block == Some(h.index);
                current = Some((h.index, h.label));
            }
            Item::Row(r) => {
                let Some((index, label)) = &current else {
                    continue;
                };
                if spec.block.is_some_and(|b| b != *index) {
                    continue;
                }
                if stats {
                    chunks.push(path, label.as_deref(), &r);
                    if chunks.len() >= chunk_rows {
                        emit(Table::LockStats, chunks.take()?)?;
                    }
                }
            }
            Item::Footer(_) => {}
        }
    }
    if let Some(pb) = progress {
        pb.finish_and_clear();
    }
    if let Some(b) = spec.block {
        if !found {
            // as lock_stats::Source::select says it
            return Err(Error::Input(format!(
                "{path}#{b}: the file has {tables} table(s); use #1..#{tables}"
            )));
        }
    }
    if stats {
        emit(Table::LockStats, chunks.take()?)?;
    }
    Ok(LockTablesRead {
        diagnostics: rd.diagnostics().clone(),
        pairing: None,
        events: 0,
    })
}

fn trace_waits(
    spec: &InputSpec,
    stats: bool,
    contention: bool,
    opts: &OpenOptions,
    chunk_rows: usize,
    emit: &mut dyn FnMut(Table, DataFrame) -> Result<()>,
) -> Result<LockTablesRead> {
    let opened = open(spec, opts)?;
    let progress = opened.progress.clone();
    let mut rd = opened.events("the contention table")?;
    let path = spec.path.as_str();
    let mut pairer = match contention {
        true => Pairer::default(),
        false => Pairer::without_stacks(),
    };
    pairer.set_source(path);
    // as load reads a trace: the two events alone, the others passed over where the reader can
    rd.only(&Pairer::EVENTS);
    let mut waits = Waits {
        agg: stats.then(ContentionAgg::default),
        contention,
    };
    let mut events = 0u64;
    // one event read into again and again: the reader reuses its strings and chain
    let mut e = Event::empty(Source::PerfData);
    while rd
        .next_event_into(&mut e)
        .map_err(|e| Error::parse(path, e))?
    {
        events += 1;
        pairer.push(&e);
        if pairer.len() >= chunk_rows {
            for (t, df) in waits.hand_on(pairer.take()?, false)? {
                emit(t, df)?;
            }
        }
    }
    if let Some(pb) = progress {
        pb.finish_and_clear();
    }
    events += rd.skipped();
    let diagnostics = rd.diagnostics().clone();
    let (frames, counts) = waits.finish(pairer)?;
    for (t, df) in frames {
        emit(t, df)?;
    }
    Ok(LockTablesRead {
        diagnostics,
        pairing: Some(counts),
        events,
    })
}

/// The lock tables of a trace, a piece of paired waits at a time, so the waits of a whole
/// recording are never held together: read alone ([`trace_waits`]) or in one pass with a
/// perf.data's event tables (`super::tables`).
pub(super) struct Waits {
    /// Folds the waits into `lock_stats` rows, when that table is wanted.
    pub(super) agg: Option<ContentionAgg>,
    /// The `contention` frames are wanted.
    pub(super) contention: bool,
}

impl Waits {
    /// The frames of one piece of waits (`last`: the pairer's final piece, handed on even
    /// when empty, so an input without waits still has its `contention` frame).
    pub(super) fn hand_on(&mut self, df: DataFrame, last: bool) -> Result<Vec<(Table, DataFrame)>> {
        if let Some(a) = self.agg.as_mut() {
            a.add(&df)?;
        }
        Ok(match self.contention && (df.height() > 0 || last) {
            true => vec![(Table::Contention, df)],
            false => Vec::new(),
        })
    }

    /// The last piece of `p`'s waits, then `lock_stats` as a trace's rows are built (the empty
    /// perf-lock frame, then them).
    pub(super) fn finish(mut self, p: Pairer) -> Result<(Vec<(Table, DataFrame)>, PairingCounts)> {
        let (last, pairing) = p.finish()?;
        let mut out = self.hand_on(last, true)?;
        if let Some(a) = self.agg {
            let mut df = lock_stats::build(&[])?;
            df.vstack_mut(&a.finish()?)
                .map_err(|e| Error::polars("appending trace lock_stats", e))?;
            out.push((Table::LockStats, df));
        }
        Ok((out, pairing))
    }
}

/// What plain `lockcast parse INPUT` (no `-o`) prints of one input: its tables' headers and
/// row counts, not their rows, so a table of 10 million rows costs no more than a small one.
pub struct Found {
    /// The input as given.
    pub spec: InputSpec,
    /// Its format.
    pub format: Format,
    /// Its perf lock tables (empty for traces).
    pub tables: Vec<FoundTable>,
    /// Lines read (perf lock text).
    pub lines: u64,
    /// Events and how they paired (event traces).
    pub trace: Option<(u64, PairingCounts)>,
    /// Malformed lines skipped (lenient).
    pub diagnostics: Diagnostics,
    /// The `lock_stats` rows this input gives (the `#N` table alone when one is named).
    pub lock_stats_rows: u64,
}

/// One table of a [`Found`] input.
pub struct FoundTable {
    /// Its header.
    pub header: perf_lock::TableHeader,
    /// Rows printed in it.
    pub rows: u64,
    /// Debug footers printed after it.
    pub footers: u64,
}

impl Found {
    /// What a whole-read input holds (`lock_stats_rows`: the rows of its `lock_stats` frame).
    pub fn of_loaded(l: &super::load::Loaded, lock_stats_rows: u64) -> Found {
        Found {
            spec: l.spec.clone(),
            format: l.format,
            tables: l
                .parsed
                .tables
                .iter()
                .map(|t| FoundTable {
                    header: t.header.clone(),
                    rows: t.rows.len() as u64,
                    footers: t.footers.len() as u64,
                })
                .collect(),
            lines: l.parsed.lines,
            trace: l.trace.as_ref().map(|t| (t.events, t.counts)),
            diagnostics: l.diagnostics.clone(),
            lock_stats_rows,
        }
    }
}

/// Read `spec` (`path` or `path#N`) for what plain `parse` prints, streaming where the format
/// allows (perf lock text, event traces); the counts are those of [`load`] + [`frame_of`].
pub fn found(spec: &str, opts: &OpenOptions) -> Result<Found> {
    let spec = InputSpec::parse(spec);
    let format = match opts.format {
        Some(f) => f,
        None => super::format_of(&spec, opts)?,
    };
    let opts = OpenOptions {
        format: Some(format),
        ..opts.clone()
    };
    match (format, format.content()) {
        (Format::LockStat | Format::Klockstat, _) | (_, Content::Callgraph) => {
            let l = load(&spec.display(), &opts)?;
            let rows = frame_of(std::slice::from_ref(&l))?.height() as u64;
            Ok(Found::of_loaded(&l, rows))
        }
        (_, Content::LockTables) => {
            let opened = open(&spec, &opts)?;
            let progress = opened.progress.clone();
            let mut rd = perf_lock::Reader::new(opened.reader, &opts.reader());
            let mut tables: Vec<FoundTable> = Vec::new();
            let path = spec.path.as_str();
            while let Some(item) = rd.next_item().map_err(|e| Error::parse(path, e))? {
                match item {
                    Item::Table(header) => tables.push(FoundTable {
                        header,
                        rows: 0,
                        footers: 0,
                    }),
                    Item::Row(_) => {
                        if let Some(t) = tables.last_mut() {
                            t.rows += 1;
                        }
                    }
                    // as parse_all files them: after the table they follow, else orphans
                    Item::Footer(f) => {
                        if let (Some(t), true) = (tables.last_mut(), f.table.is_some()) {
                            t.footers += 1;
                        }
                    }
                }
            }
            if let Some(pb) = progress {
                pb.finish_and_clear();
            }
            let lock_stats_rows = match spec.block {
                None => tables.iter().map(|t| t.rows).sum(),
                Some(b) => match tables.iter().find(|t| t.header.index == b) {
                    Some(t) => t.rows,
                    None => {
                        let n = tables.len();
                        return Err(Error::Input(format!(
                            "{path}#{b}: the file has {n} table(s); use #1..#{n}"
                        )));
                    }
                },
            };
            Ok(Found {
                format,
                tables,
                lines: rd.line_no(),
                trace: None,
                diagnostics: rd.diagnostics().clone(),
                lock_stats_rows,
                spec,
            })
        }
        (_, Content::Events) => {
            let mut rows = 0u64;
            let mut count = |_: Table, df: DataFrame| -> Result<()> {
                rows += df.height() as u64;
                Ok(())
            };
            let r = trace_waits(
                &spec,
                true,
                false,
                &opts,
                lock_stats::CHUNK_ROWS,
                &mut count,
            )?;
            Ok(Found {
                format,
                tables: Vec::new(),
                lines: 0,
                trace: r.pairing.map(|c| (r.events, c)),
                diagnostics: r.diagnostics,
                lock_stats_rows: rows,
                spec,
            })
        }
    }
}
