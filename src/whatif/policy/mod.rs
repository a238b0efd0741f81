//! Policies: what a proposed patch changes about *when* `lru_lock` is taken (MODELS.md §3).
//!
//! A policy is plain data with named parameters (serde), and turns the capture's per-CPU
//! [`Intents`] into lock requests on the same virtual clock. The engine (calibration, replay,
//! intervals) never looks inside a policy, so a new patch is a new file here plus one line in
//! [`REGISTRY`].

mod baseline;
mod batcher;
mod fbatch_drain;
mod folio_size;
mod lru_cache;

use std::collections::BTreeMap;

pub use baseline::Baseline;
pub use batcher::{Batcher, DrainRule};
pub use fbatch_drain::{DeadRule, FbatchDrain, KEPT_SITES};
pub use folio_size::FolioSize;
pub use lru_cache::LruCache;

use super::intents::Intents;
use super::reconstruct::Side;
use super::trace::Via;
use crate::error::{Error, Result};

/// One lock acquisition a policy asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Virtual time of the request on its CPU.
    pub v: i64,
    /// Add (drain) or free side: selects the hold model.
    pub side: Side,
    /// Folios handled under the lock.
    pub folios: u32,
    /// Kernel path, for the by-path breakdown (`perf lock contention`'s caller rows).
    pub via: Via,
}

/// What the capture says about itself that a policy may need (folio-size scaling).
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Untraced wall time of the captured workload (meta `untraced_duration_ns`).
    pub untraced_duration_ns: Option<f64>,
    /// mTHP size of the capture in KiB (meta `mthp_size`).
    pub folio_kb: Option<u64>,
    /// Drain sites named by the capture's call chains (`Trace::sites`).
    pub sites: Vec<String>,
}

/// A patch's effect on lock requests.
pub trait Policy: std::fmt::Debug {
    /// Name as used on the command line.
    fn name(&self) -> &'static str;
    /// Parameters as `key=value` text, for reports.
    fn describe(&self) -> BTreeMap<String, String>;
    /// Lock requests per CPU (parallel to `intents.streams`), sorted by virtual time.
    fn requests(&self, intents: &Intents, ctx: &Context) -> Result<Vec<Vec<Request>>>;
    /// Parameters whose value is uncertain, with the alternatives the interval must cover.
    fn alternatives(&self) -> Vec<Box<dyn Policy>> {
        Vec::new()
    }
}

/// Constructor from `--set key=value` pairs.
type Make = fn(&BTreeMap<String, String>, &Context) -> Result<Box<dyn Policy>>;

/// Known policies: name, one-line description, constructor.
pub const REGISTRY: &[(&str, &str, Make)] = &[
    ("baseline", "no change: the capture's own kernel", baseline::make),
    (
        "lru-cache",
        "RFC v3 \"lru cache for smaller large folios\": mTHP folios below max_cached_pages stay on the per-CPU batch",
        lru_cache::make,
    ),
    (
        "folio-size",
        "the same workload with another mTHP size (folio_kb), under today's batching rule",
        folio_size::make,
    ),
    (
        "fbatch-drain",
        "Hugh Dickins' mm/fbatch series: drains at removed sites go, batched folios keep PG_lru; dead-on-batch folios take lru_lock at unmap (dead_on_batch_takes_lock=true, as posted) or not (false, the lru_add_del_folio fix)",
        fbatch_drain::make,
    ),
    (
        "dead-prefree",
        "JP Kobryn's pre-free: folios that died on a batch are freed at the drain without lru_lock (the fbatch report's baseline kernel)",
        fbatch_drain::make_prefree,
    ),
];

/// Build a policy by name.
pub fn make(name: &str, set: &BTreeMap<String, String>, ctx: &Context) -> Result<Box<dyn Policy>> {
    match REGISTRY.iter().find(|(n, _, _)| *n == name) {
        Some((_, _, mk)) => mk(set, ctx),
        None => Err(Error::Usage(format!(
            "unknown policy '{name}' (known: {})",
            REGISTRY.iter().map(|r| r.0).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// Take a typed parameter out of the `--set` map, with a default.
pub(crate) fn param<T: std::str::FromStr>(
    set: &BTreeMap<String, String>,
    policy: &str,
    key: &str,
    default: T,
) -> Result<T> {
    match set.get(key) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| {
            Error::Usage(format!(
                "{policy}: --set {key}={v}: not a valid value for {key}"
            ))
        }),
    }
}

/// Reject `--set` keys a policy does not know (a typo must not silently run the default).
pub(crate) fn check_keys(
    set: &BTreeMap<String, String>,
    policy: &str,
    known: &[&str],
) -> Result<()> {
    for k in set.keys() {
        if !known.contains(&k.as_str()) {
            return Err(Error::Usage(format!(
                "{policy}: unknown parameter '{k}' (known: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
    }
    Ok(())
}
