//! The per-CPU `lru_add` folio batch (`__folio_batch_add_and_move()` in mm/swap.c), with the
//! cacheability predicate and caps as parameters, so today's rule and the RFC's are one code.

use serde::{Deserialize, Serialize};

use super::Request;
use crate::whatif::intents::{Intent, Intents};
use crate::whatif::reconstruct::Side;
use crate::whatif::trace::Via;

/// When a batch that holds enough pages drains (MODELS.md §3a: the RFC's exact rule is not in
/// the posting, so both readings are offered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrainRule {
    /// Add the folio, then drain if the batch reached a cap (order-2: 8 folios per drain).
    AfterAdd,
    /// Drain first if adding the folio would pass a cap (order-2: 7 folios per drain).
    BeforeAdd,
}

impl std::str::FromStr for DrainRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "after-add" => Ok(DrainRule::AfterAdd),
            "before-add" => Ok(DrainRule::BeforeAdd),
            _ => Err(format!("{s}: expected after-add or before-add")),
        }
    }
}

impl std::fmt::Display for DrainRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DrainRule::AfterAdd => "after-add",
            DrainRule::BeforeAdd => "before-add",
        })
    }
}

/// Batch rule parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batcher {
    /// A folio of this many pages or more is not cached: it drains the batch at once.
    /// Today's kernel: 2 (only order-0 folios are cached, `!folio_test_large()`).
    pub max_cached_pages: u64,
    /// Folios per batch (`FOLIO_BATCH_SIZE` = 31).
    pub folio_cap: u32,
    /// Pages per batch (unbounded today).
    pub page_cap: u64,
    /// When a cap drains.
    pub rule: DrainRule,
}

impl Batcher {
    /// Today's kernel (v6.18): order-0 folios cached, 31 per batch.
    pub const TODAY: Batcher = Batcher {
        max_cached_pages: 2,
        folio_cap: 31,
        page_cap: u64::MAX,
        rule: DrainRule::AfterAdd,
    };

    /// Run the batch over one CPU's intents.
    pub fn requests(&self, stream: &[Intent], intents: &Intents) -> Vec<Request> {
        let mut out = Vec::new();
        let (mut folios, mut pages) = (0u32, 0u64);
        // the `lru_lazyfree` batch: the same predicate and caps (one function fills both)
        let mut lazy = (0u32, 0u64);
        let drain = |out: &mut Vec<Request>, v: i64, folios: &mut u32, pages: &mut u64| {
            if *folios > 0 {
                out.push(Request {
                    v,
                    side: Side::Add,
                    folios: *folios,
                    via: Via::Drain,
                });
            }
            *folios = 0;
            *pages = 0;
        };
        let drain_lazy = |out: &mut Vec<Request>, v: i64, lazy: &mut (u32, u64)| {
            if lazy.0 > 0 {
                out.push(Request {
                    v,
                    side: Side::Lazyfree,
                    folios: lazy.0,
                    via: Via::Lazyfree,
                });
            }
            *lazy = (0, 0);
        };
        for i in stream {
            match *i {
                Intent::Fault {
                    v, order, delay, ..
                } => {
                    let p = 1u64 << order;
                    let cacheable = p < self.max_cached_pages;
                    let at = v + delay.unwrap_or(if cacheable {
                        intents.delay_full
                    } else {
                        intents.delay_large
                    });
                    if self.rule == DrainRule::BeforeAdd
                        && cacheable
                        && folios > 0
                        && (folios + 1 > self.folio_cap || pages.saturating_add(p) > self.page_cap)
                    {
                        drain(&mut out, at, &mut folios, &mut pages);
                    }
                    folios += 1;
                    pages += p;
                    let full = match self.rule {
                        DrainRule::AfterAdd => folios >= self.folio_cap || pages >= self.page_cap,
                        DrainRule::BeforeAdd => folios >= self.folio_cap,
                    };
                    if !cacheable || full {
                        drain(&mut out, at, &mut folios, &mut pages);
                    }
                }
                Intent::Drain { v, .. } => {
                    // lru_add_drain() drains every per-CPU batch
                    drain(&mut out, v, &mut folios, &mut pages);
                    drain_lazy(&mut out, v, &mut lazy);
                }
                Intent::Lazy {
                    v,
                    order,
                    folios: n,
                } => {
                    let p = 1u64 << order;
                    let cacheable = p < self.max_cached_pages;
                    for _ in 0..n {
                        if self.rule == DrainRule::BeforeAdd
                            && cacheable
                            && lazy.0 > 0
                            && (lazy.0 + 1 > self.folio_cap
                                || lazy.1.saturating_add(p) > self.page_cap)
                        {
                            drain_lazy(&mut out, v, &mut lazy);
                        }
                        lazy.0 += 1;
                        lazy.1 += p;
                        let full = match self.rule {
                            DrainRule::AfterAdd => {
                                lazy.0 >= self.folio_cap || lazy.1 >= self.page_cap
                            }
                            DrainRule::BeforeAdd => lazy.0 >= self.folio_cap,
                        };
                        if !cacheable || full {
                            drain_lazy(&mut out, v, &mut lazy);
                        }
                    }
                }
                Intent::Free {
                    v, folios: n, via, ..
                } => out.push(Request {
                    v,
                    side: Side::Free,
                    folios: n,
                    via,
                }),
            }
        }
        // the batch left at the end is drained by exit (munmap → lru_add_drain)
        if let Some(last) = stream.last() {
            drain(&mut out, last.v(), &mut folios, &mut pages);
            drain_lazy(&mut out, last.v(), &mut lazy);
        }
        out.sort_by_key(|r| r.v);
        out
    }
}
