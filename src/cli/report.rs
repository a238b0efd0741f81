//! `lockcast report` and `lockcast diff`: read, summarize or compare, print in the chosen
//! format.

use std::io::{self, Write};

use anyhow::Result;

use lockcast::analyses::diff;
use lockcast::analyses::report::{self, By, SortKey};
use lockcast::capture::load;
use lockcast::output::render;

use super::args::{ByArg, DiffArgs, ReportArgs, SortArg};
use super::warn;

/// Run `lockcast report`.
pub fn report(a: ReportArgs) -> Result<()> {
    let loaded = vec![load::load(&a.input_file, &a.input.open())?];
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

/// Run `lockcast diff`.
pub fn diff(a: DiffArgs) -> Result<()> {
    let open = a.input.open();
    let base = load::one_table(&a.base, &open)?;
    let patched = load::one_table(&a.patched, &open)?;
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
