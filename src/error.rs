//! The library's error: every variant says which file it concerns.
//!
//! `Display` is `path:line:col: format: message`, then the offending line on the next line, so
//! an editor or a terminal can jump to it.

use std::fmt;
use std::io;

use lockcast_parsers::Error as ParseError;

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input could not be parsed.
    #[error("{}", parse_message(.path, .source))]
    Parse {
        /// File as given on the command line (`-` for stdin).
        path: String,
        /// The parser's error.
        source: ParseError,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// File concerned.
        path: String,
        /// The OS error.
        source: io::Error,
    },
    /// A request does not fit the input (e.g. `file#5` when the file has 2 tables).
    #[error("{0}")]
    Input(String),
    /// The options given do not fit together.
    #[error("{0}")]
    Usage(String),
    /// A DataFrame operation failed (a bug or an unsupported input shape).
    #[error("{context}: {source}")]
    Polars {
        /// What lockcast was doing.
        context: String,
        /// polars' error.
        source: polars::error::PolarsError,
    },
    /// Drawing or encoding a chart failed (a bug: charts are drawn in memory).
    #[error("{0}")]
    Plot(String),
    /// `lockcast record` could not make the capture: not root, perf or a tracepoint missing,
    /// the workload or perf failed.
    #[error("{0}")]
    Record(String),
    /// Interrupted (Ctrl-C) after putting back what was changed.
    #[error("{0}")]
    Interrupted(String),
}

fn parse_message(path: &str, e: &ParseError) -> String {
    match e {
        ParseError::Malformed {
            format,
            location,
            kind,
            line_text,
        } => format!("{path}:{location}: {format}: {kind}\n  | {line_text}"),
        ParseError::Io(io) => format!("{path}: read error: {io}"),
        other => format!("{path}: {other}"),
    }
}

impl Error {
    /// Attach a path to a parser error.
    pub fn parse(path: &str, source: ParseError) -> Self {
        match source {
            // An I/O failure inside a parser is an I/O error of that file.
            ParseError::Io(e) => Error::Io {
                path: path.to_string(),
                source: e,
            },
            source => Error::Parse {
                path: path.to_string(),
                source,
            },
        }
    }

    /// Attach a path to an I/O error.
    pub fn io(path: impl fmt::Display, source: io::Error) -> Self {
        Error::Io {
            path: path.to_string(),
            source,
        }
    }

    /// Wrap a polars error with what was being done.
    pub fn polars(context: impl Into<String>, source: polars::error::PolarsError) -> Self {
        Error::Polars {
            context: context.into(),
            source,
        }
    }

    /// Exit code class for scripts: see `lockcast --help`.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Parse { .. } | Error::Input(_) => 3,
            Error::Io { .. } => 4,
            Error::Usage(_) => 2,
            Error::Polars { .. } | Error::Plot(_) => 1,
            Error::Record(_) => 5,
            Error::Interrupted(_) => 130,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A truncated mapped input ends the process from its signal handler, with the exit code
    /// the parsers crate names: it must be the one of I/O errors that `--help` documents.
    #[test]
    fn a_truncated_input_exits_as_an_io_error() {
        let io = Error::io("x", std::io::Error::other("x"));
        assert_eq!(
            i32::from(io.exit_code()),
            lockcast_parsers::truncation::EXIT_CODE
        );
    }
}
