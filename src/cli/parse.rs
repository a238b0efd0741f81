//! `lockcast parse`: what the inputs hold, or their tables written to files or stdout.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use anyhow::Result;
use polars::prelude::DataFrame;

use lockcast::capture::load;
use lockcast::capture::stream::Found;
use lockcast::capture::tables::{self, InputSummary, ReadOptions};
use lockcast::capture::{self, OpenOptions};
use lockcast::frames::table::Table;
use lockcast::input::InputSpec;
use lockcast::output::row_groups;
use lockcast::output::stream::TableWriter;
use lockcast::output::target::{self, Dest, Target};
use lockcast::output::write::FileFormat;
use lockcast::parsers::detect::Format;
use lockcast::Error;

use super::args::ParseArgs;
use super::warn;

/// Run `lockcast parse`.
pub fn run(a: ParseArgs) -> Result<()> {
    let open = a.input.open();
    if let Some(before) = &a.since {
        return run_since(&a, before, &open);
    }
    if a.table.is_empty()
        && a.partition_by.is_none()
        && a.output.is_none()
        && !any_callgraph(&a.inputs, &open)?
    {
        if a.to.is_some() {
            return Err(Error::Usage(
                "--to needs -o OUT (a file, a directory, or - for standard output)".into(),
            )
            .into());
        }
        // counted as read, never collected: a table of millions of rows prints in little memory
        let found = a
            .inputs
            .iter()
            .map(|s| capture::stream::found(s, &open))
            .collect::<Result<Vec<_>, _>>()?;
        for f in &found {
            warn::skipped(&f.spec.path, &f.diagnostics);
        }
        let rows = found.iter().map(|f| f.lock_stats_rows).sum();
        return print_found(&found, rows);
    }
    write_tables(&a, &open)
}

/// `parse AFTER --since BEFORE`: the interval's `lock_stats`, summarized or written to `-o`.
fn run_since(a: &ParseArgs, before: &str, open: &OpenOptions) -> Result<()> {
    let [after] = a.inputs.as_slice() else {
        return Err(Error::Usage(format!(
            "--since takes one later snapshot, got {} inputs",
            a.inputs.len()
        ))
        .into());
    };
    if a.partition_by.is_some() || a.table.iter().any(|t| t != Table::LockStats.name()) {
        return Err(Error::Usage(
            "--since gives the lock_stats table only (no --table other than lock_stats, no --partition-by)"
                .into(),
        )
        .into());
    }
    let s = capture::since::load_since(after, before, open)?;
    warn::skipped(&s.loaded.spec.path, &s.loaded.diagnostics);
    warn::skipped(&s.before, &s.before_diagnostics);
    let loaded = vec![s.loaded];
    let df = load::frame_of(&loaded)?;
    if a.output.is_none() {
        if a.to.is_some() {
            return Err(Error::Usage(
                "--to needs -o OUT (a file, a directory, or - for standard output)".into(),
            )
            .into());
        }
        let found = [Found::of_loaded(&loaded[0], df.height() as u64)];
        return print_found(&found, df.height() as u64);
    }
    let name = Table::LockStats.name();
    let target = target::resolve(
        a.output.as_deref(),
        a.to.map(|t| t.file_format()),
        false,
        &[name],
    )?;
    if let Some((dest, f)) = target.dest(name) {
        lockcast::output::write::write_frame_to(&df, &dest, f)?;
        eprintln!("lockcast: wrote {} rows to {}", df.height(), dest.display());
    }
    Ok(())
}

/// Is any input a call graph (`perf report --stdio`)? Its table is `callgraph`, not the
/// `lock_stats` summary the plain `parse` prints, so it goes the table-writing way. Standard
/// input is read once: it is not looked at here.
fn any_callgraph(inputs: &[String], open: &OpenOptions) -> Result<bool, Error> {
    for s in inputs {
        let spec = InputSpec::parse(s);
        if spec.path != "-" && Table::natural(capture::format_of(&spec, open)?) == Table::Callgraph
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The tables asked for: `--table` names (or `all`: every table the inputs have); without
/// `--table`, each input's natural table ([`Table::natural`]: `lock_stats`, or `callgraph` of
/// perf report text), and for a directory also each trace's `contention`. Only the named
/// tables are required of every input.
fn wanted(a: &ParseArgs, formats: &[Format]) -> Result<(Vec<Table>, Vec<Table>), Error> {
    let all = a.table.iter().any(|t| t == "all");
    let mut requested: Vec<Table> = Vec::new();
    for t in a.table.iter().filter(|t| *t != "all") {
        let w = Table::from_name(t).ok_or_else(|| {
            Error::Usage(format!(
                "unknown table {t:?}: one of all, {}",
                Table::all_names().join(", ")
            ))
        })?;
        if !requested.contains(&w) {
            requested.push(w);
        }
    }
    let mut wanted = requested.clone();
    if requested.is_empty() && !all {
        for f in formats {
            let n = Table::natural(*f);
            if !wanted.contains(&n) {
                wanted.push(n);
            }
        }
        let to_dir = a
            .output
            .as_deref()
            .is_some_and(|o| o.as_os_str() != "-" && FileFormat::from_path(o).is_none());
        if to_dir
            && a.partition_by.is_none()
            && formats
                .iter()
                .any(|f| Table::of_format(*f).contains(&Table::Contention))
        {
            wanted.push(Table::Contention);
        }
    }
    if all {
        for f in formats {
            for w in Table::of_format(*f) {
                if !wanted.contains(&w) {
                    wanted.push(w);
                }
            }
        }
    }
    wanted.sort();
    Ok((requested, wanted))
}

fn write_tables(a: &ParseArgs, open: &OpenOptions) -> Result<()> {
    let threads = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // Formats first: `all` means every table the inputs have, and the target needs the list.
    let mut inputs = Vec::new();
    for s in &a.inputs {
        let spec = InputSpec::parse(s);
        let format = capture::format_of(&spec, open)?;
        inputs.push((spec, format));
    }
    let formats: Vec<Format> = inputs.iter().map(|(_, f)| *f).collect();
    let (requested, wanted) = wanted(a, &formats)?;
    for (spec, f) in &inputs {
        let has = Table::of_format(*f);
        if let Some(w) = requested.iter().find(|w| !has.contains(w)) {
            return Err(Error::Input(format!(
                "{}: a {} input has no {} table (it has: {})",
                spec.path,
                f.as_str(),
                w.name(),
                has.iter().map(|w| w.name()).collect::<Vec<_>>().join(", ")
            ))
            .into());
        }
    }
    let names: Vec<&str> = wanted.iter().map(|w| w.name()).collect();
    let target = target::resolve(
        a.output.as_deref(),
        a.to.map(|t| t.file_format()),
        a.partition_by.is_some(),
        &names,
    )?;
    let partitions = tables::capture_names(
        &inputs
            .iter()
            .map(|(s, _)| s.path.as_str())
            .collect::<Vec<_>>(),
    )?;
    let ropts = ReadOptions {
        open: open.clone(),
        threads,
        piece_bytes: a.piece_bytes,
        chunk_rows: a.chunk_rows,
    };
    // what parse says about each input goes to stderr when stdout carries the table
    let to_stdout = matches!(target, Target::One(Dest::Stdout, _));
    let mut info: Box<dyn Write> = if to_stdout {
        Box::new(io::stderr().lock())
    } else {
        Box::new(io::stdout().lock())
    };
    let mut writers: BTreeMap<Table, TableWriter> = BTreeMap::new();
    let mut rows: BTreeMap<Table, u64> = BTreeMap::new();
    for ((spec, format), capture) in inputs.iter().zip(&partitions) {
        let has = Table::of_format(*format);
        let here: Vec<Table> = wanted.iter().copied().filter(|w| has.contains(w)).collect();
        for w in &here {
            match &target {
                // partitions: fresh writers per input
                Target::Partitioned(dir) => {
                    let base = if wanted.len() == 1 {
                        dir.clone()
                    } else {
                        dir.join(w.name())
                    };
                    let p = base
                        .join(format!("capture={capture}"))
                        .join("part-0.parquet");
                    writers.insert(*w, TableWriter::new(&p, FileFormat::Parquet));
                }
                t => {
                    if let Some((dest, f)) = t.dest(w.name()) {
                        writers
                            .entry(*w)
                            .or_insert_with(|| TableWriter::to(dest, f));
                    }
                }
            }
        }
        // Parquet files get their row groups encoded where the frames are built (the parser
        // threads of a text trace), so the writer here only appends pages
        let encoded: BTreeSet<Table> = writers
            .iter()
            .filter(|(_, tw)| tw.takes_encoded())
            .map(|(t, _)| *t)
            .collect();
        let prepare = |w: Table, df: DataFrame| -> lockcast::Result<Part> {
            if encoded.contains(&w) {
                row_groups::encode(&df).map(Part::Encoded)
            } else {
                Ok(Part::Frame(df))
            }
        };
        let mut emit = |w: Table, part: Part| -> Result<(), Error> {
            let (n, tw) = (part.rows(), writers.get_mut(&w));
            *rows.entry(w).or_default() += n as u64;
            match (tw, part) {
                (Some(tw), Part::Frame(df)) => tw.write(df),
                (Some(tw), Part::Encoded(enc)) => tw.write_encoded(enc),
                (None, _) => Ok(()),
            }
        };
        let summary = tables::read_prepared(spec, *format, &here, &ropts, &prepare, &mut emit)?;
        for d in &summary.skipped {
            warn::skipped(&spec.path, d);
        }
        if let Some(d) = &summary.first_bad_payload {
            eprintln!("lockcast: {}:{d}", spec.path);
        }
        writeln!(
            info,
            "{}: {}{}",
            spec.display(),
            format.as_str(),
            summary_text(&summary)
        )?;
        if let Target::Partitioned(_) = &target {
            finish_all(&mut writers)?;
        }
    }
    let written = finish_all(&mut writers)?;
    for w in &wanted {
        let n = rows.get(w).copied().unwrap_or(0);
        writeln!(info, "{}: {n} rows", w.name())?;
    }
    drop(info);
    match &target {
        Target::None => {}
        Target::One(..) => {
            for (dest, n) in written {
                eprintln!("lockcast: wrote {n} rows to {}", dest.display());
            }
        }
        Target::Dir(p, _) | Target::Partitioned(p) => eprintln!(
            "lockcast: wrote {} table(s) under {}",
            wanted.len(),
            p.display()
        ),
    }
    Ok(())
}

/// The text after the format name in parse's line per input.
fn summary_text(s: &InputSummary) -> String {
    let mut text = String::new();
    if let Some(n) = s.events {
        text.push_str(&format!(", {n} event(s)"));
    }
    if let Some(c) = s.pairing {
        text.push_str(&format!(
            ", contention: {} interval(s), {} nested begin(s), {} orphan end(s), {} unpaired begin(s), {} unusable",
            c.intervals, c.nested_begins, c.orphan_ends, c.unpaired_begins, c.unusable
        ));
    }
    if s.bad_payloads > 0 {
        text.push_str(&format!(
            ", {} unreadable payload(s) skipped (--lenient)",
            s.bad_payloads
        ));
    }
    if let Some(n) = s.callgraph_entries {
        text.push_str(&format!(", {n} entries"));
    }
    text
}

/// A frame on its way to its writer: as built, or already encoded for a Parquet file.
enum Part {
    Frame(DataFrame),
    Encoded(row_groups::Encoded),
}

impl Part {
    fn rows(&self) -> usize {
        match self {
            Part::Frame(df) => df.height(),
            Part::Encoded(enc) => enc.rows,
        }
    }
}

fn finish_all(writers: &mut BTreeMap<Table, TableWriter>) -> Result<Vec<(Dest, u64)>, Error> {
    let mut written = Vec::new();
    for (_, w) in std::mem::take(writers) {
        let dest = w.dest().clone();
        let n = w.finish()?;
        written.push((dest, n));
    }
    Ok(written)
}

fn print_found(found: &[Found], lock_stats_rows: u64) -> Result<()> {
    let mut out = io::stdout().lock();
    for l in found {
        if let Some((events, c)) = &l.trace {
            writeln!(
                out,
                "{}: {}, {} event(s); contention: {} interval(s), {} nested begin(s), {} orphan end(s), {} unpaired begin(s), {} unusable, {} backwards end(s)",
                l.spec.display(),
                l.format.as_str(),
                events,
                c.intervals,
                c.nested_begins,
                c.orphan_ends,
                c.unpaired_begins,
                c.unusable,
                c.backwards
            )?;
            continue;
        }
        writeln!(
            out,
            "{}: {}, {} table(s), {} row(s), {} line(s) read",
            l.spec.display(),
            match l.format {
                lockcast_parsers::detect::Format::PerfLock => "perf lock",
                f => f.as_str(),
            },
            l.tables.len(),
            l.tables.iter().map(|t| t.rows).sum::<u64>(),
            l.lines
        )?;
        for t in &l.tables {
            if l.spec.block.is_some_and(|b| b != t.header.index) {
                continue;
            }
            let h = &t.header;
            let cols: Vec<&str> = h.columns.iter().map(|c| c.header()).collect();
            writeln!(
                out,
                "  #{} line {}: {} table, {} rows, columns [{}]{}{}",
                h.index,
                h.line,
                h.mode.as_str(),
                t.rows,
                cols.join(", "),
                h.label
                    .as_ref()
                    .map(|l| format!(", label \"{l}\""))
                    .unwrap_or_default(),
                if t.footers == 0 {
                    String::new()
                } else {
                    format!(", {} debug footer(s)", t.footers)
                }
            )?;
        }
    }
    writeln!(
        out,
        "lock_stats: {lock_stats_rows} rows x {} columns",
        lockcast::frames::schema::lock_stats::COLUMNS.len()
    )?;
    Ok(())
}
