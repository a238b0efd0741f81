//! Policies: what a proposed patch changes about *when* `lru_lock` is taken (MODELS.md §3).
//!
//! A policy is plain data with named parameters (a `Deserialize` struct per policy, read from
//! `--set` by [`crate::whatif::params`]), and turns the capture's per-CPU [`Intents`] into lock
//! requests on the same virtual clock. The engine (calibration, replay, intervals) never looks
//! inside a policy and never compares names: what a policy adds goes through the trait's hooks.
//! A new patch is a new file here plus one row in [`crate::whatif::registry::POLICIES`].

pub(crate) mod baseline;
mod batcher;
pub(crate) mod fbatch_drain;
pub(crate) mod folio_size;
pub(crate) mod lru_cache;

use std::collections::BTreeMap;

pub use baseline::Baseline;
pub use batcher::{Batcher, DrainRule};
pub use fbatch_drain::{DeadRule, FbatchDrain, KEPT_SITES};
pub use folio_size::FolioSize;
pub use lru_cache::LruCache;

use super::intents::Intents;
use super::reconstruct::{Reconstruction, Side};
use super::trace::Via;
use crate::error::Result;

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
    /// `(start, len_in)` of the capture's discarding `madvise` calls (`Trace::discards`).
    pub discards: Vec<(u64, u64)>,
}

/// A patch's effect on lock requests.
pub trait Policy: std::fmt::Debug + Send + Sync {
    /// Name as used on the command line.
    fn name(&self) -> &'static str;
    /// Parameters as `key=value` text, for reports.
    fn describe(&self) -> BTreeMap<String, String>;
    /// Lock requests per CPU (parallel to `intents.streams`), sorted by virtual time.
    fn requests(&self, intents: &Intents, ctx: &Context) -> Result<Vec<Vec<Request>>>;
    /// The per-CPU batch rule this policy's requests are, on `intents`, when they are one
    /// [`Batcher`] run over each stream and nothing else ([`Batcher::on`]): two policies with
    /// the same rule here ask for the same requests, and the engine builds and replays them
    /// once. `None` (the default): always built.
    fn batching(&self, _intents: &Intents) -> Option<Batcher> {
        None
    }
    /// Parameters whose value is uncertain, with the alternatives the interval must cover.
    fn alternatives(&self) -> Vec<Box<dyn Policy>> {
        Vec::new()
    }
    /// What the user must know about this capture under this policy (printed as notes).
    fn notes(&self, _rec: &Reconstruction) -> Vec<String> {
        Vec::new()
    }
}
