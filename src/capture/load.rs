//! Captures → `lock_stats` rows, the shape `report`, `diff`, `plot` and `parse` work on:
//! `perf lock` tables as perf printed them, and event traces through their
//! `contention_begin`/`end` pairs (the rows `perf lock contention` would print for them).

use polars::prelude::DataFrame;

use lockcast_parsers::detect::Format;
use lockcast_parsers::event::{Event, Source};
use lockcast_parsers::{perf_lock, Diagnostics};

use super::{open, Capture, OpenOptions};
use crate::analyses::stat_row::{self, StatRow};
use crate::error::{Error, Result};
use crate::frames::contention::{Pairer, PairingCounts};
use crate::frames::lock_stats;
use crate::input::InputSpec;

/// One input, read for its lock statistics.
pub struct Loaded {
    /// The input as given.
    pub spec: InputSpec,
    /// Its format.
    pub format: Format,
    /// `perf lock` tables (empty for traces).
    pub parsed: perf_lock::Parsed,
    /// The waits of an event trace.
    pub trace: Option<TraceWaits>,
    /// Malformed lines skipped (lenient).
    pub diagnostics: Diagnostics,
}

/// An event trace's traced waits.
pub struct TraceWaits {
    /// Events read.
    pub events: u64,
    /// The `contention` frame: one row per wait; its `stack` column null when loaded with
    /// [`load_without_chains`].
    pub contention: DataFrame,
    /// How begins and ends paired.
    pub counts: PairingCounts,
}

/// Read `spec` (`path` or `path#N`) for its lock statistics. A `perf report` input has none.
pub fn load(spec: &str, opts: &OpenOptions) -> Result<Loaded> {
    load_with(spec, opts, Pairer::default())
}

/// [`load`] for readers of the waits that need each one's caller but not its call chain (the
/// `lock_stats` rows of [`frame_of`] and [`one_table`], the export's wait slices): the
/// `contention` frame's `stack` column is null ([`Pairer::without_stacks`]).
pub fn load_without_chains(spec: &str, opts: &OpenOptions) -> Result<Loaded> {
    load_with(spec, opts, Pairer::without_stacks())
}

fn load_with(spec: &str, opts: &OpenOptions, mut pairer: Pairer) -> Result<Loaded> {
    let spec = InputSpec::parse(spec);
    let opened = open(&spec, opts)?;
    let format = opened.format;
    let path = spec.path.clone();
    match opened.read()? {
        Capture::LockTables(parsed) => Ok(Loaded {
            spec,
            format,
            diagnostics: parsed.diagnostics.clone(),
            parsed,
            trace: None,
        }),
        Capture::Events(mut rd) => {
            pairer.set_source(&path);
            // the pairing reads these two alone: a reader that can pass over the rest
            // undecoded does (perf.data); they still count as events read
            rd.only(&Pairer::EVENTS);
            let mut events = 0u64;
            // one event read into again and again: the reader reuses its strings and chain
            let mut e = Event::empty(Source::PerfData);
            while rd
                .next_event_into(&mut e)
                .map_err(|e| Error::parse(&path, e))?
            {
                events += 1;
                pairer.push(&e);
            }
            events += rd.skipped();
            let diagnostics = rd.diagnostics().clone();
            let (contention, counts) = pairer.finish()?;
            Ok(Loaded {
                spec,
                format,
                parsed: perf_lock::Parsed::default(),
                trace: Some(TraceWaits {
                    events,
                    contention,
                    counts,
                }),
                diagnostics,
            })
        }
        Capture::Callgraph(_) => Err(Error::Input(format!(
            "{path}: perf report --stdio output has no lock_stats table: use `lockcast parse --table callgraph`"
        ))),
    }
}

/// The `lock_stats` frame of several loaded inputs, in input order (perf lock tables first,
/// then traces, as `parse` has always written them).
pub fn frame_of(loaded: &[Loaded]) -> Result<DataFrame> {
    let sources = loaded
        .iter()
        .filter(|l| l.trace.is_none())
        .map(|l| lock_stats::Source::select(&l.spec.path, &l.parsed, l.spec.block))
        .collect::<Result<Vec<_>, _>>()?;
    let mut df = lock_stats::build(&sources)?;
    for l in loaded {
        if let Some(t) = &l.trace {
            let part = lock_stats::from_contention(&t.contention)?;
            df.vstack_mut(&part)
                .map_err(|e| Error::polars("appending trace lock_stats", e))?;
        }
    }
    Ok(df)
}

/// One table of one input, as rows: what `diff`, the closed-form what-if and the A/B chart
/// compare. A file holding several tables needs `#N`; the error lists them.
pub struct OneTable {
    /// How the table is named in outputs (`path#N`, or the path of a trace).
    pub name: String,
    /// Its rows.
    pub rows: Vec<StatRow>,
    /// Malformed lines skipped (lenient).
    pub diagnostics: Diagnostics,
}

/// Read one table of `spec`.
pub fn one_table(spec: &str, opts: &OpenOptions) -> Result<OneTable> {
    let l = load_without_chains(spec, opts)?;
    if l.trace.is_some() {
        let df = frame_of(std::slice::from_ref(&l))?;
        return Ok(OneTable {
            name: l.spec.path.clone(),
            rows: stat_row::rows(&df)?,
            diagnostics: l.diagnostics,
        });
    }
    let n = l.parsed.tables.len();
    let block = match l.spec.block {
        Some(b) => b,
        None if n == 1 => 1,
        None => {
            let labels: Vec<String> = l
                .parsed
                .tables
                .iter()
                .map(|t| {
                    format!(
                        "#{} (line {}{})",
                        t.header.index,
                        t.header.line,
                        t.header
                            .label
                            .as_ref()
                            .map(|x| format!(", \"{x}\""))
                            .unwrap_or_default()
                    )
                })
                .collect();
            return Err(Error::Input(format!(
                "{}: holds {n} tables; pick one with {}#N: {}",
                l.spec.path,
                l.spec.path,
                labels.join(", ")
            )));
        }
    };
    let src = lock_stats::Source::select(&l.spec.path, &l.parsed, Some(block))?;
    let df = lock_stats::build(&[src])?;
    Ok(OneTable {
        name: format!("{}#{block}", l.spec.path),
        rows: stat_row::rows(&df)?,
        diagnostics: l.diagnostics,
    })
}
