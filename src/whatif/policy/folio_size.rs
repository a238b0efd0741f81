//! `folio-size`: the same workload with another mTHP size, under today's batching rule.
//!
//! A what-if the real kernel can answer on this machine (capture the workload at that size),
//! so it validates the re-batching, hold model, replay and observation rule together
//! (issue #4 validation 3).
//!
//! Transform, per CPU: the captured folios are cut back into pages, each page timed between
//! its folio's fault and the next fault; pages are regrouped into folios of `folio_kb` and each
//! new folio faults at its first page's time. Each zap's freed pages are regrouped the same way
//! into `folios_put_refs()` batches of ≤31 folios spread over the zap's span. The fault path's
//! cost per page differs by folio size and is not in the trace: the whole virtual clock is
//! scaled by `time_scale`, by default the ratio of the untraced wall times of the workload at
//! the two sizes (`target_duration_ns` over the capture's meta `untraced_duration_ns`).

use std::collections::BTreeMap;

use super::{Batcher, Context, Policy, Request};
use crate::error::{Error, Result};
use crate::whatif::intents::{Intent, Intents};
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
                "folio-size: target_duration_ns needs the capture's untraced_duration_ns (meta file); pass time_scale instead".into(),
            ))
        }
        (None, None, _) => 1.0,
    };
    if !(time_scale.is_finite() && time_scale > 0.0) {
        return Err(Error::Usage(format!(
            "folio-size: time_scale {time_scale} must be positive"
        )));
    }
    Ok(Box::new(FolioSize {
        folio_kb,
        time_scale,
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
        let order = pages_per.trailing_zeros() as u8;
        let mut out = Vec::with_capacity(intents.streams.len());
        for (ci, s) in intents.streams.iter().enumerate() {
            let v0 = intents.v0.get(ci).copied().unwrap_or(0);
            let scale = |v: i64| v0 + ((v - v0) as f64 * self.time_scale).round() as i64;
            let regrouped = regroup(s, pages_per, order);
            let scaled: Vec<Intent> = regrouped
                .into_iter()
                .map(|i| match i {
                    Intent::Fault { v, order, .. } => Intent::Fault {
                        v: scale(v),
                        order,
                        delay: None,
                        death: None,
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

/// Cut folios into pages and regroup them (see module docs).
fn regroup(s: &[Intent], pages_per: u64, order: u8) -> Vec<Intent> {
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
    let mut acc = 0u64; // pages accumulated toward the next new folio
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
                for j in 0..p {
                    if acc == 0 {
                        out.push(Intent::Fault {
                            v: v + (span * j as f64 / p as f64).round() as i64,
                            order,
                            delay: None,
                            death: None,
                        });
                    }
                    acc = (acc + 1) % pages_per;
                }
                i += 1;
            }
            Intent::Drain { v, site } => {
                acc = 0;
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
                acc = 0;
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
                let folios = pages.div_ceil(pages_per) as u32;
                let holds = free_holds_rule(folios, pages_per > 1);
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
                        pages: u64::from(n) * pages_per,
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
