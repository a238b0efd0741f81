//! Writing tables: CSV / Parquet / JSON files (atomically: a failed run leaves no half-written
//! file), and text tables for terminals and mail.

pub mod ab_runs;
mod dict_pages;
pub mod flamegraph;
pub mod formats;
mod list_pages;
pub mod perf_text;
pub mod perfetto;
pub mod render;
pub mod row_groups;
pub mod sheet;
pub mod stream;
pub mod table;
pub mod target;
pub mod terminal;
pub mod whatif;
pub mod write;
