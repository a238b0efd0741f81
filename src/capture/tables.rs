//! One input into the tables asked of it (`parse --table`): `lock_stats` and `contention`
//! from the whole-input readers (pairing is sequential), the per-event tables streamed in
//! parallel pieces ([`crate::ingest`]), the call-graph tree from `perf report`.

use polars::prelude::DataFrame;

use lockcast_parsers::detect::Format;
use lockcast_parsers::event::{Event, EventRead, Source};
use lockcast_parsers::perf_data::Deferred;
use lockcast_parsers::{Diagnostic, Diagnostics};

use super::{open, Capture, OpenOptions};
use crate::error::{Error, Result};
use crate::frames::callgraph::Callgraph;
use crate::frames::contention::{Pairer, PairingCounts};
use crate::frames::events::{EventCounts, EventTable, EventTables};
use crate::frames::lock_stats::ContentionAgg;

/// Rows of the per-event tables of a perf.data input built before they are handed on (about
/// what an 8 MiB text piece gives).
const PIECE_ROWS: usize = 100_000;
use crate::frames::table::Table;
use crate::ingest;
use crate::input::InputSpec;

/// How to read the tables of an input.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Format (already told) and strictness.
    pub open: OpenOptions,
    /// Threads parsing event traces.
    pub threads: usize,
    /// Size of the pieces event traces are cut into.
    pub piece_bytes: usize,
    /// Rows per frame of the streamed lock tables ([`crate::frames::lock_stats::CHUNK_ROWS`]).
    pub chunk_rows: usize,
}

/// What reading one input found, besides its tables.
#[derive(Debug, Clone, Default)]
pub struct InputSummary {
    /// Events read (event traces, when per-event tables were asked for).
    pub events: Option<u64>,
    /// How contention begins and ends paired (event traces, lock_stats/contention asked).
    pub pairing: Option<PairingCounts>,
    /// Payloads that could not be read (lenient).
    pub bad_payloads: u64,
    /// The first of them.
    pub first_bad_payload: Option<Diagnostic>,
    /// Call-graph entries (`perf report`).
    pub callgraph_entries: Option<u64>,
    /// Malformed lines skipped, per reader (lenient).
    pub skipped: Vec<Diagnostics>,
}

/// Read `spec` (of `format`) and hand each of `tables` to `emit`, in table order per reader.
pub fn read(
    spec: &InputSpec,
    format: Format,
    tables: &[Table],
    opts: &ReadOptions,
    emit: &mut dyn FnMut(Table, DataFrame) -> Result<()>,
) -> Result<InputSummary> {
    read_prepared(spec, format, tables, opts, &|_, df| Ok(df), emit)
}

/// [`read`], each frame passed through `prepare` before `emit`: on the parser threads for the
/// per-event tables of text traces (see [`ingest::run_prepared`]), on this thread otherwise.
pub fn read_prepared<T: Send>(
    spec: &InputSpec,
    format: Format,
    tables: &[Table],
    opts: &ReadOptions,
    prepare: &(dyn Fn(Table, DataFrame) -> Result<T> + Sync),
    emit: &mut dyn FnMut(Table, T) -> Result<()>,
) -> Result<InputSummary> {
    let mut summary = InputSummary::default();
    let open_opts = OpenOptions {
        format: Some(format),
        ..opts.open.clone()
    };
    let events: Vec<EventTable> = tables
        .iter()
        .filter_map(|w| match w {
            Table::Event(t) => Some(*t),
            _ => None,
        })
        .collect();
    let lock_tables = tables.contains(&Table::LockStats) || tables.contains(&Table::Contention);
    // perf.data with per-event tables: the lock tables come from the same pass (below), not a
    // second read of the file
    let one_pass = format == Format::PerfData && !events.is_empty();
    if lock_tables && !one_pass {
        // streamed a piece at a time (memory flat in the input's size)
        let r = super::stream::lock_tables(
            spec,
            format,
            tables.contains(&Table::LockStats),
            tables.contains(&Table::Contention),
            &open_opts,
            opts.chunk_rows,
            &mut |t, df| emit(t, prepare(t, df)?),
        )?;
        summary.skipped.push(r.diagnostics);
        summary.pairing = r.pairing;
    }
    if one_pass {
        // a binary file cannot be cut into text pieces: one reader (the capture's, with its
        // --kallsyms), the tables built on a second thread and written on this one
        let rd = open(spec, &open_opts)?.events("parse --table")?;
        let want = Wanted {
            events: &events,
            lock_stats: tables.contains(&Table::LockStats),
            contention: tables.contains(&Table::Contention),
            lenient: opts.open.lenient,
            chunk_rows: opts.chunk_rows.max(1),
        };
        let (rd, built) =
            build_ahead(rd, &spec.path, &want, &mut |t, df| emit(t, prepare(t, df)?))?;
        summary.pairing = built.pairing;
        summary.skipped.push(rd.diagnostics().clone());
        summary.events = Some(built.counts.events);
        summary.bad_payloads = built.counts.bad_payloads;
        summary.first_bad_payload = built.first_bad;
    } else if !events.is_empty() {
        let opened = open(spec, &open_opts)?;
        let io = ingest::Options {
            source: spec.path.clone(),
            format,
            tables: events,
            lenient: opts.open.lenient,
            threads: opts.threads,
            piece_bytes: opts.piece_bytes,
        };
        let mut sink = |frames: Vec<(EventTable, T)>| -> Result<()> {
            for (t, x) in frames {
                emit(Table::Event(t), x)?;
            }
            Ok(())
        };
        let prepare_event = |t: EventTable, df: DataFrame| prepare(Table::Event(t), df);
        let input = ingest::Input {
            reader: opened.reader,
            plain: opened.plain,
        };
        let s = ingest::run_prepared(
            input,
            &io,
            opened.progress.as_ref(),
            &prepare_event,
            &mut sink,
        )?;
        if let Some(pb) = opened.progress {
            pb.finish_and_clear();
        }
        summary.skipped.push(s.diagnostics);
        summary.events = Some(s.counts.events);
        summary.bad_payloads = s.counts.bad_payloads;
        summary.first_bad_payload = s.first_bad_payload;
    }
    if tables.contains(&Table::Callgraph) {
        let Capture::Callgraph(mut rd) = open(spec, &open_opts)?.read()? else {
            return Err(Error::Input(format!(
                "{}: a {} input has no callgraph table",
                spec.path,
                format.as_str()
            )));
        };
        let mut cg = Callgraph::new(&spec.path);
        while let Some(e) = rd.next_entry().map_err(|e| Error::parse(&spec.path, e))? {
            cg.push(&e);
        }
        summary.skipped.push(rd.diagnostics().clone());
        summary.callgraph_entries = Some(cg.entries);
        emit(Table::Callgraph, prepare(Table::Callgraph, cg.finish()?)?)?;
    }
    Ok(summary)
}

/// The tables [`build_ahead`] builds.
struct Wanted<'a> {
    events: &'a [EventTable],
    lock_stats: bool,
    contention: bool,
    lenient: bool,
    /// Waits paired before they are handed on (`contention` frames of this many rows, folded
    /// into `lock_stats` as they go), as the lock tables read alone are.
    chunk_rows: usize,
}

/// What [`build_ahead`] found besides the frames it emitted.
struct Built {
    counts: EventCounts,
    first_bad: Option<Diagnostic>,
    pairing: Option<PairingCounts>,
    /// Deferred payloads printed raw ([`lockcast_parsers::perf_data::Deferred::render_into`]).
    unparsed: u64,
}

/// Read the events of `rd`, build the tables of `want` and hand every frame to `emit` in order
/// (each event table's frames of [`PIECE_ROWS`] rows and `contention`'s of
/// [`Wanted::chunk_rows`] as they fill, then `lock_stats`), on
/// three threads: the perf.data reader (records, payload text), the table builders and the
/// writers (`emit`, this thread), so reading, building and Parquet encoding overlap instead of
/// two of them taking turns on one CPU. The builder hands each batch of events back to the
/// reader to be freed there: glibc frees a block fastest on the thread that allocated it, and
/// freeing a million events' strings on the builder thread cost it more than a tenth of its time.
/// Gives the reader back (its diagnostics) at the end.
fn build_ahead(
    rd: Box<dyn EventRead + Send>,
    path: &str,
    want: &Wanted<'_>,
    emit: &mut dyn FnMut(Table, DataFrame) -> Result<()>,
) -> Result<(Box<dyn EventRead + Send>, Built)> {
    const BATCH: usize = 4096;
    // batches at once: in the channel to the builder, the builder's, the reader's
    const IN_FLIGHT: usize = 6;
    // each batch with the payloads the reader left for the builder to render ([`hand_on`]): on
    // the reader's thread they were a third of its time, and that thread was the run's wall
    // time (lockcast_parsers::perf_data::deferred)
    let mut rd = rd;
    rd.defer_payloads();
    type Frames = Result<Vec<(Table, DataFrame)>>;
    // batches sent and not yet taken by the builder: one waiting says it is behind
    let queued = &std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let (batch_tx, batch_rx) = std::sync::mpsc::sync_channel::<BuildBatch>(IN_FLIGHT - 2);
        let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<Event>>();
        // one piece ahead of the writer: each holds PIECE_ROWS rows of every table
        let (frames_tx, frames_rx) = std::sync::mpsc::sync_channel::<Frames>(1);
        let reader = scope.spawn(move || {
            // Batches the builder is done with, filled again here: their events' strings are
            // reused, not made and freed per event (malloc and free, the record reader's own
            // included, were 28% of this thread's samples in a profile of the 193 MB recording).
            let mut spare: Vec<Vec<Event>> = Vec::new();
            // deferred payloads this thread rendered, printed raw
            let mut unparsed = 0;
            loop {
                while let Ok(old) = back_rx.try_recv() {
                    if spare.len() < IN_FLIGHT {
                        spare.push(old);
                    }
                }
                let mut batch = spare.pop().unwrap_or_default();
                let mut n = 0;
                let done = loop {
                    if n == batch.len() {
                        // a batch only goes to the builder for perf.data (the binary reader)
                        batch.push(Event::empty(Source::PerfData));
                    }
                    match rd.next_event_into(&mut batch[n]) {
                        Ok(true) => {
                            n += 1;
                            if n == BATCH {
                                break false;
                            }
                        }
                        Ok(false) => break true,
                        Err(e) => {
                            queued.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let _ = batch_tx.send(Err(e));
                            return (rd, unparsed);
                        }
                    }
                };
                batch.truncate(n);
                let deferred = rd.take_deferred();
                if !batch.is_empty() && !hand_on(&batch_tx, queued, batch, deferred, &mut unparsed)
                {
                    // a closed channel: the builder or the writer failed and stopped
                    return (rd, unparsed);
                }
                if done {
                    return (rd, unparsed);
                }
            }
        });
        let builder = scope.spawn(move || -> Option<Built> {
            let new = || EventTables::new(path, want.events, want.lenient);
            let mut t = new();
            let mut built = Built {
                counts: EventCounts::default(),
                first_bad: None,
                pairing: None,
                unparsed: 0,
            };
            let take = |t: &mut EventTables, built: &mut Built| -> Frames {
                let c = t.counts();
                built.counts.events += c.events;
                built.counts.bad_payloads += c.bad_payloads;
                if built.first_bad.is_none() {
                    built.first_bad = t.first_bad().cloned();
                }
                let frames = t.take()?;
                *t = new();
                Ok(frames
                    .into_iter()
                    .map(|(table, df)| (Table::Event(table), df))
                    .collect())
            };
            let mut pairer = (want.lock_stats || want.contention).then(|| {
                let mut p = match want.contention {
                    true => Pairer::default(),
                    false => Pairer::without_stacks(),
                };
                p.set_source(path);
                p
            });
            let mut waits = super::stream::Waits {
                agg: want.lock_stats.then(ContentionAgg::default),
                contention: want.contention,
            };
            for batch in &batch_rx {
                queued.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                let step = batch
                    .map_err(|e| Error::parse(path, e))
                    .and_then(|(mut b, d)| {
                        if let Some(d) = d {
                            built.unparsed += d.render_into(&mut b);
                        }
                        for e in &b {
                            t.push(e)?;
                            if let Some(p) = pairer.as_mut() {
                                p.push(e);
                            }
                        }
                        let _ = back_tx.send(b);
                        Ok(())
                    });
                let step = step.and_then(|()| {
                    let mut out = match t.rows() >= PIECE_ROWS {
                        true => take(&mut t, &mut built)?,
                        false => Vec::new(),
                    };
                    if let Some(p) = pairer.as_mut().filter(|p| p.len() >= want.chunk_rows) {
                        out.extend(waits.hand_on(p.take()?, false)?);
                    }
                    Ok(out)
                });
                let failed = step.is_err();
                if (!matches!(&step, Ok(v) if v.is_empty()) && frames_tx.send(step).is_err())
                    || failed
                {
                    return None;
                }
            }
            let mut last = take(&mut t, &mut built);
            if let (Ok(frames), Some(p)) = (last.as_mut(), pairer) {
                match waits.finish(p) {
                    Ok((more, pairing)) => {
                        frames.extend(more);
                        built.pairing = Some(pairing);
                    }
                    Err(e) => last = Err(e),
                }
            }
            let failed = last.is_err();
            (frames_tx.send(last).is_ok() && !failed).then_some(built)
        });
        let mut result = Ok(());
        for frames in &frames_rx {
            let step = frames.and_then(|v| v.into_iter().try_for_each(|(t, df)| emit(t, df)));
            if let Err(e) = step {
                result = Err(e);
                break;
            }
        }
        drop(frames_rx);
        let built = builder
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        let (mut rd, unparsed_here) = reader
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        result?;
        let built = built
            .ok_or_else(|| Error::Input(format!("{path}: the table builder stopped early")))?;
        rd.deferred_done(built.unparsed + unparsed_here);
        Ok((rd, built))
    })
}

/// A batch of events for [`build_ahead`]'s builder, with the payloads left to render.
type BuildBatch = std::result::Result<(Vec<Event>, Option<Deferred>), lockcast_parsers::Error>;

/// Send a batch and its deferred payloads to the builder; `false` when it stopped. When the
/// builder is behind (a batch sent before still waits for it: every table of `parse --table
/// all` is built there), this thread renders the payloads itself, so that whichever thread has
/// time renders them. `queued`: the batches sent and not yet taken.
fn hand_on(
    tx: &std::sync::mpsc::SyncSender<BuildBatch>,
    queued: &std::sync::atomic::AtomicUsize,
    mut batch: Vec<Event>,
    mut deferred: Option<Deferred>,
    unparsed: &mut u64,
) -> bool {
    use std::sync::atomic::Ordering;
    if queued.load(Ordering::Relaxed) > 0 {
        if let Some(d) = deferred.take() {
            *unparsed += d.render_into(&mut batch);
        }
    }
    queued.fetch_add(1, Ordering::Relaxed);
    tx.send(Ok((batch, deferred))).is_ok()
}

/// The partition value of each input: its file name without compression and text extensions;
/// when several inputs share it (`r1/script.txt`, `r2/script.txt`), the name of the directory
/// holding each file (`r1`, `r2`), then the two joined (`r1-script`). Characters a hive path
/// cannot hold (`/ = \` and blanks) become `_`.
pub fn capture_names(paths: &[&str]) -> Result<Vec<String>> {
    use std::path::Path;
    let stem = |p: &str| -> String {
        let name = Path::new(p)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "stdin".into());
        let mut n = name.as_str();
        for ext in [".gz", ".zst", ".zstd", ".txt", ".log", ".out"] {
            n = n.strip_suffix(ext).unwrap_or(n);
        }
        if p == "-" {
            "stdin".into()
        } else {
            n.to_string()
        }
    };
    let parent = |p: &str| -> String {
        Path::new(p)
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let unique = |v: &[String]| {
        let mut s = v.to_vec();
        s.sort();
        s.dedup();
        s.len() == v.len()
    };
    let clean = |s: String| -> String {
        s.chars()
            .map(|c| {
                if matches!(c, '/' | '=' | '\\') || c.is_whitespace() {
                    '_'
                } else {
                    c
                }
            })
            .collect()
    };
    let both = |p: &str| format!("{}-{}", parent(p), stem(p));
    let tries: [&dyn Fn(&str) -> String; 3] = [&stem, &parent, &both];
    for f in &tries {
        let v: Vec<String> = paths.iter().map(|p| clean(f(p))).collect();
        if unique(&v) && v.iter().all(|s| !s.is_empty()) {
            return Ok(v);
        }
    }
    Err(Error::Usage(
        "--partition-by capture: two inputs have the same name and directory; rename one".into(),
    ))
}
