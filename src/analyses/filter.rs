//! Row filters like perf lock's: `perf lock contention -L/--lock-filter` (lock names or
//! addresses), `-S/--callstack-filter` (a caller anywhere in the stack) and `-Y/--type-filter`
//! (lock types), for `report`, `diff` and `plot` (and anything else that has a lock, callers
//! and a type per row: a flame graph's stacks go through [`RowFilter::keep`]).
//!
//! perf matches exact names (and, for `-S`, a substring of a frame); here a value matches as a
//! case-sensitive substring, or as a regular expression when written `/RE/`. Several values
//! of one filter are alternatives; different filters must all match.

use polars::prelude::{BooleanChunked, DataFrame, NewChunkedArray};

use super::stat_row::StatRow;
use crate::error::{Error, Result};
use crate::frames::schema::lock_stats as c;
use crate::frames::strs;

/// One filter value: a substring, or `/RE/` a regular expression.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// Matches text containing it.
    Substring(String),
    /// Matches text the expression finds a match in.
    Regex(regex::Regex),
}

impl Pattern {
    /// `/RE/` → a regular expression (an invalid one is a usage error naming `what`), anything
    /// else a substring.
    pub fn parse(what: &str, s: &str) -> Result<Self> {
        match s.strip_prefix('/').and_then(|r| r.strip_suffix('/')) {
            Some(re) if s.len() >= 2 => regex::Regex::new(re)
                .map(Pattern::Regex)
                .map_err(|e| Error::Usage(format!("{what} {s}: not a regular expression: {e}"))),
            _ => Ok(Pattern::Substring(s.to_string())),
        }
    }

    /// Does `text` match?
    pub fn matches(&self, text: &str) -> bool {
        match self {
            Pattern::Substring(p) => text.contains(p.as_str()),
            Pattern::Regex(r) => r.is_match(text),
        }
    }
}

/// `--lock`, `--caller` and `--type`; an empty filter keeps everything.
#[derive(Debug, Clone, Default)]
pub struct RowFilter {
    /// Lock name, symbol or address (`perf lock contention -L`).
    pub lock: Vec<Pattern>,
    /// Caller, or any frame of the row's call stack (`-S`).
    pub caller: Vec<Pattern>,
    /// Lock type (`-Y`: spinlock, rwlock, rwsem, mutex, ...).
    pub lock_type: Vec<Pattern>,
}

fn any(pats: &[Pattern], texts: &[&str]) -> bool {
    pats.is_empty() || pats.iter().any(|p| texts.iter().any(|t| p.matches(t)))
}

impl RowFilter {
    /// From the command line's values (each `/RE/` or a substring).
    pub fn new(lock: &[String], caller: &[String], lock_type: &[String]) -> Result<Self> {
        let p = |what: &str, v: &[String]| -> Result<Vec<Pattern>> {
            v.iter().map(|s| Pattern::parse(what, s)).collect()
        };
        Ok(RowFilter {
            lock: p("--lock", lock)?,
            caller: p("--caller", caller)?,
            lock_type: p("--type", lock_type)?,
        })
    }

    /// Keeps everything?
    pub fn is_empty(&self) -> bool {
        self.lock.is_empty() && self.caller.is_empty() && self.lock_type.is_empty()
    }

    /// Keep a row whose lock is known by any of `locks` (name, symbol, address), whose callers
    /// (the caller, every frame of its stack) are `callers`, of type `lock_type`? A filter on
    /// something the row does not have (no type in a `perf lock report` table) drops it.
    pub fn keep(&self, locks: &[&str], callers: &[&str], lock_type: Option<&str>) -> bool {
        any(&self.lock, locks)
            && any(&self.caller, callers)
            && any(&self.lock_type, lock_type.as_slice())
    }

    /// [`keep`](Self::keep) for a typed row.
    pub fn keep_row(&self, r: &StatRow) -> bool {
        let locks: Vec<&str> = [&r.name, &r.symbol, &r.address]
            .into_iter()
            .filter_map(|x| x.as_deref())
            .collect();
        self.keep(
            &locks,
            r.caller.as_deref().as_slice(),
            r.lock_type.as_deref(),
        )
    }

    /// The rows of `rows` kept.
    pub fn rows(&self, rows: &[StatRow]) -> Vec<StatRow> {
        rows.iter().filter(|r| self.keep_row(r)).cloned().collect()
    }

    /// The rows of a `lock_stats` frame kept (every frame of its `stack` column counts as a
    /// caller too).
    pub fn frame(&self, df: &DataFrame) -> Result<DataFrame> {
        self.columns(df, &[c::NAME, c::SYMBOL, c::ADDRESS], c::CALLER, c::TYPE)
    }

    /// The waits of a `contention` frame kept (lock = its address, callers = its caller and
    /// stack): what `plot waits` and `plot timeline` draw.
    pub fn contention(&self, df: &DataFrame) -> Result<DataFrame> {
        use crate::frames::schema::contention as w;
        self.columns(df, &[w::LOCK], w::CALLER, w::TYPE)
    }

    /// Rows of `df` kept, reading the lock from `locks`, the caller from `caller` (and the
    /// `stack` list column), the type from `ty`; missing columns count as empty.
    fn columns(&self, df: &DataFrame, locks: &[&str], caller: &str, ty: &str) -> Result<DataFrame> {
        if self.is_empty() {
            return Ok(df.clone());
        }
        let col = |n: &str| -> Result<Vec<Option<String>>> {
            if df.column(n).is_ok() {
                strs(df, n)
            } else {
                Ok(vec![None; df.height()])
            }
        };
        let lock_cols = locks.iter().map(|n| col(n)).collect::<Result<Vec<_>>>()?;
        let (caller, ty) = (col(caller)?, col(ty)?);
        let stack = stacks(df)?;
        let mask: Vec<bool> = (0..df.height())
            .map(|i| {
                let locks: Vec<&str> = lock_cols.iter().filter_map(|v| v[i].as_deref()).collect();
                let mut callers: Vec<&str> = caller[i].as_deref().into_iter().collect();
                callers.extend(stack[i].iter().map(String::as_str));
                self.keep(&locks, &callers, ty[i].as_deref())
            })
            .collect();
        df.filter(&BooleanChunked::from_slice("keep".into(), &mask))
            .map_err(|e| Error::polars("filtering lock_stats rows", e))
    }
}

/// The `stack` list column, row by row (empty where there is none).
fn stacks(df: &DataFrame) -> Result<Vec<Vec<String>>> {
    let Ok(col) = df.column(c::STACK) else {
        return Ok(vec![Vec::new(); df.height()]);
    };
    let lists = col
        .list()
        .map_err(|e| Error::polars("reading column stack", e))?;
    Ok(lists
        .amortized_iter()
        .map(|s| {
            s.and_then(|s| {
                s.as_ref()
                    .str()
                    .ok()
                    .map(|ca| ca.iter().flatten().map(str::to_string).collect())
            })
            .unwrap_or_default()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substring_and_regex() {
        let f = RowFilter::new(&["lru".into()], &["/^folio_batch/".into()], &[]).unwrap();
        assert!(f.keep(&["lruvec->lru_lock"], &["folio_batch_move_lru+0x1"], None));
        assert!(!f.keep(&["zone->lock"], &["folio_batch_move_lru+0x1"], None));
        // anchored: a frame that only contains it does not match
        assert!(!f.keep(&["lru_lock"], &["x_folio_batch_move_lru"], None));
        let t = RowFilter::new(&[], &[], &["spinlock".into()]).unwrap();
        assert!(!t.keep(&["a"], &[], None), "no type: dropped");
        assert!(t.keep(&["a"], &[], Some("spinlock")));
        assert!(RowFilter::new(&["/(/".into()], &[], &[]).is_err());
        // "/" alone is a substring
        assert!(RowFilter::new(&["/".into()], &[], &[])
            .unwrap()
            .keep(&["a/b"], &[], None));
    }
}
