//! Errors of the parsers crate: one enum for the whole crate, one variant per failure.
//!
//! Messages follow "expected X, got Y" with the offending value quoted, so the CLI can print
//! `path:line:col: format: message` followed by the line itself.

use std::fmt;
use std::io;

/// Where in the input a problem was found. Lines and columns are 1-based, as editors show them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Location {
    /// 1-based line number in the (decompressed) input.
    pub line: u64,
    /// 1-based byte column in that line; 1 when the whole line is at fault.
    pub col: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// What is wrong with one input line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// A field did not have the expected shape.
    #[error("expected {what}, got \"{got}\"")]
    Expected {
        /// What the grammar wanted at this point, e.g. `"a time with unit (ns us ms s m h)"`.
        what: &'static str,
        /// The text found instead (cut to 60 characters).
        got: String,
    },
    /// A table row has fewer or more cells than its header announced.
    #[error(
        "expected {expected} columns as announced by the header at line {header_line}, got {got}"
    )]
    ColumnCount {
        /// Number of value cells the header announced.
        expected: usize,
        /// Number of cells found.
        got: usize,
        /// Line of the header this row belongs to.
        header_line: u64,
    },
    /// The line is not valid UTF-8 (mail clients and `cat` of binary files produce this).
    #[error("expected UTF-8 text, got invalid bytes at byte {byte}")]
    InvalidUtf8 {
        /// 0-based byte offset of the first invalid byte.
        byte: usize,
    },
    /// The line is longer than the reader's limit; it was skipped without being buffered.
    #[error("expected a line of at most {max} bytes, got {len} bytes")]
    LineTooLong {
        /// Bytes in the line (counted while skipping it).
        len: u64,
        /// The limit in force (`LineReader::max_line_len`).
        max: usize,
    },
    /// A number does not fit the type that holds it.
    #[error("expected a number that fits in 64 bits, got \"{got}\"")]
    Overflow {
        /// The digits found.
        got: String,
    },
}

impl LineError {
    /// Shorthand for [`LineError::Expected`], cutting `got` to a readable length.
    pub fn expected(what: &'static str, got: &str) -> Self {
        LineError::Expected {
            what,
            got: cut(got, 60),
        }
    }
}

/// A malformed line together with where it was found; kept in [`Diagnostics`] in lenient mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Line and column of the problem.
    pub location: Location,
    /// The problem.
    pub kind: LineError,
    /// The offending line, cut to 120 characters.
    pub line_text: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.kind)
    }
}

/// Lines skipped in lenient mode: the total and the first [`Diagnostics::KEEP`] in detail.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// Number of lines skipped.
    pub skipped: u64,
    /// The first few skipped lines, for the report.
    pub first: Vec<Diagnostic>,
    /// Things the reader wants the user to know that are not skipped lines (which kallsyms
    /// named a perf.data file's frames, events the recording lost).
    pub notes: Vec<String>,
}

impl Diagnostics {
    /// How many diagnostics are kept in detail; the rest are only counted.
    pub const KEEP: usize = 20;

    /// Count one skipped line, keeping its detail while there is room.
    pub fn push(&mut self, d: Diagnostic) {
        self.skipped += 1;
        if self.first.len() < Self::KEEP {
            self.first.push(d);
        }
    }

    /// Add another set (e.g. from a second file or worker).
    pub fn merge(&mut self, other: Diagnostics) {
        self.skipped += other.skipped;
        self.notes.extend(other.notes);
        for d in other.first {
            if self.first.len() < Self::KEEP {
                self.first.push(d);
            }
        }
    }
}

/// Error of any reader in this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the input failed.
    #[error("read error: {0}")]
    Io(#[from] io::Error),
    /// A line could not be parsed (in strict mode, the first such line).
    #[error("{location}: {format}: {kind}")]
    Malformed {
        /// Format being parsed, e.g. `"perf lock"`.
        format: &'static str,
        /// Where.
        location: Location,
        /// What.
        kind: LineError,
        /// The line (cut to 120 characters).
        line_text: String,
    },
    /// A binary input (perf.data) is damaged or in a variant not read: what was expected at
    /// which byte offset of the (decompressed) input.
    #[error("byte {offset}: {format}: {what}")]
    Binary {
        /// Format being read, e.g. `"perf.data"`.
        format: &'static str,
        /// 0-based byte offset of the problem.
        offset: u64,
        /// What was expected and what was found.
        what: String,
    },
    /// The input is in none of the formats this crate reads.
    #[error("unknown format: no perf lock table, ftrace/trace-cmd event line, perf script sample or perf report header found{}", hint(.first_line))]
    UnknownFormat {
        /// The first non-blank line, to help the user see what was given.
        first_line: String,
    },
}

fn hint(first: &str) -> String {
    if first.is_empty() {
        " (the input is empty or holds only blank lines)".to_string()
    } else {
        format!(" (first line: \"{}\")", cut(first, 80))
    }
}

impl Error {
    /// The location of a malformed line, if this error has one.
    pub fn location(&self) -> Option<Location> {
        match self {
            Error::Malformed { location, .. } => Some(*location),
            _ => None,
        }
    }

    /// Build a [`Error::Malformed`] from a diagnostic.
    pub fn malformed(format: &'static str, d: Diagnostic) -> Self {
        Error::Malformed {
            format,
            location: d.location,
            kind: d.kind,
            line_text: d.line_text,
        }
    }
}

/// Cut `s` to at most `max` characters (on a char boundary), marking the cut with `...`.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}
