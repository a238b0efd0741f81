//! Format auto-detection from the first lines of an input.
//!
//! Each format module's `sniff(line)` says whether a line is characteristic of it; the format
//! whose lines show up first wins. `perf lock` tables may sit after pages of mail prose, so
//! detection looks at up to [`SNIFF_LINES`] lines.

use std::io::BufRead;

use serde::Serialize;

/// How many lines detection may look at before giving up.
pub const SNIFF_LINES: usize = 2000;

/// The text formats this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `perf lock report` / `contention` / `info` tables, possibly inside a mail.
    PerfLock,
    /// Raw ftrace text or `trace-cmd report`.
    Ftrace,
    /// `perf script`.
    PerfScript,
    /// `perf report --stdio`.
    PerfReport,
}

impl Format {
    /// Name used on the command line (`--format perf-lock`).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::PerfLock => "perf-lock",
            Format::Ftrace => "ftrace",
            Format::PerfScript => "perf-script",
            Format::PerfReport => "perf-report",
        }
    }
}

/// Guess the format of text from its first lines (a peeked prefix of the input).
///
/// Returns `None` when no line is characteristic of any format.
pub fn detect_lines<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<Format> {
    for line in lines.into_iter().take(SNIFF_LINES) {
        if crate::perf_lock::sniff(line) {
            return Some(Format::PerfLock);
        }
        if crate::perf_report::sniff(line) {
            return Some(Format::PerfReport);
        }
        if crate::ftrace::sniff(line) {
            return Some(Format::Ftrace);
        }
        if crate::perf_script::sniff(line) {
            return Some(Format::PerfScript);
        }
    }
    None
}

/// Guess the format from a buffered reader without consuming it: looks at what `fill_buf`
/// returns (at least the first buffer, typically 64 KiB).
pub fn detect<R: BufRead>(r: &mut R) -> std::io::Result<Option<Format>> {
    let buf = r.fill_buf()?;
    let text = String::from_utf8_lossy(buf);
    Ok(detect_lines(text.lines()))
}
