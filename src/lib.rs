//! lockcast: Linux kernel lock-contention captures in, tables, comparisons and what-if
//! predictions out.
//!
//! Data flows one way: [`lockcast_parsers`] turns text into typed records, [`frames`] turns
//! records into polars DataFrames (one documented schema per table), [`analyses`] turn frames
//! into summaries and comparisons, and [`output`] writes CSV / Parquet / JSON / terminal tables.
//! [`input`] opens files, stdin and gzip/zstd streams, and [`error`] carries the file and line
//! of every failure.
#![deny(clippy::unwrap_used, clippy::expect_used)]

pub mod analyses;
pub mod capture;
pub mod duration;
pub mod error;
pub mod frames;
pub mod ingest;
pub mod input;
pub mod output;
pub mod plots;
pub mod record;
pub mod stats;
pub mod units;
pub mod whatif;

pub use error::{Error, Result};
pub use lockcast_parsers as parsers;
