//! Frames in, summaries out. One file per analysis.

pub mod ab_runs;
pub mod diff;
pub mod filter;
pub mod flame;
pub mod report;
pub mod since;
pub mod stat_row;
