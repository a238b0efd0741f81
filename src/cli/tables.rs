//! `lockcast parse --table ...`: any table of any input, streamed to files, or counted, and
//! `--partition-by capture`: one hive partition per input.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use polars::prelude::DataFrame;

use lockcast::frames::callgraph::Callgraph;
use lockcast::frames::events::EventTable;
use lockcast::ingest;
use lockcast::input::{self, InputSpec};
use lockcast::output::stream::TableWriter;
use lockcast::output::write::FileFormat;
use lockcast::parsers::detect::{self, Format};
use lockcast::parsers::perf_report;
use lockcast::Error;

use super::args::{FormatArg, ParseArgs, PartitionArg};
use super::commands::{file_format, frame_of, load, report_skipped};

/// A table `--table` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Want {
    LockStats,
    Contention,
    Event(EventTable),
    Callgraph,
}

impl Want {
    fn name(self) -> &'static str {
        match self {
            Want::LockStats => lockcast::frames::schema::lock_stats::TABLE,
            Want::Contention => lockcast::frames::schema::contention::TABLE,
            Want::Event(t) => t.name(),
            Want::Callgraph => lockcast::frames::schema::callgraph::TABLE,
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "lock_stats" => Some(Want::LockStats),
            "contention" => Some(Want::Contention),
            "callgraph" => Some(Want::Callgraph),
            _ => EventTable::from_name(s).map(Want::Event),
        }
    }

    fn all_names() -> Vec<&'static str> {
        let mut v = vec!["lock_stats", "contention"];
        v.extend(EventTable::ALL.iter().map(|t| t.name()));
        v.push("callgraph");
        v
    }

    /// The tables an input of `format` has.
    fn of_format(format: Format) -> Vec<Want> {
        match format {
            Format::PerfLock => vec![Want::LockStats],
            Format::PerfReport => vec![Want::Callgraph],
            Format::Ftrace | Format::PerfScript => {
                let mut v = vec![Want::LockStats, Want::Contention];
                v.extend(
                    EventTable::ALL
                        .iter()
                        // ftrace has no samples
                        .filter(|t| format == Format::PerfScript || **t != EventTable::Samples)
                        .map(|&t| Want::Event(t)),
                );
                v
            }
        }
    }
}

/// Where tables go.
enum Target {
    /// Count rows only.
    Count,
    /// One file: `-o x.parquet` (exactly one table).
    File(PathBuf, FileFormat),
    /// `-o DIR`: `DIR/<table>.<ext>`.
    Dir(PathBuf, FileFormat),
    /// `-o DIR --partition-by capture`: `DIR[/<table>]/capture=<name>/part-0.parquet`.
    Partitioned(PathBuf),
}

pub fn parse_tables(a: ParseArgs) -> Result<()> {
    let all = a.table.iter().any(|t| t == "all");
    let mut requested: Vec<Want> = Vec::new();
    for t in a.table.iter().filter(|t| *t != "all") {
        let w = Want::parse(t).ok_or_else(|| {
            Error::Usage(format!(
                "unknown table {t:?}: one of all, {}",
                Want::all_names().join(", ")
            ))
        })?;
        if !requested.contains(&w) {
            requested.push(w);
        }
    }
    if requested.is_empty() && !all {
        requested.push(Want::LockStats);
    }
    let threads = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);

    // Formats first: `all` means every table the inputs have, and the target needs the list.
    let mut inputs = Vec::new();
    for s in &a.inputs {
        let spec = InputSpec::parse(s);
        let format = input_format(&spec.path, a.input.format)?;
        inputs.push((spec, format));
    }
    let mut wanted = requested.clone();
    if all {
        for (_, f) in &inputs {
            for w in Want::of_format(*f) {
                if !wanted.contains(&w) {
                    wanted.push(w);
                }
            }
        }
    }
    wanted.sort();
    for (spec, f) in &inputs {
        let has = Want::of_format(*f);
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

    let target = target(&a, &wanted)?;
    let names = capture_names(
        &inputs
            .iter()
            .map(|(s, _)| s.path.as_str())
            .collect::<Vec<_>>(),
    )?;
    let mut writers: BTreeMap<Want, TableWriter> = BTreeMap::new();
    let mut rows: BTreeMap<Want, u64> = BTreeMap::new();
    let mut out = io::stdout().lock();
    for ((spec, format), capture) in inputs.iter().zip(&names) {
        let has = Want::of_format(*format);
        let here: Vec<Want> = wanted.iter().copied().filter(|w| has.contains(w)).collect();
        // partitions: fresh writers per input
        if let Target::Partitioned(dir) = &target {
            for w in &here {
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
        } else {
            for w in &here {
                if let Some(path) = table_path(&target, *w) {
                    writers
                        .entry(*w)
                        .or_insert_with(|| TableWriter::new(&path.0, path.1));
                }
            }
        }
        let mut emit = |w: Want, df: DataFrame| -> Result<(), Error> {
            *rows.entry(w).or_default() += df.height() as u64;
            match writers.get_mut(&w) {
                Some(tw) => tw.write(df),
                None => Ok(()),
            }
        };
        let summary = read_input(spec, *format, &here, &a, threads, &mut emit)?;
        writeln!(out, "{}: {}{}", spec.display(), format.as_str(), summary)?;
        if let Target::Partitioned(_) = &target {
            finish_all(&mut writers)?;
        }
    }
    finish_all(&mut writers)?;
    for w in &wanted {
        let n = rows.get(w).copied().unwrap_or(0);
        writeln!(out, "{}: {n} rows", w.name())?;
    }
    match &target {
        Target::Count => {}
        Target::File(p, _) => eprintln!("lockcast: wrote {}", p.display()),
        Target::Dir(p, _) | Target::Partitioned(p) => {
            eprintln!(
                "lockcast: wrote {} table(s) under {}",
                wanted.len(),
                p.display()
            )
        }
    }
    Ok(())
}

fn finish_all(writers: &mut BTreeMap<Want, TableWriter>) -> Result<(), Error> {
    for (_, w) in std::mem::take(writers) {
        w.finish()?;
    }
    Ok(())
}

fn input_format(path: &str, f: FormatArg) -> Result<Format, Error> {
    Ok(match f {
        FormatArg::PerfLock => Format::PerfLock,
        FormatArg::Ftrace => Format::Ftrace,
        FormatArg::PerfScript => Format::PerfScript,
        FormatArg::PerfReport => Format::PerfReport,
        FormatArg::Auto => {
            let mut r = input::open(path)?;
            detect::detect(&mut r)
                .map_err(|e| Error::io(path, e))?
                .unwrap_or(Format::PerfLock)
        }
    })
}

fn target(a: &ParseArgs, wanted: &[Want]) -> Result<Target, Error> {
    let Some(out) = &a.output else {
        if a.to.is_some() || a.partition_by.is_some() {
            return Err(Error::Usage(
                "--to and --partition-by need -o OUT (a file or a directory)".into(),
            ));
        }
        return Ok(Target::Count);
    };
    let by_ext = FileFormat::from_path(out);
    if let Some(PartitionArg::Capture) = a.partition_by {
        let to = a.to.map(file_format);
        if by_ext.is_some() || to.is_some_and(|f| f != FileFormat::Parquet) {
            return Err(Error::Usage(
                "--partition-by writes Parquet under a directory: give -o DIR (and --to parquet or nothing)"
                    .into(),
            ));
        }
        return Ok(Target::Partitioned(out.clone()));
    }
    let format = match (a.to.map(file_format), by_ext) {
        (Some(t), Some(e)) if t != e => {
            return Err(Error::Usage(format!(
                "--to {} does not match the extension of {}",
                t.ext(),
                out.display()
            )))
        }
        (Some(t), _) => t,
        (None, Some(e)) => e,
        (None, None) => FileFormat::Parquet,
    };
    if by_ext.is_some() {
        if wanted.len() != 1 {
            return Err(Error::Usage(format!(
                "{} tables ({}) do not fit in one file: give -o DIR",
                wanted.len(),
                wanted
                    .iter()
                    .map(|w| w.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        return Ok(Target::File(out.clone(), format));
    }
    Ok(Target::Dir(out.clone(), format))
}

fn table_path(t: &Target, w: Want) -> Option<(PathBuf, FileFormat)> {
    match t {
        Target::Count | Target::Partitioned(_) => None,
        Target::File(p, f) => Some((p.clone(), *f)),
        Target::Dir(d, f) => Some((d.join(format!("{}.{}", w.name(), f.ext())), *f)),
    }
}

/// The partition value of each input: its file name without compression and text extensions;
/// when several inputs share it (`r1/script.txt`, `r2/script.txt`), the name of the directory
/// holding each file (`r1`, `r2`), then the two joined (`r1-script`). Characters a hive path
/// cannot hold (`/ = \` and blanks) become `_`.
fn capture_names(paths: &[&str]) -> Result<Vec<String>, Error> {
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

/// Read one input and hand its tables to `emit`; returns the text after the format name in
/// the per-input line.
fn read_input(
    spec: &InputSpec,
    format: Format,
    here: &[Want],
    a: &ParseArgs,
    threads: usize,
    emit: &mut dyn FnMut(Want, DataFrame) -> Result<(), Error>,
) -> Result<String, Error> {
    let mut text = String::new();
    let mut in_opts = a.input.clone();
    in_opts.format = match format {
        Format::PerfLock => FormatArg::PerfLock,
        Format::Ftrace => FormatArg::Ftrace,
        Format::PerfScript => FormatArg::PerfScript,
        Format::PerfReport => FormatArg::PerfReport,
    };
    // lock_stats and contention come from the whole-input readers (pairing is sequential).
    if here.contains(&Want::LockStats) || here.contains(&Want::Contention) {
        let loaded = load(&spec.display(), &in_opts)?;
        if here.contains(&Want::LockStats) {
            emit(Want::LockStats, frame_of(std::slice::from_ref(&loaded))?)?;
        }
        if let Some(t) = &loaded.trace {
            let c = t.counts;
            text.push_str(&format!(
                ", contention: {} interval(s), {} nested begin(s), {} orphan end(s), {} unpaired begin(s), {} unusable",
                c.intervals, c.nested_begins, c.orphan_ends, c.unpaired_begins, c.unusable
            ));
            if here.contains(&Want::Contention) {
                emit(Want::Contention, t.contention.clone())?;
            }
        }
    }
    let tables: Vec<EventTable> = here
        .iter()
        .filter_map(|w| match w {
            Want::Event(t) => Some(*t),
            _ => None,
        })
        .collect();
    if !tables.is_empty() {
        let (r, pb) = input::open_with_progress(&spec.path)?;
        let opts = ingest::Options {
            source: spec.path.clone(),
            format,
            tables,
            lenient: a.input.lenient,
            threads,
            piece_bytes: a.piece_bytes,
        };
        let mut sink = |frames: Vec<(EventTable, DataFrame)>| -> Result<(), Error> {
            for (t, df) in frames {
                emit(Want::Event(t), df)?;
            }
            Ok(())
        };
        let s = ingest::run(r, &opts, pb.as_ref(), &mut sink)?;
        if let Some(pb) = pb {
            pb.finish_and_clear();
        }
        report_skipped(&spec.path, &s.diagnostics);
        text = format!(", {} event(s){text}", s.counts.events);
        if s.counts.bad_payloads > 0 {
            text.push_str(&format!(
                ", {} unreadable payload(s) skipped (--lenient)",
                s.counts.bad_payloads
            ));
            if let Some(d) = &s.first_bad_payload {
                eprintln!("lockcast: {}:{d}", spec.path);
            }
        }
    }
    if here.contains(&Want::Callgraph) {
        let r = input::open(&spec.path)?;
        let mut o = perf_report::Options::default();
        o.lenient = a.input.lenient;
        let mut rd = perf_report::Reader::new(r, &o);
        let mut cg = Callgraph::new(&spec.path);
        while let Some(e) = rd.next_entry().map_err(|e| Error::parse(&spec.path, e))? {
            cg.push(&e);
        }
        report_skipped(&spec.path, rd.diagnostics());
        text.push_str(&format!(", {} entries", cg.entries));
        emit(Want::Callgraph, cg.finish()?)?;
    }
    Ok(text)
}
