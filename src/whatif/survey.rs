//! What the rebuild of holds ([`super::reconstruct`]) must know of a whole trace before its
//! main pass: which traced lock is `lru_lock` (the votes), a [`Census`] of what it will meet,
//! and the spacing of back-to-back insertions and frees on one CPU (the gap limits).
//!
//! Each is a fold over the events in time order, so the read of a capture counts them as it
//! makes each event ([`Surveyor::add`], while the event is still in cache), and the rebuild
//! takes the finished [`Survey`] from the [`super::trace::Trace`]. Before, the rebuild walked
//! every event again for them, on both CPUs: on a 2 M-event capture ~22 ms between the read
//! and everything after it, where counting them in the read adds ~10 ms to it. A perf.data
//! file read in one pass has them counted on a helper thread that follows the read a few
//! thousand events behind (the read's loop ~54 -> ~48 ms there, whole runs ~10 ms shorter).
//! A trace the read had to put in order, or one cut from another (a sampled window), has no
//! survey from the read; [`Survey::of`] makes one by the same fold.

use super::cpu_map::DENSE;
use super::trace::{Kind, MmEvent};
use super::IntMap;

/// One fold's count of what the rebuild will meet.
#[derive(Debug, Clone, PartialEq)]
pub struct Census {
    /// Discarding calls per task: (enter, exit) in time order; an enter without an exit ends
    /// at the task's next event of that kind or the end of the trace.
    pub discards: IntMap<i32, Vec<(i64, i64)>>,
    /// Whether any MADV_FREE call was traced.
    pub any_lazyfree: bool,
    /// Insertions (one fault each): with [`Census::frees`] the rebuild's vectors are sized by
    /// them once. On a 2 M-event capture they end at ~70 MB (637 k holds of 64 bytes, 614 k
    /// faults of 48), which growing by doubling copied and faulted in again at every step.
    pub inserts: usize,
    /// Frees (at most one hold each).
    pub frees: usize,
}

/// The finished fold over a trace's events.
#[derive(Debug, Clone, PartialEq)]
pub struct Survey {
    /// The events it counted, and the last one's time: a survey speaks for a trace only while
    /// its events are these ([`Survey::covers`]).
    events: usize,
    end: i64,
    /// Per interned lock: how often its `contention_end` was followed, on the same CPU and
    /// with nothing else of that CPU between, by an insertion (the start of a hold).
    pub votes: Vec<u64>,
    /// What the rebuild will meet.
    pub census: Census,
    /// Median spacing of back-to-back insertions on one CPU, ns (`None`: no such pair).
    pub insert_gap: Option<f64>,
    /// The same of back-to-back frees.
    pub free_gap: Option<f64>,
}

impl Survey {
    /// The fold over `events` (in time order).
    pub fn of(events: &[MmEvent]) -> Survey {
        let mut s = Surveyor::default();
        for e in events {
            s.add(e);
        }
        s.finish()
    }

    /// Whether this is the survey of `events`: the same number of them, ending at the same
    /// time. (A trace's events are not changed after the read but cut or dropped whole.)
    pub fn covers(&self, events: &[MmEvent]) -> bool {
        self.events == events.len() && self.end == events.last().map_or(0, |e| e.ts)
    }
}

/// The fold in progress: [`Surveyor::add`] each event in time order, then
/// [`Surveyor::finish`].
#[derive(Debug, Default)]
pub struct Surveyor {
    events: usize,
    end: i64,
    votes: Vec<u64>,
    /// Per CPU: its last event.
    last: LastByCpu,
    insert_gaps: Vec<i64>,
    free_gaps: Vec<i64>,
    /// Discarding calls per task, `None` for an exit not seen yet.
    discards: IntMap<i32, Vec<(i64, Option<i64>)>>,
    any_lazyfree: bool,
    inserts: usize,
    frees: usize,
}

/// What the fold keeps of a CPU's last event: its time, and a [`Tag`], in two plain arrays
/// of 8-byte words, each read as it was written. Kept in a [`super::CpuMap`] as one
/// `Option` of a struct, the fold over a 2 M-event capture took 22.7 ms instead of 17.8, the
/// profile putting most of it on the store into the CPU's slot right after the load of the
/// value it replaces (likely a load wider than the stores it reads, which cannot take its
/// bytes from them; not measured apart).
#[derive(Debug, Default)]
struct LastByCpu {
    ts: Vec<i64>,
    tag: Vec<Tag>,
    /// CPU numbers past [`super::cpu_map::DENSE`] ([`super::CpuMap`]'s bound).
    rest: IntMap<u32, (i64, Tag)>,
}

impl LastByCpu {
    /// Sets the CPU's last event; the one before, if any.
    #[inline]
    fn swap(&mut self, cpu: u32, ts: i64, tag: Tag) -> Option<(i64, Tag)> {
        if cpu >= DENSE {
            return self.rest.insert(cpu, (ts, tag));
        }
        let i = cpu as usize;
        if i >= self.ts.len() {
            self.ts.resize(i + 1, 0);
            self.tag.resize(i + 1, Tag::NONE);
        }
        let prev = (self.ts[i], self.tag[i]);
        self.ts[i] = ts;
        self.tag[i] = tag;
        (prev.1 != Tag::NONE).then_some(prev)
    }
}

/// An event's side ([`INSERT`], [`FREE`], [`OTHER`]) and, for a `contention_end`, its lock
/// ([`NO_LOCK`] otherwise), in one word; [`Tag::NONE`] for no event yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tag(u64);

impl Tag {
    const NONE: Tag = Tag(0);

    fn new(side: u8, end_of: u32) -> Tag {
        Tag(1 << 40 | u64::from(side) << 32 | u64::from(end_of))
    }

    fn side(self) -> u8 {
        (self.0 >> 32) as u8
    }

    fn end_of(self) -> u32 {
        self.0 as u32
    }
}

/// [`LastByCpu`]'s lock of an event that was not a `contention_end`. The lock ids are
/// indices of the trace's interned lock names, far fewer.
const NO_LOCK: u32 = u32::MAX;

/// [`Tag`] sides: an insertion, a free, anything else.
const INSERT: u8 = 1;
const FREE: u8 = 2;
const OTHER: u8 = 0;

impl Surveyor {
    /// Counts `e`, the event after the last one added.
    #[inline]
    pub fn add(&mut self, e: &MmEvent) {
        self.events += 1;
        self.end = e.ts;
        let side = match e.kind {
            Kind::Insert { .. } => INSERT,
            Kind::Free { .. } => FREE,
            _ => OTHER,
        };
        let end_of = match e.kind {
            Kind::End { lock } => lock,
            _ => NO_LOCK,
        };
        self.inserts += usize::from(side == INSERT);
        self.frees += usize::from(side == FREE);
        if matches!(e.kind, Kind::Lazyfree { .. } | Kind::Discard { .. }) {
            self.rare(e);
        }
        let Some((prev_ts, prev)) = self.last.swap(e.cpu, e.ts, Tag::new(side, end_of)) else {
            return;
        };
        // back-to-back insertions (frees) of one CPU: their spacing
        if side != OTHER && prev.side() == side {
            let gap = e.ts - prev_ts;
            match side {
                INSERT => self.insert_gaps.push(gap),
                _ => self.free_gaps.push(gap),
            }
        }
        // a wait on a lock right before an insertion of its CPU: a vote for that lock
        if side == INSERT && prev.end_of() != NO_LOCK {
            let l = prev.end_of() as usize;
            if l >= self.votes.len() {
                self.votes.resize(l + 1, 0);
            }
            self.votes[l] += 1;
        }
    }

    /// MADV_FREE calls and discarding calls.
    fn rare(&mut self, e: &MmEvent) {
        match e.kind {
            Kind::Lazyfree { .. } => self.any_lazyfree = true,
            Kind::Discard { enter } => {
                let v = self.discards.entry(e.tid).or_default();
                if enter {
                    v.push((e.ts, None));
                } else if let Some(last) = v.last_mut() {
                    last.1 = Some(e.ts);
                }
            }
            _ => {}
        }
    }

    /// The survey of the events added.
    pub fn finish(mut self) -> Survey {
        let end = self.end;
        // integers, their median taken in place: no float copy of a whole capture's gaps
        let insert_gap = crate::stats::median_int(&mut self.insert_gaps);
        let free_gap = crate::stats::median_int(&mut self.free_gaps);
        let discards = self
            .discards
            .into_iter()
            .map(|(tid, v)| {
                let calls = v.into_iter().map(|(b, x)| (b, x.unwrap_or(end))).collect();
                (tid, calls)
            })
            .collect();
        Survey {
            events: self.events,
            end,
            votes: self.votes,
            census: Census {
                discards,
                any_lazyfree: self.any_lazyfree,
                inserts: self.inserts,
                frees: self.frees,
            },
            insert_gap,
            free_gap,
        }
    }
}
