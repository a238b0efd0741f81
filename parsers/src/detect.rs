//! The table of input formats, and detection from the first bytes of an input.
//!
//! [`FORMATS`] is the one list of what this crate reads: each entry names the format, says what
//! kind of records it holds ([`Content`]), how to recognise it, and (for event traces) how to
//! open a reader and where a record may start. A new format is one parser module and one entry
//! here; everything else (the CLI's `--input-format`, the `lockcast` crate's capture opening and
//! table list) is derived from this table.
//!
//! Detection: a format with a binary `magic` wins when the input starts with it; otherwise each
//! line is offered to every format's `sniff`, in table order, and the format whose lines show up
//! first wins. `perf lock` tables may sit after pages of mail prose, so detection looks at up to
//! [`SNIFF_LINES`] lines.

use std::io::BufRead;

use serde::Serialize;

use crate::error::Error;
use crate::event::{Event, EventRead};
use crate::lines::ReaderOptions;
use crate::{ftrace, klockstat, lock_stat, perf_data, perf_lock, perf_report, perf_script};

/// How many lines detection may look at before giving up.
pub const SNIFF_LINES: usize = 2000;

/// The formats this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
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
    /// A `perf.data` file from `perf record` (file or pipe mode).
    PerfData,
    /// `/proc/lock_stat` (`CONFIG_LOCK_STAT`), possibly inside a mail.
    LockStat,
    /// `klockstat` (bcc or libbpf-tools).
    Klockstat,
}

/// What an input of a format holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// `perf lock` tables (rows already aggregated by perf).
    LockTables,
    /// A stream of events ([`Event`]), tracepoints and samples.
    Events,
    /// A `perf report` call-graph tree.
    Callgraph,
}

/// Opens an event reader over an input (formats whose [`Content`] is `Events`).
pub type OpenEvents =
    for<'a> fn(Box<dyn BufRead + Send + 'a>, &ReaderOptions) -> Box<dyn EventRead + Send + 'a>;

/// One row of the format table.
#[derive(Clone, Copy)]
pub struct FormatInfo {
    /// The format.
    pub format: Format,
    /// Name on the command line (`--input-format perf-lock`) and in messages.
    pub name: &'static str,
    /// One line for `--help`.
    pub help: &'static str,
    /// What its inputs hold.
    pub content: Content,
    /// Bytes a file of this format starts with, for binary formats.
    pub magic: Option<&'static [u8]>,
    /// Is this text line characteristic of the format?
    pub sniff: Option<fn(&str) -> bool>,
    /// Event readers: open one.
    pub open_events: Option<OpenEvents>,
    /// Event text that can be cut into pieces for parallel parsing: may a record start at this
    /// line? `None`: the input is read by one reader.
    pub starts_record: Option<fn(&str) -> bool>,
    /// Its events can carry call chains (samples): the `samples` table exists for it.
    pub call_chains: bool,
}

impl std::fmt::Debug for FormatInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FormatInfo")
            .field("name", &self.name)
            .field("content", &self.content)
            .finish_non_exhaustive()
    }
}

fn open_ftrace<'a>(
    r: Box<dyn BufRead + Send + 'a>,
    o: &ReaderOptions,
) -> Box<dyn EventRead + Send + 'a> {
    Box::new(ftrace::Reader::new(r, o))
}

fn open_perf_script<'a>(
    r: Box<dyn BufRead + Send + 'a>,
    o: &ReaderOptions,
) -> Box<dyn EventRead + Send + 'a> {
    Box::new(perf_script::Reader::new(r, o))
}

fn open_perf_data<'a>(
    r: Box<dyn BufRead + Send + 'a>,
    o: &ReaderOptions,
) -> Box<dyn EventRead + Send + 'a> {
    Box::new(perf_data::Reader::new(r, o))
}

/// Every format, in detection order (a line that two formats' sniffers accept belongs to the
/// earlier one: a `perf lock` header is never an ftrace line, a `perf report` header line is
/// tried before the looser event formats).
pub const FORMATS: &[FormatInfo] = &[
    FormatInfo {
        format: Format::PerfLock,
        name: "perf-lock",
        help: "perf lock report / contention / info text, also inside a mail",
        content: Content::LockTables,
        magic: None,
        sniff: Some(perf_lock::sniff),
        open_events: None,
        starts_record: None,
        call_chains: false,
    },
    FormatInfo {
        format: Format::LockStat,
        name: "lock-stat",
        help: "/proc/lock_stat (lock classes with wait and hold times), also inside a mail",
        content: Content::LockTables,
        magic: None,
        sniff: Some(lock_stat::sniff),
        open_events: None,
        starts_record: None,
        call_chains: false,
    },
    FormatInfo {
        format: Format::Klockstat,
        name: "klockstat",
        help: "klockstat from bcc (raw ns) or libbpf-tools (times with units): acquire and hold tables",
        content: Content::LockTables,
        magic: None,
        sniff: Some(klockstat::sniff),
        open_events: None,
        starts_record: None,
        call_chains: false,
    },
    FormatInfo {
        format: Format::PerfReport,
        name: "perf-report",
        help: "perf report --stdio (the callgraph table)",
        content: Content::Callgraph,
        magic: None,
        sniff: Some(perf_report::sniff),
        open_events: None,
        starts_record: None,
        call_chains: false,
    },
    FormatInfo {
        format: Format::Ftrace,
        name: "ftrace",
        help: "raw ftrace text or trace-cmd report (contention_begin/end become waits)",
        content: Content::Events,
        magic: None,
        sniff: Some(ftrace::sniff),
        open_events: Some(open_ftrace),
        starts_record: Some(ftrace::starts_record),
        call_chains: false,
    },
    FormatInfo {
        format: Format::PerfScript,
        name: "perf-script",
        help: "perf script text (tracepoints and samples, with call chains)",
        content: Content::Events,
        magic: None,
        sniff: Some(perf_script::sniff),
        open_events: Some(open_perf_script),
        starts_record: Some(perf_script::starts_record),
        call_chains: true,
    },
    FormatInfo {
        format: Format::PerfData,
        name: "perf-data",
        help: "a perf.data file from perf record (file or pipe mode; tracepoints decoded from its tracing data)",
        content: Content::Events,
        magic: Some(perf_data::MAGIC),
        sniff: None,
        open_events: Some(open_perf_data),
        starts_record: None,
        call_chains: true,
    },
];

impl Format {
    /// This format's row of [`FORMATS`].
    pub fn info(self) -> &'static FormatInfo {
        // every variant has a row (checked by a test)
        FORMATS
            .iter()
            .find(|i| i.format == self)
            .unwrap_or(&FORMATS[0])
    }

    /// Name used on the command line (`--input-format perf-lock`).
    pub fn as_str(self) -> &'static str {
        self.info().name
    }

    /// The format named `name` on the command line.
    pub fn from_name(name: &str) -> Option<Self> {
        FORMATS.iter().find(|i| i.name == name).map(|i| i.format)
    }

    /// What its inputs hold.
    pub fn content(self) -> Content {
        self.info().content
    }

    /// Read a whole input of a [`Content::LockTables`] format into its tables (`perf lock`
    /// text for every other format, which the caller never passes).
    pub fn parse_tables<R: BufRead>(
        self,
        r: R,
        opts: &ReaderOptions,
    ) -> Result<perf_lock::Parsed, Error> {
        match self {
            Format::LockStat => lock_stat::parse_all(r, opts),
            Format::Klockstat => klockstat::parse_all(r, opts),
            _ => perf_lock::parse_all(r, opts),
        }
    }

    /// Open an event reader over `r`; `None` when the format holds no events.
    pub fn open_events<'a>(
        self,
        r: Box<dyn BufRead + Send + 'a>,
        opts: &ReaderOptions,
    ) -> Option<Box<dyn EventRead + Send + 'a>> {
        self.info().open_events.map(|open| open(r, opts))
    }
}

/// Guess the format of text from its first lines (a peeked prefix of the input).
///
/// Returns `None` when no line is characteristic of any format.
pub fn detect_lines<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<Format> {
    for line in lines.into_iter().take(SNIFF_LINES) {
        for info in FORMATS {
            if info.sniff.is_some_and(|s| s(line)) {
                return Some(info.format);
            }
        }
    }
    None
}

/// Guess the format from the first bytes of an input: a binary magic first, then the lines.
pub fn detect_bytes(prefix: &[u8]) -> Option<Format> {
    if let Some(i) = FORMATS
        .iter()
        .find(|i| i.magic.is_some_and(|m| prefix.starts_with(m)))
    {
        return Some(i.format);
    }
    let text = String::from_utf8_lossy(prefix);
    detect_lines(text.lines())
}

/// Guess the format from a buffered reader without consuming it: looks at what `fill_buf`
/// returns (at least the first buffer, typically 64 KiB).
pub fn detect<R: BufRead>(r: &mut R) -> std::io::Result<Option<Format>> {
    let buf = r.fill_buf()?;
    Ok(detect_bytes(buf))
}

/// A reader of events: what every event format's `Reader` offers, so callers need not know
/// which format they read.
impl<R: BufRead> EventRead for ftrace::Reader<R> {
    fn next_event(&mut self) -> Result<Option<Event>, Error> {
        ftrace::Reader::next_event(self)
    }
    fn diagnostics(&self) -> &crate::Diagnostics {
        ftrace::Reader::diagnostics(self)
    }
}

impl<R: BufRead> EventRead for perf_script::Reader<R> {
    fn next_event(&mut self) -> Result<Option<Event>, Error> {
        perf_script::Reader::next_event(self)
    }
    fn diagnostics(&self) -> &crate::Diagnostics {
        perf_script::Reader::diagnostics(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_magic_wins_over_the_lines_after_it() {
        // the fuzzer's case: perf.data's magic followed by a perf lock header line
        let data =
            b"PERFILE2 contended   total wait     max wait     avg wait         type   caller\n";
        let mut r: &[u8] = data;
        assert_eq!(detect(&mut r).ok().flatten(), Some(Format::PerfData));
        assert_eq!(detect_bytes(data), Some(Format::PerfData));
        assert_eq!(
            detect_lines(String::from_utf8_lossy(&data[8..]).lines()),
            Some(Format::PerfLock)
        );
    }

    #[test]
    fn every_format_has_one_row_and_a_way_to_be_recognised() {
        for f in [
            Format::PerfLock,
            Format::Ftrace,
            Format::PerfScript,
            Format::PerfReport,
            Format::PerfData,
            Format::LockStat,
            Format::Klockstat,
        ] {
            let rows: Vec<_> = FORMATS.iter().filter(|i| i.format == f).collect();
            assert_eq!(rows.len(), 1, "{f:?}");
            assert!(rows[0].magic.is_some() || rows[0].sniff.is_some());
            assert_eq!(Format::from_name(f.as_str()), Some(f));
            assert_eq!(
                rows[0].open_events.is_some(),
                rows[0].content == Content::Events
            );
        }
    }
}
