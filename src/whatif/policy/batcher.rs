//! The per-CPU `lru_add` folio batch (`__folio_batch_add_and_move()` in mm/swap.c), with the
//! cacheability predicate and caps as parameters, so today's rule and the RFC's are one code.

use serde::{Deserialize, Serialize};

use super::Request;
use crate::whatif::intents::{resort, Intent, Intents};
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

    /// The rule `self` follows on `it`: itself, or on intents of order-0 folios only
    /// ([`Intents::only_order0`]) the simplest rule that asks for the very same requests there.
    /// With every folio one page, a batch's pages are its folios, so: when order 0 is not
    /// cached every folio drains alone whatever the caps and the drain rule; when it is, a
    /// page cap binds as a folio cap, and before-add drains as after-add unless the page cap
    /// is the lower (then the batch drains on the arrival of the folio past the cap, not on the
    /// folio that reached it). Two policies whose rules agree here get one build and one replay
    /// ([`super::Policy::batching`]); at 4K the RFC's rule, its drain-rule alternative and
    /// today's agree.
    pub fn on(&self, it: &Intents) -> Batcher {
        if !it.only_order0 {
            return *self;
        }
        if self.max_cached_pages <= 1 {
            return Batcher {
                max_cached_pages: 1,
                folio_cap: 1,
                page_cap: 1,
                rule: DrainRule::AfterAdd,
            };
        }
        if u64::from(self.folio_cap) <= self.page_cap {
            return Batcher {
                max_cached_pages: 2,
                folio_cap: self.folio_cap,
                page_cap: u64::MAX,
                rule: DrainRule::AfterAdd,
            };
        }
        match self.rule {
            // the page cap (below the folio cap) is the one that drains, after the add
            DrainRule::AfterAdd => Batcher {
                max_cached_pages: 2,
                folio_cap: self.page_cap as u32,
                page_cap: u64::MAX,
                rule: DrainRule::AfterAdd,
            },
            DrainRule::BeforeAdd => Batcher {
                max_cached_pages: 2,
                ..*self
            },
        }
    }

    /// Run the batch over one CPU's intents.
    pub fn requests(&self, stream: &[Intent], intents: &Intents) -> Vec<Request> {
        // At most one request per intent, a lazyfree intent's folios aside: reserved once
        // rather than grown by doubling (each step a copy). Where batching leaves fewer, the
        // pages never written are never faulted in.
        let mut out = Vec::with_capacity(stream.len());
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
                    let at = v + delay.get().unwrap_or(if cacheable {
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
        resort(&mut out, |r| r.v);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Rng;
    use crate::whatif::intents::MaybeSpan;

    /// Random streams of faults (some with their own drain delay), explicit drains, frees and
    /// lazyfree batches, all of folios of `order` pages (or a mix with `mix`).
    fn intents(seed: u64, order: u8, mix: bool) -> Intents {
        let mut rng = Rng::new(seed);
        let streams = (0..2)
            .map(|_| {
                let mut v = 0;
                (0..3000)
                    .map(|_| {
                        v += 1 + rng.below(50) as i64;
                        let order = if mix && rng.below(5) == 0 { 2 } else { order };
                        match rng.below(20) {
                            0 => Intent::Drain { v, site: 0 },
                            1 => Intent::Free {
                                v,
                                folios: 1 + rng.below(31) as u32,
                                pages: 1,
                                zap: 0,
                                hold: 0,
                                via: Via::Zap,
                            },
                            2 => Intent::Lazy {
                                v,
                                order,
                                folios: 1 + rng.below(40) as u32,
                            },
                            _ => Intent::Fault {
                                v,
                                order,
                                delay: (rng.below(4) == 0).then(|| rng.below(300) as i64).into(),
                                death: MaybeSpan::NONE,
                            },
                        }
                    })
                    .collect()
            })
            .collect();
        Intents {
            cpus: vec![0, 1],
            streams,
            delay_large: 111,
            delay_full: 222,
            v0: vec![0, 0],
            delay_zap: 0,
            has_discards: false,
            only_order0: order == 0 && !mix,
        }
    }

    fn rules() -> Vec<Batcher> {
        let mut out = vec![Batcher::TODAY];
        for max_cached_pages in [1, 2, 31] {
            for folio_cap in [1, 3, 31] {
                for page_cap in [1, 3, 31, u64::MAX] {
                    for rule in [DrainRule::AfterAdd, DrainRule::BeforeAdd] {
                        out.push(Batcher {
                            max_cached_pages,
                            folio_cap,
                            page_cap,
                            rule,
                        });
                    }
                }
            }
        }
        out
    }

    fn run(b: &Batcher, it: &Intents) -> Vec<Vec<Request>> {
        it.streams.iter().map(|s| b.requests(s, it)).collect()
    }

    /// The key is only sound if every two rules it calls alike ask for the same requests:
    /// checked over 73 rules pairwise on order-0 streams, where it merges rules.
    #[test]
    fn rules_the_key_merges_on_order0_ask_for_the_same_requests() {
        for seed in 1..=3 {
            let it = intents(seed, 0, false);
            let rs = rules();
            let got: Vec<_> = rs.iter().map(|b| (b.on(&it), run(b, &it))).collect();
            let mut merged = 0;
            for (i, (ki, ri)) in got.iter().enumerate() {
                for (kj, rj) in &got[..i] {
                    if ki == kj {
                        merged += 1;
                        assert_eq!(ri, rj, "{:?} and {:?} share a key", rs[i], ki);
                    }
                }
            }
            assert!(merged > 50, "the key merges rules on order 0 ({merged})");
        }
        // at 4K the RFC's rule, its drain-rule alternative and today's are one
        let it = intents(9, 0, false);
        let rfc = Batcher {
            max_cached_pages: 31,
            folio_cap: 31,
            page_cap: 31,
            rule: DrainRule::AfterAdd,
        };
        let alt = Batcher {
            rule: DrainRule::BeforeAdd,
            ..rfc
        };
        assert_eq!(rfc.on(&it), Batcher::TODAY.on(&it));
        assert_eq!(alt.on(&it), Batcher::TODAY.on(&it));
        // and where the key tells rules apart, they do differ here (the key is not coarser
        // than it needs to be for these three)
        assert_eq!(run(&rfc, &it), run(&Batcher::TODAY, &it));
        let page3 = Batcher { page_cap: 3, ..alt };
        assert_ne!(page3.on(&it), alt.on(&it));
        assert_ne!(run(&page3, &it), run(&alt, &it));
    }

    /// With a large folio anywhere the key is the rule itself: no two distinct rules merge.
    #[test]
    fn with_large_folios_the_key_is_the_rule() {
        for it in [intents(4, 2, false), intents(5, 0, true)] {
            assert!(!it.only_order0);
            for b in rules() {
                assert_eq!(b.on(&it), b);
            }
        }
    }
}
