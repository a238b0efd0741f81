//! `fbatch-drain`: Hugh Dickins' "mm/fbatch: drain lru_add_drain() and _all()" series
//! (fixtures/seeds/fbatch-drain-series-regression-report.txt, MODELS.md §1 and §3b), and
//! `dead-prefree`: JP Kobryn's "preemptively free dead folios during lru_add drain", the
//! report's baseline kernel.
//!
//! What changes about `lru_lock`, relative to a v6.18 capture (where the per-CPU batch holds a
//! reference on each folio):
//! * The series keeps batched folios isolatable (PG_lru set, no batch reference), so many
//!   `lru_add_drain()` / `_all()` calls go: a drain at a removed site does not happen and its
//!   folios stay on the batch until it fills.
//! * A folio whose last mapping goes while it sits on the batch (a *dead-on-batch* folio) is
//!   freed at once by the unmap's `folios_put_refs()`. As posted, `__page_cache_release()` sees
//!   PG_lru and takes `lru_lock` for it: the folio joins the unmap's free batch (one
//!   acquisition per run, shared with the LRU folios freed there, or a new one when the unmap
//!   freed none). With the `lru_add_del_folio()` fix it takes no lock.
//! * On v6.18 such a folio rides the drain into the LRU and is freed by the `folios_put()` after
//!   it, which relocks (`Via::Release`). The series and the pre-free patch both drop that hold,
//!   and the drain handles only the live folios (no acquisition when all are dead).
//!
//! When a folio dies comes from the task's discarding call (`syscalls:sys_enter_madvise`
//! MADV_DONTNEED, munmap) after its fault, so which folios die on the batch is re-derived under
//! the new drain times, not copied from the capture. Assumed, not known from the posting: a
//! freed folio's batch slot is not reused before the batch drains (entries are marked, the
//! count does not shrink), so the batch still fills after 31 adds.

use std::collections::BTreeMap;

use super::{Context, Policy, Request};
use crate::error::{Error, Result};
use crate::whatif::intents::{resort, Intent, Intents};
use crate::whatif::params::{self, Set};
use crate::whatif::reconstruct::{Reconstruction, Side, Trigger, FOLIO_BATCH};
use crate::whatif::trace::{Via, NO_SITE};

/// Drain sites the series keeps by default (MODELS.md §3b): CPU offline, `lru_cache_disable()`,
/// proactive compaction, and the `lru_add_drain_all()` work item, whose requester a capture
/// cannot name.
pub const KEPT_SITES: &[&str] = &[
    "page_alloc_cpu_dead",
    "lru_cache_disable",
    "compact_nodes",
    "proactive_compact_node",
    "sysctl_compaction_handler",
    "lru_add_drain_per_cpu",
];

/// What happens to a folio that dies while on a per-CPU batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeadRule {
    /// JP Kobryn's pre-free: the drain frees it without the lock (batch reference kept).
    Prefree,
    /// The series as posted: the unmap frees it and takes the lock in `__page_cache_release`.
    SeriesLock,
    /// The series with `lru_add_del_folio()`: the unmap frees it without the lock.
    SeriesFix,
}

/// Parameters of both policies.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FbatchDrain {
    /// Policy name (`fbatch-drain` or `dead-prefree`).
    #[serde(skip)]
    name: &'static str,
    /// Dead-on-batch rule.
    pub dead: DeadRule,
    /// Sites whose drains go: `None` = every site except `kept_sites`.
    pub removed_sites: Option<Vec<String>>,
    /// Sites kept when `removed_sites` is `None`.
    pub kept_sites: Vec<String>,
    /// Remove explicit drains whose site the capture does not name (no call chain).
    pub remove_unknown_sites: bool,
    /// Site names of the capture (`Trace::sites`).
    #[serde(skip)]
    sites: Vec<String>,
}

/// `fbatch-drain`'s `--set` parameters.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Params {
    /// `all` (every site but `kept_sites`), `none`, or `SITE,...`.
    removed_sites: String,
    /// Sites kept when `removed_sites=all`: [`KEPT_SITES`].
    kept_sites: Option<String>,
    /// Remove explicit drains with no call chain: false.
    remove_unknown_sites: bool,
    /// true as posted; false with the `lru_add_del_folio()` fix.
    dead_on_batch_takes_lock: bool,
    /// false; true is refused (a pre-free kernel hides dead folios).
    baseline_prefree: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            removed_sites: "all".into(),
            kept_sites: None,
            remove_unknown_sites: false,
            dead_on_batch_takes_lock: true,
            baseline_prefree: false,
        }
    }
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

pub(crate) fn make(set: &Set, ctx: &Context) -> Result<Box<dyn Policy>> {
    let p: Params = params::parse("fbatch-drain", set)?;
    let takes_lock = p.dead_on_batch_takes_lock;
    let prefree = p.baseline_prefree;
    if prefree {
        // A pre-free kernel frees dead folios at the drain without inserting them: the capture
        // has no event for them (no mm_lru_insertion), so the series' extra frees of exactly
        // those folios cannot be counted from it.
        return Err(Error::Usage(
            "fbatch-drain: baseline_prefree=true is not supported: on a kernel with the pre-free \
             patch, folios that die on a batch are freed at the drain with no mm_lru_insertion, so \
             the capture does not show them; capture a kernel without it (v6.18 has none) and \
             compare against `lockcast whatif dead-prefree` for the pre-free baseline"
                .into(),
        ));
    }
    let removed_sites = match p.removed_sites.as_str() {
        "all" => None,
        "none" => Some(Vec::new()),
        s => Some(list(s)),
    };
    let kept_sites = match &p.kept_sites {
        Some(s) => list(s),
        None => KEPT_SITES.iter().map(|s| s.to_string()).collect(),
    };
    Ok(Box::new(FbatchDrain {
        name: "fbatch-drain",
        dead: if takes_lock {
            DeadRule::SeriesLock
        } else {
            DeadRule::SeriesFix
        },
        removed_sites,
        kept_sites,
        remove_unknown_sites: p.remove_unknown_sites,
        sites: ctx.sites.clone(),
    }))
}

/// `dead-prefree` has no parameters.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

pub(crate) fn make_prefree(set: &Set, ctx: &Context) -> Result<Box<dyn Policy>> {
    let NoParams {} = params::parse("dead-prefree", set)?;
    Ok(Box::new(FbatchDrain {
        name: "dead-prefree",
        dead: DeadRule::Prefree,
        removed_sites: Some(Vec::new()),
        kept_sites: Vec::new(),
        remove_unknown_sites: false,
        sites: ctx.sites.clone(),
    }))
}

impl FbatchDrain {
    /// Does the series remove an explicit drain from this site?
    fn removed(&self, site: u32) -> bool {
        if site == NO_SITE {
            return self.remove_unknown_sites;
        }
        let Some(name) = self.sites.get(site as usize) else {
            return self.remove_unknown_sites;
        };
        match &self.removed_sites {
            Some(l) => l.iter().any(|s| s == name),
            None => !self.kept_sites.iter().any(|s| s == name),
        }
    }

    /// One CPU's requests.
    fn cpu(&self, stream: &[Intent], intents: &Intents) -> Vec<Request> {
        let mut out: Vec<Request> = Vec::new();
        // deaths of entries on the batch: (enter, exit) of the discarding call → folios
        let mut deaths: BTreeMap<(i64, i64), u32> = BTreeMap::new();
        let mut batch: Vec<Option<(i64, i64)>> = Vec::new();
        let drain = |at: i64,
                     batch: &mut Vec<Option<(i64, i64)>>,
                     deaths: &mut BTreeMap<(i64, i64), u32>,
                     out: &mut Vec<Request>| {
            let mut live = 0u32;
            for d in batch.drain(..) {
                match d {
                    Some(dd) if dd.0 <= at => {
                        if self.dead == DeadRule::SeriesLock {
                            *deaths.entry(dd).or_default() += 1;
                        }
                    }
                    _ => live += 1,
                }
            }
            if live > 0 {
                out.push(Request {
                    v: at,
                    side: Side::Add,
                    folios: live,
                    via: Via::Drain,
                });
            }
        };
        for i in stream {
            match *i {
                Intent::Fault {
                    v,
                    order,
                    delay,
                    death,
                    ..
                } => {
                    // today's predicate: only order-0 folios are cached
                    let cacheable = order == 0;
                    batch.push(death.get());
                    if !cacheable || batch.len() >= FOLIO_BATCH as usize {
                        let at = v + delay.get().unwrap_or(if cacheable {
                            intents.delay_full
                        } else {
                            intents.delay_large
                        });
                        drain(at, &mut batch, &mut deaths, &mut out);
                    }
                }
                Intent::Drain { v, site } => {
                    let removed = self.dead != DeadRule::Prefree && self.removed(site);
                    if !removed {
                        drain(v, &mut batch, &mut deaths, &mut out);
                    }
                }
                // the series leaves the lazyfree batch's rule alone: the capture's holds
                Intent::Lazy { v, folios, .. } => out.push(Request {
                    v,
                    side: Side::Lazyfree,
                    folios,
                    via: Via::Lazyfree,
                }),
                Intent::Free { v, folios, via, .. } => {
                    // the capture's post-drain release is what both patches remove
                    if via != Via::Release {
                        out.push(Request {
                            v,
                            side: Side::Free,
                            folios,
                            via,
                        });
                    }
                }
            }
        }
        if let Some(last) = stream.last() {
            drain(last.v(), &mut batch, &mut deaths, &mut out);
        }
        resort(&mut out, |r| r.v);
        if self.dead == DeadRule::SeriesLock {
            self.charge_deaths(&mut out, &deaths, intents.delay_zap);
        }
        out
    }

    /// The series as posted: each discarding call's dead-on-batch folios go through its
    /// `folios_put_refs()` under the lock. They join the call's own unmap hold on this CPU when
    /// it has one (same `folio_batch`, up to 31 folios); the rest make new holds, 31 at most each.
    fn charge_deaths(
        &self,
        out: &mut Vec<Request>,
        deaths: &BTreeMap<(i64, i64), u32>,
        zap_delay: i64,
    ) {
        let mut extra = Vec::new();
        for (&(enter, exit), &n) in deaths {
            let mut left = n;
            let lo = out.partition_point(|r| r.v < enter);
            for r in out[lo..].iter_mut().take_while(|r| r.v <= exit) {
                if left == 0 {
                    break;
                }
                if r.via == Via::Zap && r.folios < FOLIO_BATCH {
                    let add = (FOLIO_BATCH - r.folios).min(left);
                    r.folios += add;
                    left -= add;
                }
            }
            let at = (enter + zap_delay).min(exit.max(enter));
            while left > 0 {
                let k = left.min(FOLIO_BATCH);
                extra.push(Request {
                    v: at,
                    side: Side::Free,
                    folios: k,
                    via: Via::Zap,
                });
                left -= k;
            }
        }
        out.extend(extra);
        resort(out, |r| r.v);
    }
}

impl Policy for FbatchDrain {
    fn name(&self) -> &'static str {
        self.name
    }
    fn notes(&self, rec: &Reconstruction) -> Vec<String> {
        // only the series removes drains by site; the pre-free policy keeps them all
        if self.dead == DeadRule::Prefree {
            return Vec::new();
        }
        let unknown = rec
            .holds
            .iter()
            .filter(|h| h.side == Side::Add && h.trigger == Trigger::Explicit && h.site == NO_SITE)
            .count();
        if unknown == 0 {
            return Vec::new();
        }
        vec![format!(
            "{unknown} explicit drains have no lru_add_drain* frame in a call chain (no -g on \
             pagemap:mm_lru_insertion, or a batch-full drain cut in two by an interrupt): \
             their sites are unknown and remove_unknown_sites={} decides",
            self.remove_unknown_sites
        )]
    }
    fn describe(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        if self.dead == DeadRule::Prefree {
            return m;
        }
        m.insert(
            "removed_sites".into(),
            match &self.removed_sites {
                None => "all".into(),
                Some(l) if l.is_empty() => "none".into(),
                Some(l) => l.join(","),
            },
        );
        if self.removed_sites.is_none() {
            m.insert("kept_sites".into(), self.kept_sites.join(","));
        }
        m.insert(
            "remove_unknown_sites".into(),
            self.remove_unknown_sites.to_string(),
        );
        m.insert(
            "dead_on_batch_takes_lock".into(),
            (self.dead == DeadRule::SeriesLock).to_string(),
        );
        m.insert("baseline_prefree".into(), "false".into());
        m
    }
    fn requests(&self, intents: &Intents, _: &Context) -> Result<Vec<Vec<Request>>> {
        if !intents.has_discards {
            return Err(Error::Input(format!(
                "{}: the capture has no discarding madvise/munmap events, so when a folio on a \
                 per-CPU batch dies is unknown; record syscalls:sys_enter_madvise and \
                 syscalls:sys_exit_madvise too (fixtures/capture-fbatch.sh does)",
                self.name
            )));
        }
        Ok(intents
            .streams
            .iter()
            .map(|s| self.cpu(s, intents))
            .collect())
    }
}
