//! `folio-size`: the same workload with another mTHP size, under today's batching rule.
//!
//! A what-if the real kernel can answer on this machine (capture the workload at that size),
//! so it validates the re-batching, hold model, replay and observation rule together
//! (issue #4 validation 3).
//!
//! Transform, per CPU: the captured folios are cut back into pages, each page timed between
//! its folio's fault and the next fault; pages are regrouped into folios of `folio_kb` and each
//! new folio faults at its first page's time. Only the pages the kernel can give that size
//! get it: each run of faults from one zap to the next is cut as the capture's zapped ranges
//! are against blocks of that size (`alignment::Cover`: a single-page head and tail, the
//! aligned blocks between), so a region on no boundary of the size stays in single pages.
//! Each zap's freed pages are regrouped the same way into `folios_put_refs()` batches of ≤31
//! folios spread over the zap's span. The fault path's cost per page differs by folio size
//! and is not in the trace: the whole virtual clock is scaled by `time_scale`, by default the
//! ratio of the untraced wall times of the workload at the two sizes (`target_duration_ns`
//! over the capture's meta `untraced_duration_ns`).

use std::collections::BTreeMap;

use super::{Batcher, Context, Policy, Request};
use crate::error::{Error, Result};
use crate::whatif::alignment::{self, Cover};
use crate::whatif::intents::{Intent, Intents, MaybeNs, MaybeSpan};
use crate::whatif::params::{self, Set};
use crate::whatif::reconstruct::free_holds_rule;
use crate::whatif::trace::{Trace, Via};

/// Target folio size and the clock scaling.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FolioSize {
    /// Target mTHP size in KiB (4, 8, 16, ... a power of two, at least 4).
    pub folio_kb: u64,
    /// Virtual-time scale (target / captured run time); 1 = same speed.
    pub time_scale: f64,
    /// The capture's zapped ranges against blocks of the target size (computed once, not per
    /// replicate; empty when the capture has no range zapped twice).
    #[serde(skip)]
    cover: Cover,
    /// The same against the capture's own size (meta `mthp_size`), for the notes.
    #[serde(skip)]
    own: Option<(u64, Cover)>,
}

/// `--set` parameters.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Params {
    /// Target mTHP size in KiB: required.
    folio_kb: u64,
    /// Virtual-time scale; default from `target_duration_ns`, else 1.
    time_scale: Option<f64>,
    /// Untraced run time of the workload at the target size (ns).
    target_duration_ns: Option<f64>,
}

pub(crate) fn make(set: &Set, ctx: &Context) -> Result<Box<dyn Policy>> {
    let p: Params = params::parse("folio-size", set)?;
    let folio_kb = p.folio_kb;
    if folio_kb < 4 || !folio_kb.is_power_of_two() {
        return Err(Error::Usage(
            "folio-size: --set folio_kb=N is required (4, 16, 32, 64, ... KiB)".into(),
        ));
    }
    let target = p.target_duration_ns;
    let time_scale = match (p.time_scale, target, ctx.untraced_duration_ns) {
        (Some(s), _, _) => s,
        (None, Some(t), Some(base)) if base > 0.0 => t / base,
        (None, Some(_), _) => {
            return Err(Error::Usage(
                "folio-size: target_duration_ns needs the untraced run time of what is replayed (the meta file's untraced_duration_ns, and the whole capture: not with --time); pass time_scale instead".into(),
            ))
        }
        (None, None, _) => 1.0,
    };
    if !(time_scale.is_finite() && time_scale > 0.0) {
        return Err(Error::Usage(format!(
            "folio-size: time_scale {time_scale} must be positive"
        )));
    }
    let own = ctx
        .folio_kb
        .filter(|kb| *kb >= 4 && kb.is_power_of_two())
        .map(|kb| (kb, alignment::cover(&ctx.discards, order_of(kb))));
    Ok(Box::new(FolioSize {
        folio_kb,
        time_scale,
        cover: alignment::cover(&ctx.discards, order_of(folio_kb)),
        own,
    }))
}

/// `validate folio-size BASE AFTER`: the target size and untraced run time come from AFTER's
/// meta file (fixtures/capture-replay.sh) unless `--set` gives them.
pub(crate) fn after_defaults(after: &Trace, set: &mut Set) -> Result<()> {
    if !set.contains_key("folio_kb") {
        let kb = crate::whatif::context(after).folio_kb.ok_or_else(|| {
            Error::Usage(format!(
                "{}: no meta file with mthp_size; pass --set folio_kb=N",
                after.path
            ))
        })?;
        set.insert("folio_kb".into(), kb.to_string());
    }
    if !set.contains_key("time_scale") && !set.contains_key("target_duration_ns") {
        if let Some(d) = after.meta_f64("untraced_duration_ns") {
            set.insert("target_duration_ns".into(), d.to_string());
        }
    }
    Ok(())
}

impl Policy for FolioSize {
    fn name(&self) -> &'static str {
        "folio-size"
    }
    fn notes(&self, _: &crate::whatif::reconstruct::Reconstruction) -> Vec<String> {
        let target = &self.cover;
        if target.pages() == 0 {
            return vec![
                "folio-size: the capture has no range zapped twice (madvise start and length), \
                 so every page is taken to fault at the target size; a region on no boundary of \
                 that size would get fewer large folios (docs/MODELS.md §5a)"
                    .to_string(),
            ];
        }
        let mut notes = Vec::new();
        let share = |c: &Cover| 100.0 * c.body_share();
        if let Some((kb, c)) = &self.own {
            if *kb > 4 && c.body_share() < 0.99 {
                notes.push(format!(
                    "folio-size: the capture's own {kb}K mTHP reached only {:.0}% of the pages \
                     its zapped ranges refault ({} of {}: the rest lie outside {kb}K-aligned \
                     blocks inside the ranges and fault as single pages)",
                    share(c),
                    c.body,
                    c.pages()
                ));
            }
        }
        if self.folio_kb > 4 && target.body_share() < 0.99 {
            notes.push(format!(
                "folio-size: {}K folios can reach only {:.0}% of the pages the capture's zapped \
                 ranges refault ({} of {}); the prediction faults the rest as single pages, as \
                 the kernel would (docs/MODELS.md §5a)",
                self.folio_kb,
                share(target),
                target.body,
                target.pages()
            ));
        }
        notes
    }
    fn describe(&self) -> BTreeMap<String, String> {
        [
            ("folio_kb".to_string(), self.folio_kb.to_string()),
            ("time_scale".to_string(), format!("{:.4}", self.time_scale)),
        ]
        .into_iter()
        .collect()
    }
    fn requests(&self, intents: &Intents, _: &Context) -> Result<Vec<Vec<Request>>> {
        let pages_per = self.folio_kb / 4;
        let order = order_of(self.folio_kb);
        let mut out = Vec::with_capacity(intents.streams.len());
        for (ci, s) in intents.streams.iter().enumerate() {
            let v0 = intents.v0.get(ci).copied().unwrap_or(0);
            let scale = |v: i64| v0 + ((v - v0) as f64 * self.time_scale).round() as i64;
            let regrouped = regroup(s, pages_per, order, &self.cover);
            let scaled: Vec<Intent> = regrouped
                .into_iter()
                .map(|i| match i {
                    Intent::Fault { v, order, .. } => Intent::Fault {
                        v: scale(v),
                        order,
                        delay: MaybeNs::NONE,
                        death: MaybeSpan::NONE,
                    },
                    Intent::Drain { v, site } => Intent::Drain { v: scale(v), site },
                    Intent::Free {
                        v,
                        folios,
                        pages,
                        zap,
                        hold,
                        via,
                    } => Intent::Free {
                        v: scale(v),
                        folios,
                        pages,
                        zap,
                        hold,
                        via,
                    },
                    Intent::Lazy { v, order, folios } => Intent::Lazy {
                        v: scale(v),
                        order,
                        folios,
                    },
                })
                .collect();
            out.push(Batcher::TODAY.requests(&scaled, intents));
        }
        Ok(out)
    }
}

/// Folio order of a `kb` KiB folio (4 KiB pages; `kb` a power of two).
fn order_of(kb: u64) -> u8 {
    (kb / 4).max(1).trailing_zeros() as u8
}

/// A run of faults ends at an explicit drain and at a zap's frees.
fn ends_run(i: &Intent) -> bool {
    matches!(i, Intent::Drain { .. } | Intent::Free { via: Via::Zap, .. })
}

/// Cut folios into pages and regroup them (see module docs).
fn regroup(s: &[Intent], pages_per: u64, order: u8, cover: &Cover) -> Vec<Intent> {
    let mut out = Vec::with_capacity(s.len());
    // typical gap between faults, to time the pages of a fault followed by a long pause
    let gaps: Vec<f64> = s
        .windows(2)
        .filter_map(|w| match (w[0], w[1]) {
            (Intent::Fault { v: a, .. }, Intent::Fault { v: b, .. }) => Some((b - a) as f64),
            _ => None,
        })
        .collect();
    let typical = crate::stats::median(&gaps).unwrap_or(0.0).max(0.0);
    // the current run of faults: (pages so far, head pages, end of the body)
    let mut run: Option<(u64, u64, u64)> = None;
    let mut lazy_acc = 0u64; // the same for folios marked lazyfree
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            Intent::Fault { v, order: o, .. } => {
                let p = 1u64 << o;
                let next_v = s[i + 1..].iter().find_map(|x| match x {
                    Intent::Fault { v, .. } => Some(*v),
                    _ => None,
                });
                let span = match next_v {
                    Some(n) if ((n - v) as f64) <= 4.0 * typical.max(1.0) * p as f64 => {
                        (n - v) as f64
                    }
                    _ => typical * p as f64,
                };
                let (k, head, body_end) = run.get_or_insert_with(|| {
                    // the pages this run faults before its drain or zap, cut as the
                    // discarded ranges are: small head, blocks of the target size, small tail
                    // (the release of folios that died on the batch, after a drain, is no end:
                    // the task goes on faulting its range)
                    let pages: u64 = s[i..]
                        .iter()
                        .take_while(|x| !ends_run(x))
                        .map(|x| match x {
                            Intent::Fault { order, .. } => 1u64 << order,
                            _ => 0,
                        })
                        .sum();
                    let (head, body, _) = cover.split(pages);
                    (0, head, head + body)
                });
                for j in 0..p {
                    let small = *k < *head || *k >= *body_end;
                    if small || (*k - *head) % pages_per == 0 {
                        out.push(Intent::Fault {
                            v: v + (span * j as f64 / p as f64).round() as i64,
                            order: if small { 0 } else { order },
                            delay: MaybeNs::NONE,
                            death: MaybeSpan::NONE,
                        });
                    }
                    *k += 1;
                }
                i += 1;
            }
            Intent::Drain { v, site } => {
                run = None;
                out.push(Intent::Drain { v, site });
                i += 1;
            }
            Intent::Lazy {
                v,
                order: o,
                folios,
            } => {
                // the same pages, cut into folios of the target size, marked in one drain
                lazy_acc += u64::from(folios) << o;
                let made = lazy_acc / pages_per;
                lazy_acc %= pages_per;
                if made > 0 {
                    out.push(Intent::Lazy {
                        v,
                        order,
                        folios: made as u32,
                    });
                }
                i += 1;
            }
            Intent::Free { zap, .. } => {
                if ends_run(&s[i]) {
                    run = None;
                }
                // the whole zap: every free batch with this zap number, up to the next fault
                let mut j = i;
                let (mut pages, mut vs) = (0u64, Vec::new());
                while j < s.len() {
                    match s[j] {
                        Intent::Free {
                            v,
                            pages: p,
                            zap: z,
                            ..
                        } if z == zap => {
                            pages += p;
                            vs.push(v);
                            j += 1;
                        }
                        Intent::Drain { .. } => j += 1,
                        _ => break,
                    }
                }
                let (head, body, tail) = cover.split(pages);
                let blocks = body.div_ceil(pages_per);
                let folios = (head + blocks + tail) as u32;
                // a large folio takes two mmu_gather entries; a mixed zap counts as what most of it is
                let large = pages_per > 1 && blocks > 0 && blocks >= head + tail;
                let holds = free_holds_rule(folios, large);
                let batches = holds.len().max(1);
                let (first, last) = (vs[0], *vs.last().unwrap_or(&vs[0]));
                for (b, n) in holds.into_iter().enumerate() {
                    let v = if batches == 1 {
                        first
                    } else {
                        first
                            + ((last - first) as f64 * b as f64 / (batches - 1) as f64).round()
                                as i64
                    };
                    out.push(Intent::Free {
                        v,
                        folios: n,
                        pages: (u64::from(n) * pages).div_ceil(u64::from(folios.max(1))),
                        zap,
                        hold: usize::MAX,
                        via: Via::Zap,
                    });
                }
                // keep drains that sat inside the zap
                for x in &s[i..j] {
                    if let Intent::Drain { v, site } = x {
                        out.push(Intent::Drain { v: *v, site: *site });
                    }
                }
                i = j;
            }
        }
    }
    out.sort_by_key(|x| x.v());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(v: i64) -> Intent {
        Intent::Fault {
            v,
            order: 0,
            delay: MaybeNs::NONE,
            death: MaybeSpan::NONE,
        }
    }

    fn free(v: i64, folios: u32, via: Via) -> Intent {
        Intent::Free {
            v,
            folios,
            pages: u64::from(folios),
            zap: 0,
            hold: 0,
            via,
        }
    }

    /// One pass of foliochurn over its unaligned 128 KiB range at 64K: 32 small faults, a
    /// release of folios that died on the batch in the middle (no end of the run), then the
    /// zap. The cover of the range the 128K capture zapped cuts the pass into 10 small pages,
    /// one 64K block and 6 small pages (the 64K capture's own range, 12 + 16 + 4, makes the
    /// same 17 folios per pass its counts show), and the zap frees 17 folios in the
    /// mmu_gather rule's batches of 8 and 9.
    #[test]
    fn a_pass_over_an_unaligned_range_is_cut_as_the_range_is() {
        let mut s: Vec<Intent> = (0..32).map(|p| fault(p * 100)).collect();
        s.insert(12, free(1150, 2, Via::Release));
        s.push(free(3300, 31, Via::Zap));
        s.push(free(3400, 1, Via::Zap));
        let cover = Cover {
            head: 10,
            body: 16,
            tail: 6,
        };
        let out = regroup(&s, 16, 4, &cover);
        let orders: Vec<u8> = out
            .iter()
            .filter_map(|i| match i {
                Intent::Fault { order, .. } => Some(*order),
                _ => None,
            })
            .collect();
        let mut want = vec![0u8; 10];
        want.push(4);
        want.extend([0u8; 6]);
        assert_eq!(orders, want);
        // the 64K folio faults at its first page's time
        assert!(out.contains(&Intent::Fault {
            v: 1000,
            order: 4,
            delay: MaybeNs::NONE,
            death: MaybeSpan::NONE
        }));
        let zap: Vec<u32> = out
            .iter()
            .filter_map(|i| match i {
                Intent::Free {
                    folios,
                    via: Via::Zap,
                    v,
                    ..
                } if *v >= 3300 => Some(*folios),
                _ => None,
            })
            .collect();
        assert_eq!(zap, vec![8, 9]);
        // with no range seen, every page goes into 64K folios as before
        let out = regroup(&s, 16, 4, &Cover::default());
        let n = out
            .iter()
            .filter(|i| matches!(i, Intent::Fault { order: 4, .. }))
            .count();
        assert_eq!(n, 2);
    }
}
