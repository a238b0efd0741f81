//! The one integration-test target (every extra target would link polars again).

mod captures;
mod cli;
mod common;
mod dataset;
mod formats;
mod ingest;
mod lazyfree;
mod plots;
mod mutation;
mod seed;
mod traces;
mod whatif;
