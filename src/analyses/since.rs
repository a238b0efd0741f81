//! Two `/proc/lock_stat` snapshots of one machine → the numbers of the interval between them.
//!
//! `/proc/lock_stat` counts since boot, or since the last `echo 0 > /proc/lock_stat`
//! (`kernel/locking/lockdep_proc.c`, `lock_stats_clear`): every counter only grows. A user who
//! saves it before and after a workload wants AFTER − BEFORE, per lock class and read/write
//! state (the `-W:` / `-R:` rows are separate counters, and the `#N` name version and `/N`
//! subclass name separate classes, so the key is the full printed name plus the state):
//!
//! - counters are subtracted: contentions, acquisitions, con-/acq-bounces, wait and hold
//!   totals, and each contention/contending point's count (a point is keyed by its block and
//!   `sym+off/len`, stable within one boot; its `[<ip>]` is hashed by `%p` but also stable);
//! - the averages are recomputed from the differences (total / count);
//! - min and max cannot be subtracted (the interval's extreme may lie before BEFORE): `None`;
//! - a class (or point) only in AFTER first showed up in the interval: taken whole;
//! - a class only in BEFORE is left out (a pasted table is often cut after the top rows);
//! - a counter that went down means the two are not of one boot and reset: an error naming
//!   both snapshots, the class and the counter.
//!
//! Printed times are rounded, but rounding is monotone, so a printed decrease is a true one;
//! the difference's uncertainty is the sum of both halves-widths.

use std::collections::HashMap;

use lockcast_parsers::perf_lock::{CallPoint, Hold, Mode, PointKind, Row, Table};
use lockcast_parsers::time::TimeNs;

use crate::error::{Error, Result};

/// One snapshot: its table and how it is named in errors (`path` or `path#N`).
#[derive(Clone, Copy)]
pub struct Snapshot<'a> {
    /// `path` or `path#N`, as given.
    pub name: &'a str,
    /// The `/proc/lock_stat` table.
    pub table: &'a Table,
}

/// The interval between `before` and `after`: `after`'s table with every counter reduced by
/// `before`'s (see the module doc). Both must be `/proc/lock_stat` tables.
pub fn interval(after: Snapshot<'_>, before: Snapshot<'_>) -> Result<Table> {
    for s in [after, before] {
        if s.table.header.mode != Mode::LockStat {
            return Err(not_cumulative(s.name, s.table.header.mode.as_str()));
        }
    }
    let mut earlier: HashMap<(&str, Option<&str>), &Row> = HashMap::new();
    for r in &before.table.rows {
        earlier
            .entry((r.name.as_deref().unwrap_or(""), r.rw.as_deref()))
            .or_insert(r);
    }
    let mut out = after.table.clone();
    for r in &mut out.rows {
        let key = (r.name.as_deref().unwrap_or(""), r.rw.as_deref());
        if let Some(b) = earlier.get(&key) {
            let d = Down {
                after,
                before,
                row: &*r,
            };
            let sub = subtract(r, b, &d)?;
            *r = sub;
        }
    }
    Ok(out)
}

/// The error for `--since` on a table that is not cumulative.
pub fn not_cumulative(name: &str, what: &str) -> Error {
    Error::Input(format!(
        "{name}: --since subtracts two /proc/lock_stat snapshots, which count since boot; \
         this is a {what} table, which counts one recording only: compare two of those with \
         `lockcast diff` instead"
    ))
}

/// What names a counter that went down.
struct Down<'a> {
    after: Snapshot<'a>,
    before: Snapshot<'a>,
    row: &'a Row,
}

impl Down<'_> {
    fn error(&self, counter: &str, a: String, b: String) -> Error {
        let r = self.row;
        let class = r.name.as_deref().unwrap_or("");
        let rw = r.rw.as_deref().map(|s| format!("-{s}")).unwrap_or_default();
        Error::Input(format!(
            "{after}: class {class}{rw} (line {line}): {counter} went down, from {b} in {before} \
             to {a}: the two are not snapshots of one boot (or /proc/lock_stat was reset \
             between them), so their difference means nothing",
            after = self.after.name,
            before = self.before.name,
            line = r.line,
        ))
    }

    fn count(&self, counter: &str, a: Option<u64>, b: Option<u64>) -> Result<Option<u64>> {
        match (a, b) {
            (Some(a), Some(b)) if a < b => Err(self.error(counter, a.to_string(), b.to_string())),
            (Some(a), Some(b)) => Ok(Some(a - b)),
            (a, _) => Ok(a),
        }
    }

    fn time(&self, counter: &str, a: Option<TimeNs>, b: Option<TimeNs>) -> Result<Option<TimeNs>> {
        match (a, b) {
            (Some(a), Some(b)) if a.ns < b.ns => Err(self.error(counter, us(a.ns), us(b.ns))),
            (Some(a), Some(b)) => Ok(Some(TimeNs {
                ns: a.ns - b.ns,
                err_ns: a.err_ns + b.err_ns,
            })),
            (a, _) => Ok(a),
        }
    }
}

/// lock_stat's own unit in messages, so the numbers can be found in the files.
fn us(ns: u64) -> String {
    format!("{}.{:02} us", ns / 1000, (ns % 1000) / 10)
}

/// `total / count` with its uncertainty: the total's, spread over the count, plus the ns the
/// integer division drops.
fn average(total: Option<TimeNs>, count: Option<u64>) -> Option<TimeNs> {
    let (t, n) = (total?, count?);
    (n > 0).then(|| TimeNs {
        ns: t.ns / n,
        err_ns: t.err_ns.div_ceil(n) + 1,
    })
}

fn subtract(a: &Row, b: &Row, d: &Down<'_>) -> Result<Row> {
    let mut r = a.clone();
    r.contended = d.count("contentions", a.contended, b.contended)?;
    r.acquired = d.count("acquisitions", a.acquired, b.acquired)?;
    r.total_wait = d.time("waittime-total", a.total_wait, b.total_wait)?;
    // lock_stat 0.3 prints no averages: none are made up
    r.avg_wait = a.avg_wait.and(average(r.total_wait, r.contended));
    r.min_wait = None;
    r.max_wait = None;
    if let Some(ah) = a.hold {
        let bh = b.hold.unwrap_or_default();
        let total = d.time("holdtime-total", ah.total, bh.total)?;
        let count = d.count("count", ah.count, bh.count)?;
        r.hold = Some(Hold {
            con_bounces: d.count("con-bounces", ah.con_bounces, bh.con_bounces)?,
            acq_bounces: d.count("acq-bounces", ah.acq_bounces, bh.acq_bounces)?,
            min: None,
            max: None,
            total,
            // lock_stat's holdtime-avg is over acquisitions; a hold table with its own
            // count (klockstat) would average over that
            avg: ah.avg.and(average(total, count.or(r.acquired))),
            count,
        });
    }
    // PointKind is not Hash: the block as a bool
    let mut earlier: HashMap<(bool, &str), u64> = HashMap::new();
    for p in &b.points {
        earlier
            .entry((p.kind == PointKind::Contention, p.symbol.as_str()))
            .or_insert(p.count);
    }
    r.points = a
        .points
        .iter()
        .map(|p| {
            let Some(&bc) = earlier.get(&(p.kind == PointKind::Contention, p.symbol.as_str()))
            else {
                return Ok(p.clone());
            };
            let what = match p.kind {
                PointKind::Contention => "contention point",
                PointKind::Contending => "contending point",
            };
            let count = d
                .count(&format!("{what} {}", p.symbol), Some(p.count), Some(bc))?
                .unwrap_or(0);
            Ok(CallPoint { count, ..p.clone() })
        })
        .collect::<Result<_>>()?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockcast_parsers::lock_stat;

    /// The rq mail's two tables (unpatched, patched kernels): not snapshots of one boot, so
    /// only the arithmetic on their printed values is checked here, not a real interval.
    fn rq() -> Vec<Table> {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/corpus/lock-stat/lkml-2022-rq-lock-load-balance-unpatched-patched-v0.4.txt"
        );
        let f = std::io::BufReader::new(std::fs::File::open(p).unwrap());
        lock_stat::parse_all(f, &Default::default()).unwrap().tables
    }

    #[test]
    fn counters_and_totals_subtract_with_both_roundings() {
        let t = rq();
        let (a, b) = (&t[0].rows[0], &t[1].rows[0]);
        let snap = |name, table| Snapshot { name, table };
        let d = Down {
            after: snap("u", &t[0]),
            before: snap("p", &t[1]),
            row: a,
        };
        // con-bounces 24906 - 16174, contentions 25996 - 17105
        let ha = a.hold.unwrap();
        let hb = b.hold.unwrap();
        assert_eq!(
            d.count("c", ha.con_bounces, hb.con_bounces).unwrap(),
            Some(8732)
        );
        assert_eq!(d.count("c", a.contended, b.contended).unwrap(), Some(8891));
        // waittime-total 43122.87 - 31154.45 us, each ±5 ns
        let w = d.time("w", a.total_wait, b.total_wait).unwrap().unwrap();
        assert_eq!((w.ns, w.err_ns), (11_968_420, 10));
        // holdtime-total 10224267.38 - 10141979.28 us
        let h = d.time("h", ha.total, hb.total).unwrap().unwrap();
        assert_eq!((h.ns, h.err_ns), (82_288_100, 10));
        // 11968.42 us over 8891 contentions: 1346.1 ns, ±(10/8891 rounded up + 1)
        let avg = average(Some(w), Some(8891)).unwrap();
        assert_eq!((avg.ns, avg.err_ns), (1346, 2));
        assert_eq!(average(Some(w), Some(0)), None);
        // acquisitions 6601547 < 6602803: the unpatched table is no later snapshot
        let e = d.count("acquisitions", a.acquired, b.acquired).unwrap_err();
        assert!(
            e.to_string().contains("from 6602803 in p to 6601547"),
            "{e}"
        );
        let e = d.time("holdtime-total", hb.total, ha.total).unwrap_err();
        assert!(
            e.to_string()
                .contains("from 10224267.38 us in p to 10141979.28 us"),
            "{e}"
        );
    }
}
