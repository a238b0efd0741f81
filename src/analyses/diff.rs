//! Base-vs-patched comparison of two `perf lock` tables, in the style of the A/B tables posted
//! with mm patches: matched rows with base, patched, delta and the reduction ratio
//! (base / patched) for contended count and total wait.
//!
//! Rows are matched on the table's identity column (name, caller+type, comm, symbol or address,
//! cgroup). The same key may appear on several rows (perf prints one row per lock instance or
//! per call stack), and names are often blank: such rows are matched by their rank among rows
//! with the same key, in printed order, and the match says so.

use std::collections::HashMap;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::stat_row::{StatRow, Value};

/// How a pair of rows was matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// The key occurs once on each side.
    Key,
    /// The key occurs several times; the n-th occurrences were paired.
    KeyRank,
    /// Both rows have no name; the n-th unnamed rows were paired (order = perf's sort order).
    UnnamedRank,
}

impl MatchedBy {
    /// The name in CSV and JSON (`key`, `key_rank`, `unnamed_rank`).
    pub fn name(self) -> &'static str {
        match self {
            MatchedBy::Key => "key",
            MatchedBy::KeyRank => "key_rank",
            MatchedBy::UnnamedRank => "unnamed_rank",
        }
    }
}

/// One matched pair: the two rows as read and how they were paired; what changed (deltas,
/// ratios) is computed from them.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffRow {
    /// The key shown to users.
    pub key: String,
    /// How the rows were paired.
    pub matched_by: MatchedBy,
    /// Rank among rows with the same key (1-based).
    pub rank: u32,
    /// The base row.
    pub base: StatRow,
    /// The patched row.
    pub patched: StatRow,
}

impl DiffRow {
    /// The lock name: the base row's, or the patched row's when the base row has none.
    pub fn name(&self) -> Option<&String> {
        self.base.name.as_ref().or(self.patched.name.as_ref())
    }

    /// patched - base contended.
    pub fn delta_contended(&self) -> Option<i128> {
        delta(self.base.contended, self.patched.contended)
    }

    /// patched - base total wait, ns.
    pub fn delta_total_wait_ns(&self) -> Option<i128> {
        delta(self.base.total_wait_ns, self.patched.total_wait_ns)
    }

    /// base / patched contended.
    pub fn ratio_contended(&self) -> Option<f64> {
        ratio(self.base.contended, self.patched.contended)
    }

    /// base / patched total wait.
    pub fn ratio_total_wait(&self) -> Option<f64> {
        ratio(self.base.total_wait_ns, self.patched.total_wait_ns)
    }

    /// Range of [`DiffRow::ratio_total_wait`] allowed by the printed precision of both values.
    pub fn ratio_total_wait_range(&self) -> Option<(f64, f64)> {
        let (b, p) = (&self.base, &self.patched);
        let (bv, pv) = (b.total_wait_ns?, p.total_wait_ns?);
        let be = b.total_wait_err_ns.unwrap_or(0);
        let pe = p.total_wait_err_ns.unwrap_or(0);
        let lo = bv.saturating_sub(be) as f64 / (pv + pe).max(1) as f64;
        let hi = (bv + be) as f64 / pv.saturating_sub(pe).max(1) as f64;
        Some((lo, hi))
    }

    /// The total-wait difference is within the rounding of the printed values.
    pub fn total_wait_within_rounding(&self) -> bool {
        let (b, p) = (&self.base, &self.patched);
        match (b.total_wait_ns, p.total_wait_ns) {
            (Some(bv), Some(pv)) => {
                bv.abs_diff(pv)
                    <= b.total_wait_err_ns.unwrap_or(0) + p.total_wait_err_ns.unwrap_or(0)
            }
            _ => false,
        }
    }
}

/// The values `diff --json` prints for each side, in its order, as `base_X` and `patched_X`.
const SIDE_FIELDS: [(&str, Value); 7] = [
    ("line", |r| Some(r.line)),
    ("acquired", |r| r.acquired),
    ("contended", |r| r.contended),
    ("total_wait_ns", |r| r.total_wait_ns),
    ("avg_wait_ns", |r| r.avg_wait_ns),
    ("max_wait_ns", |r| r.max_wait_ns),
    ("min_wait_ns", |r| r.min_wait_ns),
];

/// A pair in JSON is one flat object, as `diff --json` has always printed it: the base row's
/// identity (with [`DiffRow::name`]), how it was matched, each side's values as `base_X` /
/// `patched_X` next to each other, then the changes.
impl Serialize for DiffRow {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let b = &self.base;
        let mut m = ser.serialize_map(None)?;
        m.serialize_entry("name", &self.name())?;
        m.serialize_entry("caller", &b.caller)?;
        m.serialize_entry("type", &b.lock_type)?;
        m.serialize_entry("comm", &b.comm)?;
        m.serialize_entry("symbol", &b.symbol)?;
        m.serialize_entry("cgroup", &b.cgroup)?;
        m.serialize_entry("key", &self.key)?;
        m.serialize_entry("matched_by", &self.matched_by)?;
        m.serialize_entry("rank", &self.rank)?;
        for (field, value) in SIDE_FIELDS {
            m.serialize_entry(&format!("base_{field}"), &value(b))?;
            m.serialize_entry(&format!("patched_{field}"), &value(&self.patched))?;
        }
        m.serialize_entry("delta_contended", &self.delta_contended())?;
        m.serialize_entry("delta_total_wait_ns", &self.delta_total_wait_ns())?;
        m.serialize_entry("ratio_contended", &self.ratio_contended())?;
        m.serialize_entry("ratio_total_wait", &self.ratio_total_wait())?;
        m.serialize_entry("ratio_total_wait_range", &self.ratio_total_wait_range())?;
        m.serialize_entry(
            "total_wait_within_rounding",
            &self.total_wait_within_rounding(),
        )?;
        m.end()
    }
}

/// The comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// Base input (`path#N`).
    pub base: String,
    /// Base table label.
    pub base_label: Option<String>,
    /// Patched input.
    pub patched: String,
    /// Patched table label.
    pub patched_label: Option<String>,
    /// Identity used to match rows.
    pub matched_on: &'static str,
    /// Matched pairs, largest base total wait first.
    pub rows: Vec<DiffRow>,
    /// Base rows with no partner.
    pub unmatched_base: Vec<StatRow>,
    /// Patched rows with no partner.
    pub unmatched_patched: Vec<StatRow>,
    /// Sum of matched and unmatched rows of each side.
    pub total: DiffRow,
}

fn key_of(r: &StatRow) -> (Option<String>, &'static str) {
    match r.kind.as_str() {
        "caller" => (
            r.caller
                .as_ref()
                .map(|c| format!("{} {}", r.lock_type.as_deref().unwrap_or(""), c)),
            "caller+type",
        ),
        "task" | "info_thread" => (r.comm.clone(), "comm"),
        "address" | "info_map" => (
            r.symbol.clone().or_else(|| r.address.clone()),
            "symbol (address when blank)",
        ),
        "cgroup" => (r.cgroup.clone(), "cgroup"),
        // a class taken both ways has a -W and a -R row: each is matched with its own kind
        "lock_stat" => (
            r.name.as_ref().map(|n| match &r.rw {
                Some(rw) => format!("{n}-{rw}"),
                None => n.clone(),
            }),
            "class name (-W/-R)",
        ),
        "klockstat" => (
            r.caller.clone().or_else(|| r.comm.clone()),
            "caller (comm with -P)",
        ),
        _ => (r.name.clone(), "name"),
    }
}

fn ratio(b: Option<u64>, p: Option<u64>) -> Option<f64> {
    match (b, p) {
        (Some(b), Some(p)) if p > 0 => Some(b as f64 / p as f64),
        _ => None,
    }
}

fn delta(b: Option<u64>, p: Option<u64>) -> Option<i128> {
    Some(i128::from(p?) - i128::from(b?))
}

fn sum(rows: &[StatRow], source: &str) -> StatRow {
    let add = |f: fn(&StatRow) -> Option<u64>| -> Option<u64> {
        let vals: Vec<u64> = rows.iter().filter_map(f).collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    };
    StatRow {
        source: source.to_string(),
        block: rows.first().map_or(0, |r| r.block),
        kind: "total".to_string(),
        name: Some("total".to_string()),
        acquired: add(|r| r.acquired),
        contended: add(|r| r.contended),
        total_wait_ns: add(|r| r.total_wait_ns),
        total_wait_err_ns: add(|r| r.total_wait_err_ns),
        max_wait_ns: rows.iter().filter_map(|r| r.max_wait_ns).max(),
        min_wait_ns: rows.iter().filter_map(|r| r.min_wait_ns).min(),
        ..StatRow::default()
    }
}

/// [`diff`] of the rows `filter` keeps on both sides (`--lock`, `--caller`, `--type`).
pub fn diff_filtered(
    base_name: &str,
    base: &[StatRow],
    patched_name: &str,
    patched: &[StatRow],
    filter: &super::filter::RowFilter,
) -> Diff {
    if filter.is_empty() {
        return diff(base_name, base, patched_name, patched);
    }
    diff(
        base_name,
        &filter.rows(base),
        patched_name,
        &filter.rows(patched),
    )
}

/// Compare two tables (all rows of `base` against all rows of `patched`).
pub fn diff(base_name: &str, base: &[StatRow], patched_name: &str, patched: &[StatRow]) -> Diff {
    let mut matched_on = "name";
    // key -> queue of patched row indices in printed order
    let mut by_key: HashMap<Option<String>, Vec<usize>> = HashMap::new();
    for (i, r) in patched.iter().enumerate() {
        by_key.entry(key_of(r).0).or_default().push(i);
    }
    let mut base_count: HashMap<Option<String>, u32> = HashMap::new();
    for r in base {
        *base_count.entry(key_of(r).0).or_default() += 1;
    }
    let mut used = vec![false; patched.len()];
    let mut seen: HashMap<Option<String>, u32> = HashMap::new();
    let mut rows = Vec::new();
    let mut unmatched_base = Vec::new();
    for b in base {
        let (key, on) = key_of(b);
        matched_on = on;
        let rank = {
            let n = seen.entry(key.clone()).or_default();
            *n += 1;
            *n
        };
        let partner = by_key
            .get(&key)
            .and_then(|v| v.get(rank as usize - 1))
            .copied();
        match partner {
            Some(pi) => {
                used[pi] = true;
                let p = &patched[pi];
                let dup = base_count.get(&key).copied().unwrap_or(0) > 1
                    || by_key.get(&key).map_or(0, Vec::len) > 1;
                let (shown, how) = match &key {
                    None => (format!("(unnamed #{rank})"), MatchedBy::UnnamedRank),
                    Some(k) if dup => (format!("{k} #{rank}"), MatchedBy::KeyRank),
                    Some(k) => (k.clone(), MatchedBy::Key),
                };
                rows.push(DiffRow {
                    key: shown,
                    matched_by: how,
                    rank,
                    base: b.clone(),
                    patched: p.clone(),
                });
            }
            None => unmatched_base.push(b.clone()),
        }
    }
    let unmatched_patched: Vec<StatRow> = patched
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(r, _)| r.clone())
        .collect();
    rows.sort_by(|a, b| {
        (b.base.total_wait_ns.cmp(&a.base.total_wait_ns))
            .then(b.base.contended.cmp(&a.base.contended))
    });
    let total = DiffRow {
        key: "total".to_string(),
        matched_by: MatchedBy::Key,
        rank: 1,
        base: sum(base, base_name),
        patched: sum(patched, patched_name),
    };
    Diff {
        base: base_name.to_string(),
        base_label: base.first().and_then(|r| r.label.clone()),
        patched: patched_name.to_string(),
        patched_label: patched.first().and_then(|r| r.label.clone()),
        matched_on,
        rows,
        unmatched_base,
        unmatched_patched,
        total,
    }
}
