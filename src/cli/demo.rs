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

use lockcast::output::whatif::outcome_text;
use lockcast::whatif::ask::{self, Answer, Ask};
use lockcast::whatif::params::{self, Set};
use lockcast::whatif::report::Report;
use lockcast::whatif::{self, summary};

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
    drop(stdout);
    let runs_files = runs_demo(fixtures, out)?;
    let stdout = io::stdout().lock();

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
    plots.extend(runs_files);
    let (n, _) = super::export::perfetto_file(
        &f("replay/micro-16K-r1/script-ns.txt.gz"),
        None,
        None,
        &opts,
        &out.join("perfetto-16K.json"),
    )?;
    plots.push(format!(
        "perfetto-16K.json ({} lru_lock holds, {} waits; open at ui.perfetto.dev)",
        n.holds, n.waits
    ));
    drop(stdout);
    plots.extend(whatif_demo(fixtures, out)?);
    plots.extend(super::flamegraph::demo(fixtures, out)?);
    let mut stdout = io::stdout().lock();
    writeln!(
        stdout,
        "\nwrote lock_stats.{{csv,parquet,json}}, diff-seed.json, diff-16K-vs-4K.json, whatif-*.json, {} to {}",
        plots.join(", "),
        out.display()
    )?;
    Ok(())
}

/// The 16K-vs-4K comparison over the three runs of each side: the repeated-run table on
/// stdout and in `diff-runs-16K-vs-4K.{txt,json}`, its chart in `ab-runs-16K-vs-4K.png`.
fn runs_demo(fixtures: &Path, out: &Path) -> Result<Vec<String>> {
    use lockcast::analyses::ab_runs;
    use lockcast::output::formats::Format;
    use lockcast::plots::{self, ab_runs::AbRunsChart};
    let opts = OpenOptions::default();
    let side = |size: &str| -> Result<Vec<load::OneTable>> {
        (1..=3)
            .map(|r| {
                let p = fixtures.join(format!("captures/micro-{size}-r{r}/contention.txt"));
                Ok(load::one_table(&p.to_string_lossy(), &opts)?)
            })
            .collect()
    };
    let (b, p) = (side("16K")?, side("4K")?);
    let (br, pr) = (super::report::runs_of(&b), super::report::runs_of(&p));
    let d = ab_runs::compare(&br, &pr, ab_runs::DEFAULT_REPLICATES, 1);
    let mut stdout = io::stdout().lock();
    writeln!(
        stdout,
        "\n== 3b. The same over three runs per side (median [min–max], 95% bootstrap interval)"
    )?;
    let table = lockcast::output::ab_runs::render(&d, 3, Format::Text);
    write!(stdout, "{table}")?;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out.display(), e))?;
    let txt = out.join("diff-runs-16K-vs-4K.txt");
    write::atomic_write(&txt, |w| {
        w.write_all(table.as_bytes())
            .map_err(|e| Error::io(txt.display(), e))
    })?;
    write_json(&out.join("diff-runs-16K-vs-4K.json"), &d)?;
    let mut chart = AbRunsChart::from_runs(&d, 10);
    chart.title = "16K mTHP (base) vs 4K pages, three runs each: top 10 callers".into();
    plots::save(&chart, &out.join("ab-runs-16K-vs-4K.png"), None)?;
    Ok(vec![
        "diff-runs-16K-vs-4K.{txt,json}".into(),
        "ab-runs-16K-vs-4K.png".into(),
    ])
}

fn diff_of(base: &str, patched: &str, opts: &OpenOptions) -> Result<Diff, Error> {
    let b = load::one_table(base, opts)?;
    let p = load::one_table(patched, opts)?;
    Ok(diff::diff(&b.name, &b.rows, &p.name, &p.rows))
}

/// The what-if part of `lockcast demo`: the RFC's policy on a 16K capture, a folio-size
/// prediction checked against a real 4K capture, and the closed-form model on the seed table.
fn whatif_demo(fixtures: &std::path::Path, out: &std::path::Path) -> Result<Vec<String>> {
    let mut charts = Vec::new();
    let f = |p: &str| fixtures.join(p).to_string_lossy().into_owned();
    let mut stdout = io::stdout().lock();
    let engine_opts = Ask {
        engine: whatif::Options {
            bootstrap: 50,
            seed: 1,
            post_quantile: 0.975,
            progress: true,
            ..Default::default()
        },
        lenient: false,
        kallsyms: None,
        time: None,
    };
    let base = f("replay/micro-16K-r1/script-ns.txt.gz");
    writeln!(
        stdout,
        "\n== 4. What-if: RFC v3 lru cache replayed over a real 16K capture (2 threads, perf script --ns)"
    )?;
    let o = ask::replay("lru-cache", &base, &Set::new(), &engine_opts)?;
    write!(stdout, "{}", outcome_text(&o, None))?;
    let j = Report::new(&o, None);
    write_json(&out.join("whatif-lru-cache-16K.json"), &j)?;
    charts.push(whatif_chart(&j, &out.join("whatif-lru-cache-16K.png"))?);

    writeln!(
        stdout,
        "\n== 5. Validation: predict the 4K run from the 16K capture, compare with the real 4K capture"
    )?;
    let after_path = f("replay/micro-4K-r1/script-ns.txt.gz");
    let val = ask::validate("folio-size", &base, &after_path, &Set::new(), &engine_opts)?;
    let (v, m) = (&val.outcome, &val.measured);
    write!(stdout, "{}", outcome_text(v, Some((&after_path, m))))?;
    let j = Report::new(v, Some((&after_path, m)));
    write_json(&out.join("validate-folio-size-16K-to-4K.json"), &j)?;
    charts.push(whatif_chart(
        &j,
        &out.join("validate-folio-size-16K-to-4K.png"),
    )?);

    writeln!(
        stdout,
        "\n== 6. What-if from the seed's table alone (closed-form model, 20 threads, 16K folios)"
    )?;
    let seed = f("seeds/lru-cache-small-large-folios-rfc-v3.txt");
    let set = params::pairs(&["folio_kb=16".into(), "cpus=20".into()])?;
    let Answer::ClosedForm(s) = ask::ask("lru-cache", &format!("{seed}#1"), &set, &engine_opts)?
    else {
        return Err(Error::Input(format!("{seed}#1: expected a perf lock table")).into());
    };
    write!(stdout, "{}", summary::text(&s))?;
    writeln!(stdout, "  posted: contended 8.11x, total wait 5.21x")?;
    write_json(&out.join("whatif-seed-summary.json"), &s)?;

    writeln!(
        stdout,
        "\n== 7. What-if: the fbatch-drain series and its fix, from a v6.18 capture of the regression report's workload"
    )?;
    let churn = f("fbatch/churn-4K-r1/script-ns.txt.gz");
    let mut fast = engine_opts.clone();
    fast.engine.bootstrap = 0;
    writeln!(
        stdout,
        "  {:<44} {:>12} {:>10} {:>12} {:>12}",
        "kernel", "acquisitions", "contended", "total wait", "unmap share"
    )?;
    for (label, name, set) in [
        ("v6.18 (captured, replayed)", "baseline", None),
        ("dead-prefree (the report's baseline)", "dead-prefree", None),
        ("fbatch-drain (series as posted)", "fbatch-drain", None),
        (
            "fbatch-drain + lru_add_del_folio fix",
            "fbatch-drain",
            Some("dead_on_batch_takes_lock=false"),
        ),
    ] {
        let set_map = params::pairs(&set.map(str::to_string).into_iter().collect::<Vec<_>>())?;
        let o = ask::replay(name, &churn, &set_map, &fast)?;
        let zap = o
            .by_path
            .iter()
            .find(|r| r.via == whatif::trace::Via::Zap)
            .map_or(0.0, |r| r.predicted_share_pct);
        writeln!(
            stdout,
            "  {:<44} {:>12} {:>10} {:>12} {:>11.2}%",
            label,
            o.predicted.acquisitions,
            o.predicted.contended,
            o.predicted.total_wait_ns.to_string(),
            zap
        )?;
        let file = format!(
            "whatif-{}{}-churn.json",
            name,
            if set.is_some() { "-fix" } else { "" }
        );
        write_json(&out.join(file), &Report::new(&o, None))?;
    }
    writeln!(
        stdout,
        "  report (perf, bare metal): _raw_spin_lock_irqsave 0.26% -> 6.97% -> 0.37%, slowpath 0.03% -> 6.62% -> 0.77%"
    )?;
    Ok(charts)
}

fn whatif_chart(r: &Report, path: &std::path::Path) -> Result<String, Error> {
    use lockcast::plots::{self, whatif::WhatIfChart};
    plots::save(&WhatIfChart::new(r.rows.clone()), path, None)?;
    Ok(path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default())
}

fn write_json(p: &std::path::Path, v: &impl serde::Serialize) -> Result<(), Error> {
    lockcast::output::write::atomic_write(p, |w| {
        serde_json::to_writer_pretty(&mut *w, v).map_err(|e| Error::io(p.display(), e.into()))
    })
}
