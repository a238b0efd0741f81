//! Subcommand implementations: read inputs, call the library, print.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use polars::prelude::DataFrame;

use lockcast::analyses::diff::{self, Diff};
use lockcast::analyses::report::{self, By, SortKey, TableSummary};
use lockcast::analyses::stat_row;
use lockcast::frames::lock_stats;
use lockcast::input::{self, InputSpec};
use lockcast::output::formats::{self, Format as OutFormat};
use lockcast::output::table::{render, Align};
use lockcast::output::write::{self, FileFormat};
use lockcast::parsers::detect::{self, Format};
use lockcast::parsers::perf_lock;
use lockcast::units::{perf_time, ratio};
use lockcast::Error;

use super::args::*;

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Parse(a) => parse(a),
        Command::Report(a) => report_cmd(a),
        Command::Diff(a) => diff_cmd(a),
        Command::Demo(a) => demo(a),
        Command::Whatif(a) => super::whatif::whatif(a),
        Command::Validate(a) => super::whatif::validate(a),
        Command::Plot(a) => super::plot::plot(a),
    }
}

/// One input, parsed: perf lock tables as they are; event traces into contention intervals
/// and the `lock_stats` rows perf lock contention would print for them.
pub(super) struct Loaded {
    pub(super) spec: InputSpec,
    pub(super) parsed: perf_lock::Parsed,
    pub(super) trace: Option<Trace>,
}

pub(super) struct Trace {
    pub(super) format: Format,
    pub(super) events: u64,
    pub(super) contention: DataFrame,
    pub(super) counts: lockcast::frames::contention::PairingCounts,
}

pub(super) fn load(spec_text: &str, opts: &InputOpts) -> Result<Loaded, Error> {
    let spec = InputSpec::parse(spec_text);
    let mut r = input::open(&spec.path)?;
    let format = match opts.format {
        FormatArg::PerfLock => Format::PerfLock,
        FormatArg::Ftrace => Format::Ftrace,
        FormatArg::PerfScript => Format::PerfScript,
        FormatArg::PerfReport => Format::PerfReport,
        FormatArg::Auto => detect::detect(&mut r)
            .map_err(|e| Error::io(&spec.path, e))?
            .unwrap_or(Format::PerfLock),
    };
    match format {
        Format::PerfLock => {}
        Format::Ftrace | Format::PerfScript => return load_trace(spec, r, format, opts),
        Format::PerfReport => {
            return Err(Error::Input(format!(
                "{}: perf report --stdio output has no lock_stats table: use `lockcast parse --table callgraph`",
                spec.path
            )))
        }
    }
    let mut popts = perf_lock::Options::default();
    popts.lenient = opts.lenient;
    let parsed = perf_lock::parse_all(r, &popts).map_err(|e| Error::parse(&spec.path, e))?;
    report_skipped(&spec.path, &parsed.diagnostics);
    Ok(Loaded {
        spec,
        parsed,
        trace: None,
    })
}

fn load_trace(
    spec: InputSpec,
    r: Box<dyn std::io::BufRead + Send>,
    format: Format,
    opts: &InputOpts,
) -> Result<Loaded, Error> {
    use lockcast::frames::contention::Pairer;
    use lockcast::parsers::{ftrace, perf_script};
    let mut pairer = Pairer::default();
    pairer.set_source(&spec.path);
    let mut events = 0u64;
    let err = |e| Error::parse(&spec.path, e);
    let diagnostics = if format == Format::Ftrace {
        let mut o = ftrace::Options::default();
        o.lenient = opts.lenient;
        let mut rd = ftrace::Reader::new(r, &o);
        while let Some(e) = rd.next_event().map_err(err)? {
            events += 1;
            pairer.push(&e);
        }
        rd.diagnostics().clone()
    } else {
        let mut o = perf_script::Options::default();
        o.lenient = opts.lenient;
        let mut rd = perf_script::Reader::new(r, &o);
        while let Some(e) = rd.next_event().map_err(err)? {
            events += 1;
            pairer.push(&e);
        }
        rd.diagnostics().clone()
    };
    report_skipped(&spec.path, &diagnostics);
    let (contention, counts) = pairer.finish()?;
    Ok(Loaded {
        spec,
        parsed: perf_lock::Parsed::default(),
        trace: Some(Trace {
            format,
            events,
            contention,
            counts,
        }),
    })
}

pub(super) fn report_skipped(path: &str, d: &lockcast::parsers::Diagnostics) {
    if d.skipped == 0 {
        return;
    }
    let mut err = io::stderr().lock();
    let _ = writeln!(
        err,
        "lockcast: {path}: skipped {} malformed line(s) (--lenient)",
        d.skipped
    );
    for x in d.first.iter().take(5) {
        let _ = writeln!(err, "  {path}:{x}");
    }
}

pub(super) fn frame_of(loaded: &[Loaded]) -> Result<DataFrame, Error> {
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

fn parse(a: ParseArgs) -> Result<()> {
    if !a.table.is_empty() || a.partition_by.is_some() {
        return super::tables::parse_tables(a);
    }
    let loaded = a
        .inputs
        .iter()
        .map(|s| load(s, &a.input))
        .collect::<Result<Vec<_>, _>>()?;
    let df = frame_of(&loaded)?;
    let Some(out) = a.output else {
        if a.to.is_some() {
            return Err(Error::Usage("--to needs -o OUT (a file or a directory)".into()).into());
        }
        return print_found(&loaded, &df);
    };
    let (path, format) = output_target(&out, a.to)?;
    write::write_frame(&df, &path, format)?;
    eprintln!("lockcast: wrote {} rows to {}", df.height(), path.display());
    // A directory gets one file per table: traces also give their waits (`contention`).
    if FileFormat::from_path(&out).is_none() {
        let mut waits: Option<DataFrame> = None;
        for t in loaded.iter().filter_map(|l| l.trace.as_ref()) {
            match waits.as_mut() {
                None => waits = Some(t.contention.clone()),
                Some(w) => {
                    w.vstack_mut(&t.contention)
                        .map_err(|e| Error::polars("appending contention", e))?;
                }
            }
        }
        if let Some(w) = waits {
            let p = out.join(format!(
                "{}.{}",
                lockcast::frames::schema::contention::TABLE,
                format.ext()
            ));
            write::write_frame(&w, &p, format)?;
            eprintln!("lockcast: wrote {} rows to {}", w.height(), p.display());
        }
    }
    Ok(())
}

/// `-o x.csv` is a file; `-o dir` (no known extension) gets `dir/lock_stats.<ext>`.
pub(super) fn output_target(out: &Path, to: Option<ToArg>) -> Result<(PathBuf, FileFormat), Error> {
    let by_ext = FileFormat::from_path(out);
    let format = match (to, by_ext) {
        (Some(t), Some(e)) if file_format(t) != e => {
            return Err(Error::Usage(format!(
                "--to {} does not match the extension of {}",
                file_format(t).ext(),
                out.display()
            )))
        }
        (Some(t), _) => file_format(t),
        (None, Some(e)) => e,
        (None, None) => {
            return Err(Error::Usage(format!(
                "cannot tell the format of {}: give --to csv|parquet|json or a .csv/.parquet/.json name",
                out.display()
            )))
        }
    };
    let path = if by_ext.is_some() {
        out.to_path_buf()
    } else {
        out.join(format!(
            "{}.{}",
            lockcast::frames::schema::lock_stats::TABLE,
            format.ext()
        ))
    };
    Ok((path, format))
}

pub(super) fn file_format(t: ToArg) -> FileFormat {
    match t {
        ToArg::Csv => FileFormat::Csv,
        ToArg::Parquet => FileFormat::Parquet,
        ToArg::Json => FileFormat::Json,
    }
}

fn print_found(loaded: &[Loaded], df: &DataFrame) -> Result<()> {
    let mut out = io::stdout().lock();
    for l in loaded {
        if let Some(t) = &l.trace {
            let c = t.counts;
            writeln!(
                out,
                "{}: {}, {} event(s); contention: {} interval(s), {} nested begin(s), {} orphan end(s), {} unpaired begin(s), {} unusable, {} backwards end(s)",
                l.spec.display(),
                t.format.as_str(),
                t.events,
                c.intervals,
                c.nested_begins,
                c.orphan_ends,
                c.unpaired_begins,
                c.unusable,
                c.backwards
            )?;
            continue;
        }
        let p = &l.parsed;
        writeln!(
            out,
            "{}: perf lock, {} table(s), {} row(s), {} line(s) read",
            l.spec.display(),
            p.tables.len(),
            p.tables.iter().map(|t| t.rows.len()).sum::<usize>(),
            p.lines
        )?;
        for t in &p.tables {
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
                t.rows.len(),
                cols.join(", "),
                h.label
                    .as_ref()
                    .map(|l| format!(", label \"{l}\""))
                    .unwrap_or_default(),
                if t.footers.is_empty() {
                    String::new()
                } else {
                    format!(", {} debug footer(s)", t.footers.len())
                }
            )?;
        }
    }
    writeln!(
        out,
        "lock_stats: {} rows x {} columns",
        df.height(),
        df.width()
    )?;
    Ok(())
}

fn report_cmd(a: ReportArgs) -> Result<()> {
    let loaded = vec![load(&a.input_file, &a.input)?];
    let df = frame_of(&loaded)?;
    let mut opts = report::Options::default();
    opts.by = a.by.map(|b| match b {
        ByArg::Lock => By::Lock,
        ByArg::Caller => By::Caller,
        ByArg::Thread => By::Thread,
        ByArg::Type => By::Type,
    });
    opts.top = a.top;
    opts.sort = match a.sort {
        SortArg::Total => SortKey::TotalWait,
        SortArg::Contended => SortKey::Contended,
    };
    let summaries = report::summarize(&df, &opts)?;
    let mut out = io::stdout().lock();
    match a.out_format.resolve(a.json) {
        OutFormat::Json => {
            let v: Vec<serde_json::Value> = summaries.iter().map(summary_json).collect();
            serde_json::to_writer_pretty(&mut out, &v)?;
            writeln!(out)?;
        }
        OutFormat::Table => {
            for s in &summaries {
                write!(out, "{}", summary_text(s))?;
            }
        }
        OutFormat::Markdown => write!(out, "{}", formats::report_markdown(&summaries))?,
        OutFormat::Text => write!(out, "{}", formats::report_text(&summaries))?,
        OutFormat::Csv => write!(out, "{}", formats::report_csv(&summaries))?,
    }
    Ok(())
}

fn summary_json(s: &TableSummary) -> serde_json::Value {
    let row = |r: &report::SummaryRow| {
        let mut m = serde_json::Map::new();
        m.insert(s.by.field().into(), r.key.clone().into());
        if s.by != By::Type {
            m.insert("type".into(), r.lock_type.clone().into());
        }
        m.insert("rows".into(), r.rows.into());
        m.insert("acquired".into(), r.acquired.into());
        m.insert("contended".into(), r.contended.into());
        m.insert("total_wait_ns".into(), r.total_wait_ns.into());
        m.insert("avg_wait_ns".into(), r.avg_wait_ns.into());
        m.insert("max_wait_ns".into(), r.max_wait_ns.into());
        m.insert("min_wait_ns".into(), r.min_wait_ns.into());
        serde_json::Value::Object(m)
    };
    serde_json::json!({
        "source": s.source,
        "block": s.block,
        "label": s.label,
        "by": s.by,
        "input_rows": s.input_rows,
        "groups": s.groups,
        "total": row(&s.total),
        "top": s.top.iter().map(row).collect::<Vec<_>>(),
    })
}

fn opt_time(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), perf_time)
}

fn opt_num(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn summary_text(s: &TableSummary) -> String {
    let mut text = lockcast::output::formats::table_title(s) + "\n";
    let has_acq = s.total.acquired.is_some();
    let mut headers = vec![(s.by.field(), Align::Left)];
    if has_acq {
        headers.push(("acquired", Align::Right));
    }
    headers.extend([
        ("contended", Align::Right),
        ("total wait", Align::Right),
        ("avg wait", Align::Right),
        ("max wait", Align::Right),
        ("min wait", Align::Right),
        ("rows", Align::Right),
    ]);
    if s.by != By::Type {
        headers.push(("type", Align::Left));
    }
    let mut rows = Vec::new();
    for r in s.top.iter().chain(std::iter::once(&s.total)) {
        let mut cells = vec![r.key.clone()];
        if has_acq {
            cells.push(opt_num(r.acquired));
        }
        cells.extend([
            opt_num(r.contended),
            opt_time(r.total_wait_ns),
            opt_time(r.avg_wait_ns),
            opt_time(r.max_wait_ns),
            opt_time(r.min_wait_ns),
            r.rows.to_string(),
        ]);
        if s.by != By::Type {
            cells.push(r.lock_type.clone().unwrap_or_default());
        }
        rows.push(cells);
    }
    text.push_str(&render(&headers, &rows));
    if s.groups > s.top.len() as u64 {
        text.push_str(&format!(
            "({} more group(s) not shown; --top N)\n",
            s.groups - s.top.len() as u64
        ));
    }
    text.push('\n');
    text
}

pub(super) fn load_one_table(
    spec: &str,
    opts: &InputOpts,
) -> Result<(String, Vec<stat_row::StatRow>), Error> {
    let l = load(spec, opts)?;
    if l.trace.is_some() {
        let df = frame_of(std::slice::from_ref(&l))?;
        return Ok((l.spec.path.clone(), stat_row::rows(&df)?));
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
    Ok((format!("{}#{block}", l.spec.path), stat_row::rows(&df)?))
}

fn diff_cmd(a: DiffArgs) -> Result<()> {
    let (bn, b) = load_one_table(&a.base, &a.input)?;
    let (pn, p) = load_one_table(&a.patched, &a.input)?;
    let d = diff::diff(&bn, &b, &pn, &p);
    let mut out = io::stdout().lock();
    match a.out_format.resolve(a.json) {
        OutFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &d)?;
            writeln!(out)?;
        }
        OutFormat::Table => write!(out, "{}", diff_text(&d, a.top))?,
        OutFormat::Markdown => write!(out, "{}", formats::diff_markdown(&d, a.top))?,
        OutFormat::Text => write!(out, "{}", formats::diff_text(&d, a.top))?,
        OutFormat::Csv => write!(out, "{}", formats::diff_csv(&d))?,
    }
    Ok(())
}

fn within(r: &diff::DiffRow) -> &'static str {
    if r.total_wait_within_rounding {
        "~"
    } else {
        ""
    }
}

/// The A/B table as posted on the list.
pub fn diff_text(d: &Diff, top: usize) -> String {
    let label = |l: &Option<String>| l.as_ref().map(|l| format!("  ({l})")).unwrap_or_default();
    let mut s = format!(
        "base:    {}{}\npatched: {}{}\n",
        d.base,
        label(&d.base_label),
        d.patched,
        label(&d.patched_label)
    );
    let headers = [
        ("lock", Align::Left),
        ("contended base", Align::Right),
        ("patched", Align::Right),
        ("ratio", Align::Right),
        ("total wait base", Align::Right),
        ("patched", Align::Right),
        ("ratio", Align::Right),
        ("match", Align::Left),
    ];
    let cells = |r: &diff::DiffRow| {
        vec![
            r.key.clone(),
            opt_num(r.base_contended),
            opt_num(r.patched_contended),
            ratio(r.ratio_contended),
            opt_time(r.base_total_wait_ns),
            opt_time(r.patched_total_wait_ns),
            format!("{}{}", within(r), ratio(r.ratio_total_wait)),
            match r.matched_by {
                diff::MatchedBy::Key => d.matched_on.to_string(),
                diff::MatchedBy::KeyRank => format!("{} + rank {}", d.matched_on, r.rank),
                diff::MatchedBy::UnnamedRank => format!("unnamed, rank {}", r.rank),
            },
        ]
    };
    let mut rows: Vec<Vec<String>> = d.rows.iter().take(top).map(cells).collect();
    let mut total = cells(&d.total);
    total[7] = "all rows of each side".into();
    rows.push(total);
    s.push_str(&render(&headers, &rows));
    if d.rows.len() > top {
        s.push_str(&format!(
            "({} more matched row(s); --top N or --json)\n",
            d.rows.len() - top
        ));
    }
    let unmatched = |rs: &[stat_row::StatRow], side: &str, s: &mut String| {
        if rs.is_empty() {
            return;
        }
        s.push_str(&format!("only in {side} ({}):", rs.len()));
        for r in rs.iter().take(10) {
            let k = r
                .name
                .clone()
                .or_else(|| r.caller.clone())
                .or_else(|| r.comm.clone())
                .or_else(|| r.symbol.clone())
                .unwrap_or_else(|| "(unnamed)".into());
            s.push_str(&format!(
                " {k} [line {}, {} contended]",
                r.line,
                opt_num(r.contended)
            ));
        }
        if rs.len() > 10 {
            s.push_str(" ...");
        }
        s.push('\n');
    };
    unmatched(&d.unmatched_base, "base", &mut s);
    unmatched(&d.unmatched_patched, "patched", &mut s);
    s.push_str(
        "ratio = base / patched; ~ = difference within the rounding of perf's printed values\n",
    );
    s
}

fn demo(a: DemoArgs) -> Result<()> {
    demo_impl(&a.fixtures, &a.out)
}

/// The README's main job on the bundled fixtures.
pub fn demo_impl(fixtures: &Path, out: &Path) -> Result<()> {
    let opts = InputOpts {
        format: FormatArg::Auto,
        lenient: false,
    };
    let f = |p: &str| fixtures.join(p).to_string_lossy().into_owned();
    let seed = f("seeds/lru-cache-small-large-folios-rfc-v3.txt");
    let mut stdout = io::stdout().lock();
    writeln!(
        stdout,
        "== 1. The seed mail: RFC v3 microbenchmark, w/o patch vs w/ patch"
    )?;
    let (bn, b) = load_one_table(&format!("{seed}#1"), &opts)?;
    let (pn, p) = load_one_table(&format!("{seed}#2"), &opts)?;
    let seed_diff = diff::diff(&bn, &b, &pn, &p);
    write!(stdout, "{}", diff_text(&seed_diff, 5))?;

    writeln!(stdout, "\n== 2. Real captures on this machine (perf lock contention, 2 threads x 16 MiB x 50 loops)")?;
    let sizes = ["4K", "16K", "64K"];
    let mut loaded = Vec::new();
    for size in sizes {
        for run in 1..=3 {
            let p = f(&format!("captures/micro-{size}-r{run}/contention.txt"));
            loaded.push(load(&p, &opts).with_context(|| format!("demo fixture {p}"))?);
        }
    }
    let df = frame_of(&loaded)?;
    let mut ropts = report::Options::default();
    ropts.top = 3;
    let summaries = report::summarize(&df, &ropts)?;
    for s in summaries.iter().step_by(3) {
        write!(stdout, "{}", summary_text(s))?;
    }
    writeln!(
        stdout,
        "== 3. 16K mTHP (every folio drains at once) vs 4K pages (31-page batches)"
    )?;
    let (bn, b) = load_one_table(&f("captures/micro-16K-r1/contention.txt"), &opts)?;
    let (pn, p) = load_one_table(&f("captures/micro-4K-r1/contention.txt"), &opts)?;
    let cap_diff = diff::diff(&bn, &b, &pn, &p);
    write!(stdout, "{}", diff_text(&cap_diff, 5))?;

    std::fs::create_dir_all(out).map_err(|e| Error::io(out.display(), e))?;
    for fmt in [FileFormat::Csv, FileFormat::Parquet, FileFormat::Json] {
        write::write_frame(&df, &out.join(format!("lock_stats.{}", fmt.ext())), fmt)?;
    }
    let json = |name: &str, v: &Diff| -> Result<()> {
        let p = out.join(name);
        write::atomic_write(&p, |w| {
            serde_json::to_writer_pretty(&mut *w, v).map_err(|e| Error::io(p.display(), e.into()))
        })?;
        Ok(())
    };
    json("diff-seed.json", &seed_diff)?;
    json("diff-16K-vs-4K.json", &cap_diff)?;
    let mut plots = super::plot::demo_plots(fixtures, out, &cap_diff)?;
    drop(stdout);
    plots.extend(super::whatif::demo(fixtures, out)?);
    let mut stdout = io::stdout().lock();
    writeln!(
        stdout,
        "\nwrote lock_stats.{{csv,parquet,json}}, diff-seed.json, diff-16K-vs-4K.json, whatif-*.json, {} to {}",
        plots.join(", "),
        out.display()
    )?;
    Ok(())
}
