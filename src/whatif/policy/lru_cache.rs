//! `lru-cache`: Barry Song's RFC v3 "mm: enable lru cache for smaller large folios"
//! (fixtures/seeds/lru-cache-small-large-folios-rfc-v3.txt, MODELS.md §3a).
//!
//! Folios with fewer than `max_cached_pages` pages stay on the per-CPU `lru_add` batch; the
//! batch drains at `batch_folio_cap` folios or `batch_page_cap` pages, after or before adding
//! the folio that reaches the cap (`drain_rule`; the posting does not say which, so the
//! interval covers both).

use std::collections::BTreeMap;

use super::{Batcher, Context, DrainRule, Policy, Request};
use crate::error::{Error, Result};
use crate::whatif::intents::Intents;
use crate::whatif::params::{self, Set};

/// RFC v3 parameters.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LruCache {
    /// Folios with fewer pages than this are cached (31 ⇒ orders 0–4 on 4 KiB pages).
    pub max_cached_pages: u64,
    /// Folios per batch.
    pub batch_folio_cap: u32,
    /// Pages per batch.
    pub batch_page_cap: u64,
    /// When a cap drains.
    pub drain_rule: DrainRule,
}

/// `--set` parameters, with the RFC's values as defaults.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Params {
    /// 31: orders 0-4 on 4 KiB pages stay cached.
    max_cached_pages: u64,
    /// 31, `PAGEVEC_SIZE`.
    batch_folio_cap: u32,
    /// 31.
    batch_page_cap: u64,
    /// `after-add` (the interval covers `before-add` too).
    drain_rule: DrainRule,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            max_cached_pages: 31,
            batch_folio_cap: 31,
            batch_page_cap: 31,
            drain_rule: DrainRule::AfterAdd,
        }
    }
}

pub(crate) fn make(set: &Set, _: &Context) -> Result<Box<dyn Policy>> {
    let Params {
        max_cached_pages,
        batch_folio_cap,
        batch_page_cap,
        drain_rule,
    } = params::parse("lru-cache", set)?;
    let p = LruCache {
        max_cached_pages,
        batch_folio_cap,
        batch_page_cap,
        drain_rule,
    };
    if p.batch_folio_cap == 0 || p.batch_page_cap == 0 || p.max_cached_pages == 0 {
        return Err(Error::Usage(
            "lru-cache: max_cached_pages, batch_folio_cap and batch_page_cap must be at least 1"
                .into(),
        ));
    }
    Ok(Box::new(p))
}

impl LruCache {
    fn batcher(&self) -> Batcher {
        Batcher {
            max_cached_pages: self.max_cached_pages,
            folio_cap: self.batch_folio_cap,
            page_cap: self.batch_page_cap,
            rule: self.drain_rule,
        }
    }
}

impl Policy for LruCache {
    fn name(&self) -> &'static str {
        "lru-cache"
    }
    fn describe(&self) -> BTreeMap<String, String> {
        [
            ("max_cached_pages", self.max_cached_pages.to_string()),
            ("batch_folio_cap", self.batch_folio_cap.to_string()),
            ("batch_page_cap", self.batch_page_cap.to_string()),
            ("drain_rule", self.drain_rule.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
    fn requests(&self, intents: &Intents, _: &Context) -> Result<Vec<Vec<Request>>> {
        let b = self.batcher();
        Ok(intents
            .streams
            .iter()
            .map(|s| b.requests(s, intents))
            .collect())
    }
    fn batching(&self, intents: &Intents) -> Option<Batcher> {
        Some(self.batcher().on(intents))
    }
    fn alternatives(&self) -> Vec<Box<dyn Policy>> {
        let other = match self.drain_rule {
            DrainRule::AfterAdd => DrainRule::BeforeAdd,
            DrainRule::BeforeAdd => DrainRule::AfterAdd,
        };
        vec![Box::new(LruCache {
            drain_rule: other,
            ..self.clone()
        })]
    }
}
