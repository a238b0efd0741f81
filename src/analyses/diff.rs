//! Base-vs-patched comparison of two `perf lock` tables, in the style of the A/B tables posted
//! with mm patches: matched rows with base, patched, delta and the reduction ratio
//! (base / patched) for contended count and total wait.
//!
//! Rows are matched on the table's identity column (name, caller+type, comm, symbol or address,
//! cgroup). The same key may appear on several rows (perf prints one row per lock instance or
//! per call stack), and names are often blank: such rows are matched by their rank among rows
//! with the same key, in printed order, and the match says so.

use std::collections::HashMap;

use serde::Serialize;

use super::stat_row::StatRow;

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

/// One matched pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffRow {
    /// Lock name (report tables).
    pub name: Option<String>,
    /// Caller (contention tables).
    pub caller: Option<String>,
    /// Lock type.
    #[serde(rename = "type")]
    pub lock_type: Option<String>,
    /// Task name (`-t` tables).
    pub comm: Option<String>,
    /// Symbol (`-l` tables).
    pub symbol: Option<String>,
    /// Cgroup.
    pub cgroup: Option<String>,
    /// The key shown to users.
    pub key: String,
    /// How the rows were paired.
    pub matched_by: MatchedBy,
    /// Rank among rows with the same key (1-based).
    pub rank: u32,
    /// Line of the base row.
    pub base_line: u64,
    /// Line of the patched row.
    pub patched_line: u64,
    /// Base acquisitions.
    pub base_acquired: Option<u64>,
    /// Patched acquisitions.
    pub patched_acquired: Option<u64>,
    /// Base contended.
    pub base_contended: Option<u64>,
    /// Patched contended.
    pub patched_contended: Option<u64>,
    /// Base total wait, ns.
    pub base_total_wait_ns: Option<u64>,
    /// Patched total wait, ns.
    pub patched_total_wait_ns: Option<u64>,
    /// Base average wait, ns.
    pub base_avg_wait_ns: Option<u64>,
    /// Patched average wait, ns.
    pub patched_avg_wait_ns: Option<u64>,
    /// Base max wait, ns.
    pub base_max_wait_ns: Option<u64>,
    /// Patched max wait, ns.
    pub patched_max_wait_ns: Option<u64>,
    /// Base min wait, ns (for perf's `report` layout in `--format text`).
    pub base_min_wait_ns: Option<u64>,
    /// Patched min wait, ns.
    pub patched_min_wait_ns: Option<u64>,
    /// patched - base contended.
    pub delta_contended: Option<i128>,
    /// patched - base total wait, ns.
    pub delta_total_wait_ns: Option<i128>,
    /// base / patched contended.
    pub ratio_contended: Option<f64>,
    /// base / patched total wait.
    pub ratio_total_wait: Option<f64>,
    /// Range of `ratio_total_wait` allowed by the printed precision of both values.
    pub ratio_total_wait_range: Option<(f64, f64)>,
    /// The total-wait difference is within the rounding of the printed values.
    pub total_wait_within_rounding: bool,
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

fn pair(b: &StatRow, p: &StatRow, key: String, matched_by: MatchedBy, rank: u32) -> DiffRow {
    let range = match (b.total_wait_ns, p.total_wait_ns) {
        (Some(bv), Some(pv)) => {
            let be = b.total_wait_err_ns.unwrap_or(0);
            let pe = p.total_wait_err_ns.unwrap_or(0);
            let lo = bv.saturating_sub(be) as f64 / (pv + pe).max(1) as f64;
            let hi = (bv + be) as f64 / pv.saturating_sub(pe).max(1) as f64;
            Some((lo, hi))
        }
        _ => None,
    };
    let within = match (b.total_wait_ns, p.total_wait_ns) {
        (Some(bv), Some(pv)) => {
            bv.abs_diff(pv) <= b.total_wait_err_ns.unwrap_or(0) + p.total_wait_err_ns.unwrap_or(0)
        }
        _ => false,
    };
    DiffRow {
        name: b.name.clone().or_else(|| p.name.clone()),
        caller: b.caller.clone(),
        lock_type: b.lock_type.clone(),
        comm: b.comm.clone(),
        symbol: b.symbol.clone(),
        cgroup: b.cgroup.clone(),
        key,
        matched_by,
        rank,
        base_line: b.line,
        patched_line: p.line,
        base_acquired: b.acquired,
        patched_acquired: p.acquired,
        base_contended: b.contended,
        patched_contended: p.contended,
        base_total_wait_ns: b.total_wait_ns,
        patched_total_wait_ns: p.total_wait_ns,
        base_avg_wait_ns: b.avg_wait_ns,
        patched_avg_wait_ns: p.avg_wait_ns,
        base_max_wait_ns: b.max_wait_ns,
        patched_max_wait_ns: p.max_wait_ns,
        base_min_wait_ns: b.min_wait_ns,
        patched_min_wait_ns: p.min_wait_ns,
        delta_contended: delta(b.contended, p.contended),
        delta_total_wait_ns: delta(b.total_wait_ns, p.total_wait_ns),
        ratio_contended: ratio(b.contended, p.contended),
        ratio_total_wait: ratio(b.total_wait_ns, p.total_wait_ns),
        ratio_total_wait_range: range,
        total_wait_within_rounding: within,
    }
}

fn sum(rows: &[StatRow], source: &str) -> StatRow {
    let add = |f: fn(&StatRow) -> Option<u64>| -> Option<u64> {
        let vals: Vec<u64> = rows.iter().filter_map(f).collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    };
    StatRow {
        source: source.to_string(),
        block: rows.first().map_or(0, |r| r.block),
        label: None,
        line: 0,
        kind: "total".to_string(),
        name: Some("total".to_string()),
        caller: None,
        lock_type: None,
        pid: None,
        comm: None,
        address: None,
        symbol: None,
        cgroup: None,
        acquired: add(|r| r.acquired),
        contended: add(|r| r.contended),
        total_wait_ns: add(|r| r.total_wait_ns),
        total_wait_err_ns: add(|r| r.total_wait_err_ns),
        avg_wait_ns: None,
        max_wait_ns: rows.iter().filter_map(|r| r.max_wait_ns).max(),
        min_wait_ns: rows.iter().filter_map(|r| r.min_wait_ns).min(),
    }
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
                rows.push(pair(b, p, shown, how, rank));
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
        b.base_total_wait_ns
            .cmp(&a.base_total_wait_ns)
            .then(b.base_contended.cmp(&a.base_contended))
    });
    let tb = sum(base, base_name);
    let tp = sum(patched, patched_name);
    let total = pair(&tb, &tp, "total".to_string(), MatchedBy::Key, 1);
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
