//! Per-CPU `lru_lock` holds rebuilt from a capture (MODELS.md §2.1).
//!
//! * Add side: `folio_batch_move_lru()` emits `mm_lru_insertion` once per folio *inside* the
//!   hold, so a drain is a run of consecutive insertions on one CPU with no other traced event
//!   of that CPU between them, gaps below `g_max`, at most `FOLIO_BATCH_SIZE` (31) folios.
//! * Free side: `folios_put_refs()` takes the lock once per batch of ≤31 folios whose last
//!   reference dropped, and the folios reach `free_unref_folios()` (`mm_page_free`) after the
//!   unlock; so a burst of frees of folios that were on an LRU marks one hold just before it.
//! * Traced waits: `contention_begin`/`end` on the LRU lock, paired by the `contention` table's
//!   rule ([`OpenWaits`]: a nested begin keeps the first) but per CPU, not per task (why: see
//!   [`OpenWaits`]), and attached to the CPU's next hold.
//!
//! Which traced lock is `lru_lock`: the address whose `contention_end` is most often followed,
//! on the same CPU, by a hold as defined above (the zone lock of the page allocator is the
//! usual other one in these captures; it is followed by `mm_page_alloc`).

use super::intents::MaybeSpan;
use super::{both, CpuMap, IntMap};

use super::lazyfree;
use super::survey::{Census, Survey};
use super::trace::{Kind, MmEvent, Trace, Via, NO_SITE};
use crate::duration::Ns;
use crate::error::{Error, Result};
use crate::frames::contention::OpenWaits;
use lockcast_parsers::prefault::{self, Prefault};

/// `FOLIO_BATCH_SIZE` in include/linux/folio_batch.h.
pub const FOLIO_BATCH: u32 = 31;

/// Entries in the on-stack bundle of a `struct mmu_gather` (`MMU_GATHER_BUNDLE`, mm/mmu_gather.c).
pub const MMU_GATHER_BUNDLE: u32 = 8;

/// Entries in each further `mmu_gather_batch` page: `(PAGE_SIZE − 16) / 8` on 64-bit, 4 KiB pages.
pub const MAX_GATHER_BATCH: u32 = 510;

/// Longest grant → first event of one hold that a traced wait is attached across. The
/// slowest legitimate case is a free-side hold: its `FOLIO_BATCH` folios come off the LRU under
/// the lock and the first `mm_page_free` follows the unlock, about 31 × (0.2–1.3 µs per folio
/// calibrated on the captures here) ≈ 40 µs; 1 ms leaves a wide margin for slower machines.
/// A traced wait whose task's next event comes later waited for a hold that left no event
/// (MADV_FREE's lazyfree moves, a drain of dead folios): one 4-thread MADV_FREE capture
/// attached such waits to the task's next free 7.6 ms later and calibrated that as the
/// free-side hold.
pub const ATTACH_WITHIN_NS: i64 = 1_000_000;

/// Free-side `lru_lock` holds of one zap of `folios` folios, by the kernel rule: the zap
/// collects folios in `mmu_gather` batches (first the 8-entry bundle, then 510-entry pages; a
/// large folio takes 2 entries, page + `nr_pages`), each batch is freed by
/// `free_pages_and_swap_cache()` → `folios_put_refs()` in `folio_batch`es of 31, one hold each.
pub fn free_holds_rule(folios: u32, large: bool) -> Vec<u32> {
    let per = if large { 2 } else { 1 };
    let mut left = folios;
    let mut holds = Vec::new();
    let mut cap_entries = MMU_GATHER_BUNDLE;
    while left > 0 {
        let in_batch = (cap_entries / per).max(1).min(left);
        left -= in_batch;
        let mut b = in_batch;
        while b > 0 {
            let n = b.min(FOLIO_BATCH);
            holds.push(n);
            b -= n;
        }
        cap_entries = MAX_GATHER_BATCH;
    }
    holds
}

/// Reconstruction knobs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Largest gap between two insertions (or frees) of one hold, in ns (MODELS.md §2.1: 2 µs).
    pub g_max_ns: i64,
    /// Lock to treat as `lru_lock` (address as printed); detected when `None`.
    pub lock: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            g_max_ns: 2_000,
            lock: None,
        }
    }
}

/// Which side of the LRU took the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// `folio_batch_move_lru()` from a per-CPU batch drain.
    Add,
    /// `folios_put_refs()` / `__page_cache_release()` on the free path.
    Free,
    /// `folio_batch_move_lru()` of the `lru_lazyfree` batch (`madvise(MADV_FREE)`): a hold
    /// with no event inside, rebuilt from the call ([`super::lazyfree`]).
    Lazyfree,
}

/// Why an add-side drain happened (the kernel rules of MODELS.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The batch reached 31 folios.
    Full,
    /// The folio just added is large (`folio_may_be_lru_cached()` false): drained at once.
    Large,
    /// Neither: an explicit `lru_add_drain()` (MADV_DONTNEED's zap, munmap, ...).
    Explicit,
}

/// One reconstructed lock hold.
#[derive(Debug, Clone)]
pub struct Hold {
    /// CPU.
    pub cpu: u32,
    /// Add or free side.
    pub side: Side,
    /// Folios handled in the hold.
    pub folios: u32,
    /// Pages in those folios (orders from `mm_page_alloc`; unknown orders count 1).
    pub pages: u64,
    /// First event of the hold (insertion, or free after the unlock).
    pub first_ts: i64,
    /// Last event of the hold.
    pub last_ts: i64,
    /// Traced wait before this hold: (`contention_begin`, `contention_end`).
    pub traced: MaybeSpan,
    /// Add side: why it drained. Free side: `Explicit` (unused).
    pub trigger: Trigger,
    /// Add side: index in [`Reconstruction::faults`] of the last folio added (the trigger).
    pub last_fault: Option<u32>,
    /// Add side, explicit drains: the caller of `lru_add_drain*()` from the call chain
    /// (`trace::NO_SITE` without one).
    pub site: u32,
    /// Path: `Drain` for the add side; `Release` for a free-side hold of folios that died on
    /// the batch (freed by the `folios_put()` after the drain), else `Zap`.
    pub via: Via,
    /// Path of the traced wait, from its call chain (`Unknown` without one or without a wait).
    pub traced_via: Via,
}

/// A folio put on an LRU list, as the fault path added it.
#[derive(Debug, Clone, Copy)]
pub struct Fault {
    /// CPU of the `mm_page_alloc` (the faulting CPU), else of the insertion.
    pub cpu: u32,
    /// `mm_page_alloc` time of the folio, else its insertion time.
    pub ts: i64,
    /// Folio order (0 when the allocation is not in the trace).
    pub order: u8,
    /// Index of the hold that put it on the LRU.
    pub hold: u32,
    /// Index of the free-side hold that freed it, when the trace shows its free.
    pub freed_in: Option<u32>,
    /// Task that faulted it (of the `mm_page_alloc`, else of the insertion).
    pub tid: i32,
    /// The task's first discarding madvise/munmap after the fault: (enter, exit) times, when
    /// the capture has those events. The folio is dead from `enter` on.
    pub death: MaybeSpan,
}

/// A hold or fault index in 4 bytes ([`Fault`] is 48 bytes instead of 72, [`Hold`] 64
/// instead of 80: a 2 M-event capture keeps ~600 k of each through every replay). 2^32 holds
/// would take over 250 GB of them, so no capture this machine can read comes near.
fn idx32(i: usize) -> u32 {
    debug_assert!(u32::try_from(i).is_ok(), "hold or fault index {i}");
    i as u32
}

/// What the main pass knows of a page frame: its most recent allocation (pfns are reused)
/// and, from its insertion until it is freed, its fault. One map for both, as the two
/// separate ones were, keyed the same: a folio's life (allocated, inserted, freed) is three
/// lookups instead of five, on the pass that runs on one CPU.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// The allocation's time, CPU, task and order, when `has_alloc`.
    ts: i64,
    cpu: u32,
    tid: i32,
    /// Index in `faults` while on an LRU list, else [`NOT_ON_LRU`].
    lru: u32,
    order: u8,
    has_alloc: bool,
}

/// [`Frame::lru`] of a frame not on an LRU list.
const NOT_ON_LRU: u32 = u32::MAX;

impl Frame {
    /// Neither allocated in the capture nor on an LRU list.
    const NONE: Frame = Frame {
        ts: 0,
        cpu: 0,
        tid: 0,
        lru: NOT_ON_LRU,
        order: 0,
        has_alloc: false,
    };
}

/// Everything the calibration and the policies need from one capture.
#[derive(Debug, Clone)]
pub struct Reconstruction {
    /// Interned id of the lock treated as `lru_lock`.
    pub lock: u32,
    /// Its address as printed.
    pub lock_name: String,
    /// Holds in time order of their first event.
    pub holds: Vec<Hold>,
    /// Folios added, in insertion order.
    pub faults: Vec<Fault>,
    /// Every traced wait on the lock (`contention_end − contention_begin`), ascending: the
    /// measured contention, and the verdict splits it at the tail cut.
    pub measured_waits: Vec<Ns>,
    /// Traced waits that could not be attached to a hold.
    pub unattached_waits: u64,
    /// Inserted folios whose `mm_page_alloc` is not in the trace.
    pub unknown_order: u64,
    /// CPUs seen.
    pub cpus: Vec<u32>,
    /// First and last event time.
    pub span: (i64, i64),
    /// Traced waits on the lock by path: (count, total wait ns). The path comes from the
    /// wait's call chain, else from the hold it is attached to.
    pub measured_by_via: std::collections::BTreeMap<Via, (u64, Ns)>,
    /// The capture has discarding madvise/munmap events (folio deaths are known).
    pub has_discards: bool,
    /// Median time from a discarding call's enter to its first free-side hold on that task, ns.
    pub zap_delay_ns: i64,
    /// `madvise(MADV_FREE)` calls seen (their holds are in `holds`, side `Lazyfree`):
    /// (CPU, enter, exit, holds rebuilt).
    pub lazyfree_calls: Vec<(u32, i64, i64, u32)>,
}

impl Reconstruction {
    /// Traced waits on the lock.
    pub fn measured_contended(&self) -> u64 {
        self.measured_waits.len() as u64
    }

    /// Their sum.
    pub fn measured_wait_ns(&self) -> Ns {
        self.measured_waits.iter().copied().sum()
    }

    /// The longest.
    pub fn measured_max_wait_ns(&self) -> Ns {
        self.measured_waits.last().copied().unwrap_or(Ns(0))
    }
}

/// Per CPU: a finished traced wait (begin, end, path) not yet attached to a hold.
/// A finished traced wait: (begin, end, path, the waiting task).
type Pending = Option<(i64, i64, Via, i32)>;

#[derive(Default)]
struct Open {
    side: Option<Side>,
    idx: usize,
    last_ts: i64,
}

/// Gap limit of one hold from the median spacing `m` of back-to-back insertions (frees) on one
/// CPU: `g_max`, or 2.5× that median when it is larger — call chains (`-g`) make each event
/// cost a few µs, so a fixed 2 µs would cut every drain into pieces.
fn gap_limit(m: Option<f64>, g_max: i64) -> i64 {
    g_max.max((2.5 * m.unwrap_or(0.0)) as i64)
}

/// Fewest events for which [`reconstruct`]'s classifications after its main pass run on two
/// threads (a sample's time windows, the bundled captures: not worth a thread).
pub(crate) const SIDE_BY_SIDE: usize = 1 << 18;

/// The trace's survey: the read's when it counted these events, else the same fold now
/// ([`Trace::ensure_survey`] keeps one).
fn survey_of(t: &Trace) -> std::borrow::Cow<'_, Survey> {
    match &t.survey {
        Some(s) if s.covers(&t.events) => std::borrow::Cow::Borrowed(s),
        _ => std::borrow::Cow::Owned(Survey::of(&t.events)),
    }
}

/// The lock [`reconstruct`] takes for `lru_lock` (see the module docs), `u32::MAX` for none.
pub fn lock_of(t: &Trace, o: &Options) -> Result<u32> {
    pick_lock(t, o, &survey_of(t).votes)
}

/// Rebuild holds and faults from a trace.
pub fn reconstruct(t: &Trace, o: &Options) -> Result<Reconstruction> {
    let survey = survey_of(t);
    let lock = pick_lock(t, o, &survey.votes)?;
    let (g_insert, g_free) = (
        gap_limit(survey.insert_gap, o.g_max_ns),
        gap_limit(survey.free_gap, o.g_max_ns),
    );
    let Census {
        discards,
        any_lazyfree,
        inserts,
        frees,
    } = &survey.census;
    let (any_lazyfree, inserts, frees) = (*any_lazyfree, *inserts, *frees);
    // pfn → its last allocation and, while on an LRU list, its fault (`Frame`)
    let mut frames: IntMap<u64, Frame> = IntMap::default();
    let mut death_at: IntMap<i32, usize> = IntMap::default();
    let mut open: CpuMap<Open> = CpuMap::default();
    // Traced waits on the lock, paired per CPU by the rule of the `contention` table (see
    // `OpenWaits` for why the key is the CPU here and the task there).
    let mut waits: OpenWaits<u32, Via> = OpenWaits::default();
    let mut pending: CpuMap<Pending> = CpuMap::default();
    let mut holds: Vec<Hold> = Vec::with_capacity(inserts + frees);
    let mut faults: Vec<Fault> = Vec::with_capacity(inserts);
    let mut measured_waits: Vec<Ns> = Vec::new();
    // A helper faults in the holds' and faults' pages a little ahead of this pass (57 -> 38 ms
    // on the 2 M-event recording), only as far as it goes: the holds are reserved for the
    // most there could be, twice what that recording uses.
    let (prefault, progress) = Prefault::follow(
        vec![
            prefault::spare(&faults, inserts),
            prefault::spare(&holds, inserts + frees),
        ],
        prefault::AHEAD,
    );
    let (mut unattached, mut unknown) = (0u64, 0u64);
    let mut cpus: Vec<u32> = Vec::new();
    let mut by_via: std::collections::BTreeMap<Via, (u64, Ns)> = Default::default();
    // MADV_FREE: per task, the folios it faulted since its last call (kept only when the
    // capture has such calls: an index per fault otherwise), and its open call
    let mut fresh: IntMap<i32, Vec<usize>> = IntMap::default();
    let mut lazy_open: IntMap<i32, lazyfree::Call> = IntMap::default();
    let mut lazy_calls: Vec<lazyfree::Call> = Vec::new();
    // A finished wait that no LRU event followed: a lazyfree hold when its task is inside
    // MADV_FREE, else unattached.
    let drop_wait = |lazy_open: &mut IntMap<i32, lazyfree::Call>,
                     unattached: &mut u64,
                     by_via: &mut std::collections::BTreeMap<Via, (u64, Ns)>,
                     (b, e, v, tid): (i64, i64, Via, i32)| {
        match lazy_open.get_mut(&tid) {
            Some(c) if e >= c.enter => c.traced.push((b, e, v)),
            _ => {
                *unattached += 1;
                tally(by_via, v, Ns::between(b, e));
            }
        }
    };

    for (i, e) in t.events.iter().enumerate() {
        if i % 2048 == 0 {
            progress[0].at(&faults);
            progress[1].at(&holds);
        }
        if !cpus.contains(&e.cpu) {
            cpus.push(e.cpu);
        }
        // lru_lock is taken with interrupts off, so between a waiter's grant and the events
        // of its hold the CPU cannot switch tasks: another task's event on that CPU means the
        // wait was for a hold that left no event (or the task moved on), not for the CPU's
        // next hold. With more tasks than CPUs, attaching it anyway paired grants with holds
        // milliseconds later and put a preemption into the free-side hold model. The same
        // holds for the waiter's own next event when it comes later than any hold lasts: the
        // wait was for a hold without events (a lazyfree move, say) and the task went on.
        if let Some(slot) = pending.get_mut(e.cpu) {
            let lazy_exit = matches!(e.kind, Kind::Lazyfree { enter: false });
            if matches!(*slot, Some((_, end, _, tid)) if tid != e.tid || e.ts - end > ATTACH_WITHIN_NS || lazy_exit)
            {
                if let Some(w) = slot.take() {
                    drop_wait(&mut lazy_open, &mut unattached, &mut by_via, w);
                }
            }
        }
        let cur = open.or_default(e.cpu);
        match e.kind {
            Kind::Insert { pfn, site } => {
                let frame = frames.entry(pfn).or_insert(Frame::NONE);
                let (order, fts, fcpu, ftid) = match frame.has_alloc {
                    true => (frame.order, frame.ts, frame.cpu, frame.tid),
                    false => {
                        unknown += 1;
                        (0, e.ts, e.cpu, e.tid)
                    }
                };
                // on an LRU list from here until freed (this fault's index: pushed below)
                frame.lru = idx32(faults.len());
                let hi = hold_for(
                    &mut holds,
                    cur,
                    &mut pending,
                    e,
                    Side::Add,
                    site,
                    g_insert,
                    order,
                );
                let h = &mut holds[hi];
                h.last_fault = Some(idx32(faults.len()));
                if any_lazyfree {
                    fresh.entry(ftid).or_default().push(faults.len());
                }
                faults.push(Fault {
                    cpu: fcpu,
                    ts: fts,
                    order,
                    hold: idx32(hi),
                    freed_in: None,
                    tid: ftid,
                    death: death_after(discards, &mut death_at, ftid, fts).into(),
                });
            }
            Kind::Free { pfn, order } => {
                // a free ends both what the frame's allocation and its LRU stay said
                let lru = frames.remove(&pfn).map_or(NOT_ON_LRU, |f| f.lru);
                if lru == NOT_ON_LRU {
                    // page tables, slab, kernel buffers: not an LRU folio
                    cur.side = None;
                    continue;
                }
                let fault = lru as usize;
                let hi = hold_for(
                    &mut holds,
                    cur,
                    &mut pending,
                    e,
                    Side::Free,
                    NO_SITE,
                    g_free,
                    order,
                );
                faults[fault].freed_in = Some(idx32(hi));
            }
            Kind::Alloc { pfn, order } => {
                cur.side = None;
                let frame = frames.entry(pfn).or_insert(Frame::NONE);
                (frame.order, frame.ts, frame.cpu, frame.tid) = (order, e.ts, e.cpu, e.tid);
                frame.has_alloc = true;
            }
            Kind::Discard { .. } => cur.side = None,
            Kind::Lazyfree { enter } => {
                cur.side = None;
                if enter {
                    let marked = fresh.remove(&e.tid).unwrap_or_default();
                    let c = lazyfree::Call::marking(e.cpu, e.ts, &faults, &marked);
                    if let Some(mut prev) = lazy_open.insert(e.tid, c) {
                        prev.exit = e.ts;
                        lazy_calls.push(prev);
                    }
                } else if let Some(mut c) = lazy_open.remove(&e.tid) {
                    c.exit = e.ts;
                    lazy_calls.push(c);
                }
            }
            Kind::Begin { lock: l, via } => {
                if l == lock {
                    waits.begin(e.cpu, e.ts, via);
                }
                // Another lock's wait inside a free burst is `free_unref_folios()` taking the
                // zone lock (orders above the pcp lists free straight to the buddy allocator):
                // it neither ends nor starts an lru_lock hold.
            }
            Kind::End { lock: l } => {
                if l == lock {
                    if let Some((b, via)) = waits.end(&e.cpu, e.ts) {
                        let w = Ns::between(b, e.ts);
                        measured_waits.push(w);
                        let p = pending.or_default(e.cpu);
                        if let Some(w) = p.replace((b, e.ts, via, e.tid)) {
                            drop_wait(&mut lazy_open, &mut unattached, &mut by_via, w);
                        }
                    }
                    // a wait ends a hold in progress on this CPU: the next event starts anew
                    cur.side = None;
                } else if cur.side == Some(Side::Free) {
                    // see Begin: the burst goes on after the zone-lock wait
                    cur.last_ts = e.ts;
                }
            }
        }
    }
    // in no particular CPU order: the tallies are sums, and a call's traced waits are used
    // sorted by their grants (`lazyfree::Call::holds`)
    for p in pending.values() {
        if let Some(w) = *p {
            drop_wait(&mut lazy_open, &mut unattached, &mut by_via, w);
        }
    }
    let end = t.events.last().map_or(0, |e| e.ts);
    for (_, mut c) in lazy_open.drain() {
        c.exit = end;
        lazy_calls.push(c);
    }

    if holds.is_empty() {
        return Err(Error::Input(format!(
            "{}: no pagemap:mm_lru_insertion or LRU-folio kmem:mm_page_free events: \
             cannot rebuild lru_lock holds (see `lockcast whatif --help` for the capture recipe)",
            t.path
        )));
    }
    prefault.finish();
    prefault::trim(&holds);
    // The rest runs on one CPU after the main pass: what reads the holds without changing
    // them goes side by side on a large capture (the two classifications each only read
    // what the other writes).
    let side_by_side = t.events.len() >= SIDE_BY_SIDE;
    let has_discards = !discards.is_empty();
    let (triggers, releases) = both(
        side_by_side,
        || triggers_of(&holds, &faults),
        || releases_of(&holds, &faults, has_discards),
    );
    for (h, tr) in holds
        .iter_mut()
        .filter(|h| h.side == Side::Add)
        .zip(triggers)
    {
        h.trigger = tr;
    }
    for i in releases {
        holds[i].via = Via::Release;
    }
    lazy_calls.sort_by_key(|c| (c.enter, c.cpu));
    let mut lazyfree_calls = Vec::with_capacity(lazy_calls.len());
    let mut lazy: Vec<Hold> = Vec::new();
    for c in &lazy_calls {
        let h = c.holds();
        lazyfree_calls.push((c.cpu, c.enter, c.exit, h.len() as u32));
        lazy.extend(h);
    }
    let holds = lazyfree::merge(holds, &mut faults, lazy);
    let tally_holds = || {
        for h in &holds {
            if let Some((b, e)) = h.traced.get() {
                let v = if h.traced_via == Via::Unknown {
                    h.via
                } else {
                    h.traced_via
                };
                tally(&mut by_via, v, Ns::between(b, e));
            }
        }
    };
    let ((), zap_delay_ns) = both(side_by_side, tally_holds, || zap_delay(&holds, &faults));
    let span = (
        t.events.first().map(|e| e.ts).unwrap_or(0),
        t.events.last().map(|e| e.ts).unwrap_or(0),
    );
    cpus.sort_unstable();
    measured_waits.sort_unstable();
    Ok(Reconstruction {
        lock,
        lock_name: t.locks.get(lock as usize).cloned().unwrap_or_default(),
        holds,
        faults,
        measured_waits,
        unattached_waits: unattached,
        unknown_order: unknown,
        cpus,
        span,
        measured_by_via: by_via,
        has_discards: !discards.is_empty(),
        zap_delay_ns,
        lazyfree_calls,
    })
}

/// Count one traced wait of `ns` under its path.
fn tally(by_via: &mut std::collections::BTreeMap<Via, (u64, Ns)>, via: Via, ns: Ns) {
    let m = by_via.entry(via).or_insert((0, Ns(0)));
    m.0 += 1;
    m.1 += ns;
}

/// The task's first discarding call that starts after `ts`. `at` keeps each task's last
/// answer, where the next search starts: a task's folios come in near time order, and a binary
/// search of its calls per folio held ~15% of the rebuild loop's own profile samples on a
/// 2 M-event capture.
fn death_after(
    d: &IntMap<i32, Vec<(i64, i64)>>,
    at: &mut IntMap<i32, usize>,
    tid: i32,
    ts: i64,
) -> Option<(i64, i64)> {
    let v = d.get(&tid)?;
    let k = at.entry(tid).or_default();
    *k = super::intents::seek_partition(v, *k, |&(b, _)| b <= ts);
    v.get(*k).copied()
}

/// The free-side holds whose folios died while on a per-CPU batch, by index: they were
/// inserted by a drain that came after their task's discarding call (the batch held the last
/// reference, so `folios_put()` after the drain freed them). Without discard events: a free
/// hold right after an add hold on the same CPU that frees only folios that add hold inserted.
fn releases_of(holds: &[Hold], faults: &[Fault], has_discards: bool) -> Vec<usize> {
    // per free hold: (folios dead before their insertion, folios, the add hold that inserted
    // the first of them, all from that one add hold)
    let mut stats: IntMap<u32, (u32, u32, u32, bool)> = IntMap::default();
    for f in faults {
        let Some(fi) = f.freed_in else { continue };
        let dead_first = f
            .death
            .get()
            .is_some_and(|(b, _)| b < holds[f.hold as usize].first_ts);
        let s = stats.entry(fi).or_insert((0, 0, f.hold, true));
        s.0 += u32::from(dead_first);
        s.1 += 1;
        s.3 &= s.2 == f.hold;
    }
    // previous hold on the same CPU (only the rule without discard events asks)
    let mut prev: IntMap<u32, usize> = IntMap::default();
    let prev_of: Vec<Option<usize>> = match has_discards {
        true => Vec::new(),
        false => holds
            .iter()
            .enumerate()
            .map(|(i, h)| prev.insert(h.cpu, i))
            .collect(),
    };
    let mut out = Vec::new();
    for (&i, &(dead, n, ins, same)) in &stats {
        let (i, ins) = (i as usize, ins as usize);
        let release = if has_discards {
            2 * dead > n && same
        } else {
            same && Some(ins) == prev_of[i]
        };
        if release && holds[i].side == Side::Free {
            out.push(i);
        }
    }
    out
}

/// Median delay from a discarding call's enter to the first free-side (unmap) hold that frees
/// one of its task's folios, over calls that freed any on an LRU.
fn zap_delay(holds: &[Hold], faults: &[Fault]) -> i64 {
    let mut first: IntMap<(i32, i64), i64> = IntMap::default();
    for f in faults {
        let (Some(fi), Some((b, _))) = (f.freed_in.map(|i| i as usize), f.death.get()) else {
            continue;
        };
        if holds[fi].via != Via::Zap {
            continue;
        }
        let d = holds[fi].first_ts - b;
        if d >= 0 {
            let e = first.entry((f.tid, b)).or_insert(d);
            *e = (*e).min(d);
        }
    }
    let v: Vec<f64> = first.values().map(|&d| d as f64).collect();
    crate::stats::median(&v).map_or(0, |m| m.round() as i64)
}

/// The hold an insertion or free belongs to: the CPU's open hold of `side` when the event
/// continues it (nothing else on that CPU in between, gap ≤ `gap`, fewer than 31 folios), else a
/// new one, which takes the CPU's finished traced wait. The folio is counted in.
#[allow(clippy::too_many_arguments)]
fn hold_for(
    holds: &mut Vec<Hold>,
    cur: &mut Open,
    pending: &mut CpuMap<Pending>,
    e: &MmEvent,
    side: Side,
    site: u32,
    gap: i64,
    order: u8,
) -> usize {
    let extend =
        cur.side == Some(side) && e.ts - cur.last_ts <= gap && holds[cur.idx].folios < FOLIO_BATCH;
    if !extend {
        holds.push(Hold {
            cpu: e.cpu,
            side,
            folios: 0,
            pages: 0,
            first_ts: e.ts,
            last_ts: e.ts,
            traced: MaybeSpan::NONE,
            trigger: Trigger::Explicit,
            last_fault: None,
            site,
            via: if side == Side::Add {
                Via::Drain
            } else {
                Via::Zap
            },
            traced_via: Via::Unknown,
        });
        if let (Some((b, e2, v, _)), Some(h)) = (take_pending(pending, e.cpu), holds.last_mut()) {
            h.traced = Some((b, e2)).into();
            h.traced_via = v;
        }
        cur.side = Some(side);
        cur.idx = holds.len() - 1;
    }
    let h = &mut holds[cur.idx];
    h.folios += 1;
    h.pages += 1u64 << order;
    h.last_ts = e.ts;
    cur.last_ts = e.ts;
    cur.idx
}

fn take_pending(pending: &mut CpuMap<Pending>, cpu: u32) -> Option<(i64, i64, Via, i32)> {
    pending.get_mut(cpu).and_then(Option::take)
}

/// What made each add-side hold drain, in the holds' order.
fn triggers_of(holds: &[Hold], faults: &[Fault]) -> Vec<Trigger> {
    let add = holds.iter().filter(|h| h.side == Side::Add);
    add.map(|h| {
        let last_large = h
            .last_fault
            .and_then(|i| faults.get(i as usize))
            .is_some_and(|f| f.order > 0);
        if last_large {
            Trigger::Large
        } else if h.folios >= FOLIO_BATCH {
            Trigger::Full
        } else {
            Trigger::Explicit
        }
    })
    .collect()
}

/// The lock whose waits are followed by an LRU hold on the same CPU (see module docs).
fn pick_lock(t: &Trace, o: &Options, votes: &[u64]) -> Result<u32> {
    if let Some(name) = &o.lock {
        return t
            .locks
            .iter()
            .position(|l| l.eq_ignore_ascii_case(name))
            .map(|i| i as u32)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{}: lock {name} has no contention events (traced locks: {})",
                    t.path,
                    t.locks.join(", ")
                ))
            });
    }
    // the last of equal counts, as `max_by_key` over every lock gave it
    match votes.iter().enumerate().max_by_key(|(_, v)| **v) {
        Some((i, v)) if *v > 0 => Ok(i as u32),
        // No traced wait precedes an insertion: nothing was contended, or no lock events were
        // captured. Holds can still be rebuilt; waits are zero.
        _ => Ok(u32::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::{free_holds_rule, idx32, Fault, Hold};

    #[test]
    fn holds_and_faults_stay_small() {
        // a 2 M-event capture keeps ~600 k of each through every replay
        assert_eq!(std::mem::size_of::<Fault>(), 48);
        assert_eq!(std::mem::size_of::<Hold>(), 64);
        assert_eq!(idx32(613_000), 613_000);
    }

    /// The survey the read counts is what plain passes over the read's events give (the lock
    /// by votes, the census, the gap medians), and the rebuild is the same from it as from a
    /// survey made afresh: on a capture with discarding calls, as text and as perf.data.
    #[test]
    fn the_reads_survey_is_what_passes_over_its_events_give() {
        use crate::whatif::trace::Kind;
        for file in [
            "fbatch/churn-4K-r1/script-ns.txt.gz",
            "perfdata/fbatch-churn-4K/perf.data.gz",
            "replay-free/micro-16K-r1/script-ns.txt.gz",
            "ftrace/trace-cmd-3.1.6-report-t.txt",
        ] {
            let path = format!("{}/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
            let t = crate::whatif::trace::read(&path, false).expect("bundled capture reads");
            let s = t.survey.clone().expect("read in time order: surveyed");
            assert!(s.covers(&t.events), "{file}");
            // the census, counted plainly
            let ev = &t.events;
            let count = |f: &dyn Fn(&Kind) -> bool| ev.iter().filter(|e| f(&e.kind)).count();
            assert_eq!(
                s.census.inserts,
                count(&|k| matches!(k, Kind::Insert { .. })),
                "{file}"
            );
            assert_eq!(
                s.census.frees,
                count(&|k| matches!(k, Kind::Free { .. })),
                "{file}"
            );
            let lazy = count(&|k| matches!(k, Kind::Lazyfree { .. }));
            assert_eq!(s.census.any_lazyfree, lazy > 0, "{file}");
            assert!(
                lazy > 0 || !file.contains("free"),
                "{file}: MADV_FREE calls"
            );
            assert!(
                lazy == 0 || !file.contains("fbatch"),
                "{file}: no MADV_FREE calls"
            );
            let end = ev.last().expect("events").ts;
            let mut tids: Vec<i32> = ev
                .iter()
                .filter(|e| matches!(e.kind, Kind::Discard { .. }))
                .map(|e| e.tid)
                .collect();
            tids.sort_unstable();
            tids.dedup();
            if file.contains("fbatch") {
                assert!(!tids.is_empty(), "{file}: the capture has discarding calls");
            }
            assert_eq!(s.census.discards.len(), tids.len(), "{file}");
            for tid in tids {
                // each enter opens a call; an exit closes the task's last one
                let mut calls: Vec<(i64, i64)> = Vec::new();
                for e in ev.iter().filter(|e| e.tid == tid) {
                    match e.kind {
                        Kind::Discard { enter: true } => calls.push((e.ts, end)),
                        Kind::Discard { enter: false } => {
                            if let Some(c) = calls.last_mut() {
                                c.1 = e.ts;
                            }
                        }
                        _ => {}
                    }
                }
                assert_eq!(s.census.discards[&tid], calls, "{file}: task {tid}");
            }
            // the gaps: back-to-back insertions (frees) of one CPU, sorted, the middle
            for (want, gap) in [(1u8, s.insert_gap), (2, s.free_gap)] {
                let mut last: std::collections::HashMap<u32, (i64, u8)> = Default::default();
                let mut gaps = Vec::new();
                for e in ev {
                    let k = match e.kind {
                        Kind::Insert { .. } => 1,
                        Kind::Free { .. } => 2,
                        _ => 0,
                    };
                    if let Some(&(ts, pk)) = last.get(&e.cpu) {
                        if k == want && pk == k {
                            gaps.push(e.ts - ts);
                        }
                    }
                    last.insert(e.cpu, (e.ts, k));
                }
                gaps.sort_unstable();
                let n = gaps.len();
                assert!(n > 0 || !file.contains("fbatch"), "{file}");
                let mid = (n > 0).then(|| match n % 2 {
                    1 => gaps[n / 2] as f64,
                    _ => (gaps[n / 2 - 1] as f64 + gaps[n / 2] as f64) / 2.0,
                });
                assert_eq!(gap, mid, "{file}: kind {want}");
            }
            // the lock: the one whose contention_end most often came right before an insertion
            let mut votes = vec![0u64; t.locks.len()];
            let mut last_end: std::collections::HashMap<u32, u32> = Default::default();
            for e in ev {
                match e.kind {
                    Kind::End { lock } => {
                        last_end.insert(e.cpu, lock);
                    }
                    Kind::Insert { .. } => {
                        if let Some(l) = last_end.remove(&e.cpu) {
                            votes[l as usize] += 1;
                        }
                    }
                    _ => {
                        last_end.remove(&e.cpu);
                    }
                }
            }
            let o = super::Options::default();
            let top = votes.iter().max().copied().unwrap_or(0);
            let lock = super::pick_lock(&t, &o, &s.votes).expect("a lock");
            if top > 0 {
                assert_eq!(votes[lock as usize], top, "{file}");
            } else {
                assert!(
                    !file.contains("fbatch"),
                    "{file}: no wait before an insertion"
                );
                assert_eq!(lock, u32::MAX, "{file}: no lock");
            }
            // the rebuild from the read's survey is the rebuild from a fresh one
            let rec = super::reconstruct(&t, &o).expect("reconstructs");
            let mut fresh = t.clone();
            fresh.survey = None;
            let again = super::reconstruct(&fresh, &o).expect("reconstructs");
            assert_eq!(format!("{rec:?}"), format!("{again:?}"), "{file}");
            // the census sizes the rebuild: one fault per insertion, at most a hold per
            // folio (lazyfree holds, which leave no event, come on top)
            assert_eq!(rec.faults.len(), s.census.inserts, "{file}");
            if !s.census.any_lazyfree {
                assert!(
                    rec.holds.len() <= s.census.inserts + s.census.frees,
                    "{file}"
                );
            }
        }
    }

    /// A task's death looked up from its last answer is the binary search's, for lookups in
    /// time order, backwards, and jumping; for times on a call's enter, between calls, before
    /// the first and after the last; and for a task without calls.
    #[test]
    fn death_after_from_the_last_answer_is_the_binary_searchs() {
        let mut rng = crate::stats::Rng::new(9);
        let mut d: super::IntMap<i32, Vec<(i64, i64)>> = Default::default();
        for tid in [1, 2] {
            let mut at = 0i64;
            let calls = (0..300)
                .map(|_| {
                    at += 1 + rng.below(50) as i64;
                    (at, at + 5)
                })
                .collect();
            d.insert(tid, calls);
        }
        let search = |tid: i32, ts: i64| {
            let v = d.get(&tid)?;
            v.get(v.partition_point(|&(b, _)| b <= ts)).copied()
        };
        let mut at = super::IntMap::default();
        let mut queries: Vec<(i32, i64)> = (-5..9000).map(|ts| (1 + (ts & 1) as i32, ts)).collect();
        queries.extend((0..2000).map(|_| (1 + rng.below(3) as i32, rng.below(9000) as i64 - 10)));
        queries.extend((0..9000).rev().map(|ts| (1, ts)));
        for (tid, ts) in queries {
            assert_eq!(
                super::death_after(&d, &mut at, tid, ts),
                search(tid, ts),
                "tid {tid} ts {ts}"
            );
        }
        let enters: Vec<i64> = d[&1].iter().map(|c| c.0).collect();
        for &b in &enters {
            assert_eq!(super::death_after(&d, &mut at, 1, b), search(1, b));
        }
    }

    #[test]
    fn mmu_gather_batching() {
        // 16 MiB of 4 KiB folios: 8 + 8×510 + 8 entries → 1 + 8×17 + 1 holds
        assert_eq!(free_holds_rule(4096, false).len(), 138);
        // 16 KiB folios take 2 entries: 4 + 4×255 folios → 1 + 4×9 holds
        assert_eq!(free_holds_rule(1024, true).len(), 37);
        assert_eq!(free_holds_rule(512, true).len(), 19);
        assert_eq!(free_holds_rule(256, true).len(), 10);
        assert_eq!(free_holds_rule(256, true).iter().sum::<u32>(), 256);
        assert!(free_holds_rule(0, false).is_empty());
    }
}
