//! The `table` output of `report` and `diff` (aligned text for terminals: the sheets of
//! [`super::formats`] as text) and the JSON of `report`.

use crate::analyses::diff::Diff;
use crate::analyses::report::{self, By, TableSummary};
use crate::analyses::stat_row::StatRow;

use super::formats::{diff_sheet, summary_sheet, table_title};

/// `report --format json`: one object per table, the grouping key under its own name.
pub fn report_json(s: &TableSummary) -> serde_json::Value {
    let row = |r: &report::SummaryRow| {
        let v = &r.merged;
        let mut m = serde_json::Map::new();
        m.insert(s.by.field().into(), r.key.clone().into());
        if s.by != By::Type {
            m.insert("type".into(), v.lock_type.clone().into());
        }
        m.insert("rows".into(), r.rows.into());
        m.insert("acquired".into(), v.acquired.into());
        m.insert("contended".into(), v.contended.into());
        m.insert("total_wait_ns".into(), v.total_wait_ns.into());
        m.insert("avg_wait_ns".into(), v.avg_wait_ns.into());
        m.insert("max_wait_ns".into(), v.max_wait_ns.into());
        m.insert("min_wait_ns".into(), v.min_wait_ns.into());
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

/// `report --format table`: one aligned table per input table, with its title.
pub fn report_table(s: &TableSummary) -> String {
    let mut text = table_title(s) + "\n" + &summary_sheet(s, true).text();
    let hidden = s.groups_not_shown();
    if hidden > 0 {
        text.push_str(&format!("({hidden} more group(s) not shown; --top N)\n"));
    }
    text + "\n"
}

/// `only in base (N): key [line L, C contended] ...`, at most 10 rows named.
fn unmatched(rows: &[StatRow], side: &str) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut s = format!("only in {side} ({}):", rows.len());
    for r in rows.iter().take(10) {
        let k = r
            .name
            .clone()
            .or_else(|| r.caller.clone())
            .or_else(|| r.comm.clone())
            .or_else(|| r.symbol.clone())
            .unwrap_or_else(|| "(unnamed)".into());
        let contended = r.contended.map_or_else(|| "-".into(), |v| v.to_string());
        s.push_str(&format!(" {k} [line {}, {contended} contended]", r.line));
    }
    if rows.len() > 10 {
        s.push_str(" ...");
    }
    s + "\n"
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
    s.push_str(&diff_sheet(d, top).text());
    if d.rows.len() > top {
        s.push_str(&format!(
            "({} more matched row(s); --top N or --json)\n",
            d.rows.len() - top
        ));
    }
    s.push_str(&unmatched(&d.unmatched_base, "base"));
    s.push_str(&unmatched(&d.unmatched_patched, "patched"));
    s.push_str(
        "ratio = base / patched; ~ = difference within the rounding of perf's printed values\n",
    );
    s
}
