//! `lockcast report` and `lockcast diff`: read, summarize or compare, print in the chosen
//! format.

use std::io::{self, Write};

use anyhow::Result;

use lockcast::analyses::report::{self, By, SortKey};
use lockcast::analyses::{ab_runs, diff};
use lockcast::capture::{load, since};
use lockcast::output::render;

use super::args::{ByArg, DiffArgs, ReportArgs, SortArg};
use super::warn;

/// Run `lockcast report`.
pub fn report(a: ReportArgs) -> Result<()> {
    let open = a.input.open();
    let loaded = vec![match &a.since {
        Some(before) => {
            let s = since::load_since(&a.input_file, before, &open)?;
            warn::skipped(&s.before, &s.before_diagnostics);
            s.loaded
        }
        None => load::load_without_chains(&a.input_file, &open)?,
    }];
    warn::skipped(&loaded[0].spec.path, &loaded[0].diagnostics);
    let df = load::frame_of(&loaded)?;
    let mut opts = report::Options::default();
    opts.by = a.by.map(|b| match b {
        ByArg::Lock => By::Lock,
        ByArg::Caller => By::Caller,
        ByArg::Thread => By::Thread,
        ByArg::Type => By::Type,
    });
    opts.top = a.top;
    opts.filter = a.filter.filter()?;
    opts.sort = match a.sort {
        SortArg::Total => SortKey::TotalWait,
        SortArg::Contended => SortKey::Contended,
    };
    let summaries = report::summarize(&df, &opts)?;
    let text = render::render_report(&summaries, a.out_format.resolve(a.json));
    io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// Run `lockcast diff`: two tables, or `--base … --patched …` repeated runs.
pub fn diff(a: DiffArgs) -> Result<()> {
    let open = a.input.open();
    let (Some(base), Some(patched)) = (&a.base, &a.patched) else {
        return diff_runs(&a);
    };
    let side = |spec: &str, since: &Option<String>| -> Result<load::OneTable> {
        Ok(match since {
            Some(before) => {
                let (t, path, skipped) = since::one_table_since(spec, before, &open)?;
                warn::skipped(&path, &skipped);
                t
            }
            None => load::one_table(spec, &open)?,
        })
    };
    let base = side(base, &a.base_since)?;
    let patched = side(patched, &a.patched_since)?;
    for t in [&base, &patched] {
        warn::skipped(&t.name, &t.diagnostics);
    }
    let d = diff::diff_filtered(
        &base.name,
        &base.rows,
        &patched.name,
        &patched.rows,
        &a.filter.filter()?,
    );
    let text = render::render_diff(&d, a.top, a.out_format.resolve(a.json));
    io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// `diff --base B1 B2 … --patched P1 P2 …`.
fn diff_runs(a: &DiffArgs) -> Result<()> {
    let open = a.input.open();
    let load_all = |specs: &[String]| -> Result<Vec<load::OneTable>> {
        specs
            .iter()
            .map(|s| {
                let t = load::one_table(s, &open)?;
                warn::skipped(&t.name, &t.diagnostics);
                Ok(t)
            })
            .collect()
    };
    let (base, patched) = (load_all(&a.base_runs)?, load_all(&a.patched_runs)?);
    let (b, p) = (runs_of(&base), runs_of(&patched));
    let d = ab_runs::compare(&b, &p, a.bootstrap, a.seed);
    let text = lockcast::output::ab_runs::render(&d, a.top, a.out_format.resolve(a.json));
    io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// The loaded tables as the runs of one side.
pub(super) fn runs_of(t: &[load::OneTable]) -> Vec<ab_runs::Run<'_>> {
    t.iter()
        .map(|t| ab_runs::Run {
            name: &t.name,
            rows: &t.rows,
        })
        .collect()
}
