//! `--lock`, `--caller`, `--type`: the row filter of `report`, `diff` and `plot`
//! ([`lockcast::analyses::filter`]); flatten [`FilterArgs`] into a command to give it them.

use clap::Args;

use lockcast::analyses::filter::RowFilter;
use lockcast::Error;

/// Row filters like perf lock contention's -L / -S / -Y.
#[derive(Debug, Clone, Default, Args)]
pub struct FilterArgs {
    /// Keep locks whose name, symbol or address contains TEXT, or matches /REGEX/
    /// (repeatable or comma-separated: any of them; like perf lock contention -L).
    #[arg(long = "lock", value_name = "TEXT|/REGEX/", value_delimiter = ',')]
    pub lock: Vec<String>,
    /// Keep rows whose caller (or any frame of their stack) contains TEXT or matches /REGEX/
    /// (like perf lock contention -S).
    #[arg(long = "caller", value_name = "TEXT|/REGEX/", value_delimiter = ',')]
    pub caller: Vec<String>,
    /// Keep lock types (spinlock, rwlock, rwsem, mutex, ...) containing TEXT or matching
    /// /REGEX/ (like perf lock contention -Y); rows without a type are dropped.
    #[arg(long = "type", value_name = "TEXT|/REGEX/", value_delimiter = ',')]
    pub lock_type: Vec<String>,
}

impl FilterArgs {
    /// The filter (an invalid /REGEX/ is a usage error).
    pub fn filter(&self) -> Result<RowFilter, Error> {
        RowFilter::new(&self.lock, &self.caller, &self.lock_type)
    }
}
