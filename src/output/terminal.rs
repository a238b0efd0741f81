//! The `table` output of `report` and `diff` (aligned text for terminals) and their JSON.

use crate::analyses::diff::{self, Diff};
use crate::analyses::report::{self, By, TableSummary};
use crate::analyses::stat_row;
use crate::output::table::{render, Align};
use crate::units::{perf_time, ratio};

/// `report --format json`: one object per table, the grouping key under its own name.
pub fn report_json(s: &TableSummary) -> serde_json::Value {
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

/// `report --format table`: one aligned table per input table, with its title.
pub fn report_table(s: &TableSummary) -> String {
    let mut text = super::formats::table_title(s) + "\n";
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

fn within(r: &diff::DiffRow) -> &'static str {
    if r.total_wait_within_rounding {
        "~"
    } else {
        ""
    }
}

/// `diff --format table`: the A/B table as posted on the list.
pub fn diff_table(d: &Diff, top: usize) -> String {
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
