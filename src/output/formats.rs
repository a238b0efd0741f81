//! `--format` renderers for `report` and `diff`: Markdown (web review tools), CSV (raw
//! integer ns, one file for every table), and `text`, perf lock's own layout for mails; the
//! aligned terminal table and JSON are in [`super::terminal`]; [`super::render`] picks one.

use crate::analyses::diff::{Diff, DiffRow, MatchedBy};
use crate::analyses::report::{By, SummaryRow, TableSummary};
use crate::units::{perf_time, ratio};

use super::perf_text::{self, PerfRow};
use super::sheet::{csv_field, field, Cell, Field, Sheet};
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

/// A report table as a sheet (the terminal table and Markdown): the `top` rows, and the total
/// when `with_total`; acquisitions only when the table has them, the type unless it is the key.
pub(super) fn summary_sheet(s: &TableSummary, with_total: bool) -> Sheet {
    use Align::{Left, Right};
    let mut fields: Vec<Field<SummaryRow>> = vec![field(s.by.field(), "key", Left, |r| {
        Cell::plain(r.key.clone())
    })];
    if s.total.merged.acquired.is_some() {
        fields.push(field("acquired", "acquired", Right, |r| {
            num(r.merged.acquired)
        }));
    }
    let values: [Field<SummaryRow>; 6] = [
        field("contended", "contended", Right, |r| num(r.merged.contended)),
        field("total wait", "total_wait_ns", Right, |r| {
            time(r.merged.total_wait_ns)
        }),
        field("avg wait", "avg_wait_ns", Right, |r| {
            time(r.merged.avg_wait_ns)
        }),
        field("max wait", "max_wait_ns", Right, |r| {
            time(r.merged.max_wait_ns)
        }),
        field("min wait", "min_wait_ns", Right, |r| {
            time(r.merged.min_wait_ns)
        }),
        field("rows", "rows", Right, |r| Cell::plain(r.rows.to_string())),
    ];
    fields.extend(values);
    if s.by != By::Type {
        fields.push(field("type", "type", Left, |r| opt(&r.merged.lock_type)));
    }
    let total = with_total.then_some(&s.total);
    Sheet::of(&fields, s.top.iter().chain(total))
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
        let hidden = s.groups_not_shown();
        if hidden > 0 {
            out.push_str(&format!("\n{hidden} more group(s) not shown.\n"));
        }
        out.push('\n');
    }
    out
}

/// One line of the report's CSV: a row of a table (with its rank) or the table's total.
struct CsvLine<'a> {
    table: &'a TableSummary,
    rank: Option<usize>,
    row: &'a SummaryRow,
}

/// `report` as one CSV: every table's top rows and its total (`key` = `total`), with the
/// table's source, block, label and grouping on each line; times in integer ns.
pub fn report_csv(summaries: &[TableSummary]) -> String {
    let fields: [Field<CsvLine>; 14] = [
        csv_field("source", |l| Cell::plain(l.table.source.clone())),
        csv_field("block", |l| Cell::plain(l.table.block.to_string())),
        csv_field("label", |l| opt(&l.table.label)),
        csv_field("by", |l| Cell::plain(l.table.by.field())),
        csv_field("rank", |l| {
            Cell::plain(l.rank.map(|r| r.to_string()).unwrap_or_default())
        }),
        csv_field("key", |l| Cell::plain(l.row.key.clone())),
        csv_field("type", |l| opt(&l.row.merged.lock_type)),
        csv_field("rows", |l| Cell::plain(l.row.rows.to_string())),
        csv_field("acquired", |l| num(l.row.merged.acquired)),
        csv_field("contended", |l| num(l.row.merged.contended)),
        csv_field("total_wait_ns", |l| time(l.row.merged.total_wait_ns)),
        csv_field("avg_wait_ns", |l| time(l.row.merged.avg_wait_ns)),
        csv_field("max_wait_ns", |l| time(l.row.merged.max_wait_ns)),
        csv_field("min_wait_ns", |l| time(l.row.merged.min_wait_ns)),
    ];
    let lines: Vec<CsvLine> = summaries
        .iter()
        .flat_map(|table| {
            let ranked = table.top.iter().enumerate().map(|(i, r)| (Some(i + 1), r));
            ranked
                .chain(std::iter::once((None, &table.total)))
                .map(move |(rank, row)| CsvLine { table, rank, row })
        })
        .collect();
    Sheet::of(&fields, &lines).csv(true)
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
        let by_type = s.by == By::Type;
        let rows: Vec<PerfRow> = s
            .top
            .iter()
            .map(|r| PerfRow {
                name: if by_type {
                    String::new()
                } else {
                    r.key.clone()
                },
                lock_type: if by_type {
                    r.key.clone()
                } else {
                    r.merged.lock_type.clone().unwrap_or_default()
                },
                values: &r.merged,
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

/// `diff` as a sheet (the terminal table and Markdown): the `top` matched rows and the total.
pub(super) fn diff_sheet(d: &Diff, top: usize) -> Sheet {
    use Align::{Left, Right};
    let fields: [Field<(&Diff, &DiffRow)>; 8] = [
        field("lock", "key", Left, |(_, r)| Cell::plain(r.key.clone())),
        field("contended base", "base_contended", Right, |(_, r)| {
            num(r.base.contended)
        }),
        field("patched", "patched_contended", Right, |(_, r)| {
            num(r.patched.contended)
        }),
        field("ratio", "ratio_contended", Right, |(_, r)| {
            ratio_cell(r.ratio_contended())
        }),
        field("total wait base", "base_total_wait_ns", Right, |(_, r)| {
            time(r.base.total_wait_ns)
        }),
        field("patched", "patched_total_wait_ns", Right, |(_, r)| {
            time(r.patched.total_wait_ns)
        }),
        field("ratio", "ratio_total_wait", Right, |(_, r)| {
            let mut tw = ratio_cell(r.ratio_total_wait());
            if r.total_wait_within_rounding() {
                tw.text = format!("~{}", tw.text);
            }
            tw
        }),
        field("match", "matched_by", Left, |(d, r)| {
            Cell::plain(match_text(d, r))
        }),
    ];
    let rows: Vec<(&Diff, &DiffRow)> = d
        .rows
        .iter()
        .take(top)
        .chain(std::iter::once(&d.total))
        .map(|r| (d, r))
        .collect();
    let mut sheet = Sheet::of(&fields, &rows);
    // The total pairs all rows of each side, not two rows.
    if let Some(m) = sheet.rows.last_mut().and_then(|r| r.last_mut()) {
        *m = Cell::plain("all rows of each side");
    }
    sheet
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
    let fields: [Field<DiffRow>; 16] = [
        csv_field("key", |r| Cell::plain(r.key.clone())),
        csv_field("matched_by", |r| Cell::plain(r.matched_by.name())),
        csv_field("rank", |r| Cell::plain(r.rank.to_string())),
        csv_field("base_line", |r| Cell::plain(r.base.line.to_string())),
        csv_field("patched_line", |r| Cell::plain(r.patched.line.to_string())),
        csv_field("base_acquired", |r| num(r.base.acquired)),
        csv_field("patched_acquired", |r| num(r.patched.acquired)),
        csv_field("base_contended", |r| num(r.base.contended)),
        csv_field("patched_contended", |r| num(r.patched.contended)),
        csv_field("ratio_contended", |r| ratio_cell(r.ratio_contended())),
        csv_field("base_total_wait_ns", |r| num(r.base.total_wait_ns)),
        csv_field("patched_total_wait_ns", |r| num(r.patched.total_wait_ns)),
        csv_field("ratio_total_wait", |r| ratio_cell(r.ratio_total_wait())),
        csv_field("ratio_total_wait_low", |r| {
            ratio_cell(r.ratio_total_wait_range().map(|x| x.0))
        }),
        csv_field("ratio_total_wait_high", |r| {
            ratio_cell(r.ratio_total_wait_range().map(|x| x.1))
        }),
        csv_field("total_wait_within_rounding", |r| {
            Cell::plain(r.total_wait_within_rounding().to_string())
        }),
    ];
    Sheet::of(&fields, d.rows.iter().chain(std::iter::once(&d.total))).csv(true)
}

/// `diff` for a cover letter: the base and patched rows in perf lock's layout under
/// `w/o patch:` / `w/ patch:` (the rows in the same order on both sides), then one line per
/// metric with the totals and the reduction.
pub fn diff_text(d: &Diff, top: usize) -> String {
    let rows: Vec<&DiffRow> = d.rows.iter().take(top).collect();
    let contention = rows.iter().all(|r| r.base.acquired.is_none());
    let side_rows = |base: bool| -> Vec<PerfRow> {
        rows.iter()
            .map(|r| PerfRow {
                name: if contention {
                    let b = &r.base;
                    b.caller
                        .clone()
                        .or_else(|| b.symbol.clone())
                        .or_else(|| b.comm.clone())
                        .unwrap_or_else(|| r.key.clone())
                } else {
                    // perf prints blank names as blanks; keep them blank
                    r.name().cloned().unwrap_or_default()
                },
                lock_type: r.base.lock_type.clone().unwrap_or_default(),
                values: if base { &r.base } else { &r.patched },
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
        opt_n(t.base.contended),
        opt_n(t.patched.contended),
        ratio(t.ratio_contended()),
        opt_t(t.base.total_wait_ns),
        opt_t(t.patched.total_wait_ns),
        ratio(t.ratio_total_wait()),
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
