//! `lockcast demo`: the README's main job on the bundled fixtures.

use std::io::{self, Write};
use std::path::Path;

use anyhow::{Context, Result};

use lockcast::analyses::diff::{self, Diff};
use lockcast::analyses::report;
use lockcast::capture::{load, OpenOptions};
use lockcast::output::terminal::{diff_table, report_table};
use lockcast::output::write::{self, FileFormat};
use lockcast::Error;

use super::args::DemoArgs;

/// Run `lockcast demo`.
pub fn run(a: DemoArgs) -> Result<()> {
    demo_impl(&a.fixtures, &a.out)
}

/// The README's main job on the bundled fixtures.
pub fn demo_impl(fixtures: &Path, out: &Path) -> Result<()> {
    let opts = OpenOptions::default();
    let f = |p: &str| fixtures.join(p).to_string_lossy().into_owned();
    let seed = f("seeds/lru-cache-small-large-folios-rfc-v3.txt");
    let mut stdout = io::stdout().lock();
    writeln!(
        stdout,
        "== 1. The seed mail: RFC v3 microbenchmark, w/o patch vs w/ patch"
    )?;
    let seed_diff = diff_of(&format!("{seed}#1"), &format!("{seed}#2"), &opts)?;
    write!(stdout, "{}", diff_table(&seed_diff, 5))?;

    writeln!(stdout, "\n== 2. Real captures on this machine (perf lock contention, 2 threads x 16 MiB x 50 loops)")?;
    let sizes = ["4K", "16K", "64K"];
    let mut loaded = Vec::new();
    for size in sizes {
        for run in 1..=3 {
            let p = f(&format!("captures/micro-{size}-r{run}/contention.txt"));
            loaded.push(load::load(&p, &opts).with_context(|| format!("demo fixture {p}"))?);
        }
    }
    let df = load::frame_of(&loaded)?;
    let mut ropts = report::Options::default();
    ropts.top = 3;
    let summaries = report::summarize(&df, &ropts)?;
    for s in summaries.iter().step_by(3) {
        write!(stdout, "{}", report_table(s))?;
    }
    writeln!(
        stdout,
        "== 3. 16K mTHP (every folio drains at once) vs 4K pages (31-page batches)"
    )?;
    let cap_diff = diff_of(
        &f("captures/micro-16K-r1/contention.txt"),
        &f("captures/micro-4K-r1/contention.txt"),
        &opts,
    )?;
    write!(stdout, "{}", diff_table(&cap_diff, 5))?;

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

fn diff_of(base: &str, patched: &str, opts: &OpenOptions) -> Result<Diff, Error> {
    let b = load::one_table(base, opts)?;
    let p = load::one_table(patched, opts)?;
    Ok(diff::diff(&b.name, &b.rows, &p.name, &p.rows))
}
