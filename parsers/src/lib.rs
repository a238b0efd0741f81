//! Streaming parsers for the text that Linux tracing tools print: `perf lock`
//! report/contention/info tables (also pasted inside mails), `/proc/lock_stat` and `klockstat`
//! tables, raw ftrace text, `trace-cmd report`, `perf script` and `perf report --stdio` call
//! graphs.
//!
//! Every format module has the same shape: a `Reader<R: BufRead>` that yields typed records one
//! at a time (never holding the whole input), `Options` with documented defaults, and a `sniff`
//! function used by [`detect`]. Errors carry the 1-based line and column ([`Location`]).
//! This crate does not depend on polars: records become tables in the `lockcast` crate.
//!
//! ```
//! use lockcast_parsers::perf_lock;
//! let text = " contended   total wait     max wait     avg wait         type   caller\n\n\
//!          6      6.03 s       6.03 s       1.00 s      spinlock   rcu_core+0xec\n";
//! let tables = perf_lock::parse_all(text.as_bytes(), &perf_lock::Options::default()).unwrap();
//! assert_eq!(tables.tables[0].rows[0].contended, Some(6));
//! assert_eq!(tables.tables[0].rows[0].total_wait.unwrap().ns, 6_030_000_000);
//! ```
#![deny(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod detect;
pub mod error;
pub mod event;
pub mod ftrace;
pub mod klockstat;
pub mod lines;
pub mod lock_stat;
pub mod payload;
pub mod perf_data;
pub mod perf_lock;
pub mod perf_report;
pub mod perf_script;
pub mod prefault;
pub mod time;
pub mod truncation;

#[cfg(test)]
mod test_strings;

pub use error::{Diagnostic, Diagnostics, Error, LineError, Location};
