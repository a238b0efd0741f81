//! `diff --base B1 B2 … --patched P1 P2 …`: the repeated-run comparison as an aligned table
//! (terminal, and `text` for pasting into a mail), Markdown, CSV (raw values, ns) and JSON.
//! One line per row and metric: median [min–max] of each side, the ratio of medians with its
//! 95% bootstrap interval, the verdict.

use crate::analyses::ab_runs::{Compare, RunsDiff, RunsRow, VERDICT_RULE};
use crate::units::{perf_time, ratio};

use super::formats::Format;
use super::sheet::{csv_field, field, Cell, Field, Sheet};
use super::table::Align;

/// One line of the table: a row, one of its metrics.
struct Line<'a> {
    row: &'a RunsRow,
    metric: &'static str,
    first: bool,
    time: bool,
    cmp: &'a Compare,
}

fn lines(d: &RunsDiff, top: usize) -> Vec<Line<'_>> {
    d.rows
        .iter()
        .take(top)
        .chain(std::iter::once(&d.total))
        .flat_map(|row| {
            [
                Line {
                    row,
                    metric: "contended",
                    first: true,
                    time: false,
                    cmp: &row.contended,
                },
                Line {
                    row,
                    metric: "total wait",
                    first: false,
                    time: true,
                    cmp: &row.total_wait_ns,
                },
            ]
        })
        .collect()
}

fn value(v: u64, time: bool) -> String {
    if time {
        perf_time(v)
    } else {
        v.to_string()
    }
}

fn median_text(m: f64, time: bool) -> String {
    if time {
        perf_time(m.round() as u64)
    } else if m.fract() == 0.0 {
        format!("{m:.0}")
    } else {
        format!("{m:.1}")
    }
}

fn spread(l: &Line, base: bool) -> Cell {
    let s = if base { &l.cmp.base } else { &l.cmp.patched };
    match (s.median, s.min, s.max) {
        (Some(m), Some(lo), Some(hi)) => Cell::plain(format!(
            "{} [{}–{}]",
            median_text(m, l.time),
            value(lo, l.time),
            value(hi, l.time)
        )),
        _ => Cell::plain("-"),
    }
}

fn runs(l: &Line) -> Cell {
    let n = |s: &crate::analyses::ab_runs::Side| format!("{}/{}", s.runs(), s.values.len());
    Cell::plain(format!("{} | {}", n(&l.cmp.base), n(&l.cmp.patched)))
}

fn interval(l: &Line) -> Cell {
    match (l.cmp.ratio, l.cmp.interval) {
        (r @ Some(_), Some((lo, hi))) => Cell::plain(format!(
            "{} [{}–{}]",
            ratio(r),
            ratio_or_inf(lo),
            ratio_or_inf(hi)
        )),
        (r, _) => Cell::plain(ratio(r)),
    }
}

fn ratio_or_inf(x: f64) -> String {
    if x.is_infinite() {
        "inf".into()
    } else {
        ratio(Some(x))
    }
}

fn sheet(d: &RunsDiff, top: usize) -> Sheet {
    use Align::{Left, Right};
    let fields: [Field<Line>; 7] = [
        field("lock", "key", Left, |l| {
            Cell::plain(if l.first {
                l.row.key.clone()
            } else {
                String::new()
            })
        }),
        field("metric", "metric", Left, |l| Cell::plain(l.metric)),
        field("runs b | p", "runs", Right, runs),
        field("base median [min–max]", "base", Right, |l| {
            spread(l, true)
        }),
        field("patched median [min–max]", "patched", Right, |l| {
            spread(l, false)
        }),
        field("ratio [95% CI]", "ratio", Right, interval),
        field("verdict", "verdict", Left, |l| {
            Cell::plain(l.cmp.verdict.name())
        }),
    ];
    Sheet::of(&fields, &lines(d, top))
}

fn heading(d: &RunsDiff) -> String {
    format!(
        "base ({} runs):    {}\npatched ({} runs): {}\n",
        d.base.len(),
        d.base.join(" "),
        d.patched.len(),
        d.patched.join(" ")
    )
}

fn footer(d: &RunsDiff, shown: usize) -> String {
    let mut s = String::new();
    if d.rows.len() > shown {
        s.push_str(&format!(
            "({} more matched row(s); --top N or --json)\n",
            d.rows.len() - shown
        ));
    }
    for (run, n) in &d.not_in_first_base {
        s.push_str(&format!(
            "{run}: {n} row(s) not in the first base run, not compared (the total has them)\n"
        ));
    }
    s.push_str(&format!(
        "ratio = median base / median patched; 95% CI: percentile bootstrap over runs ({} replicates, seed {})\n{VERDICT_RULE}\n",
        d.replicates, d.seed
    ));
    s
}

fn csv(d: &RunsDiff) -> String {
    let fields: [Field<Line>; 15] = [
        csv_field("key", |l| Cell::plain(l.row.key.clone())),
        csv_field("matched_by", |l| Cell::plain(l.row.matched_by.name())),
        csv_field("metric", |l| {
            Cell::plain(if l.time { "total_wait_ns" } else { "contended" })
        }),
        csv_field("base_runs", |l| Cell::plain(join_runs(&l.cmp.base.values))),
        csv_field("patched_runs", |l| {
            Cell::plain(join_runs(&l.cmp.patched.values))
        }),
        csv_field("base_median", |l| Cell::plain(num4(l.cmp.base.median))),
        csv_field("base_min", |l| Cell::plain(int(l.cmp.base.min))),
        csv_field("base_max", |l| Cell::plain(int(l.cmp.base.max))),
        csv_field("patched_median", |l| {
            Cell::plain(num4(l.cmp.patched.median))
        }),
        csv_field("patched_min", |l| Cell::plain(int(l.cmp.patched.min))),
        csv_field("patched_max", |l| Cell::plain(int(l.cmp.patched.max))),
        csv_field("ratio", |l| Cell::plain(num4(l.cmp.ratio))),
        csv_field("ratio_low", |l| {
            Cell::plain(num4(l.cmp.interval.map(|i| i.0)))
        }),
        csv_field("ratio_high", |l| {
            Cell::plain(num4(l.cmp.interval.map(|i| i.1)))
        }),
        csv_field("verdict", |l| Cell::plain(l.cmp.verdict.name())),
    ];
    Sheet::of(&fields, &lines(d, usize::MAX)).csv(true)
}

fn int(v: Option<u64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn num4(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_infinite() => "inf".into(),
        Some(x) if !x.is_nan() => format!("{x:.4}"),
        _ => String::new(),
    }
}

fn join_runs(v: &[Option<u64>]) -> String {
    v.iter().map(|x| int(*x)).collect::<Vec<_>>().join(";")
}

/// The repeated-run diff in `format` (`top` rows in the text formats; all rows in JSON and
/// CSV). `table` and `text` are the same aligned table: it is already the paste-ready form.
pub fn render(d: &RunsDiff, top: usize, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(d).unwrap_or_default() + "\n",
        Format::Table | Format::Text => {
            heading(d) + "\n" + &sheet(d, top).text() + "\n" + &footer(d, top.min(d.rows.len()))
        }
        Format::Markdown => {
            let h = format!(
                "base ({} runs): `{}`  \npatched ({} runs): `{}`\n\n",
                d.base.len(),
                d.base.join("` `"),
                d.patched.len(),
                d.patched.join("` `")
            );
            h + &sheet(d, top).markdown() + "\n" + &footer(d, top.min(d.rows.len()))
        }
        Format::Csv => csv(d),
    }
}
