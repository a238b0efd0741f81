//! The one integration-test target (every extra target would link polars again).

mod ab_runs;
mod anytrace;
mod captures;
mod cli;
mod common;
mod dataset;
mod determinism;
mod fbatch;
mod flamegraph;
mod formats;
mod golden;
mod ingest;
mod lazyfree;
mod limits;
mod lock_stat;
mod lock_stat_since;
mod mutation;
mod perfdata;
mod perfdata_recipes;
mod perfetto;
mod plots;
mod record;
mod seed;
mod traces;
mod usability;
mod whatif;
