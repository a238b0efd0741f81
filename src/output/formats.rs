//! `--format` renderers for `report` and `diff`: Markdown (web review tools), CSV (raw
//! integer ns, one file for every table), and `text`, perf lock's own layout for mails; the
//! aligned terminal table and JSON are in [`super::terminal`]. [`render_report`] and
//! [`render_diff`] pick one.

use crate::analyses::diff::{Diff, DiffRow, MatchedBy};
use crate::analyses::report::{By, SummaryRow, TableSummary};
use crate::units::{perf_time, ratio};

use super::perf_text::{self, PerfRow};
use super::sheet::{Cell, Column, Sheet};
use super::table::Align;

/// Output formats of `report` and `diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned text table for terminals (the default).
    Table,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// perf lock's column layout, for cover letters.
    Text,
    /// CSV with raw values.
    Csv,
    /// JSON.
    Json,
}

fn num(v: Option<u64>) -> Cell {
    v.map_or_else(|| Cell::new("-", ""), |v| Cell::plain(v.to_string()))
}

fn time(v: Option<u64>) -> Cell {
    v.map_or_else(
        || Cell::new("-", ""),
        |v| Cell::new(perf_time(v), v.to_string()),
    )
}

fn opt(v: &Option<String>) -> Cell {
    v.as_ref()
        .map_or_else(|| Cell::new("", ""), |s| Cell::plain(s.clone()))
}

fn ratio_cell(r: Option<f64>) -> Cell {
    Cell::new(
        ratio(r),
        r.filter(|x| x.is_finite())
            .map(|x| format!("{x:.4}"))
            .unwrap_or_default(),
    )
}

/// The columns of a report summary, as in the terminal table.
fn summary_sheet(s: &TableSummary, with_total: bool) -> Sheet {
    let has_acq = s.total.acquired.is_some();
    let mut columns = vec![Column::new(s.by.field(), "key", Align::Left)];
    if has_acq {
        columns.push(Column::new("acquired", "acquired", Align::Right));
    }
    columns.extend([
        Column::new("contended", "contended", Align::Right),
        Column::new("total wait", "total_wait_ns", Align::Right),
        Column::new("avg wait", "avg_wait_ns", Align::Right),
        Column::new("max wait", "max_wait_ns", Align::Right),
        Column::new("min wait", "min_wait_ns", Align::Right),
        Column::new("rows", "rows", Align::Right),
    ]);
    if s.by != By::Type {
        columns.push(Column::new("type", "type", Align::Left));
    }
    let row = |r: &SummaryRow| {
        let mut cells = vec![Cell::plain(r.key.clone())];
        if has_acq {
            cells.push(num(r.acquired));
        }
        cells.extend([
            num(r.contended),
            time(r.total_wait_ns),
            time(r.avg_wait_ns),
            time(r.max_wait_ns),
            time(r.min_wait_ns),
            Cell::plain(r.rows.to_string()),
        ]);
        if s.by != By::Type {
            cells.push(opt(&r.lock_type));
        }
        cells
    };
    let mut rows: Vec<Vec<Cell>> = s.top.iter().map(row).collect();
    if with_total {
        rows.push(row(&s.total));
    }
    Sheet { columns, rows }
}

/// `source#block (label): N rows, G groups by FIELD`, the line above every report table.
pub fn table_title(s: &TableSummary) -> String {
    format!(
        "{}#{}{}: {} rows, {} groups by {}",
        s.source,
        s.block,
        s.label
            .as_ref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default(),
        s.input_rows,
        s.groups,
        s.by.field()
    )
}

/// `report` as Markdown: a bold line naming each table, then its rows and the total.
pub fn report_markdown(summaries: &[TableSummary]) -> String {
    let mut out = String::new();
    for s in summaries {
        out.push_str(&format!("**{}**\n\n", table_title(s).replace('|', "\\|")));
        out.push_str(&summary_sheet(s, true).markdown());
        if s.groups > s.top.len() as u64 {
            out.push_str(&format!(
                "\n{} more group(s) not shown.\n",
                s.groups - s.top.len() as u64
            ));
        }
        out.push('\n');
    }
    out
}

/// `report` as one CSV: every table's top rows and its total (`key` = `total`), with the
/// table's source, block, label and grouping on each line; times in integer ns.
pub fn report_csv(summaries: &[TableSummary]) -> String {
    let columns = [
        "source",
        "block",
        "label",
        "by",
        "rank",
        "key",
        "type",
        "rows",
        "acquired",
        "contended",
        "total_wait_ns",
        "avg_wait_ns",
        "max_wait_ns",
        "min_wait_ns",
    ];
    let mut sheet = Sheet {
        columns: columns
            .iter()
            .map(|c| Column::new(c, c, Align::Left))
            .collect(),
        rows: Vec::new(),
    };
    for s in summaries {
        let rows = s
            .top
            .iter()
            .enumerate()
            .map(|(i, r)| (Some(i + 1), r))
            .chain(std::iter::once((None, &s.total)));
        for (rank, r) in rows {
            sheet.rows.push(vec![
                Cell::plain(s.source.clone()),
                Cell::plain(s.block.to_string()),
                opt(&s.label),
                Cell::plain(s.by.field()),
                Cell::plain(rank.map(|r| r.to_string()).unwrap_or_default()),
                Cell::plain(r.key.clone()),
                opt(&r.lock_type),
                Cell::plain(r.rows.to_string()),
                num(r.acquired),
                num(r.contended),
                time(r.total_wait_ns),
                time(r.avg_wait_ns),
                time(r.max_wait_ns),
                time(r.min_wait_ns),
            ]);
        }
    }
    sheet.csv(true)
}

fn tail_of(by: By) -> (&'static str, &'static str) {
    match by {
        By::Caller => ("type", "caller"),
        By::Lock => ("type", "symbol"),
        By::Thread => ("type", "comm"),
        By::Type => ("type", ""),
    }
}

/// `report` in perf lock's layout (one block per table, labelled like a mail: the table's
/// label, or its source). Totals are not printed: perf prints none.
pub fn report_text(summaries: &[TableSummary]) -> String {
    let mut out = String::new();
    for (i, s) in summaries.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if summaries.len() > 1 {
            out.push_str(&format!(
                "{}\n\n",
                s.label
                    .clone()
                    .unwrap_or_else(|| format!("{}#{}:", s.source, s.block))
            ));
        }
        let rows: Vec<PerfRow> = s
            .top
            .iter()
            .map(|r| PerfRow {
                name: if s.by == By::Type {
                    String::new()
                } else {
                    r.key.clone()
                },
                lock_type: if s.by == By::Type {
                    r.key.clone()
                } else {
                    r.lock_type.clone().unwrap_or_default()
                },
                acquired: r.acquired,
                contended: r.contended,
                avg_wait_ns: r.avg_wait_ns,
                total_wait_ns: r.total_wait_ns,
                max_wait_ns: r.max_wait_ns,
                min_wait_ns: r.min_wait_ns,
            })
            .collect();
        out.push_str(&perf_text::layout(&rows, tail_of(s.by)));
    }
    out
}

fn match_text(d: &Diff, r: &DiffRow) -> String {
    match r.matched_by {
        MatchedBy::Key => d.matched_on.to_string(),
        MatchedBy::KeyRank => format!("{} + rank {}", d.matched_on, r.rank),
        MatchedBy::UnnamedRank => format!("unnamed, rank {}", r.rank),
    }
}

/// `diff` as a sheet: the `top` matched rows and the total.
fn diff_sheet(d: &Diff, top: usize) -> Sheet {
    let columns = vec![
        Column::new("lock", "key", Align::Left),
        Column::new("contended base", "base_contended", Align::Right),
        Column::new("patched", "patched_contended", Align::Right),
        Column::new("ratio", "ratio_contended", Align::Right),
        Column::new("total wait base", "base_total_wait_ns", Align::Right),
        Column::new("patched", "patched_total_wait_ns", Align::Right),
        Column::new("ratio", "ratio_total_wait", Align::Right),
        Column::new("match", "matched_by", Align::Left),
    ];
    let row = |r: &DiffRow, m: String| {
        let mut tw = ratio_cell(r.ratio_total_wait);
        if r.total_wait_within_rounding {
            tw.text = format!("~{}", tw.text);
        }
        vec![
            Cell::plain(r.key.clone()),
            num(r.base_contended),
            num(r.patched_contended),
            ratio_cell(r.ratio_contended),
            time(r.base_total_wait_ns),
            time(r.patched_total_wait_ns),
            tw,
            Cell::plain(m),
        ]
    };
    let mut rows: Vec<Vec<Cell>> = d
        .rows
        .iter()
        .take(top)
        .map(|r| row(r, match_text(d, r)))
        .collect();
    rows.push(row(&d.total, "all rows of each side".into()));
    Sheet { columns, rows }
}

fn side(name: &str, label: &Option<String>) -> String {
    match label {
        Some(l) => format!("{name} ({l})"),
        None => name.to_string(),
    }
}

/// `diff` as Markdown: the inputs, the table, and what the ratio means.
pub fn diff_markdown(d: &Diff, top: usize) -> String {
    let mut s = format!(
        "base: `{}`  \npatched: `{}`\n\n",
        side(&d.base, &d.base_label),
        side(&d.patched, &d.patched_label)
    );
    s.push_str(&diff_sheet(d, top).markdown());
    if d.rows.len() > top {
        s.push_str(&format!(
            "\n{} more matched row(s) not shown.\n",
            d.rows.len() - top
        ));
    }
    s.push_str(
        "\nratio = base / patched; ~ = difference within the rounding of perf's printed values\n",
    );
    s
}

/// `diff` as CSV: every matched row and the total (`key` = `total`), raw values in ns, the
/// ratio's range from the printed precision, and the unmatched row counts are not included
/// (see `--format json`).
pub fn diff_csv(d: &Diff) -> String {
    let columns = [
        "key",
        "matched_by",
        "rank",
        "base_line",
        "patched_line",
        "base_acquired",
        "patched_acquired",
        "base_contended",
        "patched_contended",
        "ratio_contended",
        "base_total_wait_ns",
        "patched_total_wait_ns",
        "ratio_total_wait",
        "ratio_total_wait_low",
        "ratio_total_wait_high",
        "total_wait_within_rounding",
    ];
    let mut sheet = Sheet {
        columns: columns
            .iter()
            .map(|c| Column::new(c, c, Align::Left))
            .collect(),
        rows: Vec::new(),
    };
    for r in d.rows.iter().chain(std::iter::once(&d.total)) {
        let by = match r.matched_by {
            MatchedBy::Key => "key",
            MatchedBy::KeyRank => "key_rank",
            MatchedBy::UnnamedRank => "unnamed_rank",
        };
        let range = r.ratio_total_wait_range;
        sheet.rows.push(vec![
            Cell::plain(r.key.clone()),
            Cell::plain(by),
            Cell::plain(r.rank.to_string()),
            Cell::plain(r.base_line.to_string()),
            Cell::plain(r.patched_line.to_string()),
            num(r.base_acquired),
            num(r.patched_acquired),
            num(r.base_contended),
            num(r.patched_contended),
            ratio_cell(r.ratio_contended),
            num(r.base_total_wait_ns),
            num(r.patched_total_wait_ns),
            ratio_cell(r.ratio_total_wait),
            ratio_cell(range.map(|x| x.0)),
            ratio_cell(range.map(|x| x.1)),
            Cell::plain(r.total_wait_within_rounding.to_string()),
        ]);
    }
    sheet.csv(true)
}

/// `diff` for a cover letter: the base and patched rows in perf lock's layout under
/// `w/o patch:` / `w/ patch:` (the rows in the same order on both sides), then one line per
/// metric with the totals and the reduction.
pub fn diff_text(d: &Diff, top: usize) -> String {
    let rows: Vec<&DiffRow> = d.rows.iter().take(top).collect();
    let contention = rows.iter().all(|r| r.base_acquired.is_none());
    let side_rows = |base: bool| -> Vec<PerfRow> {
        rows.iter()
            .map(|r| {
                let pick = |b: Option<u64>, p: Option<u64>| if base { b } else { p };
                PerfRow {
                    name: if contention {
                        r.caller
                            .clone()
                            .or_else(|| r.symbol.clone())
                            .or_else(|| r.comm.clone())
                            .unwrap_or_else(|| r.key.clone())
                    } else {
                        // perf prints blank names as blanks; keep them blank
                        r.name.clone().unwrap_or_default()
                    },
                    lock_type: r.lock_type.clone().unwrap_or_default(),
                    acquired: pick(r.base_acquired, r.patched_acquired),
                    contended: pick(r.base_contended, r.patched_contended),
                    avg_wait_ns: pick(r.base_avg_wait_ns, r.patched_avg_wait_ns),
                    total_wait_ns: pick(r.base_total_wait_ns, r.patched_total_wait_ns),
                    max_wait_ns: pick(r.base_max_wait_ns, r.patched_max_wait_ns),
                    min_wait_ns: pick(r.base_min_wait_ns, r.patched_min_wait_ns),
                }
            })
            .collect()
    };
    let tail = ("type", "caller");
    let mut s = String::new();
    // The mail's own label (`w/o patch:`) when the table had one, else the input.
    let heading = |label: &Option<String>, fallback: &str, input: &str| match label {
        Some(l) if l.ends_with(':') => l.clone(),
        Some(l) => format!("{l}:"),
        None => format!("{fallback} ({input}):"),
    };
    s.push_str(&format!(
        "{}\n\n",
        heading(&d.base_label, "w/o patch", &d.base)
    ));
    s.push_str(&perf_text::layout(&side_rows(true), tail));
    s.push_str(&format!(
        "\n{}\n\n",
        heading(&d.patched_label, "w/ patch", &d.patched)
    ));
    s.push_str(&perf_text::layout(&side_rows(false), tail));
    let t = &d.total;
    let opt_n = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    let opt_t = |v: Option<u64>| v.map_or_else(|| "-".to_string(), perf_time);
    s.push_str(&format!(
        "\ncontended:  {} -> {} (base / patched = {})\ntotal wait: {} -> {} (base / patched = {})\n",
        opt_n(t.base_contended),
        opt_n(t.patched_contended),
        ratio(t.ratio_contended),
        opt_t(t.base_total_wait_ns),
        opt_t(t.patched_total_wait_ns),
        ratio(t.ratio_total_wait),
    ));
    if d.rows.len() > top {
        s.push_str(&format!(
            "({} of {} matched rows shown; totals are over all rows)\n",
            rows.len(),
            d.rows.len()
        ));
    }
    s
}

/// `report`'s output in `format`.
pub fn render_report(summaries: &[TableSummary], format: Format) -> String {
    match format {
        Format::Json => {
            let v: Vec<serde_json::Value> =
                summaries.iter().map(super::terminal::report_json).collect();
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
        Format::Table => summaries
            .iter()
            .map(super::terminal::report_table)
            .collect(),
        Format::Markdown => report_markdown(summaries),
        Format::Text => report_text(summaries),
        Format::Csv => report_csv(summaries),
    }
}

/// `diff`'s output in `format` (`top` rows in the text formats; all rows in JSON and CSV).
pub fn render_diff(d: &Diff, top: usize, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(d).unwrap_or_default() + "\n",
        Format::Table => super::terminal::diff_table(d, top),
        Format::Markdown => diff_markdown(d, top),
        Format::Text => diff_text(d, top),
        Format::Csv => diff_csv(d),
    }
}
