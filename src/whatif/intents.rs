//! What each CPU *wanted* to do, on a lock-free clock (MODELS.md §2.1 step 3, §4 M4).
//!
//! Each CPU's timeline is rewritten in virtual time: real time minus all the time that CPU
//! spent waiting for and holding `lru_lock` before that moment (Coz-style bookkeeping). On that
//! clock a policy can re-batch the folios and the replay can put lock time back under the new
//! policy; the no-change policy gives back the capture's own timeline.
//!
//! Intents: a folio added to the CPU's batch (its fault), an explicit drain
//! (`lru_add_drain()`: the start of every MADV_DONTNEED zap calls it), and a free-side batch.

use super::calibrate::Calibration;
use super::reconstruct::{Reconstruction, Side, Trigger};
use super::trace::Via;

/// One thing a CPU did that involves the LRU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Intent {
    /// A folio of `2^order` pages added to this CPU's `lru_add` batch.
    Fault {
        /// Virtual time of the allocation (the fault).
        v: i64,
        /// Folio order.
        order: u8,
        /// If this folio triggered a drain in the capture: virtual delay from its fault to that
        /// drain's lock request.
        delay: Option<i64>,
        /// The capture's free-side hold (index in `Reconstruction::holds`) that freed it.
        dies_in: Option<usize>,
        /// Its task's discarding call after the fault (enter, exit), virtual time on this CPU:
        /// from `enter` on the folio is dead (`Reconstruction::has_discards`).
        death: Option<(i64, i64)>,
    },
    /// `lru_add_drain()` on this CPU.
    Drain {
        /// Virtual time.
        v: i64,
        /// Caller of `lru_add_drain*()` (`trace::Trace::sites` index), `trace::NO_SITE` when the
        /// capture has no call chains. (On 6.18 MADV_DONTNEED does not drain: a capture of
        /// fixtures/capture-fbatch.sh shows `lru_add_drain` only under `do_wp_page` after fork.)
        site: u32,
    },
    /// A `folios_put_refs()` batch.
    Free {
        /// Virtual time of the lock request.
        v: i64,
        /// Folios.
        folios: u32,
        /// Pages.
        pages: u64,
        /// Index of the zap (run of free batches with no fault between) it belongs to.
        zap: u32,
        /// The capture's hold (index in `Reconstruction::holds`), `usize::MAX` for made-up ones.
        hold: usize,
        /// `Zap` (an unmap's `folios_put_refs()`), or `Release` (the `folios_put()` after a
        /// drain, of folios that died on the batch).
        via: Via,
    },
}

impl Intent {
    /// Virtual time.
    pub fn v(&self) -> i64 {
        match *self {
            Intent::Fault { v, .. } | Intent::Drain { v, .. } | Intent::Free { v, .. } => v,
        }
    }
}

/// Per-CPU intent streams plus the delays a policy needs for folios that did not trigger a
/// drain in the capture.
#[derive(Debug, Clone)]
pub struct Intents {
    /// CPU numbers, parallel to `streams`.
    pub cpus: Vec<u32>,
    /// Intents per CPU in virtual-time order.
    pub streams: Vec<Vec<Intent>>,
    /// Median fault → drain-request delay of drains triggered by a large folio.
    pub delay_large: i64,
    /// Median fault → drain-request delay of drains triggered by a full batch.
    pub delay_full: i64,
    /// Virtual start of each CPU's stream (for time scaling).
    pub v0: Vec<i64>,
    /// Median delay from a discarding call's enter to its first unmap hold (ns).
    pub delay_zap: i64,
    /// The capture says when folios die (`Intent::Fault::death` is filled).
    pub has_discards: bool,
}

/// A hold as the capture had it: request, grant and modelled hold, real time.
#[derive(Debug, Clone, Copy)]
pub struct Placed {
    /// Index in `Reconstruction::holds`.
    pub hold: usize,
    /// Lock request.
    pub req: i64,
    /// Grant.
    pub grant: i64,
}

/// Request and grant time of every hold under a calibration.
pub fn place(r: &Reconstruction, c: &Calibration) -> Vec<Placed> {
    r.holds
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let (req, grant) = match h.traced {
                Some((b, e)) => (b, e),
                None => {
                    let q = match h.side {
                        Side::Add => c.add_request(h.first_ts),
                        Side::Free => c.free_request(h.first_ts, h.folios),
                    };
                    (q, q)
                }
            };
            Placed {
                hold: i,
                req,
                grant,
            }
        })
        .collect()
}

/// Build the intent streams under a calibration.
pub fn build(r: &Reconstruction, c: &Calibration) -> Intents {
    let placed = place(r, c);
    let cpus = r.cpus.clone();
    let idx = |cpu: u32| cpus.iter().position(|&x| x == cpu).unwrap_or(0);
    // Per CPU: lock-time spans (req, spent) in request order, to map real → virtual time.
    let mut spans: Vec<Vec<(i64, i64)>> = vec![Vec::new(); cpus.len()];
    let mut order: Vec<&Placed> = placed.iter().collect();
    order.sort_by_key(|p| (p.req, p.hold));
    for p in &order {
        let h = &r.holds[p.hold];
        let spent = if h.traced.is_some() {
            (p.grant - p.req) + c.hold_after_grant(h.side, h.folios)
        } else {
            c.hold_fast(h.side, h.folios)
        };
        spans[idx(h.cpu)].push((p.req, spent));
    }
    // prefix sums: spent before the k-th request
    let prefix: Vec<Vec<i64>> = spans
        .iter()
        .map(|s| {
            let mut acc = 0;
            let mut v = Vec::with_capacity(s.len() + 1);
            v.push(0);
            for &(_, sp) in s {
                acc += sp;
                v.push(acc);
            }
            v
        })
        .collect();
    // virtual time of a real instant on a CPU: subtract lock time of requests strictly before
    let virt = |ci: usize, t: i64| -> i64 {
        let k = spans[ci].partition_point(|&(q, _)| q < t);
        t - prefix[ci][k]
    };
    let mut streams: Vec<Vec<Intent>> = vec![Vec::new(); cpus.len()];
    let (mut d_large, mut d_full) = (Vec::new(), Vec::new());
    for p in &placed {
        let h = &r.holds[p.hold];
        let ci = idx(h.cpu);
        let vreq = virt(ci, p.req);
        match h.side {
            Side::Add => {
                if h.trigger == Trigger::Explicit {
                    streams[ci].push(Intent::Drain {
                        v: vreq,
                        site: h.site,
                    });
                }
            }
            Side::Free => {}
        }
        if h.side == Side::Free {
            streams[ci].push(Intent::Free {
                v: vreq,
                folios: h.folios,
                pages: h.pages,
                zap: 0,
                hold: p.hold,
                via: h.via,
            });
        }
    }
    for (fi, f) in r.faults.iter().enumerate() {
        let h = &r.holds[f.hold];
        let ci = idx(h.cpu);
        // The batch is per CPU of the insertion; a task that migrated between its fault and the
        // drain still faulted before the drain, so clamp to the drain's request.
        let vreq = virt(ci, placed[f.hold].req);
        let vf = virt(ci, f.ts).min(vreq);
        let delay = if h.last_fault == Some(fi) && h.trigger != Trigger::Explicit {
            let d = vreq - vf;
            match h.trigger {
                Trigger::Large => d_large.push(d as f64),
                _ => d_full.push(d as f64),
            }
            Some(d)
        } else {
            None
        };
        streams[ci].push(Intent::Fault {
            v: vf,
            order: f.order,
            delay,
            dies_in: f.freed_in,
            death: f.death.map(|(b, e)| (virt(ci, b), virt(ci, e))),
        });
    }
    let mut v0 = Vec::with_capacity(streams.len());
    for s in &mut streams {
        // faults before drains and frees at equal times: a fault is what the drain drains
        s.sort_by_key(|i| {
            (
                i.v(),
                match i {
                    Intent::Fault { .. } => 0,
                    Intent::Drain { .. } => 1,
                    Intent::Free { .. } => 2,
                },
            )
        });
        mark_zaps(s);
        v0.push(s.first().map(|i| i.v()).unwrap_or(0));
    }
    let med = |v: &[f64]| crate::stats::median(v).map(|x| x.round() as i64);
    let delay_large = med(&d_large).or(med(&d_full)).unwrap_or(0);
    let delay_full = med(&d_full).or(med(&d_large)).unwrap_or(0);
    Intents {
        cpus,
        streams,
        delay_large,
        delay_full,
        v0,
        delay_zap: r.zap_delay_ns,
        has_discards: r.has_discards,
    }
}

/// Number the zaps: a run of free batches with no fault between them is one zap (one
/// `zap_page_range` → `tlb_finish_mmu` → `free_pages_and_swap_cache` pass).
fn mark_zaps(s: &mut [Intent]) {
    let mut zap = 0u32;
    let mut in_zap = false;
    for i in s.iter_mut() {
        match i {
            Intent::Fault { .. } => {
                if in_zap {
                    zap += 1;
                    in_zap = false;
                }
            }
            Intent::Free { zap: z, .. } => {
                *z = zap;
                in_zap = true;
            }
            Intent::Drain { .. } => {}
        }
    }
}
