//! Writing tables: CSV / Parquet / JSON files (atomically: a failed run leaves no half-written
//! file), and text tables for terminals and mail.

pub mod table;
pub mod write;
