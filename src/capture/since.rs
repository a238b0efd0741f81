//! `AFTER --since BEFORE`: two `/proc/lock_stat` snapshots read as the one table of the
//! interval between them ([`crate::analyses::since`] does the arithmetic).

use lockcast_parsers::detect::Format;
use lockcast_parsers::perf_lock::Table;

use super::load::{frame_of, load, Loaded, OneTable};
use super::OpenOptions;
use crate::analyses::since::{interval, not_cumulative, Snapshot};
use crate::analyses::stat_row;
use crate::error::{Error, Result};

/// The interval of two snapshots.
pub struct Since {
    /// The later snapshot as loaded, its one table replaced by the interval's.
    pub loaded: Loaded,
    /// The earlier one: its path, and the malformed lines skipped in it (lenient).
    pub before: String,
    /// Malformed lines skipped in the earlier one (lenient).
    pub before_diagnostics: lockcast_parsers::Diagnostics,
}

/// Read `after` and `before` (each `path` or `path#N`) as the interval between them. Only
/// `/proc/lock_stat` counts since boot; any other format is refused.
pub fn load_since(after: &str, before: &str, opts: &OpenOptions) -> Result<Since> {
    let mut a = load(after, opts)?;
    let b = load(before, opts)?;
    for l in [&a, &b] {
        if l.format != Format::LockStat {
            return Err(not_cumulative(&l.spec.display(), l.format.as_str()));
        }
    }
    let (ai, at) = pick(&a)?;
    let (bi, bt) = pick(&b)?;
    let an = format!("{}#{ai}", a.spec.path);
    let bn = format!("{}#{bi}", b.spec.path);
    let t = interval(
        Snapshot {
            name: &an,
            table: at,
        },
        Snapshot {
            name: &bn,
            table: bt,
        },
    )?;
    a.spec.block = Some(ai);
    a.parsed.tables = vec![t];
    Ok(Since {
        loaded: a,
        before: b.spec.path,
        before_diagnostics: b.diagnostics,
    })
}

/// The table `#N` names, or the only one.
fn pick(l: &Loaded) -> Result<(u32, &Table)> {
    let tables = &l.parsed.tables;
    let found = match l.spec.block {
        Some(b) => tables.iter().find(|t| t.header.index == b),
        None if tables.len() == 1 => tables.first(),
        None => {
            return Err(Error::Input(format!(
                "{p}: holds {n} /proc/lock_stat tables; --since needs one snapshot on each side: \
                 pick it with {p}#N (1..{n})",
                p = l.spec.path,
                n = tables.len()
            )))
        }
    };
    found.map(|t| (t.header.index, t)).ok_or_else(|| {
        Error::Input(format!(
            "{}: the file has {} table(s); use #1..#{}",
            l.spec.display(),
            tables.len(),
            tables.len()
        ))
    })
}

/// The interval as the one table `diff` compares, named `AFTER#N`, and the earlier
/// snapshot's path with the lines skipped in it (lenient), for the caller to report.
pub fn one_table_since(
    after: &str,
    before: &str,
    opts: &OpenOptions,
) -> Result<(OneTable, String, lockcast_parsers::Diagnostics)> {
    let s = load_since(after, before, opts)?;
    let df = frame_of(std::slice::from_ref(&s.loaded))?;
    let t = OneTable {
        name: s.loaded.spec.display(),
        rows: stat_row::rows(&df)?,
        diagnostics: s.loaded.diagnostics,
    };
    Ok((t, s.before, s.before_diagnostics))
}
