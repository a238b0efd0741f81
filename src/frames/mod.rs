//! Records → polars DataFrames. One schema per table, and every column name lives in
//! [`schema`]; nothing else in the crate spells a column name.

pub mod callgraph;
pub mod contention;
pub mod events;
pub mod lock_stats;
pub mod schema;
pub(crate) mod str_lists;
pub mod table;

use polars::prelude::*;

use crate::error::{Error, Result};

/// Read a `UInt64` column into Rust values.
pub fn u64s(df: &DataFrame, name: &str) -> Result<Vec<Option<u64>>> {
    let c = df
        .column(name)
        .and_then(|c| c.u64())
        .map_err(|e| Error::polars(format!("reading column {name}"), e))?;
    Ok(c.iter().collect())
}

/// Read an `Int64` column into Rust values.
pub fn i64s(df: &DataFrame, name: &str) -> Result<Vec<Option<i64>>> {
    let c = df
        .column(name)
        .and_then(|c| c.i64())
        .map_err(|e| Error::polars(format!("reading column {name}"), e))?;
    Ok(c.iter().collect())
}

/// Read a `UInt32` column into Rust values.
pub fn u32s(df: &DataFrame, name: &str) -> Result<Vec<Option<u32>>> {
    let c = df
        .column(name)
        .and_then(|c| c.u32())
        .map_err(|e| Error::polars(format!("reading column {name}"), e))?;
    Ok(c.iter().collect())
}

/// A `String` column, borrowed: for a pass over its values without a `String` per row.
pub fn str_col<'a>(df: &'a DataFrame, name: &str) -> Result<&'a StringChunked> {
    df.column(name)
        .and_then(|c| c.str())
        .map_err(|e| Error::polars(format!("reading column {name}"), e))
}

/// Read a `String` column into Rust values.
pub fn strs(df: &DataFrame, name: &str) -> Result<Vec<Option<String>>> {
    Ok(str_col(df, name)?
        .iter()
        .map(|s| s.map(str::to_string))
        .collect())
}
