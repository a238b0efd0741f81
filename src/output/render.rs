//! Picking the renderer of `report` and `diff` for a `--format`: the terminal table and JSON
//! ([`super::terminal`]) or the Markdown, CSV and perf-layout text ([`super::formats`]).

use super::formats::{self, Format};
use super::terminal;
use crate::analyses::diff::Diff;
use crate::analyses::report::TableSummary;

/// `report`'s output in `format`.
pub fn render_report(summaries: &[TableSummary], format: Format) -> String {
    match format {
        Format::Json => {
            let v: Vec<serde_json::Value> = summaries.iter().map(terminal::report_json).collect();
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
        Format::Table => summaries.iter().map(terminal::report_table).collect(),
        Format::Markdown => formats::report_markdown(summaries),
        Format::Text => formats::report_text(summaries),
        Format::Csv => formats::report_csv(summaries),
    }
}

/// `diff`'s output in `format` (`top` rows in the text formats; all rows in JSON and CSV).
pub fn render_diff(d: &Diff, top: usize, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(d).unwrap_or_default() + "\n",
        Format::Table => terminal::diff_table(d, top),
        Format::Markdown => formats::diff_markdown(d, top),
        Format::Text => formats::diff_text(d, top),
        Format::Csv => formats::diff_csv(d),
    }
}
