//! The one integration-test target (every extra target would link polars again).

mod ab_runs;
mod captures;
mod cli;
mod common;
mod dataset;
mod determinism;
mod fbatch;
mod formats;
mod golden;
mod ingest;
mod lazyfree;
mod limits;
mod mutation;
mod perfdata;
mod perfdata_recipes;
mod perfetto;
mod plots;
mod record;
mod seed;
mod traces;
mod whatif;
