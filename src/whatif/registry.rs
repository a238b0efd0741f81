//! The policy registry: every what-if lockcast answers, lock-timing policies (replayed through
//! the lock engine, [`super::policy`]) and work policies (predicted from a capture directory,
//! [`super::work`]) alike. `lockcast whatif --help`, the unknown-policy error and the dispatch
//! all come from [`POLICIES`]; a new policy is its file plus one row here.

use super::checks::{self, Needs};
use super::params::Set;
use super::policy::{self, Context, Policy};
use super::summary::{self, SummaryOutcome};
use super::trace::Trace;
use super::work::{self, WorkPolicy};
use crate::analyses::stat_row::StatRow;
use crate::error::{Error, Result};

/// Builds a lock-timing policy from its `--set` pairs and the capture's context.
pub type MakeLock = fn(&Set, &Context) -> Result<Box<dyn Policy>>;
/// Builds a work policy from its `--set` pairs.
pub type MakeWork = fn(&Set) -> Result<Box<dyn WorkPolicy>>;
/// The closed-form model on one `perf lock` row table.
pub type Summary = fn(&str, &str, &[StatRow], &Set) -> Result<SummaryOutcome>;
/// Parameters a `validate` AFTER capture implies (e.g. folio-size's target size), added to the
/// `--set` pairs the user did not give.
pub type AfterDefaults = fn(&Trace, &mut Set) -> Result<()>;

/// How a policy is evaluated.
#[derive(Clone, Copy)]
pub enum Engine {
    /// Replay an event trace through the lock engine.
    Lock(MakeLock),
    /// Predict from a capture directory.
    Work(MakeWork),
}

/// One row of the registry.
#[derive(Clone, Copy)]
pub struct PolicyInfo {
    /// Name on the command line.
    pub name: &'static str,
    /// What the patch is, one line.
    pub about: &'static str,
    /// Its `--set` parameters and defaults, as shown by `--help`.
    pub params: &'static str,
    /// How it is evaluated.
    pub engine: Engine,
    /// The closed-form model for a `perf lock` table, where the policy has one.
    pub summary: Option<Summary>,
    /// Defaults taken from a `validate` AFTER capture.
    pub after_defaults: Option<AfterDefaults>,
    /// What a lock-timing policy needs from its capture, checked before the replay
    /// ([`checks::before`]); work policies check their capture directory themselves.
    pub needs: Option<&'static Needs>,
}

/// The five replay events; call chains do not matter.
const REPLAY: Needs = Needs {
    events: checks::REPLAY_EVENTS,
    call_chains: None,
};
/// The replay events and the discarding calls; call chains name the explicit drains' sites.
const FBATCH: Needs = Needs {
    events: checks::DISCARD_EVENTS,
    call_chains: Some("the site of each explicit drain, which removed_sites selects by"),
};
/// The replay events and the discarding calls (the pre-free keeps every drain: no sites).
const PREFREE: Needs = Needs {
    events: checks::DISCARD_EVENTS,
    call_chains: None,
};

/// Every policy, in `--help` order.
pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "baseline",
        about: "no change: replays the capture (checks the model against it)",
        params: "",
        engine: Engine::Lock(policy::baseline::make),
        summary: None,
        needs: Some(&REPLAY),
        after_defaults: None,
    },
    PolicyInfo {
        name: "lru-cache",
        about: "RFC v3 \"mm: enable lru cache for smaller large folios\": mTHP folios below \
                max_cached_pages stay on the per-CPU batches (lru_add, and lru_lazyfree for MADV_FREE)",
        params: "max_cached_pages=31 batch_folio_cap=31 batch_page_cap=31 \
                 drain_rule=after-add|before-add (the interval covers both rules)",
        engine: Engine::Lock(policy::lru_cache::make),
        summary: Some(summary::run),
        needs: Some(&REPLAY),
        after_defaults: None,
    },
    PolicyInfo {
        name: "folio-size",
        about: "the same workload at another mTHP size, under today's batching rule",
        params: "folio_kb=N (required; validate takes it from AFTER's meta), time_scale=X or \
                 target_duration_ns=N (untraced run time at the target size; default scale 1); \
                 on a perf lock table also from_kb=N (the table's size) and cpus=N",
        engine: Engine::Lock(policy::folio_size::make),
        summary: Some(summary::run),
        needs: Some(&REPLAY),
        after_defaults: Some(policy::folio_size::after_defaults),
    },
    PolicyInfo {
        name: "fbatch-drain",
        about: "Hugh Dickins' mm/fbatch series: batched folios keep PG_lru, drains at removed \
                sites go",
        params: "dead_on_batch_takes_lock=true (as posted: a folio discarded while on a \
                 per-CPU batch takes lru_lock at unmap) | false (the lru_add_del_folio() fix); \
                 removed_sites=all|none|SITE,... (all = every drain site but kept_sites, default \
                 page_alloc_cpu_dead,lru_cache_disable,compact_nodes,proactive_compact_node,\
                 sysctl_compaction_handler,lru_add_drain_per_cpu); remove_unknown_sites=false \
                 (explicit drains with no call chain); baseline_prefree=false (true is refused: \
                 a pre-free kernel hides dead folios)",
        engine: Engine::Lock(policy::fbatch_drain::make),
        summary: None,
        needs: Some(&FBATCH),
        after_defaults: None,
    },
    PolicyInfo {
        name: "dead-prefree",
        about: "JP Kobryn's pre-free: folios that died on a batch are freed at the drain \
                without lru_lock (the fbatch report's baseline kernel)",
        params: "",
        engine: Engine::Lock(policy::fbatch_drain::make_prefree),
        summary: None,
        needs: Some(&PREFREE),
        after_defaults: None,
    },
    PolicyInfo {
        name: "lazyfree-thp",
        about: "\"Reclaim lazyfree THP without splitting\": a clean PMD-mapped MADV_FREE THP \
                is discarded whole (CAPTURE: a directory of fixtures/capture-lazyfree.sh)",
        params: "c_discard_ns=N c_split_ns=N c_pte_unmap_ns=N (override the calibrated costs)",
        engine: Engine::Work(work::lazyfree_thp::make),
        summary: None,
        needs: None,
        after_defaults: None,
    },
    PolicyInfo {
        name: "khugepaged-lazyfree",
        about: "\"khugepaged: skip lazy-free folios\": scans of clean lazyfree ranges stop \
                (CAPTURE: a directory of fixtures/capture-lazyfree.sh)",
        params: "skip_progress=512|1 lazyfree_scan_ns=N; scan_sleep_millisecs=N \
                 pages_to_scan=N tasks=PID:NAME,... (when the capture has no meta.txt / \
                 workload.txt)",
        engine: Engine::Work(work::khugepaged_lazyfree::make),
        summary: None,
        needs: None,
        after_defaults: None,
    },
];

/// The policy named `name`; an unknown name is a usage error listing every policy.
pub fn find(name: &str) -> Result<&'static PolicyInfo> {
    POLICIES.iter().find(|p| p.name == name).ok_or_else(|| {
        Error::Usage(format!(
            "unknown policy '{name}' (known: {})",
            names().join(", ")
        ))
    })
}

/// Every policy's name.
pub fn names() -> Vec<&'static str> {
    POLICIES.iter().map(|p| p.name).collect()
}

/// Build a lock-timing policy by name.
pub fn make_lock(name: &str, set: &Set, ctx: &Context) -> Result<Box<dyn Policy>> {
    match find(name)?.engine {
        Engine::Lock(make) => make(set, ctx),
        Engine::Work(_) => Err(Error::Usage(format!(
            "{name} predicts from a capture directory, not by replaying lock timing"
        ))),
    }
}

/// The policy list of `lockcast whatif --help`, wrapped to `width` columns.
pub fn help(width: usize) -> String {
    let mut s = String::from("Policies (parameters with --set key=value):\n");
    let pad = POLICIES.iter().map(|p| p.name.len()).max().unwrap_or(0) + 2;
    for p in POLICIES {
        let mut text = p.about.to_string();
        if !p.params.is_empty() {
            text.push_str(". Parameters: ");
            text.push_str(p.params);
        }
        let mut line = format!("  {:<pad$}", p.name);
        let indent = " ".repeat(pad + 2);
        let mut col = line.len();
        for w in text.split_whitespace() {
            if col + 1 + w.len() > width && col > pad + 2 {
                line.push('\n');
                line.push_str(&indent);
                col = indent.len();
            } else if col > pad + 2 {
                line.push(' ');
                col += 1;
            }
            line.push_str(w);
            col += w.len();
        }
        s.push_str(&line);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_is_found_and_listed() {
        for p in POLICIES {
            assert_eq!(find(p.name).map(|x| x.name).ok(), Some(p.name));
            assert!(help(96).contains(p.name));
        }
        let e = find("nope")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        for n in names() {
            assert!(e.contains(n), "{e}");
        }
    }
}
