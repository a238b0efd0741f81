//! `lockcast plot KIND INPUT... -o FILE.png|svg`: charts from captures and what-if results.

use std::io::Read;
use std::path::Path;

use anyhow::Result;

use lockcast::analyses::{ab_runs, diff};
use lockcast::capture::{load, OpenOptions};
use lockcast::input;
use lockcast::plots::{self, ab::AbChart, ab_runs::AbRunsChart, timeline, waits, whatif};
use lockcast::Error;

use super::args::{PlotArgs, PlotKind, WaitKeyArg};

fn need(a: &PlotArgs, min: usize, max: usize, what: &str) -> Result<(), Error> {
    let n = a.inputs.len();
    if n < min || n > max {
        return Err(Error::Usage(format!(
            "plot {}: expects {what}, got {n} input(s)",
            kind_name(a.kind)
        )));
    }
    Ok(())
}

fn kind_name(k: PlotKind) -> &'static str {
    match k {
        PlotKind::Ab => "ab",
        PlotKind::Waits => "waits",
        PlotKind::Timeline => "timeline",
        PlotKind::Whatif => "whatif",
    }
}

fn label(a: &PlotArgs, i: usize, spec: &str) -> String {
    a.labels
        .get(i)
        .cloned()
        .unwrap_or_else(|| plots::short_name(&input::InputSpec::parse(spec).path))
}

/// Run `lockcast plot`.
pub fn plot(a: PlotArgs) -> Result<()> {
    if plots::ImageFormat::from_path(&a.output).is_none() {
        return Err(Error::Usage(format!(
            "{}: the image format comes from the extension: use .png or .svg",
            a.output.display()
        ))
        .into());
    }
    match a.kind {
        PlotKind::Ab if !a.base_runs.is_empty() => {
            let open = a.input.open();
            let load_all = |specs: &[String]| -> Result<Vec<load::OneTable>> {
                Ok(specs
                    .iter()
                    .map(|s| load::one_table(s, &open))
                    .collect::<Result<Vec<_>, Error>>()?)
            };
            let (b, p) = (load_all(&a.base_runs)?, load_all(&a.patched_runs)?);
            let d = ab_runs::compare(
                &super::report::runs_of(&b),
                &super::report::runs_of(&p),
                ab_runs::DEFAULT_REPLICATES,
                1,
            );
            let mut chart = AbRunsChart::from_runs(&d, a.top.unwrap_or(10));
            relabel(
                &a,
                [&mut chart.base_label, &mut chart.patched_label],
                &mut chart.title,
            );
            save(&chart, &a, chart.rows.len())
        }
        PlotKind::Ab => {
            need(&a, 2, 2, "BASE PATCHED")?;
            let open = a.input.open();
            let b = load::one_table(&a.inputs[0], &open)?;
            let p = load::one_table(&a.inputs[1], &open)?;
            let d = diff::diff_filtered(&b.name, &b.rows, &p.name, &p.rows, &a.filter.filter()?);
            let mut chart = AbChart::from_diff(&d, a.top.unwrap_or(10));
            relabel(
                &a,
                [&mut chart.base_label, &mut chart.patched_label],
                &mut chart.title,
            );
            save(&chart, &a, chart.rows.len())
        }
        PlotKind::Waits => {
            need(&a, 1, 3, "1 to 3 traces (the first is the base)")?;
            let key = match a.by {
                WaitKeyArg::Auto => waits::WaitKey::Auto,
                WaitKeyArg::Caller => waits::WaitKey::Caller,
                WaitKeyArg::Lock => waits::WaitKey::Lock,
            };
            let mut sets = Vec::new();
            for (i, spec) in a.inputs.iter().enumerate() {
                let df = trace_of(spec, &a)?;
                sets.push(waits::WaitSet::from_contention(
                    &label(&a, i, spec),
                    &df,
                    key,
                )?);
            }
            let mut chart = waits::WaitsChart::new(&sets, a.top.unwrap_or(4))?;
            if let Some(t) = &a.title {
                chart.title = t.clone();
            }
            save(&chart, &a, chart.panels.len())
        }
        PlotKind::Timeline => {
            need(&a, 1, 1, "one trace")?;
            let df = trace_of(&a.inputs[0], &a)?;
            let mut chart =
                timeline::TimelineChart::from_contention(&label(&a, 0, &a.inputs[0]), &df, a.bins)?;
            if let Some(t) = &a.title {
                chart.title = t.clone();
            }
            save(&chart, &a, chart.rows.len())
        }
        PlotKind::Whatif => {
            need(
                &a,
                1,
                1,
                "the JSON of `lockcast whatif --json` (a file or -)",
            )?;
            let path = &a.inputs[0];
            // What-if answers come from `whatif --json`, not the capture itself: say so for a
            // capture directory or a binary capture (they got "no capture files in it" and an
            // I/O error about UTF-8).
            let run_first = format!(
                "`plot whatif` draws the JSON report of `lockcast whatif --json`: run \
                 `lockcast whatif POLICY {path} --json > whatif.json` and plot that file"
            );
            if path != "-" && std::path::Path::new(path).is_dir() {
                return Err(Error::Input(format!("{path}: a directory; {run_first}")).into());
            }
            let mut bytes = Vec::new();
            input::open(path)?
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(path, e))?;
            let text = String::from_utf8(bytes).map_err(|e| {
                Error::Input(format!(
                    "{path}: byte {}: not text (a perf.data or another binary file?); {run_first}",
                    e.utf8_error().valid_up_to()
                ))
            })?;
            let report = whatif::report_from_json(&text, path)?;
            let mut rows = report.rows;
            if let Some(n) = a.top {
                rows.truncate(n);
            }
            let mut chart = whatif::WhatIfChart::new(rows);
            chart.time = report.time;
            if let Some(t) = &a.title {
                chart.title = t.clone();
            }
            save(&chart, &a, chart.rows.len())
        }
    }
}

/// The demo's charts: the 16K-vs-4K capture diff as A/B bars, the wait-time distribution of
/// the 16K and 4K replay traces, and the per-CPU timeline of the `-g` trace. Returns the file
/// names written into `out`.
pub fn demo_plots(fixtures: &Path, out: &Path, cap_diff: &diff::Diff) -> Result<Vec<String>> {
    let opts = OpenOptions::default();
    let f = |p: &str| fixtures.join(p).to_string_lossy().into_owned();
    let mut written = Vec::new();
    let mut put = |name: &str, chart: &dyn Fn(&Path) -> Result<(), Error>| -> Result<()> {
        chart(&out.join(name))?;
        written.push(name.to_string());
        Ok(())
    };
    let mut ab = AbChart::from_diff(cap_diff, 10);
    ab.title = "16K mTHP (base) vs 4K pages: top 10 callers by base total wait".into();
    put("ab-16K-vs-4K.png", &|p| plots::save(&ab, p, None))?;
    put("ab-16K-vs-4K.svg", &|p| plots::save(&ab, p, None))?;

    let traces = ["replay/micro-16K-r1", "replay/micro-4K-r1"];
    let mut sets = Vec::new();
    for t in traces {
        let spec = f(&format!("{t}/script-ns.txt.gz"));
        let df = demo_trace(&spec, &opts)?;
        sets.push(waits::WaitSet::from_contention(
            &plots::short_name(&spec),
            &df,
            waits::WaitKey::Auto,
        )?);
    }
    let w = waits::WaitsChart::new(&sets, 4)?;
    put("waits-16K-vs-4K.png", &|p| plots::save(&w, p, None))?;

    let spec = f("traces/micro-16K-g/script-ns.txt.gz");
    let df = demo_trace(&spec, &opts)?;
    let t = timeline::TimelineChart::from_contention(
        &plots::short_name(&spec),
        &df,
        timeline::DEFAULT_BINS,
    )?;
    put("timeline-16K.png", &|p| plots::save(&t, p, None))?;
    Ok(written)
}

fn demo_trace(spec: &str, opts: &OpenOptions) -> Result<polars::prelude::DataFrame, Error> {
    load::load(spec, opts)?
        .trace
        .map(|t| t.contention)
        .ok_or_else(|| Error::Input(format!("{spec}: expected an event trace")))
}

fn trace_of(spec: &str, a: &PlotArgs) -> Result<polars::prelude::DataFrame, Error> {
    let l = load::load(spec, &a.input.open())?;
    match l.trace {
        Some(t) => Ok(a.filter.filter()?.contention(&t.contention)?),
        None => Err(Error::Input(format!(
            "{spec}: `plot {}` needs an event trace with lock:contention_begin/end \
             (perf script, ftrace, trace-cmd report); a perf lock table has only totals",
            kind_name(a.kind)
        ))),
    }
}

fn save(chart: &impl plots::Chart, a: &PlotArgs, items: usize) -> Result<()> {
    plots::save(chart, &a.output, a.size)?;
    eprintln!(
        "lockcast: wrote {} ({} {})",
        a.output.display(),
        items,
        match a.kind {
            PlotKind::Timeline => "row(s)",
            PlotKind::Waits => "panel(s)",
            _ => "lock(s)",
        }
    );
    Ok(())
}

/// `--label BASE --label PATCHED` and `--title` over a two-sided chart's defaults.
fn relabel(a: &PlotArgs, labels: [&mut String; 2], title: &mut String) {
    for (slot, l) in labels.into_iter().zip(&a.labels) {
        *slot = l.clone();
    }
    if let Some(t) = &a.title {
        *title = t.clone();
    }
}
