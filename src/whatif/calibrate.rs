//! Hold and handoff parameters measured from the capture itself (MODELS.md §5, §5a).
//!
//! Nothing here looks at the contended count or the total wait that the replay is later
//! compared with: every parameter comes from where individual events sit relative to one
//! another.
//!
//! The anchors are the events emitted *inside* an add-side hold (`mm_lru_insertion`) and the
//! frees right after a free-side hold. Around them:
//!
//! * `s1_add`: per-folio cost inside an add-side hold = median spacing of insertions in a drain.
//! * `post`: how long the holder keeps the lock after its last insertion = the upper edge of
//!   where other CPUs' `contention_begin` falls after that insertion (the collision window of
//!   MODELS.md §5a). Its quantile is a calibration choice (default 97.5th) and the sensitivity
//!   table shows its effect.
//! * `pre_fast`: fast-path acquisition → first insertion. Requests land uniformly in a hold, so
//!   the share of waiters that arrive before the holder's insertion scales `post`.
//! * `gap`: a waiter's `contention_end` comes this long after the holder's release (the
//!   waiter takes the lock and emits the tracepoint while holding it):
//!   median(`contention_end` − holder's last insertion) − `post`.
//! * `d_pre`: waiter's `contention_end` → its own first insertion (includes the emit cost).
//! * Free side: grant → first `mm_page_free` = `c0 + c1·n` (least squares over traced
//!   free-side holds); the unlock → first free delay `u` from waiters whose holder was a free
//!   batch: `gap` − median(`contention_end` − holder's first free).
//! * Lazyfree (MADV_FREE) holds have no event inside, only a start when the holder's own wait
//!   was traced (its `contention_end`). A waiter that begins soon after such a grant and is
//!   held up by the release ends at grant + hold + `gap`: the hold is the median of
//!   `contention_end − holder's grant` over the waiters that came early enough for the release,
//!   not their own path, to set their wait (begin + the median own path before the first
//!   guess of it). A waiter is one of the hold's only if it began within the holder's call's
//!   time per hold: after that the holder, unseen, is on its next folios.
//! * `wait_min`: the waiter's own `contention_begin` → `contention_end` path, the floor of a
//!   traced wait: the mean wait of waiters after the holder's last insertion that the release
//!   did not hold up (the mean, so that the replay's floor-bound waits sum right).

use super::{CpuMap, IntMap};

use super::reconstruct::{Reconstruction, Side, Trigger};
use super::trace::{Kind, Trace};

/// Raw per-event measurements; a bootstrap resamples these.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    /// Mean insertion spacing of each add-side hold with ≥2 folios, ns.
    pub add_spacing: Vec<f64>,
    /// `first insertion − contention_end` of traced add-side holds.
    pub d_pre: Vec<f64>,
    /// (folios, `first free − contention_end`) of traced free-side holds.
    pub pre_free: Vec<(f64, f64)>,
    /// One per waiter whose holder was on the add side: true if it arrived before the
    /// holder's first insertion (pre part).
    pub arrived_before_insert: Vec<bool>,
    /// `contention_end − holder's last insertion`.
    pub end_after_insert: Vec<f64>,
    /// (`contention_begin − holder's last insertion`, `contention_end − contention_begin`) of
    /// waiters that came after their holder's last insertion: where the wait stops depending on
    /// when the holder lets go.
    pub wait_after_insert: Vec<(f64, f64)>,
    /// `contention_end − holder's first free` for waiters on a free-side holder.
    pub end_before_free: Vec<f64>,
    /// (`contention_begin − holder's grant`, `contention_end − holder's grant`) of waiters on
    /// a lazyfree holder whose own wait was traced.
    pub after_lazy_grant: Vec<(f64, f64)>,
    /// Folios of each traced lazyfree hold.
    pub lazy_folios: Vec<f64>,
    /// Add-side holds of other CPUs that asked during a MADV_FREE call: (their wait was
    /// traced, the call's time per lazyfree hold).
    pub during_lazy: Vec<(bool, f64)>,
    /// Each MADV_FREE call's time per lazyfree hold (kept whole by a bootstrap: a fallback).
    pub per_hold: Vec<f64>,
    /// Waiters that began before their holder's first event, where that hold is one large
    /// folio's (nothing but the lock and that folio between the holder's grant and its
    /// insertion): where a stall of the holder before the insertion shows.
    pub unplaced: Vec<Unplaced>,
    /// (`contention_begin − holder's last insertion`, `contention_end − contention_begin`) of
    /// waiters that began more than `NEAR` after another CPU's last insertion, that CPU doing
    /// nothing traced until the grant and not inside a MADV_FREE call: the holder stopped
    /// after its insertion, where only a stall keeps it (the stall's samples alone).
    pub late_after_insert: Vec<(f64, f64)>,
}

/// A traced wait that began before its holder's insertion of one large folio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unplaced {
    /// `contention_end − contention_begin`.
    pub wait: f64,
    /// From its `contention_begin`, or the holder's grant when that came later, to the
    /// holder's insertion.
    pub lead: f64,
}

/// The fitted hold model. Times in ns, as `f64`: they are medians and slopes, not timestamps
/// (each field's name says its unit; the JSON report carries the same names).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Calibration {
    /// Per-folio add-side cost.
    pub s1_add_ns: f64,
    /// Last insertion → release.
    pub post_ns: f64,
    /// Fast-path acquisition → first insertion.
    pub pre_fast_ns: f64,
    /// Release → waiter's `contention_end` (lock held by the waiter meanwhile), when the
    /// release is what the waiter waited for.
    pub gap_ns: f64,
    /// Shortest a traced wait lasts however early the holder lets go: the waiter's own
    /// `contention_begin` → `contention_end` path (the tracepoint's emit cost, the paravirt
    /// slowpath's entry and the handoff). A traced grant comes no earlier than this after the
    /// waiter's `contention_begin`.
    #[serde(default)]
    pub wait_min_ns: f64,
    /// Share of traced waits that stall (MODELS.md §5a), of the waits placed on a holder:
    /// waiters after a holder's last insertion whose wait passed both its expected end (the
    /// release + gap, or the floor) and `STALL_FACTOR` × the median own path, and waiters
    /// before a holder's insertion of one large folio that came more than that cut later than
    /// a hold's start takes. 0 where the release held up most waiters after an insertion.
    #[serde(default)]
    pub stall_share: f64,
    /// Mean excess of those stalls over the expected wait.
    #[serde(default)]
    pub stall_mean_ns: f64,
    /// The stalls counted in `stall_share`.
    #[serde(default)]
    pub n_stalls: usize,
    /// A traced wait longer than this is a stall candidate: `STALL_FACTOR` × the median wait of
    /// the waiters after a holder's last insertion (their own path). 0 with no such waiter.
    #[serde(default)]
    pub stall_cut_ns: f64,
    /// Where the verdict splits the total wait (MODELS.md §5b): `stall_cut_ns` past the hold this
    /// calibration gives 99% of the capture's holds no more than, so that a wait above it is
    /// longer than any usual hold explains. Set by the engine from the reconstruction (0: no
    /// split).
    #[serde(default)]
    pub tail_cut_ns: f64,
    /// Each stall's excess, ns, ascending: a stalled replayed wait draws one.
    #[serde(skip)]
    pub stalls_ns: Vec<i64>,
    /// Waiter's `contention_end` → its first insertion.
    pub d_pre_ns: f64,
    /// Lazyfree hold of `lazy_folios_mean` folios, grant → release.
    #[serde(default)]
    pub lazy_hold_ns: f64,
    /// Mean folios of the traced lazyfree holds `lazy_hold_ns` was measured on.
    #[serde(default)]
    pub lazy_folios_mean: f64,
    /// Waiters on a traced lazyfree holder (the samples of `lazy_hold_ns`).
    #[serde(default)]
    pub n_lazy_window: usize,
    /// Lazyfree hold of `lazy_folios_mean` folios taken on the fast path (nobody waiting).
    #[serde(default)]
    pub lazy_fast_ns: f64,
    /// Other CPUs' add-side holds that asked during a MADV_FREE call (the samples of
    /// `lazy_fast_ns`).
    #[serde(default)]
    pub n_during_lazy: usize,
    /// The lazyfree holds were measured on held-up waiters (else bounded by the calls' timing).
    #[serde(default)]
    pub lazy_from_waiters: bool,
    /// Free side: `contention_end` → first free = `c0 + c1·n`.
    pub c0_ns: f64,
    /// Per-folio part, ns per folio.
    pub c1_ns: f64,
    /// Free side: release → first free.
    pub u_ns: f64,
    /// Quantile of `begin − insertion` taken as the window's upper edge.
    pub post_quantile: f64,
    /// Sample counts: drains with ≥2 folios.
    pub n_spacing: usize,
    /// Traced add-side grants.
    pub n_d_pre: usize,
    /// Traced free-side grants.
    pub n_pre_free: usize,
    /// Waiters on an add-side holder.
    pub n_add_window: usize,
    /// Waiters on a free-side holder.
    pub n_free_window: usize,
}

impl Calibration {
    /// Lock hold of an uncontended (fast-path) acquisition.
    pub fn hold_fast(&self, side: Side, folios: u32) -> i64 {
        let k = f64::from(folios.max(1));
        let v = match side {
            Side::Add => self.pre_fast_ns + self.s1_add_ns * (k - 1.0) + self.post_ns,
            Side::Free => self.free_body(k) - (self.d_pre_ns - self.pre_fast_ns),
            Side::Lazyfree => self.lazy_body(self.lazy_fast_ns, k),
        };
        v.max(1.0).round() as i64
    }

    /// Lock hold from a waiter's `contention_end` to its release.
    pub fn hold_after_grant(&self, side: Side, folios: u32) -> i64 {
        let k = f64::from(folios.max(1));
        let v = match side {
            Side::Add => self.d_pre_ns + self.s1_add_ns * (k - 1.0) + self.post_ns,
            Side::Free => self.free_body(k),
            Side::Lazyfree => self.lazy_body(self.lazy_hold_ns, k),
        };
        v.max(1.0).round() as i64
    }

    /// A lazyfree hold of `k` folios. Measured on holds of `lazy_folios_mean` folios; other
    /// batch sizes (a policy's re-batching, another folio size) split it into a fixed part and
    /// a per-folio part in the proportion the add side shows (`pre_fast + post` : `s1_add`):
    /// the same lock, the same list moves, minus the insertion tracepoint.
    fn lazy_body(&self, measured: f64, k: f64) -> f64 {
        let rho = if self.s1_add_ns > 0.0 {
            (self.pre_fast_ns + self.post_ns) / self.s1_add_ns
        } else {
            1.0
        };
        let m = self.lazy_folios_mean.max(1.0);
        (measured * (rho + k) / (rho + m)).max(1.0)
    }

    /// `contention_end` → release of a free-side batch.
    fn free_body(&self, k: f64) -> f64 {
        (self.c0_ns + self.c1_ns * k - self.u_ns).max(1.0)
    }

    /// Release → waiter's grant timestamp.
    pub fn gap_stamp_ns(&self) -> i64 {
        self.gap_ns.max(0.0).round() as i64
    }

    /// A traced waiter's `contention_begin` → its grant, at the least.
    pub fn wait_min_stamp_ns(&self) -> i64 {
        self.wait_min_ns.max(0.0).round() as i64
    }

    /// Request time of an untraced add-side hold whose first insertion is at `first_ts`.
    pub fn add_request(&self, first_ts: i64) -> i64 {
        first_ts - self.pre_fast_ns.round() as i64
    }

    /// Request time of an untraced lazyfree hold placed at `first_ts` (it starts there).
    pub fn lazy_request(&self, first_ts: i64) -> i64 {
        first_ts
    }

    /// Request time of an untraced free-side hold of `n` folios whose first free is at `ts`.
    pub fn free_request(&self, first_ts: i64, n: u32) -> i64 {
        first_ts - self.u_ns.round() as i64 - self.hold_fast(Side::Free, n)
    }
}

/// A calibration's integer hold lengths and untraced request offsets for batches of up to
/// [`HoldTable::UPTO`] folios, looked up instead of recomputed (each is a float expression and a
/// rounding per hold or request otherwise: the replay and the intents' re-timing ask for one
/// per lock acquisition); larger batches ask the calibration itself, so the values are the same.
pub struct HoldTable {
    fast: [[i64; HoldTable::UPTO]; 3],
    after_grant: [[i64; HoldTable::UPTO]; 3],
    req_off: [[i64; HoldTable::UPTO]; 3],
}

impl HoldTable {
    /// Batches up to this many folios (exclusive) are in the table.
    pub const UPTO: usize = 64;

    /// The sides, each at its index in the table ([`HoldTable::side`]).
    pub const SIDES: [Side; 3] = [Side::Add, Side::Free, Side::Lazyfree];

    /// The table of `c`.
    pub fn new(c: &Calibration) -> Self {
        let mut t = HoldTable {
            fast: [[0; Self::UPTO]; 3],
            after_grant: [[0; Self::UPTO]; 3],
            req_off: [[0; Self::UPTO]; 3],
        };
        for side in Self::SIDES {
            let si = Self::side(side);
            for k in 0..Self::UPTO {
                t.fast[si][k] = c.hold_fast(side, k as u32);
                t.after_grant[si][k] = c.hold_after_grant(side, k as u32);
                t.req_off[si][k] = req_off(c, side, k as u32);
            }
        }
        t
    }

    /// `a` and `b` give every hold the same length and every untraced request the same offset
    /// (the table, and a batch far beyond it: the lengths are linear in the folio count), so
    /// the intents re-timed under either are the same and so are the policies' requests: a
    /// sensitivity row that moves only the grant gap or the stalls replays the point's.
    pub fn same_timing(a: &Calibration, b: &Calibration) -> bool {
        let (ta, tb) = (HoldTable::new(a), HoldTable::new(b));
        let far = 4 * Self::UPTO as u32;
        ta.fast == tb.fast
            && ta.after_grant == tb.after_grant
            && ta.req_off == tb.req_off
            && Self::SIDES.iter().all(|&s| {
                a.hold_fast(s, far) == b.hold_fast(s, far)
                    && a.hold_after_grant(s, far) == b.hold_after_grant(s, far)
                    && req_off(a, s, far) == req_off(b, s, far)
            })
    }

    /// `side`'s index in [`HoldTable::SIDES`] and in the table.
    pub fn side(side: Side) -> usize {
        match side {
            Side::Add => 0,
            Side::Free => 1,
            Side::Lazyfree => 2,
        }
    }

    /// [`Calibration::hold_fast`].
    pub fn fast(&self, c: &Calibration, side: Side, folios: u32) -> i64 {
        match self.fast[Self::side(side)].get(folios as usize) {
            Some(&h) => h,
            None => c.hold_fast(side, folios),
        }
    }

    /// [`Calibration::hold_after_grant`].
    pub fn after_grant(&self, c: &Calibration, side: Side, folios: u32) -> i64 {
        match self.after_grant[Self::side(side)].get(folios as usize) {
            Some(&h) => h,
            None => c.hold_after_grant(side, folios),
        }
    }

    /// First event − request of an untraced hold ([`Calibration::add_request`],
    /// [`Calibration::free_request`], [`Calibration::lazy_request`]).
    pub fn req_off(&self, c: &Calibration, side: Side, folios: u32) -> i64 {
        match self.req_off[Self::side(side)].get(folios as usize) {
            Some(&h) => h,
            None => req_off(c, side, folios),
        }
    }
}

fn req_off(c: &Calibration, side: Side, folios: u32) -> i64 {
    match side {
        Side::Add => -c.add_request(0),
        Side::Free => -c.free_request(0, folios),
        Side::Lazyfree => -c.lazy_request(0),
    }
}

/// Collect the raw samples of a capture and its reconstruction.
pub fn samples(t: &Trace, r: &Reconstruction) -> Samples {
    let mut s = Samples::default();
    for h in &r.holds {
        match h.side {
            Side::Add => {
                if h.folios >= 2 {
                    s.add_spacing
                        .push((h.last_ts - h.first_ts) as f64 / f64::from(h.folios - 1));
                }
                if let Some((_, end)) = h.traced.get() {
                    s.d_pre.push((h.first_ts - end) as f64);
                }
            }
            Side::Free => {
                if let Some((_, end)) = h.traced.get() {
                    s.pre_free
                        .push((f64::from(h.folios), (h.first_ts - end) as f64));
                }
            }
            Side::Lazyfree => {
                if h.traced.get().is_some() {
                    s.lazy_folios.push(f64::from(h.folios));
                }
            }
        }
    }
    // An add-side hold of another CPU that asked inside a MADV_FREE call finds one of the
    // call's holds with the probability hold / (call time per hold): the fast-path hold's
    // only trace, as nothing inside it is recorded.
    let mut calls: Vec<FreeCall> = r
        .lazyfree_calls
        .iter()
        .filter(|c| c.3 > 0 && c.2 > c.1)
        .map(|&(cpu, enter, exit, n)| FreeCall {
            enter,
            exit,
            cpu,
            per_hold: (exit - enter) as f64 / f64::from(n),
        })
        .collect();
    calls.sort_by_key(|c| c.enter);
    s.per_hold = calls.iter().map(|c| c.per_hold).collect();
    for h in r.holds.iter().filter(|h| h.side == Side::Add) {
        let at = h.traced.get().map_or(h.first_ts, |(b, _)| b);
        if let Some(c) = call_at(&calls, at, at, |cpu| cpu != h.cpu) {
            s.during_lazy.push((h.traced.get().is_some(), c.per_hold));
        }
    }
    // How far apart two events can be and still be one hold and its waiter.
    const NEAR: i64 = 5_000;
    // Grants that start a lazyfree hold (its own traced wait), per CPU, each with how long
    // after it a waiter can still have found that hold: its call's time per hold. The holder
    // leaves no event until its next traced wait, so a waiter that begins later than that
    // has found one of the call's next, untraced holds; counted as this one's, it makes the
    // hold several holds long (seen: 5 µs holds in calls of 0.5-0.9 µs per hold).
    let lazy_grants: IntMap<(u32, i64), i64> = r
        .holds
        .iter()
        .filter(|h| h.side == Side::Lazyfree)
        .filter_map(|h| h.traced.get().map(|(_, e)| (h.cpu, e)))
        .map(|(cpu, e)| {
            let reach = call_at(&calls, e, e, |c| c == cpu)
                .map_or(NEAR, |c| (c.per_hold.ceil() as i64).clamp(1, NEAR));
            ((cpu, e), reach)
        })
        .collect();
    // CPU → its last event was the grant of a lazyfree hold at this time (it still holds),
    // and how long after it the hold can still be found
    let mut in_lazy: IntMap<u32, (i64, i64)> = IntMap::default();
    // waiting CPU → the lazyfree grant it found held when it began
    let mut lazy_holder: IntMap<u32, i64> = IntMap::default();
    // a capture without MADV_FREE pays nothing per event for this
    let track_lazy = !lazy_grants.is_empty();
    // Waiter ↔ holder geometry. The holder of a wait that begins at b is the other CPU whose
    // hold covers b: its most recent insertion (post part), or its next hold's first event
    // (pre part of an add hold, or a free-side hold that ends before its frees).
    let lock = r.lock;
    let mut hold_starts: Vec<(i64, usize)> = r
        .holds
        .iter()
        .enumerate()
        .map(|(i, h)| (h.first_ts, i))
        .collect();
    hold_starts.sort_unstable();
    // (cpu, last event) of each add-side hold of one large folio: a hold that has nothing to do
    // after its insertion but the release (a batch drain also moves the folios that died on
    // it, with no event)
    let single_large = LastTimes::new(
        r.holds
            .iter()
            .filter(|h| h.side == Side::Add && h.trigger == Trigger::Large && h.folios == 1)
            .map(|h| (h.cpu, h.last_ts)),
    );
    let mut last_insert: IntMap<u32, i64> = IntMap::default();
    // per CPU, looked up per event (last_insert is walked whole, so it stays a map: its
    // order decides between equal times)
    let mut last_kind_insert: CpuMap<bool> = CpuMap::default();
    let mut begin: CpuMap<i64> = CpuMap::default();
    for e in &t.events {
        if track_lazy {
            // any event of a CPU but the grant of one of its lazyfree holds ends that hold
            match e.kind {
                Kind::End { lock: l } if l == lock => match lazy_grants.get(&(e.cpu, e.ts)) {
                    Some(&reach) => {
                        in_lazy.insert(e.cpu, (e.ts, reach));
                    }
                    None => {
                        in_lazy.remove(&e.cpu);
                    }
                },
                _ => {
                    in_lazy.remove(&e.cpu);
                }
            }
            if matches!(e.kind, Kind::Begin { lock: l, .. } if l == lock) {
                if let Some(g) = in_lazy
                    .values()
                    .copied()
                    .filter(|&(g, reach)| g < e.ts && e.ts - g < reach)
                    .map(|(g, _)| g)
                    .max()
                {
                    lazy_holder.insert(e.cpu, g);
                }
            }
        }
        match e.kind {
            Kind::Insert { .. } => {
                last_insert.insert(e.cpu, e.ts);
                last_kind_insert.insert(e.cpu, true);
            }
            Kind::Begin { lock: l, .. } if l == lock => {
                begin.insert(e.cpu, e.ts);
                // A holder that asks again right after its drain (to relock for the folios
                // that died on its batch) still ended its hold at its last insertion: keep it
                // visible to the waiter's contention_end.
                last_kind_insert.or_default(e.cpu);
            }
            Kind::End { lock: l } if l == lock => {
                last_kind_insert.insert(e.cpu, false);
                let Some(b) = begin.remove(e.cpu) else {
                    continue;
                };
                if let Some(g) = track_lazy.then(|| lazy_holder.remove(&e.cpu)).flatten() {
                    s.after_lazy_grant.push(((b - g) as f64, (e.ts - g) as f64));
                    continue;
                }
                // post part: another CPU's last event was an insertion shortly before b
                let holder_insert = last_insert
                    .iter()
                    .filter(|(c, ts)| {
                        **c != e.cpu
                            && **ts <= b
                            && b - **ts < NEAR
                            && last_kind_insert.get(**c) == Some(&true)
                    })
                    .map(|(_, ts)| *ts)
                    .max();
                if holder_insert.is_none() {
                    // the latest insertion of a CPU that has done nothing traced since
                    let late = last_insert
                        .iter()
                        .filter(|(c, ts)| {
                            **c != e.cpu && **ts <= b && last_kind_insert.get(**c) == Some(&true)
                        })
                        .max_by_key(|(_, ts)| **ts);
                    if let Some((&c, &li)) = late {
                        if single_large.contains(c, li)
                            && call_at(&calls, li, e.ts, |x| x == c).is_none()
                        {
                            s.late_after_insert
                                .push(((b - li) as f64, (e.ts - b) as f64));
                        }
                    }
                }
                if let Some(li) = holder_insert {
                    s.end_after_insert.push((e.ts - li) as f64);
                    s.wait_after_insert
                        .push(((b - li) as f64, (e.ts - b) as f64));
                    s.arrived_before_insert.push(false);
                    continue;
                }
                // otherwise: the first hold of another CPU that starts after b
                let from = hold_starts.partition_point(|&(ts, _)| ts < b);
                let next = hold_starts[from..]
                    .iter()
                    .find(|&&(_, hi)| r.holds[hi].cpu != e.cpu);
                if let Some(&(ts, hi)) = next {
                    let h = &r.holds[hi];
                    // Only a hold of one large folio says how long its start should take: a
                    // drain of a batch also handles the folios that died on it, with no
                    // event (nor one whose CPU was inside MADV_FREE: its lazyfree holds leave
                    // no event either).
                    if h.side == Side::Add
                        && h.trigger == Trigger::Large
                        && h.folios == 1
                        && ts <= e.ts
                        && call_at(&calls, b, ts, |c| c == h.cpu).is_none()
                    {
                        // a holder that was itself still waiting when this waiter began
                        // starts its hold at its own grant: its wait is its own (a stall
                        // there is counted once, on it, and the replay queues this one
                        // behind it)
                        let start = h.traced.get().map_or(b, |(_, granted)| b.max(granted));
                        s.unplaced.push(Unplaced {
                            wait: (e.ts - b) as f64,
                            lead: (ts - start) as f64,
                        });
                    }
                    // the waiter came before the hold's first event and was granted at its end
                    // (a drain of 31 traced insertions lasts well over NEAR); not when the
                    // holder's CPU was inside MADV_FREE meanwhile: the waiter most likely found
                    // one of the call's lazyfree holds, and counted here it made the pre part
                    // of every fast-path hold several times longer (a 32K capture: 317 ns for
                    // 81 ns, +19% waits in the replay)
                    if ts - b < NEAR
                        && e.ts <= h.last_ts + NEAR
                        && call_at(&calls, b, ts, |c| c == h.cpu).is_none()
                    {
                        match h.side {
                            Side::Add => {
                                s.arrived_before_insert.push(true);
                                s.end_after_insert.push((e.ts - h.last_ts) as f64);
                            }
                            Side::Free => s.end_before_free.push((e.ts - ts) as f64),
                            Side::Lazyfree => {}
                        }
                    }
                }
            }
            _ => {
                last_kind_insert.insert(e.cpu, false);
            }
        }
    }
    s
}

/// A set of (CPU, time) pairs as a sorted list of times per CPU. With 16 KiB folios nearly
/// every add-side hold is one large folio, so building a hash set of them took 36-42 of this
/// calibration's ~88 ms on a 2 M-event capture (rehashing as it grew); a CPU's holds come in
/// time order, so its list is usually sorted as built.
struct LastTimes(IntMap<u32, Vec<i64>>);

impl LastTimes {
    fn new(pairs: impl Iterator<Item = (u32, i64)>) -> Self {
        let mut m: IntMap<u32, Vec<i64>> = IntMap::default();
        for (cpu, ts) in pairs {
            m.entry(cpu).or_default().push(ts);
        }
        for v in m.values_mut() {
            if !v.is_sorted() {
                v.sort_unstable();
            }
        }
        LastTimes(m)
    }

    fn contains(&self, cpu: u32, ts: i64) -> bool {
        self.0
            .get(&cpu)
            .is_some_and(|v| v.binary_search(&ts).is_ok())
    }
}

/// One `madvise(MADV_FREE)` call with folios to mark, as the calibration uses it.
struct FreeCall {
    enter: i64,
    exit: i64,
    cpu: u32,
    /// The call's time per lazyfree hold.
    per_hold: f64,
}

/// A call of a CPU that `cpu_ok` accepts, overlapping `from..=to`, among `calls` sorted by
/// enter: one of the last few entered by `to`, as the calls of a CPU follow one another.
fn call_at(
    calls: &[FreeCall],
    from: i64,
    to: i64,
    cpu_ok: impl Fn(u32) -> bool,
) -> Option<&FreeCall> {
    let lo = calls.partition_point(|c| c.enter <= to);
    calls[..lo]
        .iter()
        .rev()
        .take(8)
        .find(|c| from <= c.exit && cpu_ok(c.cpu))
}

/// Fit the hold model (point estimate, or one bootstrap replicate).
pub fn fit(s: &Samples, post_quantile: f64) -> Calibration {
    let s1_add = median(&s.add_spacing).unwrap_or(0.0);
    let d_pre = median(&s.d_pre).unwrap_or(0.0);
    // The median wait of the waiters after the insertion splits held-up waiters from the
    // rest (below); 4x it marks a stall. A stalled waiter's begin says nothing of the hold
    // window either: with the holder's vCPU descheduled a waiter can begin microseconds after
    // the last insertion and still find the lock held, and a few such begins set the 97.5th
    // percentile of a small capture (a trace-cmd 64K capture: 8 begins 1.35-4.6 us late, each
    // followed by a 4.3-6.1 us wait, made the edge 2.7 us where nine tenths were under 0.42
    // us). At least half the waits are at most the median, so some are always left.
    let split =
        median_in(&mut s.wait_after_insert.iter().map(|p| p.1).collect::<Vec<_>>()).unwrap_or(0.0);
    let stall_cut = STALL_FACTOR * split;
    let mut unstalled: Vec<f64> = s
        .wait_after_insert
        .iter()
        .filter(|&&(_, w)| w <= stall_cut)
        .map(|p| p.0)
        .collect();
    let post = quantile_in(&mut unstalled, post_quantile)
        .unwrap_or(0.0)
        .max(0.0);
    let n_before = s.arrived_before_insert.iter().filter(|b| **b).count() as f64;
    let n_after = s.arrived_before_insert.len() as f64 - n_before;
    // Arrivals are spread evenly over a hold, so the before/after split of waiters is the
    // pre/post split of the window. Bounded by the traced d_pre, which adds the emit cost.
    let pre_fast = if n_after > 0.0 {
        (post * n_before / n_after).min(d_pre)
    } else {
        0.0
    };
    // A waiter that came after the holder's last insertion is granted at the later of the
    // holder's release + gap and its own begin + wait_min. Measured here the wait of such
    // waiters hardly depends on how late in the window they came (~1.1 µs on the 2-CPU
    // paravirt guest, flat from 200 ns to 1.4 µs after the insertion), so it is the waiter's
    // own path that sets it. Which waiters the release held up is told with the median wait
    // (robust to the long tail): those whose begin + median falls before the window's edge;
    // the gap comes from them. The others' waits are the floor's own spread, and the floor is
    // their *mean*: the path is right-skewed (a few waits of 3-600 µs, the holder's vCPU
    // descheduled or the waiter halted and kicked), so a median floor made every floor-bound
    // wait in the replay ~5-8% short and the total wait with it (MODELS.md §5a).
    // One pass, not two lists split first and each mapped into another (a bootstrap
    // replicate fits ~4×10^4 of them; the 125 replicates' fits of a 2 M-event capture took
    // 64-66 ms of CPU that way, 59-62 so). The body's mean sums its waits in the same order
    // as a mean of the list of them would.
    let mut held_up: Vec<f64> = Vec::new();
    let (mut own, mut body_n, mut body_sum) = (0usize, 0usize, -0.0f64);
    for &(x, w) in &s.wait_after_insert {
        if x + split < post {
            held_up.push(x + w - post);
        } else {
            own += 1;
            if w <= stall_cut {
                body_n += 1;
                body_sum += w;
            }
        }
    }
    let own_path_seen = own * 2 >= s.wait_after_insert.len();
    let wait_min = match (own_path_seen, body_n) {
        (true, 1..) => body_sum / body_n as f64,
        _ => split,
    };
    // With (almost) none held up, the floor sets every such grant and the gap cannot be seen:
    // taking it from all waiters instead would count their own path twice.
    let gap = if held_up.len() >= MIN_HELD_UP {
        median_in(&mut held_up).unwrap_or(0.0).max(0.0)
    } else if s.wait_after_insert.is_empty() {
        (median(&s.end_after_insert).unwrap_or(post) - post).max(0.0)
    } else {
        0.0
    };
    // The stalls left out of the floor still happened: a waiter after the insertion expected
    // the release + gap (held up) or its floor, and a few waited far longer. Their share and
    // excess are replayed as such (des.rs), so the total wait keeps them.
    let mut stalls_ns: Vec<i64> = if own_path_seen {
        s.wait_after_insert
            .iter()
            .filter(|&&(_, w)| w > stall_cut)
            .map(|&(x, w)| w - (post + gap - x).max(wait_min))
            .filter(|&e| e > 0.0)
            .map(|e| e.round() as i64)
            .collect()
    } else {
        Vec::new()
    };
    // A waiter that came before its holder's insertion of one large folio waited through
    // that hold's start, normally at most grant → insertion (d_pre). When the insertion came
    // more than the stall cut later than that, the holder stalled before it (a 128K capture:
    // 77 of its 1,679 waits lasted 4-236 µs, 57% of the total wait, most with the holder's
    // insertion 8-94 µs after the waiter began). Drains of a batch are left out: they also
    // handle the folios that died on it, with no event, so their start varies (4K: up to
    // 37 µs before the first insertion).
    if own_path_seen {
        stalls_ns.extend(
            s.unplaced
                .iter()
                .filter(|u| u.wait > stall_cut)
                .map(|u| u.lead - d_pre.max(pre_fast))
                .filter(|&e| e > stall_cut)
                .map(|e| e.round() as i64),
        );
    }
    // A waiter that began long after another CPU's last insertion, that CPU silent until the
    // grant: the holder stopped after its insertion; past the cut, a stall like those above.
    if own_path_seen {
        stalls_ns.extend(
            s.late_after_insert
                .iter()
                .filter(|&&(_, w)| w > stall_cut)
                .map(|&(x, w)| w - (post + gap - x).max(wait_min))
                .filter(|&e| e > 0.0)
                .map(|e| e.round() as i64),
        );
    }
    // A handful of stalls measure neither their share nor their length (one 50 µs stall among
    // 47 waiters is a 2% share at 46 µs): too few to replay, left out.
    if stalls_ns.len() < MIN_STALLS {
        stalls_ns.clear();
    }
    stalls_ns.sort_unstable();
    // Free side: grant → first free against the batch's folios. A slope below zero says
    // nothing per folio, and the intercept that comes with it is no hold: on a 128K capture
    // one holder that stalled 73 µs before its first free, among 1.7-5.1 µs ones, turned the
    // slope negative and made every free-side hold 25 µs (+660% total wait). Then, as with
    // too few points, the hold is their median.
    let (c0, c1) = match ols(&s.pre_free) {
        Some((a, b)) if b >= 0.0 => (a, b),
        _ => {
            let m = median(&s.pre_free.iter().map(|p| p.1).collect::<Vec<_>>()).unwrap_or(d_pre);
            (m, 0.0)
        }
    };
    // grant = release + gap, and grant = first free − (u − gap) ⇒ u = gap − (end − first free)
    let u = median(&s.end_before_free).map_or(0.0, |m| (gap - m).max(0.0));
    // Lazyfree holds (module docs). A traced one (the holder waited) runs from its
    // contention_end to the release and includes that tracepoint's emit cost, which the add
    // side measures as d_pre − pre_fast; a fast-path one does not.
    let emit = (d_pre - pre_fast).max(0.0);
    let lazy_folios_mean = if s.lazy_folios.is_empty() {
        1.0
    } else {
        s.lazy_folios.iter().sum::<f64>() / s.lazy_folios.len() as f64
    };
    // Waiters that began early in a traced hold are held up by its release (end − grant flat
    // at hold + gap); later ones by their own path (end − begin flat at wait_min). The first
    // guess is the median over all; the held-up ones are those whose begin + the median own
    // path (`split`, as on the add side) comes before it.
    let guess = median(&s.after_lazy_grant.iter().map(|p| p.1).collect::<Vec<_>>());
    let lazy_held: Vec<f64> = guess.map_or_else(Vec::new, |h0| {
        s.after_lazy_grant
            .iter()
            .filter(|(d, _)| d + split < h0)
            .map(|p| p.1)
            .collect()
    });
    let fastest = s.per_hold.iter().copied().fold(f64::INFINITY, f64::min);
    let (lazy_hold, lazy_fast) = if lazy_held.len() >= MIN_HELD_UP {
        let h = (median(&lazy_held).unwrap_or(0.0) - gap).max(1.0);
        (h, (h - emit).min(0.5 * fastest).max(1.0))
    } else {
        // Without them: the share of other CPUs' requests during the calls that found the
        // lock held, times the call's time per hold; with no such request, half of it. Either
        // way no more than half the fastest call's time per hold: a call also walks its page
        // tables and checks each folio, and in ping-pong the share counts holds stretched by
        // their own waiter.
        let per_hold: Vec<f64> = if s.during_lazy.is_empty() {
            s.per_hold.clone()
        } else {
            s.during_lazy.iter().map(|p| p.1).collect()
        };
        let share = if s.during_lazy.is_empty() {
            0.5
        } else {
            s.during_lazy.iter().filter(|p| p.0).count() as f64 / s.during_lazy.len() as f64
        };
        let f = match median(&per_hold) {
            Some(m) if fastest.is_finite() => (share * m).min(0.5 * fastest),
            _ => 0.0,
        }
        .max(1.0);
        (f + emit, f)
    };
    Calibration {
        s1_add_ns: s1_add,
        post_ns: post,
        pre_fast_ns: pre_fast,
        gap_ns: gap,
        wait_min_ns: wait_min,
        stall_share: if s.wait_after_insert.is_empty() {
            0.0
        } else {
            stalls_ns.len() as f64
                / (s.wait_after_insert.len() + s.unplaced.len() + s.late_after_insert.len()) as f64
        },
        stall_mean_ns: if stalls_ns.is_empty() {
            0.0
        } else {
            stalls_ns.iter().sum::<i64>() as f64 / stalls_ns.len() as f64
        },
        n_stalls: stalls_ns.len(),
        stall_cut_ns: stall_cut,
        tail_cut_ns: 0.0,
        stalls_ns,
        d_pre_ns: d_pre,
        lazy_hold_ns: lazy_hold,
        lazy_folios_mean,
        n_lazy_window: s.after_lazy_grant.len(),
        lazy_fast_ns: lazy_fast,
        n_during_lazy: s.during_lazy.len(),
        lazy_from_waiters: lazy_held.len() >= MIN_HELD_UP,
        c0_ns: c0,
        c1_ns: c1,
        u_ns: u,
        post_quantile,
        n_spacing: s.add_spacing.len(),
        n_d_pre: s.d_pre.len(),
        n_pre_free: s.pre_free.len(),
        n_add_window: s.arrived_before_insert.len(),
        n_free_window: s.end_before_free.len(),
    }
}

pub use crate::stats::{mean, median, quantile};
use crate::stats::{median_in, quantile_in};

/// A traced wait longer than this many times the median own path is a stall (the holder's
/// vCPU descheduled, the halted waiter kicked late), not the path: left out of the floor's
/// mean. The path's own spread stays well inside it (its 99th percentile is ~1.5-2× the
/// median on the 2-CPU guests), the stalls are 3-600 µs.
const STALL_FACTOR: f64 = 4.0;

/// Fewest stalls that are replayed (as [`MIN_HELD_UP`]: a median or a share from fewer is one
/// waiter's luck); with fewer, none are.
const MIN_STALLS: usize = 10;

/// Fewest held-up waiters the release → grant gap is taken from; with fewer it is 0.
const MIN_HELD_UP: usize = 10;

/// Least squares `y = a + b·x`; `None` when x has no spread.
fn ols(p: &[(f64, f64)]) -> Option<(f64, f64)> {
    if p.len() < 3 {
        return None;
    }
    let n = p.len() as f64;
    let mx = p.iter().map(|q| q.0).sum::<f64>() / n;
    let my = p.iter().map(|q| q.1).sum::<f64>() / n;
    let sxx: f64 = p.iter().map(|q| (q.0 - mx).powi(2)).sum();
    if sxx < 1e-9 {
        return None;
    }
    let sxy: f64 = p.iter().map(|q| (q.0 - mx) * (q.1 - my)).sum();
    let b = sxy / sxx;
    Some((my - b * mx, b))
}

/// A bootstrap replicate: every sample vector resampled with replacement (the definition
/// [`ForFit::resample`] is held to; the replicates use that).
#[cfg(test)]
pub fn resample(s: &Samples, rng: &mut crate::stats::Rng) -> Samples {
    resample_with(s, rng, None)
}

/// [`resample`] for [`fit`] alone: `end_after_insert`, which `fit` reads only when
/// `wait_after_insert` is empty, is not drawn when it is not; the generator jumps over its
/// draws instead, so `fit` gives the same calibration and the generator ends in the same
/// state. On a 2 M-event capture that vector is a third of a replicate's draws (68 k of
/// 215 k).
pub struct ForFit {
    skip_end_after_insert: Option<crate::stats::Skip>,
}

impl ForFit {
    /// The plan for replicates of `s`.
    pub fn new(s: &Samples) -> Self {
        ForFit {
            skip_end_after_insert: (!s.wait_after_insert.is_empty()
                && !s.end_after_insert.is_empty())
            .then(|| crate::stats::Skip::new(s.end_after_insert.len() as u64)),
        }
    }

    /// One replicate of `s` (the `s` of [`ForFit::new`]), for [`fit`].
    pub fn resample(&self, s: &Samples, rng: &mut crate::stats::Rng) -> Samples {
        resample_with(s, rng, self.skip_end_after_insert.as_ref())
    }
}

fn resample_with(
    s: &Samples,
    rng: &mut crate::stats::Rng,
    skip_end_after_insert: Option<&crate::stats::Skip>,
) -> Samples {
    fn pick<T: Clone>(v: &[T], rng: &mut crate::stats::Rng) -> Vec<T> {
        let below = crate::stats::Below::new(v.len());
        (0..v.len()).map(|_| v[below.draw(rng)].clone()).collect()
    }
    Samples {
        add_spacing: pick(&s.add_spacing, rng),
        d_pre: pick(&s.d_pre, rng),
        pre_free: pick(&s.pre_free, rng),
        arrived_before_insert: pick(&s.arrived_before_insert, rng),
        end_after_insert: match skip_end_after_insert {
            Some(k) => {
                rng.skip(k);
                Vec::new()
            }
            None => pick(&s.end_after_insert, rng),
        },
        wait_after_insert: pick(&s.wait_after_insert, rng),
        end_before_free: pick(&s.end_before_free, rng),
        after_lazy_grant: pick(&s.after_lazy_grant, rng),
        lazy_folios: pick(&s.lazy_folios, rng),
        during_lazy: pick(&s.during_lazy, rng),
        per_hold: s.per_hold.clone(),
        unplaced: pick(&s.unplaced, rng),
        late_after_insert: pick(&s.late_after_insert, rng),
    }
}

/// Generator draws one [`resample`] of `s` takes (one per sample), so a replicate's
/// generator state can be found without resampling.
pub fn resample_draws(s: &Samples) -> usize {
    s.add_spacing.len()
        + s.d_pre.len()
        + s.pre_free.len()
        + s.arrived_before_insert.len()
        + s.end_after_insert.len()
        + s.wait_after_insert.len()
        + s.end_before_free.len()
        + s.after_lazy_grant.len()
        + s.lazy_folios.len()
        + s.during_lazy.len()
        + s.unplaced.len()
        + s.late_after_insert.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-CPU sorted lists hold the pairs a set holds, built in order and out of order,
    /// with repeats, and answer for times between and beyond them and for unseen CPUs.
    #[test]
    fn last_times_is_the_set_of_its_pairs() {
        let mut rng = crate::stats::Rng::new(4);
        let pairs: Vec<(u32, i64)> = (0..2000)
            .map(|i| (rng.below(3) as u32, i * 3 + rng.below(5) as i64))
            .collect();
        let mut shuffled = pairs.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.below(i + 1));
        }
        let set: crate::whatif::IntSet<(u32, i64)> = pairs.iter().copied().collect();
        for built in [&pairs, &shuffled] {
            let lt = LastTimes::new(built.iter().copied());
            for cpu in 0..4u32 {
                for ts in -2..6010 {
                    assert_eq!(lt.contains(cpu, ts), set.contains(&(cpu, ts)), "{cpu} {ts}");
                }
            }
        }
    }

    /// The replicates' resample for `fit` gives `fit` of the whole resample bit for bit and
    /// leaves the generator where the whole one does, on bundled captures whose waiters after
    /// the insertion make it skip `end_after_insert`; where there are none it draws that
    /// vector as `resample` does.
    #[test]
    fn the_resample_for_fit_gives_the_whole_resamples_fit() {
        for rel in [
            "fixtures/replay/micro-16K-r1/script-ns.txt.gz",
            "fixtures/replay/micro-4K-r1/script-ns.txt.gz",
            "fixtures/replay/micro-64K-r1/script-ns.txt.gz",
        ] {
            let path = format!("{}/{rel}", env!("CARGO_MANIFEST_DIR"));
            let t = crate::whatif::trace::read(&path, false).expect("bundled capture reads");
            let rec = crate::whatif::reconstruct::reconstruct(&t, &Default::default())
                .expect("reconstructs");
            let mut s = samples(&t, &rec);
            assert!(
                !s.wait_after_insert.is_empty() && !s.end_after_insert.is_empty(),
                "{rel}"
            );
            for skips in [true, false] {
                if !skips {
                    s.wait_after_insert.clear();
                }
                let plan = ForFit::new(&s);
                assert_eq!(plan.skip_end_after_insert.is_some(), skips, "{rel}");
                for seed in [1, 2, 3] {
                    let (mut a, mut b) =
                        (crate::stats::Rng::new(seed), crate::stats::Rng::new(seed));
                    for q in [0.975, 0.9] {
                        let whole = fit(&resample(&s, &mut a), q);
                        let for_fit = fit(&plan.resample(&s, &mut b), q);
                        assert_eq!(format!("{whole:?}"), format!("{for_fit:?}"), "{rel} {seed}");
                        assert_eq!(a.next_u64(), b.next_u64(), "{rel} {seed}: generator state");
                    }
                }
            }
        }
    }

    /// The sensitivity rows that move only the grant gap or the stalls time every hold and
    /// request as the point does (they replay the point's requests); the hold rows do not.
    #[test]
    fn same_timing_tells_timing_rows_from_replay_only_rows() {
        let mut c = fit(&Samples::default(), 0.975);
        (c.pre_fast_ns, c.post_ns, c.d_pre_ns, c.s1_add_ns) = (30.0, 70.0, 80.0, 10.0);
        (c.gap_ns, c.stall_share, c.c0_ns) = (20.0, 0.01, 400.0);
        let moved = |f: &dyn Fn(&mut Calibration)| {
            let mut x = c.clone();
            f(&mut x);
            HoldTable::same_timing(&x, &c)
        };
        assert!(moved(&|x| x.gap_ns *= 0.75));
        assert!(moved(&|x| x.gap_ns *= 1.25));
        assert!(moved(&|x| x.stall_share = 0.0));
        assert!(!moved(&|x| x.pre_fast_ns *= 2.0));
        assert!(!moved(&|x| x.s1_add_ns *= 1.25));
        assert!(!moved(&|x| x.post_ns *= 0.9));
        assert!(!moved(&|x| x.c0_ns *= 1.2));
        // a few thousandths of a ns per folio are told apart too
        assert!(!moved(&|x| x.s1_add_ns += 0.004));
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), Some(3.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 1.0), Some(5.0));
        assert_eq!(quantile(&v, 0.125), Some(1.5));
        assert_eq!(median(&[]), None);
        assert_eq!(ols(&[(1.0, 3.0), (2.0, 5.0), (3.0, 7.0)]), Some((1.0, 2.0)));
    }

    /// The free-side samples of a 128K `MADV_DONTNEED` matrix capture (lrufault -t 2 -s 64,
    /// second pass): (folios, grant → first free) of its 25 traced free-side holds, one of
    /// which stalled 73 µs. Least squares gives a negative slope and a 25 µs intercept; as a
    /// hold that made the replay's total wait +660%. Without a slope the hold is the median.
    #[test]
    fn a_negative_free_side_slope_leaves_the_median_hold() {
        let mut s = Samples {
            pre_free: [
                (7, 1662),
                (5, 1963),
                (31, 3836),
                (31, 3846),
                (28, 3846),
                (19, 3846),
                (31, 3855),
                (31, 3866),
                (31, 3866),
                (31, 3866),
                (31, 3875),
                (31, 3896),
                (31, 3905),
                (31, 3906),
                (31, 3916),
                (31, 3925),
                (31, 3926),
                (7, 3936),
                (31, 3986),
                (31, 4116),
                (31, 4787),
                (31, 4887),
                (31, 5088),
                (31, 5098),
                (2, 73200),
            ]
            .iter()
            .map(|&(n, t)| (f64::from(n), f64::from(t)))
            .collect(),
            ..Samples::default()
        };
        let (a, b) = ols(&s.pre_free).unwrap();
        assert!(b < 0.0 && a > 20_000.0, "{a} + {b}/folio");
        let c = fit(&s, 0.975);
        assert_eq!((c.c0_ns, c.c1_ns), (3905.0, 0.0));
        // a positive slope is kept as fitted
        s.pre_free.pop();
        let (a, b) = ols(&s.pre_free).unwrap();
        let c = fit(&s, 0.975);
        assert!(b > 0.0);
        assert_eq!((c.c0_ns, c.c1_ns), (a, b));
    }

    /// One waiter that began `x` after the holder's last insertion and waited `w`.
    fn waiter(s: &mut Samples, x: f64, w: f64) {
        s.end_after_insert.push(x + w);
        s.wait_after_insert.push((x, w));
    }

    /// Waiters after the holder's insertion with a flat wait: the floor is the mean wait of
    /// those the release did not hold up; the gap comes from those it did (begin + the median
    /// wait before the window's edge).
    #[test]
    fn the_floor_is_the_flat_wait_and_the_gap_comes_from_held_up_waiters() {
        // window edge (q97.5 of 0..=200 step 10) = 195; waits flat at 100 from x = 60 on; the
        // 10 earliest (x = 0..=90, x + 100 < 195) were held up to 195 + 15 = 210
        let mut s = Samples::default();
        for i in 0..=20 {
            let x = f64::from(i) * 10.0;
            waiter(&mut s, x, if x + 100.0 < 195.0 { 210.0 - x } else { 100.0 });
        }
        let c = fit(&s, 0.975);
        assert_eq!(c.post_ns, 195.0);
        assert_eq!(c.wait_min_ns, 100.0);
        assert_eq!(c.gap_ns, 15.0);
        // none held up: the gap cannot be seen and is 0, not the excess of every grant
        s.wait_after_insert.iter_mut().for_each(|p| p.1 = 300.0);
        let c = fit(&s, 0.975);
        assert_eq!((c.wait_min_ns, c.gap_ns), (300.0, 0.0));
        // the path's own spread (one waiter of 21 took 900): the floor is the mean, so that
        // 21 floor-bound waits of the replay sum to the 21 measured ones
        s.wait_after_insert[20].1 = 900.0;
        let c = fit(&s, 0.975);
        assert_eq!(c.gap_ns, 0.0);
        assert!((c.wait_min_ns - (300.0 + 600.0 / 21.0)).abs() < 1e-9);
        // a stall (over STALL_FACTOR × the median path) is not the path: left out of the mean
        s.wait_after_insert[19].1 = 3300.0;
        let c = fit(&s, 0.975);
        assert!((c.wait_min_ns - (300.0 * 19.0 + 900.0) / 20.0).abs() < 1e-9);
        // ... and it is a stall (its begin, 190 after the insertion, came after the window's
        // edge of 195 less the gap's 0: the floor, not the release, was its expected end), but
        // one is too few to replay: none are
        assert_eq!(c.n_stalls, 0);
        assert_eq!(c.stall_share, 0.0);
        // ten such stalls among 30 more late waiters are replayed, each by its excess over
        // that floor
        for i in 0..40 {
            let w = if i < 10 { 3300.0 + f64::from(i) } else { 300.0 };
            waiter(&mut s, 200.0 + f64::from(i), w);
        }
        let c = fit(&s, 0.975);
        let floor = c.wait_min_ns;
        assert_eq!(c.n_stalls, 11);
        assert_eq!(c.stalls_ns.len(), 11);
        assert_eq!(c.stalls_ns[0], (3300.0 - floor).round() as i64);
        assert!((c.stall_share - 11.0 / 61.0).abs() < 1e-12);
    }

    /// A stalled waiter's begin is not the hold window: three begins 1.2-4.6 µs after the
    /// insertion that then waited 5-6 µs (a trace-cmd 64K capture had eight such) leave the
    /// edge where the other waiters put it; the same begins with ordinary waits move it.
    #[test]
    fn stalled_waiters_do_not_set_the_window_edge() {
        let mut s = Samples::default();
        for i in 0..=20 {
            waiter(&mut s, f64::from(i) * 10.0, 100.0);
        }
        assert_eq!(fit(&s, 0.975).post_ns, 195.0);
        let late = [1200.0, 1750.0, 4600.0];
        let mut stalled = s.clone();
        for (x, w) in late.iter().zip([5100.0, 6000.0, 4900.0]) {
            waiter(&mut stalled, *x, w);
        }
        assert_eq!(fit(&stalled, 0.975).post_ns, 195.0);
        for x in late {
            waiter(&mut s, x, 100.0);
        }
        assert!(fit(&s, 0.975).post_ns > 1000.0);
    }

    /// A waiter that began before its holder's insertion of one large folio is a stall when
    /// that insertion came more than the stall cut later than a hold's start takes (d_pre);
    /// its excess is that delay, and it counts in the share beside the waiters after an
    /// insertion.
    #[test]
    fn a_holder_that_stalls_before_its_insertion_is_a_stall() {
        let mut s = Samples::default();
        for i in 0..=20 {
            waiter(&mut s, f64::from(i) * 10.0, 100.0);
        }
        s.d_pre = vec![50.0];
        // cut = 4 × 100; the insertion 50 + 20 µs after the begin: a 20 µs stall, ten times
        let stalled = Unplaced {
            wait: 21_000.0,
            lead: 20_050.0,
        };
        // one that began 300 ns before an insertion and waited it out: none
        let plain = Unplaced {
            wait: 450.0,
            lead: 300.0,
        };
        s.unplaced = vec![plain; 9];
        s.unplaced.extend([stalled; 10]);
        let c = fit(&s, 0.975);
        assert_eq!(c.n_stalls, 10);
        assert_eq!(c.stalls_ns, vec![20_000; 10]);
        // 10 of the 21 + 19 waits placed on a holder
        assert_eq!(c.stall_share, 0.25);
        // nine are too few to replay
        s.unplaced.pop();
        assert_eq!(fit(&s, 0.975).n_stalls, 0);
    }

    /// A waiter that began long after its holder's insertion of one large folio, the holder
    /// silent until the grant (its release came that late): past the cut, a stall whose
    /// excess is the wait beyond its floor; short ones are no stall but count in the share.
    #[test]
    fn a_holder_that_stalls_after_its_insertion_is_a_stall() {
        let mut s = Samples::default();
        for i in 0..=20 {
            waiter(&mut s, f64::from(i) * 10.0, 100.0);
        }
        // cut = 4 × 100 = 400, floor = 100: 10 waits of 12 µs begun 8 µs after the insertion
        s.late_after_insert = vec![(8_000.0, 12_100.0); 10];
        s.late_after_insert.extend([(6_000.0, 300.0); 9]);
        let c = fit(&s, 0.975);
        assert_eq!((c.wait_min_ns, c.n_stalls), (100.0, 10));
        assert_eq!(c.stalls_ns, vec![12_000; 10]);
        // 10 of the 21 + 19 waits placed on a holder
        assert_eq!(c.stall_share, 0.25);
        // the late waiters leave the window, the floor and the gap alone
        let plain = fit(
            &Samples {
                late_after_insert: Vec::new(),
                ..s.clone()
            },
            0.975,
        );
        assert_eq!(
            (c.post_ns, c.gap_ns, c.wait_min_ns),
            (plain.post_ns, plain.gap_ns, plain.wait_min_ns)
        );
    }

    /// A lazyfree hold measured on its waiters keeps that length after a traced grant, but on
    /// the fast path it is held to half the fastest call's time per hold, as the guess is: a
    /// call also walks its page tables, and in small captures the emit cost taken off it (d_pre
    /// − pre_fast) can come out near 0.
    #[test]
    fn a_fast_lazyfree_hold_fits_half_its_calls_time_per_hold() {
        let mut s = Samples {
            after_lazy_grant: vec![(100.0, 1500.0); 12],
            ..Samples::default()
        };
        let c = fit(&s, 0.975);
        assert!(c.lazy_from_waiters);
        assert_eq!((c.lazy_hold_ns, c.lazy_fast_ns), (1500.0, 1500.0));
        s.per_hold = vec![2000.0, 1000.0];
        let c = fit(&s, 0.975);
        assert_eq!((c.lazy_hold_ns, c.lazy_fast_ns), (1500.0, 500.0));
    }

    /// When the release held up most waiters after the insertion, too few are left to say
    /// what the path alone takes (and those few came late in long holds): the floor stays the
    /// median of all.
    #[test]
    fn a_floor_from_a_minority_of_waiters_falls_back_to_the_median() {
        // arrivals spread over 0..=2000 (window edge 1950), waits 300 but for the 4 latest
        // (900): only x + 300 >= 1950, those 4 of 21, count as not held up
        let mut s = Samples::default();
        for i in 0..=20 {
            let x = f64::from(i) * 100.0;
            waiter(&mut s, x, if x >= 1700.0 { 900.0 } else { 300.0 });
        }
        let c = fit(&s, 0.975);
        assert_eq!(c.post_ns, 1950.0);
        assert_eq!(c.wait_min_ns, 300.0);
        // nor are stalls told from the path there
        s.wait_after_insert[0].1 = 9000.0;
        assert_eq!(fit(&s, 0.975).n_stalls, 0);
    }
}
